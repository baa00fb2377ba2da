//! A worker's question, drawn over everything, with the queue length.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::centered;
use crate::app::model::{Model, PendingPrompt};
use crate::app::msg::PromptKind;

pub fn draw(model: &Model, prompt: &PendingPrompt, queued: usize, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let mut lines = match &prompt.request.approval {
        Some(approval) => approval_lines(model, approval),
        None => vec![Line::raw(prompt.request.body.clone()), Line::raw("")],
    };
    match prompt.request.kind {
        PromptKind::Approval => {
            let mut choices = vec![Span::styled("[o]", theme.ok), Span::raw(" once   ")];
            if let Some(a) = prompt.request.approval.as_ref().filter(|a| a.rule_possible()) {
                choices.push(Span::styled("[a]", theme.warn));
                choices.push(Span::raw(format!(" always `{}` on these hosts   ", a.prefixes.join("`, `"))));
            }
            choices.push(Span::styled("[d]/Esc", theme.error));
            choices.push(Span::raw(" deny"));
            lines.push(Line::from(choices));
        }
        PromptKind::Confirm => lines.push(Line::from(vec![
            Span::styled("[y]", theme.ok),
            Span::raw(" yes   "),
            Span::styled("[n]", theme.error),
            Span::raw(" no   "),
            Span::styled("[Esc]", theme.dim),
            Span::raw(" decline"),
        ])),
        PromptKind::Text => {
            lines.push(Line::from(vec![
                Span::raw("› "),
                Span::raw(prompt.typed.clone()),
                Span::styled("▏", theme.accent),
            ]));
            lines.push(Line::styled("Enter to answer · Esc to skip", theme.dim));
        }
        PromptKind::Secret => {
            lines.push(Line::from(vec![
                Span::raw("› "),
                Span::raw("•".repeat(prompt.typed.chars().count())),
                Span::styled("▏", theme.accent),
            ]));
            lines.push(Line::styled("Enter to submit · Esc to cancel", theme.dim));
        }
    }
    let mut title = format!(" {} ", prompt.request.title);
    if queued > 0 {
        title.push_str(&format!("· {queued} more waiting "));
    }
    let width = 76u16.min(area.width.saturating_sub(4)).max(20);
    let block = Block::default().borders(Borders::ALL).border_style(theme.warn).title(title);
    let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: false });
    let height = u16::try_from(paragraph.line_count(width)).unwrap_or(u16::MAX);
    let rect = centered(area, width, height);
    frame.render_widget(Clear, rect);
    frame.render_widget(paragraph, rect);
}

/// Summary, command, hosts, risk with reasons, leaks and diff of a change.
fn approval_lines<'a>(model: &Model, a: &crate::approval::ApprovalRequest) -> Vec<Line<'a>> {
    let theme = &model.theme;
    let risk_style = match a.class {
        crate::safety::Class::ReadOnly => theme.ok,
        crate::safety::Class::Mutating => theme.warn,
        crate::safety::Class::Dangerous => theme.error,
    };
    let mut lines = vec![
        Line::from(vec![Span::styled("command  ", theme.dim), Span::raw(a.command.clone())]),
        Line::from(vec![Span::styled("hosts    ", theme.dim), Span::raw(a.hosts.join(", "))]),
        Line::from(vec![Span::styled("risk     ", theme.dim), Span::styled(a.class.as_str().to_string(), risk_style)]),
    ];
    for reason in &a.reasons {
        lines.push(Line::styled(format!("         · {reason}"), theme.dim));
    }
    for leak in &a.leaks {
        lines.push(Line::styled(format!("  ! {}", leak.what), theme.error));
        lines.push(Line::styled(format!("    safer: {}", leak.rewrite), theme.warn));
    }
    if let Some(diff) = &a.diff {
        for l in diff.lines() {
            let style = if l.starts_with('+') && !l.starts_with("+++") {
                theme.ok
            } else if l.starts_with('-') && !l.starts_with("---") {
                theme.error
            } else {
                theme.dim
            };
            lines.push(Line::styled(l.to_string(), style));
        }
    }
    lines.push(Line::raw(""));
    lines
}
