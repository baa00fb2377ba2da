//! The inventory pane: hosts with reachability, marks and the filter.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table, TableState};

use super::pane_block;
use crate::app::model::{Model, Pane};

pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let hosts = model.visible_hosts();
    let mut title = format!(" {} · {} ", model.locale.t("pane.inventory"), hosts.len());
    if !model.inventory.marked.is_empty() {
        title.push_str(&format!("· {} marked ", model.inventory.marked.len()));
    }
    let mut block = pane_block(model, Pane::Inventory, title);
    if model.inventory.filtering || !model.inventory.filter.is_empty() {
        let cursor = if model.inventory.filtering { "▏" } else { "" };
        block =
            block.title_bottom(Line::from(format!(" /{}{cursor} ", model.inventory.filter)).style(model.theme.accent));
    }
    let theme = &model.theme;
    let rows: Vec<Row> = hosts
        .iter()
        .map(|h| {
            let (dot, style) = match h.reachable {
                Some(true) => ("●", theme.ok),
                Some(false) => ("●", theme.error),
                None => ("○", theme.dim),
            };
            let mark = if model.inventory.marked.contains(&h.name) { "▸" } else { " " };
            let address = if h.is_local() { "local".to_string() } else { format!("{}:{}", h.hostname, h.port) };
            Row::new(vec![
                Cell::from(Line::from(vec![Span::styled(mark, theme.accent), Span::styled(dot, style)])),
                Cell::from(h.name.clone()),
                Cell::from(Span::styled(address, theme.dim)),
                Cell::from(Span::styled(h.tags.join(","), theme.dim)),
            ])
        })
        .collect();
    let empty = rows.is_empty();
    let name_width = hosts.iter().map(|h| h.name.chars().count()).max().unwrap_or(4).max(4);
    let address_width = hosts
        .iter()
        .map(|h| if h.is_local() { 5 } else { h.hostname.chars().count() + 1 + h.port.to_string().len() })
        .max()
        .unwrap_or(5);
    let widths = [
        Constraint::Length(2),
        Constraint::Length(u16::try_from(name_width).unwrap_or(u16::MAX)),
        Constraint::Length(u16::try_from(address_width).unwrap_or(u16::MAX)),
        Constraint::Fill(1),
    ];
    let table = Table::new(rows, widths)
        .block(block)
        .column_spacing(1)
        .row_highlight_style(if model.focus == Pane::Inventory { theme.selected } else { theme.dim });
    let mut state = TableState::default().with_selected((!empty).then_some(model.inventory.cursor));
    frame.render_stateful_widget(table, area, &mut state);
}
