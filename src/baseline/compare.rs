//! What differs: a host against its own baseline, or against the majority of
//! its group. The same difference on many hosts is one [`Row`] with its hosts.
//!
//! A group comparison groups hosts by identical section contents first (most
//! hosts of a group agree on most sections), so 1,000 baselines cost one pass
//! to hash and then work proportional to the distinct contents, not the hosts.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use super::rules::{EPHEMERAL_FROM, Filter};
use super::{Facts, Section};

/// How a fact differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The host has another value.
    Changed,
    /// The baseline (or the group) has it; the host does not.
    Missing,
    /// The host has it; the baseline (or the group) does not.
    Added,
}

impl Kind {
    /// One glyph for the pane and the table.
    pub fn glyph(self) -> &'static str {
        match self {
            Kind::Changed => "~",
            Kind::Missing => "-",
            Kind::Added => "+",
        }
    }
}

/// One difference, with every host that shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Row {
    /// The section.
    pub section: Section,
    /// The fact (`nginx`, `/etc/nginx/nginx.conf`, `vm.swappiness`).
    pub key: String,
    /// How it differs.
    pub kind: Kind,
    /// The baseline's value, or the group majority's.
    pub expected: Option<String>,
    /// The host's value.
    pub found: Option<String>,
    /// The hosts that show this difference.
    pub hosts: Vec<String>,
    /// For a group comparison: how many hosts of the group agree on `expected`, and of how many.
    pub agree: Option<(usize, usize)>,
}

/// What a comparison found, and what the rules hid.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The differences, by section and key.
    pub rows: Vec<Row>,
    /// The rules' filter, with its counts.
    pub filter: Filter,
}

/// What makes two hosts' differences the same row: section, key, kind, expected, found.
type RowKey = (Section, String, Kind, Option<String>, Option<String>);

fn ephemeral_from(facts: &Facts) -> u16 {
    facts
        .get(Section::Sysctl, "net.ipv4.ip_local_port_range")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(EPHEMERAL_FROM)
}

/// Each host's facts now against its baseline; `hosts` is `(host, baseline, now)`.
pub fn against_baselines(hosts: &[(String, Facts, Facts)], mut filter: Filter) -> Report {
    let mut rows: BTreeMap<RowKey, Vec<String>> = BTreeMap::new();
    for (host, baseline, now) in hosts {
        let from = ephemeral_from(now);
        for section in Section::ALL {
            let empty = BTreeMap::new();
            let before = baseline.sections.get(&section).unwrap_or(&empty);
            let after = now.sections.get(&section).unwrap_or(&empty);
            if before == after {
                continue;
            }
            let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
            for key in keys {
                let (b, a) = (before.get(key), after.get(key));
                let kind = match (b, a) {
                    (Some(b), Some(a)) if b == a => continue,
                    (Some(_), Some(_)) => Kind::Changed,
                    (Some(_), None) => Kind::Missing,
                    (None, _) => Kind::Added,
                };
                if filter.hides(host, section, key, from) {
                    continue;
                }
                rows.entry((section, key.clone(), kind, b.cloned(), a.cloned())).or_default().push(host.clone());
            }
        }
    }
    let rows = rows
        .into_iter()
        .map(|((section, key, kind, expected, found), hosts)| Row {
            section,
            key,
            kind,
            expected,
            found,
            hosts,
            agree: None,
        })
        .collect();
    Report { rows, filter }
}

