//! The inventory table's order ("order by", ascending or descending), its pickers (order, columns)
//! and each host's last health readings. The order is computed once when it is chosen, when the
//! filter's answer or the fleet changes, or when readings arrive — not per frame, and not as a run
//! moves a host's state (rows do not jump under the cursor while a command runs).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use super::fleet::{Fleet, Shown};
use super::model::Model;
use crate::inventory::Host;
use crate::inventory::columns::Column;
use crate::store::host_health::{HealthCheck, HealthLevel, HealthReading};

/// Inventory pane state.
#[derive(Debug, Clone, Default)]
pub struct InventoryState {
    /// Row under the cursor, among the filtered hosts.
    pub cursor: usize,
    /// Names of marked hosts.
    pub marked: BTreeSet<String>,
    /// Current filter text.
    pub filter: String,
    /// Whether keys go to the filter.
    pub filtering: bool,
    /// Whether the detail panel of the host under the cursor is open.
    pub details: bool,
    /// The tag picker, open with its cursor.
    pub tag_picker: Option<usize>,
    /// What is listed: the answer of the filter (or of the one before, while
    /// a worker answers a large fleet's).
    pub shown: Shown,
    /// The filter job a worker is answering (its number, query and fleet), if any.
    pub pending: Option<(u64, String, Arc<Fleet>)>,
    /// Filter jobs started so far (the newest's number).
    pub jobs: u64,
    /// Recent answers over the current fleet, newest last: erasing a character
    /// lists the answer typed before again, and a query is narrowed from the
    /// smallest answer it narrows.
    pub answers: VecDeque<Shown>,
    /// The column the table is ordered by (`None`: the filter's order).
    pub sort: Option<Sort>,
    /// `shown` in `sort`'s order, as fleet indices (`None`: not ordered, or to compute again).
    pub order: Option<Arc<[u32]>>,
    /// The columns shown, in order (`ui.inventory_columns`, changed by the column picker).
    pub columns: Vec<crate::inventory::columns::Column>,
    /// The order or column picker, open on a row.
    pub picker: Option<(Picker, usize)>,
}

impl InventoryState {
    /// How many hosts are listed.
    pub fn len(&self) -> usize {
        self.shown.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.shown.is_empty()
    }

    /// The `i`th host listed, in the table's order.
    pub fn row(&self, i: usize) -> Option<&Host> {
        match &self.order {
            Some(order) if order.len() == self.shown.len() => {
                order.get(i).and_then(|&r| self.shown.fleet.get(r as usize))
            }
            _ => self.shown.get(i),
        }
    }

    /// The hosts listed from the `start`th, at most `count`, in the table's order.
    pub fn window(&self, start: usize, count: usize) -> Vec<&Host> {
        (start..self.len().min(start.saturating_add(count))).filter_map(|i| self.row(i)).collect()
    }
}

/// The column the inventory is ordered by, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    /// The column.
    pub column: Column,
    /// Largest (or latest, or worst) first.
    pub descending: bool,
}

/// A small list over the inventory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Picker {
    /// "Order by": inventory order, then each column (again on the current one reverses it).
    Order,
    /// Columns shown this session, each toggled on or off.
    Columns,
}

impl Picker {
    /// Its rows: `None` (inventory order, the order picker's first row) then the columns.
    pub fn rows(self) -> Vec<Option<Column>> {
        match self {
            Picker::Order => std::iter::once(None).chain(Column::ALL.map(Some)).collect(),
            // The name column is always shown: not offered.
            Picker::Columns => Column::ALL.into_iter().filter(|c| *c != Column::Name).map(Some).collect(),
        }
    }
}

/// A host's newest readings (value and verdict), from the last runbook that read them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Health {
    /// 1-minute load per core.
    pub load: Option<(f64, HealthLevel)>,
    /// The fullest mount, in %.
    pub disk: Option<(f64, HealthLevel)>,
    /// Memory in use, in %.
    pub memory: Option<(f64, HealthLevel)>,
}

impl Health {
    /// The reading a health column shows.
    pub fn of(&self, column: Column) -> Option<(f64, HealthLevel)> {
        match column {
            Column::Load => self.load,
            Column::Disk => self.disk,
            Column::Mem => self.memory,
            _ => None,
        }
    }
}

/// Readings from the store, by host.
pub fn by_host(readings: Vec<HealthReading>) -> BTreeMap<String, Health> {
    let mut out: BTreeMap<String, Health> = BTreeMap::new();
    for r in readings {
        let health = out.entry(r.host).or_default();
        let slot = match r.check {
            HealthCheck::Load => &mut health.load,
            HealthCheck::Disk => &mut health.disk,
            HealthCheck::Memory => &mut health.memory,
        };
        *slot = Some((r.value, r.level));
    }
    out
}

