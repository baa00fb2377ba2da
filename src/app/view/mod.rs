//! Drawing. Each pane and overlay is a function of the model; nothing here
//! changes state.

mod chat;
mod diff;
mod drift;
mod form;
mod help;
mod inventory;
mod metrics;
mod output;
mod pipeline;
pub(crate) mod prompt;
mod run_report;
mod setup;
mod status;
mod toast;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Padding};

use super::model::{Model, Pane};

/// Draws the whole console.
pub fn view(model: &Model, frame: &mut Frame) {
    let area = frame.area();
    let areas = model.areas(area);
    inventory::draw(model, frame, areas.inventory);
    match model.view {
        Pane::Pipeline => pipeline::draw(model, frame, areas.view),
        Pane::Metrics => metrics::draw(model, frame, areas.view),
        Pane::Drift => drift::draw(model, frame, areas.view),
        _ => output::draw(model, frame, areas.view),
    }
    chat::draw(model, frame, areas.chat);
    // The newest notifications above the input line, in rows of their own.
    let notices = model.notice_rows().min(areas.input.height.saturating_sub(1));
    let [notice_area, input_area] = ratatui::layout::Layout::vertical([
        ratatui::layout::Constraint::Length(notices),
        ratatui::layout::Constraint::Min(1),
    ])
    .areas(areas.input);
    toast::draw(model, frame, notice_area);
    status::draw_input(model, frame, input_area);
    status::draw_status(model, frame, areas.status);
    status::draw_popup(model, frame, areas.input);
    if model.inventory.tag_picker.is_some() {
        inventory::draw_tag_picker(model, frame, areas.inventory);
    }
    if model.inventory.picker.is_some() {
        inventory::draw_picker(model, frame, areas.inventory);
    }
    if model.output_view.host_picker.is_some() {
        inventory::draw_host_picker(model, frame, areas.view);
    }
    if let Some(form) = &model.form {
        form::draw(model, form, frame, area);
    }
    if let Some(flow) = &model.setup {
        setup::draw(model, flow, frame, area);
    }
    if model.help_open {
        help::draw(model, frame, area);
    }
    prompt::draw(model, frame, area);
}

/// The top-right area's frame: the four tabs in the title, the shown one
/// highlighted, plus `extra` (counts, scroll position).
fn view_block<'a>(model: &Model, extra: &str) -> Block<'a> {
    let mut spans = vec![Span::raw(" ")];
    for (i, pane) in Pane::VIEWS.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" │ ", model.theme.dim));
        }
        let style = if *pane == model.view { model.theme.accent.add_modifier(Modifier::BOLD) } else { model.theme.dim };
        spans.push(Span::styled(model.locale.t(pane.key()).to_string(), style));
    }
    spans.push(Span::raw(format!(" {extra}")));
    pane_block(model, model.view, String::new()).title(Line::from(spans))
}

/// A pane's frame: accent border when focused.
fn pane_block<'a>(model: &Model, pane: Pane, title: String) -> Block<'a> {
    let focused = model.focus == pane
        && model.prompts.is_empty()
        && !model.help_open
        && model.form.is_none()
        && model.setup.is_none();
    let style = if focused { model.theme.accent } else { model.theme.dim };
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused { BorderType::Thick } else { BorderType::Rounded })
        .border_style(style)
        .title(title)
        .title_style(if focused { model.theme.accent } else { Style::default() })
        .padding(Padding::ZERO)
}

/// A rectangle of `width` × `height` centred in `area` (clamped to it).
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height }
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod svg;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_inventory;
#[cfg(test)]
mod tests_output;
#[cfg(test)]
mod tests_runs;
#[cfg(test)]
mod tests_setup;
