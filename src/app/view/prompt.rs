//! A worker's question (or the console's own), drawn over everything, with
//! the queue length; an approval shows the classifier's verdict and the
//! highlighted diff, scrolling when it is taller than the screen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::centered;
use crate::app::keymap::{Action, KeyContext};
use crate::app::model::Model;
use crate::app::msg::{PromptAnswer, PromptKind};
use crate::term_safe::{visible, visible_line};

/// The prompt laid out: what is drawn, where, and where each choice lands.
struct Laid<'a> {
    paragraph: Paragraph<'a>,
    rect: Rect,
    hits: Vec<(Rect, PromptAnswer)>,
}

/// Draws the front prompt into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let Some(laid) = layout(model, area) else { return };
    frame.render_widget(Clear, laid.rect);
    frame.render_widget(laid.paragraph, laid.rect);
}

/// Where the front prompt draws each choice on a screen of `area`, so a click on one answers as
/// its key would. The same layout as [`draw`], computed again by `update` rather than remembered
/// by the view (the view never writes into the model).
pub fn choice_hits(model: &Model, area: Rect) -> Vec<(Rect, PromptAnswer)> {
    layout(model, area).map(|laid| laid.hits).unwrap_or_default()
}

fn layout(model: &Model, area: Rect) -> Option<Laid<'static>> {
    let prompt = model.prompts.front()?;
    let queued = model.prompts.len() - 1;
    let theme = &model.theme;
    let t = |k: &str| model.locale.t(k).to_string();
    // The keys bound to an action in prompts, as `[y/o]`.
    let key = |action: Action| format!("[{}]", model.keymap.keys(KeyContext::Modal, action));
    // Choices as (first char, last char, answer) on the choice line, for clicks.
    let mut spots: Vec<(usize, usize, PromptAnswer)> = Vec::new();
    let spot = |spans: &[Span], answer: PromptAnswer| {
        let start: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        (start, answer)
    };
    let mut lines = match &prompt.request.approval {
        Some(approval) => approval_lines(model, approval),
        None => {
            let body = visible(&prompt.request.body.render(&model.locale)).into_owned();
            let mut lines: Vec<Line> = body.split('\n').map(|l| Line::raw(l.to_string())).collect();
            lines.push(Line::raw(""));
            lines
        }
    };
    match prompt.request.kind {
        PromptKind::Approval => {
            let mut choices: Vec<Span> = Vec::new();
            let mut mark = |choices: &mut Vec<Span<'static>>, new: [Span<'static>; 2], answer: PromptAnswer| {
                let (start, answer) = spot(choices, answer);
                let width: usize = new.iter().map(|s| s.content.trim_end().chars().count()).sum();
                spots.push((start, start + width, answer));
                choices.extend(new);
            };
            let once = [Span::styled(key(Action::Yes), theme.ok), Span::raw(format!(" {}   ", t("prompt.once")))];
            mark(&mut choices, once, PromptAnswer::Yes);
            if let Some(a) = prompt.request.approval.as_ref().filter(|a| a.rule_possible()) {
                let always = model.locale.tf("prompt.always", &[("prefixes", &visible_line(&a.prefixes.join("`, `")))]);
                let spans = [Span::styled(key(Action::Always), theme.warn), Span::raw(format!(" {always}   "))];
                mark(&mut choices, spans, PromptAnswer::Always);
            }
            let deny = [
                Span::styled(format!("{} {}", key(Action::No), key(Action::Decline)), theme.error),
                Span::raw(format!(" {}", t("prompt.deny"))),
            ];
            mark(&mut choices, deny, PromptAnswer::No);
            lines.push(Line::from(choices));
        }
        PromptKind::Confirm | PromptKind::HostKey => {
            // The other host keys that wait, each with its fingerprint: what "trust all" trusts.
            let others: Vec<String> = model
                .prompts
                .iter()
                .skip(1)
                .filter(|p| prompt.request.kind == PromptKind::HostKey && p.request.kind == PromptKind::HostKey)
                .map(|p| visible(&p.request.body.render(&model.locale)).replace('\n', " "))
                .collect();
            if !others.is_empty() {
                lines.push(Line::styled(
                    model.locale.tf("prompt.hostkey_others", &[("count", &others.len().to_string())]),
                    theme.dim,
                ));
                lines.extend(others.iter().map(|o| Line::raw(format!("  • {o}"))));
                lines.push(Line::raw(""));
            }
            let mut choices: Vec<Span> = Vec::new();
            for (action, style, label, answer) in [
                (Action::Yes, theme.ok, "prompt.yes", PromptAnswer::Yes),
                (Action::No, theme.error, "prompt.no", PromptAnswer::No),
            ] {
                let (start, answer) = spot(&choices, answer);
                let (k, l) = (key(action), t(label));
                spots.push((start, start + k.chars().count() + 1 + l.chars().count(), answer));
                choices.push(Span::styled(k, style));
                choices.push(Span::raw(format!(" {l}   ")));
            }
            if !others.is_empty() {
                let all = model.locale.tf("prompt.hostkey_all", &[("count", &(others.len() + 1).to_string())]);
                let (start, answer) = spot(&choices, PromptAnswer::Always);
                let k = key(Action::Always);
                spots.push((start, start + k.chars().count() + 1 + all.chars().count(), answer));
                choices.push(Span::styled(k, theme.warn));
                choices.push(Span::raw(format!(" {all}   ")));
            }
            choices.push(Span::styled(key(Action::Decline), theme.dim));
            choices.push(Span::raw(format!(" {}", t("prompt.decline"))));
            lines.push(Line::from(choices));
        }
        PromptKind::Text => {
            lines.push(Line::from(vec![
                Span::raw("› "),
                Span::raw(visible_line(&prompt.typed).into_owned()),
                Span::styled("▏", theme.accent),
            ]));
            lines.push(Line::styled(t("prompt.text_hint"), theme.dim));
        }
        PromptKind::Secret => {
            lines.push(Line::from(vec![
                Span::raw("› "),
                Span::raw("•".repeat(prompt.typed.chars().count())),
                Span::styled("▏", theme.accent),
            ]));
            lines.push(Line::styled(t("prompt.secret_hint"), theme.dim));
        }
    }
    let mut title = format!(" {} ", visible_line(&prompt.request.title.render(&model.locale)));
    if queued > 0 {
        title.push_str(&format!("· {} ", model.locale.tf("prompt.more", &[("count", &queued.to_string())])));
    }
    let width = 96u16.min(area.width.saturating_sub(4)).max(20);
    let mut block = Block::default().borders(Borders::ALL).border_style(theme.warn).title(title);
    // Rows a line takes once wrapped inside the border.
    let rows_of = |line: &Line| Paragraph::new(line.clone()).wrap(Wrap { trim: false }).line_count(width - 2).max(1);
    let full: usize = lines.iter().map(rows_of).sum();
    let last_line_rows = lines.last().map(rows_of).unwrap_or(1);
    let room = usize::from(area.height.saturating_sub(4));
    // A body taller than the screen scrolls; the choices (the last two lines) always stay, whole.
    let body = if full > room {
        let choices = lines.split_off(lines.len().saturating_sub(2));
        let budget = room.saturating_sub(choices.iter().map(rows_of).sum());
        // The furthest scroll that still fills the budget with the last lines.
        let mut tail = 0;
        let mut max_scroll = lines.len();
        while max_scroll > 0 && tail + rows_of(&lines[max_scroll - 1]) <= budget {
            tail += rows_of(&lines[max_scroll - 1]);
            max_scroll -= 1;
        }
        let mut used = 0;
        let mut body: Vec<Line> = Vec::new();
        for line in lines.into_iter().skip(prompt.scroll.min(max_scroll)) {
            let rows = rows_of(&line);
            if used + rows > budget {
                break;
            }
            used += rows;
            body.push(line);
        }
        body.extend(choices);
        block = block.title_bottom(Line::styled(format!(" {} ", t("prompt.scroll")), theme.dim));
        body
    } else {
        lines
    };
    let paragraph = Paragraph::new(body).block(block).wrap(Wrap { trim: false });
    let height = u16::try_from(paragraph.line_count(width)).unwrap_or(u16::MAX);
    let rect = centered(area, width, height);
    let hits = hits(rect, last_line_rows, &spots);
    Some(Laid { paragraph, rect, hits })
}

