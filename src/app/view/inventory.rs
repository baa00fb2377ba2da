//! The inventory pane: a table of hosts (reachability dot, then the chosen
//! columns as the width allows, health readings coloured by their verdict, the
//! order's arrow in its header), marks and the filter; the detail panel of the
//! host under the cursor, next to its row; the tag, order and column pickers.
//!
//! Only the rows on screen are built, and column widths fit them: a frame
//! costs the same for 10 hosts as for 200,000.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, List, ListItem, ListState, Paragraph, Row, Table, TableState};

use super::pane_block;
use crate::app::model::{Model, Pane};
use crate::inventory::Host;
use crate::inventory::columns::Column;
use crate::store::host_health::HealthLevel;

fn address(model: &Model, h: &Host) -> String {
    if h.is_local() { model.locale.t("inventory.local").to_string() } else { format!("{}:{}", h.hostname, h.port) }
}

/// `2026-11-22T08:00:00Z` → `11-22 08:00`.
fn short_time(at: &str) -> String {
    match (at.get(5..10), at.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time}"),
        _ => at.to_string(),
    }
}

fn reachable_text(model: &Model, h: &Host) -> String {
    let key = match model.reachable(h) {
        Some(true) => "inventory.yes",
        Some(false) => "inventory.no",
        None => "inventory.unknown",
    };
    model.locale.t(key).to_string()
}

/// A cell of `column` for `h`, and its style (health readings coloured by their verdict).
fn cell(model: &Model, h: &Host, column: Column) -> (String, Style) {
    let theme = &model.theme;
    let text = match column {
        Column::Name => return (h.name.clone(), Style::default()),
        Column::Address => address(model, h),
        Column::State => {
            model.host_run_state(&h.name).map(|s| super::run_report::state_text(model, s)).unwrap_or_default()
        }
        Column::Load | Column::Disk | Column::Mem => {
            let style = match model.health.get(&h.name).and_then(|r| r.of(column)) {
                Some((_, HealthLevel::Ok)) => theme.health_ok,
                Some((_, HealthLevel::Warn)) => theme.health_warn,
                Some((_, HealthLevel::Crit)) => theme.health_crit,
                None => theme.dim,
            };
            return (crate::app::inventory::health_text(model, h, column), style);
        }
        Column::LastError => model
            .host_errors
            .get(&h.name)
            .map(|e| format!("{} {}", model.locale.t(e.failure.key()), short_time(&e.at)))
            .unwrap_or_default(),
        Column::Tags => h.tags.join(","),
        Column::User => h.username.clone().unwrap_or_default(),
        Column::Elevation => h.elevation.as_str().to_string(),
        Column::LastCheck => {
            model.last_check(h).map(short_time).unwrap_or_else(|| model.locale.t("inventory.never").to_string())
        }
    };
    (text, theme.dim)
}

/// Whether a cell says nothing (an empty text, or a reading never taken).
fn blank(text: &str) -> bool {
    text.is_empty() || text == "–"
}

