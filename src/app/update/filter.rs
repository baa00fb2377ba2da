//! Keeps what the inventory lists in step with the filter and the newest
//! fleet, after every message. Small work is done at once; a scan too large
//! for a frame becomes a job for a worker, and only the newest job's answer
//! is taken (the previous answer stays listed until then).

use std::sync::Arc;

use super::panes::clamp_cursor;
use crate::app::fleet::{self, FilterJob, Shown};
use crate::app::model::Model;
use crate::app::msg::Effect;

/// Hosts the loop itself may score for one change of the filter: a few
/// milliseconds at worst, so the frame after a keystroke is not late.
pub const SYNC_LIMIT: usize = 10_000;

/// Earlier answers kept (each at most 4 bytes a host).
const ANSWERS_KEPT: usize = 16;

/// Brings `inventory.shown` in line with `inventory.filter` over `hosts`.
pub(super) fn follow(model: &mut Model) -> Vec<Effect> {
    let inventory = &model.inventory;
    let fleet = &model.hosts;
    let current = |query: &str, of: &Arc<fleet::Fleet>| query == inventory.filter && Arc::ptr_eq(of, fleet);
    if current(&inventory.shown.query, &inventory.shown.fleet) {
        model.inventory.pending = None;
        return Vec::new();
    }
    if inventory.pending.as_ref().is_some_and(|(_, query, of)| current(query, of)) {
        return Vec::new();
    }
    if inventory.filter.trim().is_empty() {
        // No filter: every host, no work. (The text stays as typed, spaces included.)
        let mut shown = Shown::all(fleet.clone());
        shown.query = inventory.filter.clone();
        return install(model, shown);
    }
    if let Some(i) = inventory.answers.iter().position(|a| current(&a.query, &a.fleet)) {
        return match model.inventory.answers.remove(i) {
            Some(answer) => install(model, answer),
            None => Vec::new(),
        };
    }
    // The smallest earlier answer over this fleet that holds every host the filter keeps.
    let within = std::iter::once(&inventory.shown)
        .chain(inventory.answers.iter())
        .filter(|a| Arc::ptr_eq(&a.fleet, fleet) && fleet::narrows(&a.query, &inventory.filter))
        .filter_map(|a| a.rows.clone())
        .min_by_key(|rows| rows.len());
    let work = within.as_ref().map_or(fleet.len(), |rows| rows.len());
    let job = FilterJob { id: inventory.jobs + 1, fleet: fleet.clone(), query: inventory.filter.clone(), within };
    if work <= SYNC_LIMIT {
        let rows = fleet::filter(&job.fleet, &job.query, job.within.as_deref(), &|| false).unwrap_or_default();
        return install(model, Shown { fleet: job.fleet, query: job.query, rows: Some(rows.into()) });
    }
    model.inventory.jobs = job.id;
    model.inventory.pending = Some((job.id, job.query.clone(), job.fleet.clone()));
    vec![Effect::Filter(job)]
}

/// A worker's answer to job `id`: listed if it is the newest job's.
pub(super) fn on_filtered(model: &mut Model, id: u64, shown: Shown) -> Vec<Effect> {
    if model.inventory.pending.as_ref().is_some_and(|(pending, _, _)| *pending == id) {
        model.inventory.pending = None;
        return install(model, shown);
    }
    Vec::new()
}

/// Lists `shown`; the answer it replaces is kept for later when it is about the current fleet.
fn install(model: &mut Model, shown: Shown) -> Vec<Effect> {
    let old = std::mem::replace(&mut model.inventory.shown, shown);
    model.inventory.pending = None;
    model.inventory.order = None;
    clamp_cursor(model);
    if Arc::ptr_eq(&old.fleet, &model.hosts) {
        if old.rows.is_some() {
            let answers = &mut model.inventory.answers;
            answers.retain(|a| a.query != old.query);
            answers.push_back(old);
            while answers.len() > ANSWERS_KEPT {
                answers.pop_front();
            }
        }
        return Vec::new();
    }
    match Arc::ptr_eq(&old.fleet, &model.inventory.shown.fleet) {
        true => Vec::new(),
        false => vec![Effect::Discard(old.fleet)],
    }
}
