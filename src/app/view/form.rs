//! The add/edit host form, over everything: one row per field, the field
//! being typed in highlighted, and why the last save was refused.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::centered;
use crate::app::model::{HostForm, Model};

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, form: &HostForm, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let labels: Vec<String> = HostForm::FIELDS.iter().map(|k| model.locale.t(k).to_string()).collect();
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(8);
    let mut lines: Vec<Line> = labels
        .iter()
        .zip(&form.values)
        .enumerate()
        .map(|(i, (label, value))| {
            let focused = i == form.focus;
            let cursor = if focused { Span::styled("▏", theme.accent) } else { Span::raw("") };
            Line::from(vec![
                Span::styled(format!("{label:>width$}  "), if focused { theme.accent } else { theme.dim }),
                Span::styled(value.clone(), if focused { theme.selected } else { ratatui::style::Style::default() }),
                cursor,
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    if let Some(error) = &form.error {
        lines.push(Line::styled(error.render(&model.locale), theme.error));
    }
    lines.push(Line::styled(model.locale.t("form.hint").to_string(), theme.dim));
    let title = match &form.original {
        None => model.locale.t("form.title_add").to_string(),
        Some(name) => model.locale.tf("form.title_edit", &[("host", name)]),
    };
    let rect = centered(area, 64, u16::try_from(lines.len()).unwrap_or(12) + 2);
    let block = Block::default().borders(Borders::ALL).border_style(theme.accent).title(format!(" {title} "));
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}
