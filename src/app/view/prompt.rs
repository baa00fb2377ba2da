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
    let mut lines = vec![Line::raw(prompt.request.body.clone()), Line::raw("")];
    match prompt.request.kind {
        PromptKind::Confirm => lines.push(Line::from(vec![
            Span::styled("[y]", theme.ok),
            Span::raw(" yes   "),
            Span::styled("[n]", theme.error),
            Span::raw(" no   "),
            Span::styled("[Esc]", theme.dim),
            Span::raw(" decline"),
        ])),
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