/// Where each choice is drawn: the choice line is the last one in the box; a choice past the
/// width continues on the next row.
fn hits(rect: Rect, choice_rows: usize, spots: &[(usize, usize, PromptAnswer)]) -> Vec<(Rect, PromptAnswer)> {
    let inner = usize::from(rect.width.saturating_sub(2)).max(1);
    let first_row = usize::from(rect.y + rect.height).saturating_sub(1 + choice_rows);
    spots
        .iter()
        .filter_map(|(start, end, answer)| {
            let row = u16::try_from(first_row + start / inner).ok()?;
            let x = rect.x + 1 + u16::try_from(start % inner).ok()?;
            let width = u16::try_from((end - start).min(inner - start % inner)).ok()?;
            Some((Rect::new(x, row, width.max(1), 1), answer.clone()))
        })
        .collect()
}

/// Host names for the modal: ranges folded (`web01–web30`), the count when
/// there are many, and cut to two lines so the choices always show.
fn hosts_summary(model: &Model, hosts: &[String]) -> String {
    const MOST: usize = 160;
    let names = crate::exec::runs::compress_names(hosts);
    let names = if names.chars().count() > MOST {
        format!("{}…", names.chars().take(MOST).collect::<String>())
    } else {
        names
    };
    if hosts.len() > 3 {
        format!("{} · {names}", model.locale.tf("prompt.host_count", &[("count", &hosts.len().to_string())]))
    } else {
        names
    }
}

