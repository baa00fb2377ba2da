//! Toasts: background events (a run finished, a pipeline ended, a host did
//! not answer) stacked in the top-right corner until they fade.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::app::model::{Model, ToastLevel};

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let width = 44u16.min(area.width.saturating_sub(2));
    let mut y = area.y + 1;
    for toast in model.toasts.iter().rev() {
        let (mark, style) = match toast.level {
            ToastLevel::Info => ("•", theme.accent),
            ToastLevel::Success => ("✓", theme.ok),
            ToastLevel::Error => ("✗", theme.error),
        };
        let paragraph = Paragraph::new(Line::raw(format!("{mark} {}", toast.text)))
            .style(style)
            .block(Block::default().borders(Borders::ALL).border_style(style))
            .wrap(Wrap { trim: true });
        let height = u16::try_from(paragraph.line_count(width)).unwrap_or(3).min(6);
        if y + height > area.bottom().saturating_sub(2) {
            break;
        }
        let rect = Rect { x: area.right().saturating_sub(width + 1), y, width, height };
        frame.render_widget(Clear, rect);
        frame.render_widget(paragraph, rect);
        y += height;
    }
}
