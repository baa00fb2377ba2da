//! The inventory pane: a table of hosts (reachability dot, then the chosen
//! columns as the width allows, health readings coloured by their verdict, the
//! order's arrow in its header), marks and the filter; the detail panel of the
//! host under the cursor, next to its row; the tag, order and column pickers.
//!
//! Only the rows on screen are built, and column widths fit them: a frame
//! costs the same for 10 hosts as for 200,000.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, List, ListItem, ListState, Paragraph, Row, Table, TableState};

use super::pane_block;
use crate::app::inventory_table::{self as table, address, short_time};
use crate::app::model::{Model, Pane};
use crate::inventory::Host;

fn reachable_text(model: &Model, h: &Host) -> String {
    let key = match model.reachable(h) {
        Some(true) => "inventory.yes",
        Some(false) => "inventory.no",
        None => "inventory.unknown",
    };
    model.locale.t(key).to_string()
}

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
    // The rows on screen, and the columns that fit them (the same in every language).
    let body = usize::from(table_area.height.saturating_sub(1));
    let (first, hosts) = table::on_screen(model, body);
    let theme = &model.theme;
    let columns = table::plan(model, &hosts, usize::from(table_area.width));
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
            cells.extend(columns.iter().map(|c| {
                let (text, style) = table::cell(model, h, c.column);
                Cell::from(Span::styled(table::fit(text, c.width), style))
            }));
            Row::new(cells)
        })
        .collect();
    let empty = rows.is_empty();
    let to16 = |w: usize| u16::try_from(w).unwrap_or(u16::MAX);
    let mut widths = vec![Constraint::Length(2)];
    widths.extend(columns.iter().map(|c| Constraint::Length(to16(c.width))));
    let mut header = vec![Cell::from("")];
    header.extend(columns.into_iter().map(|c| Cell::from(c.header)));
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
    // As wide as its title or its widest name (long names cut at 40), within the screen.
    let title = model.locale.t("output.hosts_title");
    let names = hosts.iter().map(|h| h.chars().count()).max().unwrap_or(10).clamp(16, 40);
    let width = u16::try_from(names.max(title.chars().count()) + 4).unwrap_or(u16::MAX);
    let rect = super::centered(area, width, height);
    let block = Block::default().borders(Borders::ALL).border_style(theme.accent).title(format!(" {title} "));
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