/// Summary, command, hosts, risk with reasons, leaks and diff of a change.
fn approval_lines<'a>(model: &Model, a: &crate::approval::ApprovalRequest) -> Vec<Line<'a>> {
    let theme = &model.theme;
    let risk_style = match a.class {
        crate::safety::Class::ReadOnly => theme.ok,
        crate::safety::Class::Mutating => theme.warn,
        crate::safety::Class::Dangerous => theme.error,
    };
    let label = |key: &str| Span::styled(format!("{:<9}", model.locale.t(key)), theme.dim);
    // The command keeps its lines (each control character shown, `\r` as `^M`), indented under the label.
    let command = visible(&a.command).into_owned();
    let mut command_lines = command.split('\n');
    let mut lines =
        vec![Line::from(vec![label("prompt.command"), Span::raw(command_lines.next().unwrap_or("").to_string())])];
    lines.extend(command_lines.map(|l| Line::raw(format!("{:9}{l}", ""))));
    lines.extend([
        Line::from(vec![label("prompt.hosts"), Span::raw(visible_line(&hosts_summary(model, &a.hosts)).into_owned())]),
        Line::from(vec![label("prompt.risk"), Span::styled(a.class.as_str().to_string(), risk_style)]),
    ]);
    for reason in &a.reasons {
        lines.push(Line::styled(format!("         · {}", visible_line(reason)), theme.dim));
    }
    if let Some(check) = &a.post_check {
        lines.push(Line::from(vec![label("prompt.post_check"), Span::raw(visible(check).into_owned())]));
    }
    if let Some(rollback) = &a.rollback {
        lines.push(Line::from(vec![label("prompt.rollback"), Span::raw(visible(rollback).into_owned())]));
    }
    for leak in &a.leaks {
        lines.push(Line::styled(format!("  ! {}", visible_line(&leak.what)), theme.error));
        let safer = model.locale.t("prompt.safer");
        lines.push(Line::styled(format!("    {safer}: {}", visible_line(&leak.rewrite)), theme.warn));
    }
    if let Some(diff) = &a.diff {
        lines.extend(super::diff::lines(&crate::app::diff_view::Diff::parse(&visible(diff)), false, 94, theme));
    }
    lines.push(Line::raw(""));
    lines
}
