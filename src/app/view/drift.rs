//! The drift pane: provisioned resources and their drift. The state tracker
//! arrives with the provisioning issue; until then the pane says so.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::view_block;
use crate::app::model::Model;

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let lines = vec![
        Line::styled(model.locale.t("drift.empty").to_string(), model.theme.dim),
        Line::raw(""),
        Line::styled(model.locale.t("drift.hint").to_string(), model.theme.dim),
    ];
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }).block(view_block(model, "")), area);
}
