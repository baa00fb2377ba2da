//! What the inventory table shows: each cell's text, which columns are drawn and how wide, and
//! the width the table would like (the layout gives the pane up to half a wide screen for it).
//!
//! Which columns are drawn depends on the rows on screen and the width only, never on the
//! language: a column is sized from its values and a minimum that is the same in every language,
//! a header wider than its column is cut with `…`, and headers grow whole only into room left
//! over. The column the table is ordered by comes right after the name: it is always drawn, its
//! arrow with it, so rows are never reordered by a column that cannot be seen.

use ratatui::style::Style;

use super::model::Model;
use crate::exec::runs::HostState;
use crate::inventory::Host;
use crate::inventory::columns::Column;
use crate::store::host_health::HealthLevel;

/// Widest a column grows for its values (the name column excepted).
pub const MAX_WIDTH: usize = 24;

/// Narrowest a column is drawn, and the room a column that does not fit whole needs to be drawn at
/// all: the same in every language, so that the columns shown do not change with it.
pub const MIN_WIDTH: usize = 5;

/// The mark and reachability dot before the first column.
const LEAD: usize = 2;

/// A column as drawn: its header (cut to `width` when wider) and its width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The column.
    pub column: Column,
    /// Its header in the language shown, the order's arrow kept when cut.
    pub header: String,
    /// Its width in cells.
    pub width: usize,
}

/// A host's state as a glyph and a word ("✗ exit 2", "⏱ timed out").
pub fn state_text(model: &Model, state: HostState) -> String {
    match state {
        HostState::Exited(code) => {
            format!("{} {}", state.glyph(), model.locale.tf("output.exit", &[("code", &code.to_string())]))
        }
        other => format!("{} {}", other.glyph(), model.locale.t(other.key())),
    }
}

/// `hostname:port`, or "local" for this machine.
pub fn address(model: &Model, h: &Host) -> String {
    if h.is_local() { model.locale.t("inventory.local").to_string() } else { format!("{}:{}", h.hostname, h.port) }
}

/// `2026-11-22T08:00:00Z` → `11-22 08:00`.
pub fn short_time(at: &str) -> String {
    match (at.get(5..10), at.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time}"),
        _ => at.to_string(),
    }
}