/// `text` cut to `width` characters, the last one `…` when cut.
fn fit(text: String, width: usize) -> String {
    if text.chars().count() <= width {
        return text;
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Widest a column grows for its values (its header is never cut).
const MAX_WIDTH: usize = 24;

/// Rows the detail panel takes (its borders and ten fields).
pub const DETAILS_HEIGHT: u16 = 12;

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let count = model.inventory.len();
    // "…" while a worker answers a newer filter than the one listed.
    let busy = if model.inventory.pending.is_some() { "…" } else { "" };
    let mut title = format!(" {} · {}{busy} ", model.locale.t("pane.inventory"), count);
    if !model.inventory.marked.is_empty() {
        let marked = model.locale.tf("inventory.marked", &[("count", &model.inventory.marked.len().to_string())]);
        title.push_str(&format!("· {marked} "));
    }
    let mut block = pane_block(model, Pane::Inventory, title);
    if model.inventory.filtering || !model.inventory.filter.is_empty() {
        let cursor = if model.inventory.filtering { "▏" } else { "" };
        block =
            block.title_bottom(Line::from(format!(" /{}{cursor} ", model.inventory.filter)).style(model.theme.accent));
    }
    let table_area = block.inner(area);
    frame.render_widget(block, area);
    // The rows on screen: the cursor's row stays in view, at the bottom once it is past the
    // first screenful (as the table scrolled when it was given every row).
    let body = usize::from(table_area.height.saturating_sub(1)).max(1);
    let first = (model.inventory.cursor + 1).saturating_sub(body);
    let hosts = model.inventory.window(first, body);
    let theme = &model.theme;
    // The chosen columns join while they fit, each as wide as its values (up to MAX_WIDTH) and
    // never narrower than its header in the language shown; the name column is always there.
    let sorted_by = model.inventory.sort.map(|s| s.column);
    let mut used = 2;
    let mut columns: Vec<(Column, String, usize)> = Vec::new();
    for &column in &model.inventory.columns {
        let texts: Vec<String> = hosts.iter().map(|h| cell(model, h, column).0).collect();
        // A column nobody on screen has a value for (no user set anywhere) is left out, unless the
        // table is ordered by it.
        let required = column == Column::Name || sorted_by == Some(column);
        if !required && texts.iter().all(|t| blank(t)) {
            continue;
        }
        let header = crate::app::inventory::header(model, column);
        let header_width = header.chars().count();
        let values = texts.iter().map(|t| t.chars().count()).max().unwrap_or(0);
        let wanted = if column == Column::Name { values } else { values.min(MAX_WIDTH) }.max(header_width);
        let room = usize::from(table_area.width).saturating_sub(used + 1);
        // Columns come in the order chosen: once one does not fit even cut to its header, the rest
        // are left out.
        let width = wanted.min(room);
        if width < header_width && column != Column::Name {
            break;
        }
        used += 1 + width;
        columns.push((column, header, width));
    }
    let rows: Vec<Row> = hosts
        .iter()
        .map(|h| {
            let (dot, style) = match model.reachable(h) {
                Some(true) => ("●", theme.ok),
                // Not only a colour: NO_COLOR and 16-colour terminals still tell them apart.
                Some(false) => ("✗", theme.error),
                None => ("○", theme.dim),
            };
            let mark = if model.inventory.marked.contains(&h.name) { "▸" } else { " " };
            let mut cells =
                vec![Cell::from(Line::from(vec![Span::styled(mark, theme.accent), Span::styled(dot, style)]))];
            cells.extend(columns.iter().map(|(column, _, width)| {
                let (text, style) = cell(model, h, *column);
                Cell::from(Span::styled(fit(text, *width), style))
            }));
            Row::new(cells)
        })
        .collect();
    let empty = rows.is_empty();
    let to16 = |w: usize| u16::try_from(w).unwrap_or(u16::MAX);
    let mut widths = vec![Constraint::Length(2)];
    widths.extend(columns.iter().map(|(_, _, w)| Constraint::Length(to16(*w))));
    let mut header = vec![Cell::from("")];
    header.extend(columns.into_iter().map(|(_, text, _)| Cell::from(text)));
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(theme.dim.add_modifier(ratatui::style::Modifier::UNDERLINED)))
        .column_spacing(1)
        .row_highlight_style(if model.focus == Pane::Inventory { theme.selected } else { theme.dim });
    let selected = model.inventory.cursor.saturating_sub(first);
    let mut state = TableState::default().with_selected((!empty).then_some(selected));
    frame.render_stateful_widget(table, table_area, &mut state);
    if model.inventory.details
        && let Some(host) = model.current_host()
    {
        // Next to the cursor's row: below it, or above it when there is no room below.
        let height = DETAILS_HEIGHT.min(table_area.height.saturating_sub(2));
        let row_y = table_area.y + 1 + u16::try_from(selected).unwrap_or(0);
        let below = table_area.bottom().saturating_sub(row_y + 1);
        let y = if below >= height { row_y + 1 } else { row_y.saturating_sub(height).max(table_area.y) };
        let rect = Rect { x: table_area.x, y, width: table_area.width, height };
        frame.render_widget(Clear, rect);
        draw_details(model, host, frame, rect);
    }
}

