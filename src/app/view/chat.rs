//! The chat pane: the conversation with the agent (or how to enable it).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::pane_block;
use crate::app::model::{ChatRole, Model, Pane};

pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let title = if model.model_configured { " Chat " } else { " Chat · no model " };
    let block = pane_block(model, Pane::Chat, title.to_string());
    let mut lines: Vec<Line> = Vec::new();
    for (i, entry) in model.chat.iter().enumerate() {
        if entry.role == ChatRole::Tool {
            // Compact cells: one dim line per delegation or command.
            lines.push(Line::styled(format!("  {}", entry.text), theme.dim));
            continue;
        }
        let (who, style) = match entry.role {
            ChatRole::User => ("you", theme.accent),
            ChatRole::Assistant => ("merlya", theme.ok),
            _ => ("note", theme.warn),
        };
        if i > 0 {
            lines.push(Line::raw(""));
        }
        lines.push(Line::from(Span::styled(who, style)));
        lines.extend(entry.text.lines().map(|text| Line::raw(format!("  {text}"))));
    }
    if model.agent_busy {
        lines.push(Line::styled("  … working", theme.dim));
    }
    // Show the end of the conversation: scroll past what does not fit.
    let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: false });
    let height = paragraph.line_count(area.width);
    let scroll = u16::try_from(height.saturating_sub(usize::from(area.height))).unwrap_or(u16::MAX);
    frame.render_widget(paragraph.scroll((scroll, 0)), area);
}
