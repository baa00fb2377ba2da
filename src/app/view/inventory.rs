//! The inventory pane: a table of hosts (reachability dot, name, address,
//! then user, tags, elevation and last check as the width allows), marks and
//! the filter; the detail panel of the host under the cursor; the tag picker.
//!
//! Only the rows on screen are built, and column widths fit them: a frame
//! costs the same for 10 hosts as for 200,000.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, List, ListItem, ListState, Paragraph, Row, Table, TableState};

use super::pane_block;
use crate::app::model::{Model, Pane};
use crate::inventory::Host;

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

/// An optional column: its header's locale key and how to fill a cell.
type Column = (&'static str, fn(&Model, &Host) -> String);

const OPTIONAL: [Column; 6] = [
    ("col.state", |m, h| m.host_run_state(&h.name).map(|s| super::run_report::state_text(m, s)).unwrap_or_default()),
    ("col.last_error", |m, h| {
        m.host_errors
            .get(&h.name)
            .map(|e| format!("{} {}", m.locale.t(e.failure.key()), short_time(&e.at)))
            .unwrap_or_default()
    }),
    ("col.tags", |_, h| h.tags.join(",")),
    ("col.user", |_, h| h.username.clone().unwrap_or_default()),
    ("col.elevation", |_, h| h.elevation.as_str().to_string()),
    ("col.last_check", |m, h| {
        m.last_check(h).map(short_time).unwrap_or_else(|| m.locale.t("inventory.never").to_string())
    }),
];

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let shown = &model.inventory.shown;
    // "…" while a worker answers a newer filter than the one listed.
    let busy = if model.inventory.pending.is_some() { "…" } else { "" };
    let mut title = format!(" {} · {}{busy} ", model.locale.t("pane.inventory"), shown.len());
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
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let (table_area, detail_area) = if model.inventory.details {
        let [t, d] = Layout::vertical([Constraint::Min(3), Constraint::Length(12)]).areas(inner);
        (t, Some(d))
    } else {
        (inner, None)
    };
    // The rows on screen: the cursor's row stays in view, at the bottom once it is past the
    // first screenful (as the table scrolled when it was given every row).
    let body = usize::from(table_area.height.saturating_sub(1)).max(1);
    let first = (model.inventory.cursor + 1).saturating_sub(body);
    let hosts = shown.window(first, body);
    let theme = &model.theme;
    let width_of = |texts: &mut dyn Iterator<Item = String>, header: &str| {
        texts.map(|t| t.chars().count()).max().unwrap_or(0).max(header.chars().count())
    };
    let name_header = model.locale.t("col.name").to_string();
    let address_header = model.locale.t("col.address").to_string();
    let name_width = width_of(&mut hosts.iter().map(|h| h.name.clone()), &name_header);
    let address_width = width_of(&mut hosts.iter().map(|h| address(model, h)), &address_header);
    // Optional columns join while they fit.
    // Mark column, name, address, with one space between columns.
    let mut used = 2 + 1 + name_width + 1 + address_width;
    let mut columns: Vec<(&Column, usize)> = Vec::new();
    for column in &OPTIONAL {
        // A column nobody has a value for (no user set anywhere) is left out.
        if hosts.iter().all(|h| (column.1)(model, h).is_empty()) {
            continue;
        }
        let header = model.locale.t(column.0).to_string();
        let w = width_of(&mut hosts.iter().map(|h| (column.1)(model, h)), &header).min(24);
        // Columns come in order of importance: once one does not fit, the rest are left out.
        let room = usize::from(table_area.width).saturating_sub(used + 1);
        if w > room {
            // The first column that does not fit still shows, cut, when there is some room.
            if room >= 6 {
                columns.push((column, room));
            }
            break;
        }
        used += 1 + w;
        columns.push((column, w));
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
            let mut cells = vec![
                Cell::from(Line::from(vec![Span::styled(mark, theme.accent), Span::styled(dot, style)])),
                Cell::from(h.name.clone()),
                Cell::from(Span::styled(address(model, h), theme.dim)),
            ];
            cells.extend(columns.iter().map(|(c, _)| Cell::from(Span::styled((c.1)(model, h), theme.dim))));
            Row::new(cells)
        })
        .collect();
    let empty = rows.is_empty();
    let to16 = |w: usize| u16::try_from(w).unwrap_or(u16::MAX);
    let mut widths =
        vec![Constraint::Length(2), Constraint::Length(to16(name_width)), Constraint::Length(to16(address_width))];
    widths.extend(columns.iter().map(|(_, w)| Constraint::Length(to16(*w))));
    let mut header = vec![Cell::from(""), Cell::from(name_header), Cell::from(address_header)];
    header.extend(columns.iter().map(|(c, _)| Cell::from(model.locale.t(c.0).to_string())));
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(theme.dim.add_modifier(ratatui::style::Modifier::UNDERLINED)))
        .column_spacing(1)
        .row_highlight_style(if model.focus == Pane::Inventory { theme.selected } else { theme.dim });
    let mut state = TableState::default().with_selected((!empty).then_some(model.inventory.cursor - first));
    frame.render_stateful_widget(table, table_area, &mut state);
    if let (Some(area), Some(host)) = (detail_area, model.current_host()) {
        draw_details(model, host, frame, area);
    }
}

/// Every field of the host under the cursor.
fn draw_details(model: &Model, h: &Host, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let field = |key: &str, value: String| {
        Line::from(vec![Span::styled(format!("{:<12}", model.locale.t(key)), theme.dim), Span::raw(value)])
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
        .borders(Borders::TOP)
        .border_style(theme.dim)
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
