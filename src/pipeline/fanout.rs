//! The audited fan-out of a pipeline or a run: the environment's door
//! ([`crate::door`]) with its parallelism, timeout, cancel and live events.

use crate::door::Door;
use crate::exec::HostResult;
use crate::inventory::Host;
use crate::safety::clearance::Clearance;

use super::Env;

impl Env {
    /// The door this environment runs commands through.
    pub fn door(&self) -> Door<'_> {
        Door {
            store: &self.store,
            executor: &self.executor,
            session_id: &self.session_id,
            requested_by: &self.requested_by,
            retention_days: self.retention_days,
            parallel: self.parallel,
            timeout: self.timeout,
            cancel: &self.cancel,
        }
    }
}

/// Runs `clearance` on `hosts` under `env` (its parallelism, timeout, cancel and live events).
/// `approval_ref` ties the audit rows to the decision they ran under (a pipeline stage).
/// Nothing runs when the audit log cannot be written: that is the error.
pub async fn audited_fan_out(
    env: &Env,
    hosts: &[Host],
    clearance: Clearance,
    approval_ref: Option<String>,
) -> color_eyre::Result<Vec<HostResult>> {
    env.door().fan_out(hosts, clearance, approval_ref, &env.events).await
}

/// One line per host result: `web01 exit 0 (0.12s)`, the error when it did not run.
pub fn describe_results(results: &[HostResult]) -> String {
    let failed: Vec<&HostResult> = results.iter().filter(|r| !r.success()).collect();
    let mut line = format!("{}/{} hosts succeeded", results.len() - failed.len(), results.len());
    for r in failed.iter().take(5) {
        let why = match (r.exit_code, &r.error) {
            (_, Some(error)) => error.clone(),
            (Some(code), None) => format!("exit {code}"),
            (None, None) => "no result".into(),
        };
        line.push_str(&format!("; {}: {}", r.host, crate::term_safe::visible_line(&why)));
    }
    if failed.len() > 5 {
        line.push_str(&format!("; {} more failed", failed.len() - 5));
    }
    line
}

/// The hosts' output, each under a `== host (exit N) ==` header, cut to `limit` bytes per host.
pub fn combined_output(results: &[HostResult], limit: usize) -> String {
    let mut out = String::new();
    for r in results {
        let code = r.exit_code.map_or_else(|| "-".to_string(), |c| c.to_string());
        out.push_str(&format!("== {} (exit {code}) ==\n", r.host));
        for text in [&r.stdout, &r.stderr] {
            let cut = text.len().saturating_sub(limit);
            let start = (cut..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
            out.push_str(&text[start..]);
            if !text.is_empty() && !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}