/// A cell of `column` for `h`, and its style (health readings coloured by their verdict).
pub fn cell(model: &Model, h: &Host, column: Column) -> (String, Style) {
    let theme = &model.theme;
    let text = match column {
        Column::Name => return (h.name.clone(), Style::default()),
        Column::Address => address(model, h),
        Column::State => model.host_run_state(&h.name).map(|s| state_text(model, s)).unwrap_or_default(),
        Column::Load | Column::Disk | Column::Mem => {
            let style = match model.health.get(&h.name).and_then(|r| r.of(column)) {
                Some((_, HealthLevel::Ok)) => theme.health_ok,
                Some((_, HealthLevel::Warn)) => theme.health_warn,
                Some((_, HealthLevel::Crit)) => theme.health_crit,
                None => theme.dim,
            };
            return (super::inventory::health_text(model, h, column), style);
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
pub fn fit(text: String, width: usize) -> String {
    if text.chars().count() <= width {
        return text;
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The header of `column` cut to `width`; the order's arrow stays at its end.
fn fit_header(model: &Model, column: Column, width: usize) -> String {
    let header = super::inventory::header(model, column);
    if header.chars().count() <= width {
        return header;
    }
    match model.inventory.sort {
        Some(sort) if sort.column == column && width >= 1 => {
            let arrow = if sort.descending { '▼' } else { '▲' };
            let word = model.locale.t(column.header_key()).to_string();
            let mut cut = fit(word, width - 1);
            if width == 1 {
                cut.clear();
            }
            cut.push(arrow);
            cut
        }
        _ => fit(header, width),
    }
}

/// The hosts on screen in a table `body` rows high: the cursor's row stays in view, at the bottom
/// once it is past the first screenful. Returns the first row's index and the hosts.
pub fn on_screen(model: &Model, body: usize) -> (usize, Vec<&Host>) {
    let body = body.max(1);
    let first = (model.inventory.cursor + 1).saturating_sub(body);
    (first, model.inventory.window(first, body))
}

/// A column that has something to show, with the width its values ask for (bounded by
/// [`MIN_WIDTH`] and [`MAX_WIDTH`], whatever the language) and its header's width.
struct Candidate {
    column: Column,
    base: usize,
    /// The least it is drawn at: its whole values, or [`MIN_WIDTH`] of them.
    least: usize,
    header: usize,
}

/// The chosen columns, in order, that have a value on screen: a column nobody on screen has a
/// value for (no user set anywhere) is left out, unless it is the name or the table is ordered by it.
fn candidates(model: &Model, hosts: &[&Host]) -> Vec<Candidate> {
    let sorted_by = model.inventory.sort.map(|s| s.column);
    let mut out = Vec::new();
    for &column in &model.inventory.columns {
        let texts: Vec<String> = hosts.iter().map(|h| cell(model, h, column).0).collect();
        let required = column == Column::Name || sorted_by == Some(column);
        if !required && texts.iter().all(|t| blank(t)) {
            continue;
        }
        let values = texts.iter().map(|t| t.chars().count()).max().unwrap_or(0);
        let base = if column == Column::Name { values } else { values.min(MAX_WIDTH) }.max(MIN_WIDTH);
        let least = values.clamp(1, MIN_WIDTH);
        out.push(Candidate { column, base, least, header: super::inventory::header(model, column).chars().count() });
    }
    out
}

/// The width (borders included) the inventory pane would like for `hosts`: every column with a
/// value, whole, headers whole.
pub fn wanted_width(model: &Model, hosts: &[&Host]) -> usize {
    2 + LEAD + candidates(model, hosts).iter().map(|c| 1 + c.base.max(c.header)).sum::<usize>()
}

/// The columns drawn for `hosts` in a table `width` cells wide, in the chosen order.
///
/// They are taken by priority (the name, then the column the table is ordered by, then the rest
/// in the chosen order), each as wide as its values (at least [`MIN_WIDTH`]) or what is left; once
/// a column does not get [`MIN_WIDTH`] (or its whole values when narrower), the rest are left out. The name and the
/// ordered-by column are always drawn. Room left over then widens headers to be whole.
pub fn plan(model: &Model, hosts: &[&Host], width: usize) -> Vec<Planned> {
    let candidates = candidates(model, hosts);
    let sorted_by = model.inventory.sort.map(|s| s.column).filter(|c| *c != Column::Name);
    let rank = |c: Column| match c {
        Column::Name => 0,
        c if Some(c) == sorted_by => 1,
        _ => 2,
    };
    let mut by_priority: Vec<usize> = (0..candidates.len()).collect();
    by_priority.sort_by_key(|&i| rank(candidates[i].column));
    let avail = width.saturating_sub(LEAD);
    // Room kept for the ordered-by column while the name takes its share.
    let kept = if sorted_by.is_some() { 1 + MIN_WIDTH } else { 0 };
    let mut widths: Vec<Option<usize>> = vec![None; candidates.len()];
    let mut used = 0;
    for i in by_priority {
        let c = &candidates[i];
        let room = avail.saturating_sub(used + 1);
        let w = match rank(c.column) {
            0 => c.base.min(room.saturating_sub(kept).max(room.min(MIN_WIDTH))),
            1 => c.base.min(room),
            _ => {
                let w = c.base.min(room);
                if w < c.least {
                    break;
                }
                w
            }
        };
        used += 1 + w;
        widths[i] = Some(w);
    }
    let mut spare = avail.saturating_sub(used);
    candidates
        .iter()
        .zip(widths)
        .filter_map(|(c, w)| {
            let mut w = w?;
            let grow = c.header.saturating_sub(w).min(spare);
            w += grow;
            spare -= grow;
            Some(Planned { column: c.column, header: fit_header(model, c.column, w), width: w })
        })
        .collect()
}