/// A health value as shown: load with two decimals, percentages whole; `–` when never read.
pub fn health_text(model: &Model, host: &Host, column: Column) -> String {
    match model.health.get(&host.name).and_then(|h| h.of(column)) {
        Some((v, _)) if column == Column::Load => format!("{v:.2}"),
        Some((v, _)) => format!("{v:.0}%"),
        None => "–".to_string(),
    }
}

/// What a row is ordered by in `column`: a number, a text, or nothing (always last). Texts are
/// borrowed from the host when already in lower case (most names): a 200,000-host fleet is ordered
/// without a copy of each name.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Key<'a> {
    Number(f64),
    Text(Cow<'a, str>),
}

fn text(s: Cow<'_, str>) -> Option<Key<'_>> {
    if s.is_empty() {
        return None;
    }
    Some(Key::Text(if s.chars().any(char::is_uppercase) { Cow::Owned(s.to_lowercase()) } else { s }))
}

fn key<'a>(model: &'a Model, host: &'a Host, column: Column) -> Option<Key<'a>> {
    match column {
        Column::Name => text(Cow::Borrowed(&host.name)),
        Column::Address => text(Cow::Owned(format!("{}:{:05}", host.hostname, host.port))),
        // Worse states sort higher: failed, exited, then running, pending and ok.
        Column::State => model.host_run_state(&host.name).map(|s| {
            use crate::exec::runs::HostState;
            Key::Number(match s {
                HostState::Ok => 0.0,
                HostState::Pending => 1.0,
                HostState::Running => 2.0,
                HostState::Exited(_) => 3.0,
                HostState::Failed(_) => 4.0,
            })
        }),
        Column::Load | Column::Disk | Column::Mem => {
            model.health.get(&host.name).and_then(|h| h.of(column)).map(|(v, _)| Key::Number(v))
        }
        Column::LastError => model.host_errors.get(&host.name).and_then(|e| text(Cow::Borrowed(&e.at))),
        Column::Tags => text(Cow::Owned(host.tags.join(","))),
        Column::User => host.username.as_deref().and_then(|u| text(Cow::Borrowed(u))),
        Column::Elevation => text(Cow::Borrowed(host.elevation.as_str())),
        Column::LastCheck => model.last_check(host).and_then(|at| text(Cow::Borrowed(at))),
    }
}

/// The listed hosts (as fleet indices) in `sort`'s order: hosts without a value last whichever way,
/// ties in the filter's order.
pub fn ordered(model: &Model, sort: Sort) -> Arc<[u32]> {
    let shown = &model.inventory.shown;
    let mut rows: Vec<(Option<Key>, usize, u32)> = (0..shown.len())
        .filter_map(|i| {
            let index = shown.index(i)?;
            let host = shown.fleet.get(index as usize)?;
            Some((key(model, host, sort.column), i, index))
        })
        .collect();
    rows.sort_by(|(a, ai, _), (b, bi, _)| {
        let by_key = match (a, b) {
            (Some(a), Some(b)) => {
                let o = a.partial_cmp(b).unwrap_or(Ordering::Equal);
                if sort.descending { o.reverse() } else { o }
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        by_key.then(ai.cmp(bi))
    });
    rows.into_iter().map(|(_, _, index)| index).collect()
}

/// Brings the order in line with the sort, the listed hosts and the readings (after every message).
pub fn follow(model: &mut Model) {
    if let Some(sort) = model.inventory.sort
        && model.inventory.order.is_none()
    {
        model.inventory.order = Some(ordered(model, sort));
    }
}

/// Orders by `sort` (or the filter's order), keeping the cursor on the same host.
pub fn set_sort(model: &mut Model, sort: Option<Sort>) {
    let under = model.current_host().map(|h| h.name.clone());
    model.inventory.sort = sort;
    model.inventory.order = None;
    follow(model);
    if let Some(name) = under {
        let count = model.inventory.len();
        if let Some(i) = (0..count).find(|&i| model.inventory.row(i).is_some_and(|h| h.name == name)) {
            model.inventory.cursor = i;
        }
    }
}

/// The header of `column` with the order's arrow when the table is ordered by it.
pub fn header(model: &Model, column: Column) -> String {
    let text = model.locale.t(column.header_key()).to_string();
    match model.inventory.sort {
        Some(sort) if sort.column == column => format!("{text}{}", if sort.descending { "▼" } else { "▲" }),
        _ => text,
    }
}