/// Every field of the host under the cursor.
fn draw_details(model: &Model, h: &Host, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    // Labels as wide as the longest in the language shown, and a space before the value.
    const LABELS: [&str; 10] = [
        "col.name",
        "col.address",
        "col.user",
        "col.tags",
        "form.jump",
        "inventory.identity",
        "col.elevation",
        "col.reachable",
        "col.last_check",
        "col.last_error",
    ];
    let label_width = LABELS.iter().map(|k| model.locale.t(k).chars().count()).max().unwrap_or(11) + 1;
    let field = |key: &str, value: String| {
        let label = format!("{:<label_width$}", model.locale.t(key));
        Line::from(vec![Span::styled(label, theme.dim), Span::raw(value)])
    };
    let lines = vec![
        field("col.name", h.name.clone()),
        field("col.address", address(model, h)),
        field("col.user", h.username.clone().unwrap_or_else(|| "-".into())),
        field("col.tags", if h.tags.is_empty() { "-".into() } else { h.tags.join(", ") }),
        field("form.jump", h.jump.clone().unwrap_or_else(|| "-".into())),
        field("inventory.identity", h.identity_file.clone().unwrap_or_else(|| "-".into())),
        field("col.elevation", h.elevation.as_str().to_string()),
        field("col.reachable", reachable_text(model, h)),
        field(
            "col.last_check",
            model.last_check(h).map(String::from).unwrap_or_else(|| model.locale.t("inventory.never").to_string()),
        ),
        field(
            "col.last_error",
            model
                .host_errors
                .get(&h.name)
                .map(|e| format!("{} · {} · {}", short_time(&e.at), model.locale.t(e.failure.key()), e.message))
                .unwrap_or_else(|| "-".into()),
        ),
    ];
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(theme.accent)
        .title(format!(" {} ", model.locale.t("inventory.details")));
    frame.render_widget(Paragraph::new(lines).block(block).wrap(ratatui::widgets::Wrap { trim: false }), area);
}

/// The output's host picker: every host, then each host with output.
pub fn draw_host_picker(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let hosts = model.output.hosts();
    let mut items =
        vec![ListItem::new(Line::styled(format!(" {} ", model.locale.t("output.all_hosts")), theme.accent))];
    items.extend(hosts.iter().map(|h| ListItem::new(Line::raw(format!(" {} ", crate::term_safe::visible_line(h))))));
    let height = u16::try_from(items.len()).unwrap_or(12).min(14) + 2;
    let width = hosts.iter().map(|h| h.chars().count()).max().unwrap_or(10).clamp(16, 40) as u16 + 4;
    let rect = super::centered(area, width, height);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.accent)
        .title(format!(" {} ", model.locale.t("output.hosts_title")));
    let mut state = ListState::default().with_selected(model.output_view.host_picker);
    frame.render_widget(Clear, rect);
    frame.render_stateful_widget(List::new(items).block(block).highlight_style(theme.selected), rect, &mut state);
}

/// The tag picker over the inventory: each tag with its host count.
pub fn draw_tag_picker(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let tags = model.tags();
    let items: Vec<ListItem> = tags
        .iter()
        .map(|(t, n)| {
            ListItem::new(Line::from(vec![Span::raw(format!(" @{t} ")), Span::styled(format!("{n}"), theme.dim)]))
        })
        .collect();
    let height = u16::try_from(tags.len()).unwrap_or(10).min(12) + 2;
    let rect = super::centered(area, 30, height);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.accent)
        .title(format!(" {} ", model.locale.t("inventory.tags_title")));
    let mut state = ListState::default().with_selected(model.inventory.tag_picker);
    frame.render_widget(Clear, rect);
    frame.render_stateful_widget(List::new(items).block(block).highlight_style(theme.selected), rect, &mut state);
}

/// The order or column picker over the inventory.
pub fn draw_picker(model: &Model, frame: &mut Frame, area: Rect) {
    use crate::app::inventory::Picker;
    let Some((picker, cursor)) = model.inventory.picker else { return };
    let theme = &model.theme;
    let rows = picker.rows();
    let texts: Vec<String> = rows
        .iter()
        .map(|row| match (picker, row) {
            (Picker::Order, None) => model.locale.t("inventory.order_none").to_string(),
            (Picker::Order, Some(column)) => crate::app::inventory::header(model, *column),
            (Picker::Columns, Some(column)) => {
                let on = if model.inventory.columns.contains(column) { "[x]" } else { "[ ]" };
                format!("{on} {}", model.locale.t(column.header_key()))
            }
            (Picker::Columns, None) => String::new(),
        })
        .collect();
    let title = match picker {
        Picker::Order => model.locale.t("inventory.order_title"),
        Picker::Columns => model.locale.t("inventory.columns_title"),
    };
    let widest = texts.iter().map(|t| t.chars().count()).max().unwrap_or(10).max(title.chars().count() + 2);
    let width = u16::try_from(widest).unwrap_or(30).clamp(18, 40) + 4;
    let height = u16::try_from(rows.len()).unwrap_or(12).min(14) + 2;
    let rect = super::centered(area, width, height);
    let block = Block::default().borders(Borders::ALL).border_style(theme.accent).title(format!(" {title} "));
    let items: Vec<ListItem> = texts.into_iter().map(|t| ListItem::new(Line::raw(format!(" {t} ")))).collect();
    let mut state = ListState::default().with_selected(Some(cursor));
    frame.render_widget(Clear, rect);
    frame.render_stateful_widget(List::new(items).block(block).highlight_style(theme.selected), rect, &mut state);
}
