//! What the Pipeline, Metrics and Drift panes show: data read from the store by workers and handed
//! to the model whole (`Msg::Dashboard`, the drift worker's reports), with the history the Metrics
//! pane draws its sparklines from.

/// What the metrics and pipeline panes show, refreshed from the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dashboard {
    /// Change pipeline runs, newest first.
    pub pipelines: Vec<crate::store::pipelines::PipelineRun>,
    /// Commands by outcome and latency.
    pub stats: crate::store::metrics::CommandStats,
    /// LLM calls, tokens and cost per model.
    pub spend: Vec<(String, crate::llm::client::Spend)>,
    /// Whether the LLM circuit breaker is open.
    pub breaker_open: bool,
    /// The Drift pane's two sources.
    pub drift: DriftBoard,
    /// Changes waiting for a second person (two-person approval), oldest first.
    pub reviews: Vec<PendingReview>,
    /// Other sessions' runs in flight (or just ended) on a shared store, newest first.
    pub team_runs: Vec<crate::store::team_runs::TeamRun>,
}

/// A change waiting for a second person, as the Pipeline pane lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingReview {
    pub id: i64,
    /// The requester's `operator.name`.
    pub requested_by: String,
    /// Which policy entry asked for a second person.
    pub why: String,
    /// What the change does (its approval's summary).
    pub summary: String,
    pub expires_at: String,
}

/// What the Drift pane shows: provisioned resources, and each host's findings against its baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriftBoard {
    /// Resources, by name.
    pub resources: Vec<crate::store::resources::Resource>,
    /// `(host, checked_at, finding)`, by host.
    pub hosts: Vec<(String, String, crate::baseline::compare::Row)>,
    /// Hosts with a recorded check.
    pub checked_hosts: usize,
}

impl DriftBoard {
    /// How many rows the pane lists (resources, then host findings).
    pub fn len(&self) -> usize {
        self.resources.len() + self.hosts.len()
    }

    /// Whether there is nothing to list.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows whose words hold every word of `query` (case ignored): a resource's name, template,
    /// lifecycle, drift and detail; a host finding's host, section, key and values.
    pub fn filtered(&self, query: &str) -> DriftBoard {
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let matches = |text: String| {
            let text = text.to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        };
        DriftBoard {
            resources: self
                .resources
                .iter()
                .filter(|r| {
                    matches(format!(
                        "{} {} {} {} {}",
                        r.name,
                        r.template,
                        r.status.as_str(),
                        r.drift.as_str(),
                        r.drift_detail
                    ))
                })
                .cloned()
                .collect(),
            hosts: self
                .hosts
                .iter()
                .filter(|(host, _, row)| {
                    matches(format!(
                        "{host} {} {} {} {}",
                        row.section.name(),
                        row.key,
                        row.expected.as_deref().unwrap_or_default(),
                        row.found.as_deref().unwrap_or_default()
                    ))
                })
                .cloned()
                .collect(),
            checked_hosts: self.checked_hosts,
        }
    }

    /// Row `cursor`'s expected and found values as a diff (a resource's attributes as JSON, a host
    /// fact's value); `None` when they are the same or there is no such row.
    pub fn diff(&self, cursor: usize) -> Option<super::diff_view::Diff> {
        let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
        let (name, expected, found) = match cursor.checked_sub(self.resources.len()) {
            None => {
                let r = self.resources.get(cursor)?;
                (r.name.clone(), pretty(&r.expected), pretty(&r.actual))
            }
            Some(i) => {
                let (host, _, row) = self.hosts.get(i)?;
                let text = |v: &Option<String>| v.clone().map(|v| v + "\n").unwrap_or_default();
                (format!("{host} {} {}", row.section, row.key), text(&row.expected), text(&row.found))
            }
        };
        if expected == found {
            return None;
        }
        let unified = similar::TextDiff::from_lines(&expected, &found).unified_diff().to_string();
        let unified = crate::term_safe::visible(&unified).into_owned();
        Some(super::diff_view::Diff::parse(&format!("--- {name} (expected)\n+++ {name} (found)\n{unified}")))
    }
}

/// The metrics over time, one sample per dashboard refresh (the Metrics pane's sparklines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricHistory {
    /// Commands that ended since the previous sample.
    pub commands: std::collections::VecDeque<u64>,
    /// Of which failed or were unreachable.
    pub failures: std::collections::VecDeque<u64>,
    /// Model tokens (in and out) since the previous sample.
    pub tokens: std::collections::VecDeque<u64>,
}

impl MetricHistory {
    /// Samples kept (a few minutes at the dashboard's pace).
    pub const LEN: usize = 120;

    /// Adds what changed from `before` to `after` (nothing on the first dashboard: no baseline).
    pub fn record(&mut self, before: &Dashboard, after: &Dashboard) {
        let done = |d: &Dashboard| d.stats.succeeded + d.stats.failed + d.stats.unreachable;
        let failed = |d: &Dashboard| d.stats.failed + d.stats.unreachable;
        let tokens =
            |d: &Dashboard| d.spend.iter().map(|(_, s)| s.usage.input_tokens + s.usage.output_tokens).sum::<u64>();
        for (series, value) in [
            (&mut self.commands, done(after).saturating_sub(done(before))),
            (&mut self.failures, failed(after).saturating_sub(failed(before))),
            (&mut self.tokens, tokens(after).saturating_sub(tokens(before))),
        ] {
            series.push_back(value);
            while series.len() > Self::LEN {
                series.pop_front();
            }
        }
    }
}