/// Each host against the majority of `hosts` (a tag group): a fact where a host differs from
/// the value most hosts share is a row naming it; hosts that agree are not named.
pub fn against_group(hosts: &[(String, Facts)], mut filter: Filter) -> Report {
    let total = hosts.len();
    let mut rows: BTreeMap<RowKey, (Vec<String>, usize)> = BTreeMap::new();
    let empty = BTreeMap::new();
    for section in Section::ALL {
        // Hosts with identical contents of this section, represented by the first of them.
        let mut distinct: HashMap<u64, (usize, Vec<usize>)> = HashMap::new();
        for (i, (_, facts)) in hosts.iter().enumerate() {
            let map = facts.sections.get(&section).unwrap_or(&empty);
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            map.hash(&mut hasher);
            distinct.entry(hasher.finish()).or_insert_with(|| (i, Vec::new())).1.push(i);
        }
        if distinct.len() < 2 {
            continue;
        }
        let groups: Vec<(&BTreeMap<String, String>, &Vec<usize>)> = distinct
            .values()
            .map(|(rep, members)| (hosts[*rep].1.sections.get(&section).unwrap_or(&empty), members))
            .collect();
        let keys: BTreeSet<&String> = groups.iter().flat_map(|(map, _)| map.keys()).collect();
        for key in keys {
            let mut counts: BTreeMap<Option<&String>, usize> = BTreeMap::new();
            for (map, members) in &groups {
                *counts.entry(map.get(key)).or_default() += members.len();
            }
            if counts.len() < 2 {
                continue;
            }
            // The majority; on a tie, the present value before absence, then the smaller value.
            let Some((majority, agree)) = counts.iter().max_by_key(|(v, n)| (**n, v.is_some())).map(|(v, n)| (*v, *n))
            else {
                continue;
            };
            for (map, members) in &groups {
                let found = map.get(key);
                if found == majority {
                    continue;
                }
                let kind = match (majority, found) {
                    (Some(_), Some(_)) => Kind::Changed,
                    (Some(_), None) => Kind::Missing,
                    (None, _) => Kind::Added,
                };
                for &i in members.iter() {
                    let (host, facts) = &hosts[i];
                    if filter.hides(host, section, key, ephemeral_from(facts)) {
                        continue;
                    }
                    let row = rows.entry((section, key.clone(), kind, majority.cloned(), found.cloned())).or_default();
                    row.0.push(host.clone());
                    row.1 = agree;
                }
            }
        }
    }
    let rows = rows
        .into_iter()
        .map(|((section, key, kind, expected, found), (mut hosts, agree))| {
            hosts.sort();
            Row { section, key, kind, expected, found, hosts, agree: Some((agree, total)) }
        })
        .collect();
    Report { rows, filter }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(pairs: &[(Section, &str, &str)]) -> Facts {
        let mut f = Facts::default();
        for (s, k, v) in pairs {
            f.insert(*s, *k, *v);
        }
        f
    }

    #[test]
    fn a_host_against_its_baseline_names_each_changed_field_and_folds_hosts() {
        let base = facts(&[
            (Section::Packages, "nginx", "1.22"),
            (Section::Files, "/etc/a", "h1"),
            (Section::Sysctl, "kernel.random.boot_id", "x"),
        ]);
        let now = facts(&[
            (Section::Packages, "nginx", "1.24"),
            (Section::Files, "/etc/b", "h2"),
            (Section::Sysctl, "kernel.random.boot_id", "y"),
        ]);
        let report = against_baselines(
            &[("web01".into(), base.clone(), now.clone()), ("web02".into(), base, now)],
            Filter::new(Vec::new()),
        );
        let kinds: Vec<(Section, &str, Kind, Vec<String>)> =
            report.rows.iter().map(|r| (r.section, r.key.as_str(), r.kind, r.hosts.clone())).collect();
        let both = vec!["web01".to_string(), "web02".to_string()];
        assert_eq!(
            kinds,
            [
                (Section::Packages, "nginx", Kind::Changed, both.clone()),
                (Section::Files, "/etc/a", Kind::Missing, both.clone()),
                (Section::Files, "/etc/b", Kind::Added, both),
            ]
        );
        assert_eq!(report.rows[0].expected.as_deref(), Some("1.22"));
        assert_eq!(report.rows[0].found.as_deref(), Some("1.24"));
        assert_eq!(report.filter.hidden_total(), 2, "the boot id, on both hosts");
    }

    #[test]
    fn the_odd_host_of_a_group_is_named_and_the_calm_ones_are_not() {
        let calm = facts(&[(Section::Packages, "nginx", "1.22"), (Section::Files, "/etc/nginx/nginx.conf", "h1")]);
        let odd = facts(&[(Section::Packages, "nginx", "1.24"), (Section::Files, "/etc/nginx/nginx.conf", "h1")]);
        let mut hosts: Vec<(String, Facts)> = (1..=11).map(|i| (format!("web{i:02}"), calm.clone())).collect();
        hosts.push(("web12".into(), odd));
        let report = against_group(&hosts, Filter::new(Vec::new()));
        assert_eq!(report.rows.len(), 1, "{:?}", report.rows);
        let row = &report.rows[0];
        assert_eq!((row.section, row.key.as_str(), row.kind), (Section::Packages, "nginx", Kind::Changed));
        assert_eq!(row.hosts, ["web12"]);
        assert_eq!(row.agree, Some((11, 12)));
        assert_eq!((row.expected.as_deref(), row.found.as_deref()), (Some("1.22"), Some("1.24")));
        // Identical hosts: nothing.
        assert!(against_group(&hosts[..11], Filter::new(Vec::new())).rows.is_empty());
    }
}
