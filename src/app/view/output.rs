//! The output pane: live lines from every host, prefixed with the host name.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::view_block;
use crate::app::model::{Model, OutputMode};
use crate::app::output_buffer::LineKind;
use crate::exec::Stream;

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let view = &model.output_view;
    let mut extra = String::new();
    if let Some(run) = model.newest_active_run() {
        extra = format!("· {} ", super::run_report::progress_text(model, run));
    }
    if view.mode != OutputMode::Live {
        super::run_report::draw(model, frame, area, &extra);
        return;
    }
    if !view.follow {
        extra.push_str(&format!("· ↑{} ", view.scroll));
    }
    if let Some(host) = &view.host {
        extra.push_str(&format!("· {} ", model.locale.tf("output.only", &[("host", host)])));
    }
    let selected = model.output_selection();
    if let Some((low, high)) = selected {
        let count = (high - low + 1).to_string();
        extra.push_str(&format!("· {} ", model.locale.tf("output.selecting", &[("count", &count)])));
    }
    let search = &model.output_view.search;
    let mut block = view_block(model, &extra);
    if model.output_view.searching || !search.is_empty() {
        let cursor = if model.output_view.searching { "▏" } else { "" };
        block = block.title_bottom(Line::from(format!(" /{search}{cursor} ")).style(theme.accent));
    }
    let needle = search.to_lowercase();
    let highlight = |line: Line<'static>, text: &str| {
        if !needle.is_empty() && text.to_lowercase().contains(&needle) { line.style(theme.selected) } else { line }
    };
    let inner_height = usize::from(area.height.saturating_sub(2));
    let bottom = model.output_bottom(inner_height);
    // At the oldest lines the page starts at the top; elsewhere the newest line shown sits at the bottom.
    let at_top =
        bottom < view.scroll || bottom == model.output.count(view.host.as_deref()).saturating_sub(inner_height);
    let shown = model.output.window(inner_height, bottom, view.host.as_deref());
    // Lines of the selection, by position from the newest.
    let first_position = bottom + shown.len();
    let in_selection = |i: usize| selected.is_some_and(|(low, high)| (low..=high).contains(&(first_position - 1 - i)));
    let width = shown
        .iter()
        .filter_map(|l| match &l.kind {
            LineKind::Output { host, .. } => Some(host.chars().count()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let lines: Vec<Line> = if model.output.is_empty() {
        vec![
            Line::styled(model.locale.t("output.empty").to_string(), theme.dim),
            Line::styled(model.locale.t("output.empty_hint").to_string(), theme.dim),
        ]
    } else {
        shown
            .iter()
            .map(|l| {
                (
                    l,
                    match &l.kind {
                        LineKind::Output { host, stream } => {
                            let (sep, text_style) = match stream {
                                Stream::Stdout => ("│", ratatui::style::Style::default()),
                                Stream::Stderr => ("!", theme.error),
                            };
                            Line::from(vec![
                                Span::styled(crate::text_table::pad(host, width), theme.host),
                                Span::styled(format!(" {sep} "), theme.dim),
                                Span::styled(l.text.clone(), text_style),
                            ])
                        }
                        LineKind::Header => Line::styled(format!("── {} ", l.text), theme.accent),
                        LineKind::Outcome { ok: true, .. } => Line::styled(l.text.clone(), theme.ok),
                        LineKind::Outcome { ok: false, .. } => Line::styled(l.text.clone(), theme.error),
                        LineKind::Note => Line::styled(l.text.clone(), theme.dim),
                    },
                )
            })
            .enumerate()
            .map(|(i, (l, line))| if in_selection(i) { line.style(theme.selected) } else { highlight(line, &l.text) })
            .collect()
    };
    // Long lines wrap; keep the newest row at the bottom of the pane.
    let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: false });
    let rows = paragraph.line_count(area.width);
    let overflow = rows.saturating_sub(usize::from(area.height));
    let scroll = if at_top && bottom > 0 { 0 } else { u16::try_from(overflow).unwrap_or(u16::MAX) };
    frame.render_widget(paragraph.scroll((scroll, 0)), area);
}
