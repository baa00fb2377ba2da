//! The drift pane: a tree by source — provisioned resources, then each host's
//! findings against its baseline — each row with its kind as a glyph and a
//! colour (`~` changed, `-` missing, `+` added, `?` unknown, `✓` none).
//! `c` checks everything now; a check found by the worker arrives on its own.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::view_block;
use crate::app::model::Model;
use crate::baseline::compare::Kind;
use crate::store::resources::Drift;

/// At most this many characters of a value in a row.
const VALUE_WIDTH: usize = 28;

fn short(text: Option<&str>) -> String {
    let text = crate::term_safe::visible(text.unwrap_or("-")).into_owned().replace('\n', "⏎");
    if text.chars().count() > VALUE_WIDTH {
        format!("{}…", text.chars().take(VALUE_WIDTH - 1).collect::<String>())
    } else {
        text
    }
}

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let board = model.drift_board();
    let theme = &model.theme;
    let mut status = if model.drift_checking { model.locale.t("drift.checking").to_string() } else { String::new() };
    if model.drift_filtering || !model.drift_filter.is_empty() {
        let cursor = if model.drift_filtering { "▏" } else { "" };
        let filter = crate::term_safe::visible(&model.drift_filter);
        status =
            if status.is_empty() { format!("/{filter}{cursor} ") } else { format!("/{filter}{cursor} · {status}") };
    }
    if board.is_empty() && !model.dashboard.drift.is_empty() {
        let line = Line::styled(model.locale.t("drift.no_match").to_string(), theme.dim);
        frame.render_widget(Paragraph::new(vec![line]).block(view_block(model, &status)), area);
        return;
    }
    if board.is_empty() {
        let mut lines = vec![
            Line::styled(model.locale.t("drift.empty").to_string(), theme.dim),
            Line::raw(""),
            Line::styled(model.locale.t("drift.hint").to_string(), theme.dim),
        ];
        if !status.is_empty() {
            lines.push(Line::styled(status.clone(), theme.warn));
        }
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }).block(view_block(model, &status)), area);
        return;
    }
    let selected = |i: usize, style: Style| if i == model.drift_cursor { style.patch(theme.selected) } else { style };
    let mut lines = Vec::new();
    let mut row = 0usize;
    let mut selected_line = None;
    let heading = |text: String| Line::styled(text, theme.accent.add_modifier(Modifier::BOLD));
    lines.push(heading(model.locale.tf("drift.resources", &[("count", &board.resources.len().to_string())])));
    for r in &board.resources {
        let (glyph, style) = match r.drift {
            Drift::NoDrift => ("✓", theme.ok),
            Drift::Drifted => ("~", theme.warn),
            Drift::Missing => ("-", theme.error),
            Drift::Unknown => ("?", theme.dim),
        };
        let detail = r.drift_detail.lines().next().unwrap_or_default();
        if row == model.drift_cursor {
            selected_line = Some(lines.len());
        }
        lines.push(Line::from(vec![
            Span::styled(format!(" {glyph} "), selected(row, style)),
            Span::styled(format!("{:<18}", short(Some(&r.name))), selected(row, theme.host)),
            Span::styled(format!(" {:<9}", r.status.as_str()), selected(row, Style::default())),
            Span::styled(format!(" {:<9}", r.drift.as_str()), selected(row, style)),
            Span::styled(format!(" {}", crate::term_safe::visible(detail)), selected(row, theme.dim)),
        ]));
        row += 1;
    }
    lines.push(Line::raw(""));
    let hosts = model
        .locale
        .tf("drift.hosts", &[("count", &board.hosts.len().to_string()), ("checked", &board.checked_hosts.to_string())]);
    lines.push(heading(hosts));
    let mut last_host: Option<&str> = None;
    for (host, checked_at, finding) in &board.hosts {
        // A tree: each host's findings under it.
        if last_host != Some(host.as_str()) {
            let count = board.hosts.iter().filter(|(h, _, _)| h == host).count();
            let said = model.locale.tf("drift.host_heading", &[("count", &count.to_string()), ("checked", checked_at)]);
            lines.push(Line::from(vec![
                Span::styled(format!(" {}", short(Some(host))), theme.host.add_modifier(Modifier::BOLD)),
                Span::styled(format!("  {said}"), theme.dim),
            ]));
            last_host = Some(host.as_str());
        }
        if row == model.drift_cursor {
            selected_line = Some(lines.len());
        }
        let style = match finding.kind {
            Kind::Changed => theme.warn,
            Kind::Missing => theme.removed,
            Kind::Added => theme.added,
        };
        lines.push(Line::from(vec![
            Span::styled(format!("   {} ", finding.kind.glyph()), selected(row, style)),
            Span::styled(format!("{:<13}", finding.section.name()), selected(row, theme.dim)),
            Span::styled(format!(" {:<30}", short(Some(&finding.key))), selected(row, Style::default())),
            Span::styled(
                format!(" {} → {}", short(finding.expected.as_deref()), short(finding.found.as_deref())),
                selected(row, style),
            ),
        ]));
        row += 1;
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(model.locale.t("drift.keys").to_string(), theme.dim));
    let block = view_block(model, &status);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // Enter: the selected row's diff fills the pane, scrolled like the Pipeline pane's.
    let diff = selected_diff(model, inner.width);
    if model.drift_diff_open
        && let Some(diff) = diff
    {
        let scroll = model.diff_view.scroll.min(diff.len().saturating_sub(1)) as u16;
        frame.render_widget(Paragraph::new(diff).scroll((scroll, 0)), inner);
        return;
    }
    // The list above, the field-level diff of the selected row below (when there is room).
    // The list takes what it needs, but at least half when a diff is long; the diff the rest.
    let list_height = match &diff {
        Some(d) if inner.height >= 12 => {
            let room = (inner.height / 2).max(inner.height.saturating_sub(d.len() as u16));
            (lines.len() as u16).min(room)
        }
        _ => inner.height,
    };
    let [top, bottom] = ratatui::layout::Layout::vertical([
        ratatui::layout::Constraint::Length(list_height),
        ratatui::layout::Constraint::Min(0),
    ])
    .areas(inner);
    // The selected row stays on screen, with a few lines of room below it.
    let scroll = selected_line.unwrap_or(0).saturating_sub(usize::from(top.height.saturating_sub(4))) as u16;
    frame.render_widget(Paragraph::new(lines).scroll((scroll, 0)), top);
    if let Some(diff) = diff.filter(|_| bottom.height > 0) {
        frame.render_widget(Paragraph::new(diff), bottom);
    }
}

/// The selected row's expected and found values as a diff, drawn like the Pipeline pane's.
fn selected_diff(model: &Model, width: u16) -> Option<Vec<Line<'static>>> {
    let diff = model.drift_board().diff(model.drift_cursor)?;
    Some(super::diff::lines(&diff, model.drift_diff_open && model.diff_view.side_by_side, width, &model.theme))
}
