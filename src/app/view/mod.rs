//! Drawing. Each pane and overlay is a function of the model; nothing here
//! changes state.

mod chat;
mod help;
mod inventory;
mod output;
mod prompt;
mod status;

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Block, BorderType, Borders};

use super::model::{Model, Pane};

/// Draws the whole console.
pub fn view(model: &Model, frame: &mut Frame) {
    let area = frame.area();
    let [body, input, status] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1), Constraint::Length(1)]).areas(area);
    let left_width = (area.width * 34 / 100).clamp(24.min(area.width), 56);
    let [left, right] = Layout::horizontal([Constraint::Length(left_width), Constraint::Min(10)]).areas(body);
    let [top, bottom] = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(62), Constraint::Percentage(38)])
        .areas(right);
    inventory::draw(model, frame, left);
    output::draw(model, frame, top);
    chat::draw(model, frame, bottom);
    status::draw_input(model, frame, input);
    status::draw_status(model, frame, status);
    if model.help_open {
        help::draw(model, frame, area);
    }
    if let Some(front) = model.prompts.front() {
        prompt::draw(model, front, model.prompts.len() - 1, frame, area);
    }
}

/// A pane's frame: accent border when focused.
fn pane_block<'a>(model: &Model, pane: Pane, title: String) -> Block<'a> {
    let focused = model.focus == pane && model.prompts.is_empty() && !model.help_open;
    let style = if focused { model.theme.accent } else { model.theme.dim };
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused { BorderType::Thick } else { BorderType::Rounded })
        .border_style(style)
        .title(title)
        .title_style(if focused { model.theme.accent } else { Style::default() })
}

/// A rectangle of `width` × `height` centred in `area` (clamped to it).
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height }
}

#[cfg(test)]
mod svg;
#[cfg(test)]
mod tests;
