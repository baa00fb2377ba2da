//! The `?` overlay, generated from the binding table.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::centered;
use crate::app::keys::{BINDINGS, KeyContext};
use crate::app::model::Model;

pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let mut lines = Vec::new();
    let contexts = [KeyContext::Global, KeyContext::Inventory, KeyContext::Output, KeyContext::Chat, KeyContext::Modal];
    for context in contexts {
        lines.push(Line::styled(context.title(), theme.accent));
        for b in BINDINGS.iter().filter(|b| b.context == context) {
            lines.push(Line::from(vec![Span::raw(format!("  {:<20}", b.keys)), Span::styled(b.action, theme.dim)]));
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Esc or ? to close", theme.dim));
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let rect = centered(area, 80, height);
    frame.render_widget(Clear, rect);
    let block = Block::default().borders(Borders::ALL).border_style(theme.accent).title(" Keys ");
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}
