//! A drift check end to end, shared by `merlya baseline|drift` and the drift
//! worker: capture (audited reads), record, compare, filter.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::config::drift::{DriftConfig, IgnoreRule};
use crate::door::Door;
use crate::exec::EventSender;
use crate::inventory::Host;
use crate::store::Store;
use crate::store::baselines::StoredIgnore;

use super::capture::{CapturePlan, capture};
use super::compare::{Report, against_baselines, against_group};
use super::rules::{Filter, Rule};
use super::{Facts, Section};

/// What a host is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Against {
    /// Its own last accepted baseline.
    #[default]
    Baseline,
    /// The majority of the hosts checked together (a tag group).
    Group,
}

/// The capture plan the config asks for.
pub fn plan_of(config: &DriftConfig) -> CapturePlan {
    CapturePlan { paths: config.paths.clone(), contents: config.contents.clone() }
}

/// The filter of a check: the volatile rules, then the config's ignore rules and those operators
/// decided (`stored`), their target expressions resolved against `inventory`.
pub fn filter_for(config: &DriftConfig, stored: &[StoredIgnore], inventory: &[Host]) -> Filter {
    let decided = stored.iter().map(|r| IgnoreRule {
        name: r.name.clone(),
        section: r.section.clone(),
        key: r.key.clone(),
        hosts: r.hosts.clone(),
    });
    let rules: Vec<IgnoreRule> = config.ignore.iter().cloned().chain(decided).collect();
    Filter::new(rules.iter().map(|r| rule_of(r, inventory)).collect())
}

/// The filter of a check of this store's hosts: the config's rules and the stored ones.
pub async fn filter_of(store: &Store, config: &DriftConfig, inventory: &[Host]) -> color_eyre::Result<Filter> {
    Ok(filter_for(config, &store.ignore_rules().await?, inventory))
}

/// An ignore rule as the filter applies it, its target expression resolved against `inventory`.
pub fn rule_of(r: &IgnoreRule, inventory: &[Host]) -> Rule {
    let hosts_of = |expr: &str| -> BTreeSet<String> {
        crate::inventory::resolve_targets(expr, inventory, &[])
            .map(|hosts| hosts.into_iter().map(|h| h.name).collect())
            .unwrap_or_default()
    };
    Rule {
        name: format!("ignore: {}", r.name),
        section: r.section.as_deref().and_then(Section::named),
        key: r.key.clone(),
        hosts: r.hosts.as_deref().map(hosts_of),
    }
}

/// What a capture of many hosts gave.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Captured {
    /// Hosts captured, with how many facts.
    pub hosts: Vec<(String, usize)>,
    /// Hosts that could not be captured, with why.
    pub failed: Vec<(String, String)>,
}

/// Captures `hosts` and records each capture (`accepted`: as its new baseline).
pub async fn capture_and_record(
    door: &Door<'_>,
    hosts: &[Host],
    plan: &CapturePlan,
    accepted: bool,
    events: &EventSender,
) -> color_eyre::Result<(Captured, Vec<(String, Facts)>)> {
    let mut captured = Captured::default();
    let mut facts = Vec::new();
    for (host, result) in capture(door, hosts, plan, events).await? {
        match result {
            Ok(f) => {
                let json = serde_json::to_string(&f)?;
                door.store.add_capture(&host, &json, accepted).await?;
                captured.hosts.push((host.clone(), f.len()));
                facts.push((host, f));
            }
            Err(e) => captured.failed.push((host, e.to_string())),
        }
    }
    Ok((captured, facts))
}

/// A drift check's outcome.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// The differences and what the rules hid.
    pub report: Report,
    /// Who was captured, who failed.
    pub captured: Captured,
    /// Hosts with no baseline yet (`merlya baseline capture` first), when comparing with baselines.
    pub without_baseline: Vec<String>,
}

/// Captures `hosts` now and compares each with its baseline or with the group.
pub async fn check(
    door: &Door<'_>,
    hosts: &[Host],
    plan: &CapturePlan,
    against: Against,
    filter: Filter,
    events: &EventSender,
) -> color_eyre::Result<Checked> {
    let (captured, now) = capture_and_record(door, hosts, plan, false, events).await?;
    match against {
        Against::Group => Ok(Checked { report: against_group(&now, filter), captured, without_baseline: Vec::new() }),
        Against::Baseline => {
            let (pairs, without_baseline) = with_baselines(door.store, now).await?;
            let report = against_baselines(&pairs, filter);
            // Each host's findings, for the console's Drift pane.
            for (host, _, _) in &pairs {
                let mine: Vec<&super::compare::Row> = report.rows.iter().filter(|r| r.hosts.contains(host)).collect();
                door.store.set_host_drift(host, &serde_json::to_string(&mine)?).await?;
            }
            Ok(Checked { report, captured, without_baseline })
        }
    }
}

async fn with_baselines(
    store: &Store,
    now: Vec<(String, Facts)>,
) -> color_eyre::Result<(Vec<(String, Facts, Facts)>, Vec<String>)> {
    let (mut pairs, mut without) = (Vec::new(), Vec::new());
    for (host, facts) in now {
        match store.baseline(&host).await? {
            Some(base) => {
                let base: Facts = serde_json::from_str(&base.facts)
                    .map_err(|e| color_eyre::eyre::eyre!("the stored baseline of {host} is unreadable: {e}"))?;
                pairs.push((host, base, facts));
            }
            None => without.push(host),
        }
    }
    Ok((pairs, without))
}
