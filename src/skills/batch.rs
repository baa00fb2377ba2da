//! Consecutive read-only steps of a skill run as one script per host: one
//! session, one audit entry and one history row per host instead of one per
//! step (what an operator's own `ssh host 'a; b; c'` would do). Markers with a
//! per-run nonce split the output back into steps, each with its exit code.
//! The script is classified as a whole before it runs, like any command.

use crate::exec::HostResult;

/// A marker prefix no ordinary output carries.
fn marker(nonce: &str, what: &str, index: usize) -> String {
    format!("@@merlya-{nonce}-{what}-{index}@@")
}

/// The steps of a batch as merlya rendered it for a host (what the audit log keeps): each step's
/// command, in order; `None` when `rendered` is not a batch.
pub fn steps_in(rendered: &str) -> Option<Vec<String>> {
    static STEP: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?s)\{ (.*?)\s*;?\s*\}; echo '?@@merlya-[0-9a-f]+-rc-\d+ ").ok()
    });
    if !rendered.starts_with("echo @@merlya-") {
        return None;
    }
    let steps: Vec<String> =
        STEP.as_ref()?.captures_iter(rendered).map(|c| c[1].trim().trim_end_matches(';').to_string()).collect();
    (!steps.is_empty()).then_some(steps)
}

/// `output` without a batch's marker lines (what a person reads in a report).
pub fn without_markers(output: &str) -> String {
    output
        .lines()
        .filter(|l| {
            let l = l.trim();
            !(l.starts_with("@@merlya-") && l.ends_with("@@"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The script running `commands` in order, each framed by markers on both streams and followed by
/// its exit code.
pub fn script(commands: &[String], nonce: &str) -> String {
    commands
        .iter()
        .enumerate()
        .map(|(i, command)| {
            let start = marker(nonce, "step", i);
            format!("echo {start}; echo {start} >&2; {{ {command}\n}}; echo \"@@merlya-{nonce}-rc-{i} $?@@\"")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One result per command from the result of [`script`] on a host. A command whose exit code never
/// came (the script was stopped or timed out) has none, with the host's error or a reason.
pub fn split(result: &HostResult, count: usize, nonce: &str) -> Vec<HostResult> {
    let mut steps: Vec<HostResult> = (0..count)
        .map(|_| HostResult {
            host: result.host.clone(),
            error: Some(result.error.clone().unwrap_or_else(|| "the step did not complete".into())),
            failure: result.failure,
            duration_ms: result.duration_ms,
            ..HostResult::default()
        })
        .collect();
    let rc_prefix = format!("@@merlya-{nonce}-rc-");
    let mut current: Option<usize> = None;
    for line in result.stdout.lines() {
        if let Some(i) = (0..count).find(|i| line == marker(nonce, "step", *i)) {
            current = Some(i);
            continue;
        }
        if let Some(rest) = line.strip_prefix(&rc_prefix).and_then(|r| r.strip_suffix("@@"))
            && let Some((index, code)) = rest.split_once(' ')
            && let (Ok(index), Ok(code)) = (index.parse::<usize>(), code.parse::<i32>())
            && index < count
        {
            steps[index].exit_code = Some(code);
            steps[index].error = None;
            steps[index].failure = None;
            current = None;
            continue;
        }
        if let Some(i) = current {
            steps[i].stdout.push_str(line);
            steps[i].stdout.push('\n');
        }
    }
    let mut current: Option<usize> = None;
    for line in result.stderr.lines() {
        if let Some(i) = (0..count).find(|i| line == marker(nonce, "step", *i)) {
            current = Some(i);
            continue;
        }
        if let Some(i) = current {
            steps[i].stderr.push_str(line);
            steps[i].stderr.push('\n');
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_a_proven_read_when_its_steps_are() {
        let commands = vec!["cat /proc/loadavg; nproc".to_string(), "df -P -x tmpfs".to_string()];
        let script = script(&commands, "ab12");
        assert!(
            crate::safety::analyze(&script).is_read_only(),
            "{script}: {:?}",
            crate::safety::analyze(&script).reasons
        );
        let with_change = script.replace("df -P", "rm -rf /tmp/x; df -P");
        assert!(!crate::safety::analyze(&with_change).is_read_only());
    }

    #[test]
    fn output_splits_back_into_steps_with_their_exit_codes() {
        let stdout = "@@merlya-n1-step-0@@\n0.5 0.4 0.3 1/2 3\n2\n@@merlya-n1-rc-0 0@@\n@@merlya-n1-step-1@@\n@@merlya-n1-rc-1 1@@\n@@merlya-n1-step-2@@\npartial\n";
        let stderr = "@@merlya-n1-step-0@@\n@@merlya-n1-step-1@@\nsystemctl: not booted\n@@merlya-n1-step-2@@\n";
        let whole = HostResult {
            host: "h".into(),
            stdout: stdout.into(),
            stderr: stderr.into(),
            exit_code: None,
            error: Some("timed out after 20 s".into()),
            ..HostResult::default()
        };
        let steps = split(&whole, 3, "n1");
        assert_eq!((steps[0].exit_code, steps[0].stdout.as_str()), (Some(0), "0.5 0.4 0.3 1/2 3\n2\n"));
        assert_eq!((steps[1].exit_code, steps[1].stderr.as_str()), (Some(1), "systemctl: not booted\n"));
        assert_eq!((steps[2].exit_code, steps[2].error.as_deref()), (None, Some("timed out after 20 s")));
        // A forged marker with another nonce is output, not structure.
        let forged = HostResult {
            stdout: "@@merlya-n1-step-0@@\n@@merlya-zz-rc-0 0@@\n@@merlya-n1-rc-0 3@@\n".into(),
            ..HostResult::default()
        };
        let steps = split(&forged, 1, "n1");
        assert_eq!((steps[0].exit_code, steps[0].stdout.as_str()), (Some(3), "@@merlya-zz-rc-0 0@@\n"));
    }

    #[test]
    fn the_steps_of_a_rendered_batch_are_read_back_and_markers_leave_the_output() {
        let rendered = "echo @@merlya-491f53095c23-step-0@@; echo @@merlya-491f53095c23-step-0@@ >&2; { df -P -x tmpfs; }; \
            echo '@@merlya-491f53095c23-rc-0 '\"$?\"@@; echo @@merlya-491f53095c23-step-1@@; echo @@merlya-491f53095c23-step-1@@ >&2; \
            { cat /proc/loadavg; nproc; }; echo '@@merlya-491f53095c23-rc-1 '\"$?\"@@";
        assert_eq!(steps_in(rendered).unwrap(), ["df -P -x tmpfs", "cat /proc/loadavg; nproc"]);
        assert_eq!(steps_in("df -h"), None);
        let output = "@@merlya-491f53095c23-step-0@@\n/dev/vda 50%\n@@merlya-491f53095c23-rc-0 0@@";
        assert_eq!(without_markers(output), "/dev/vda 50%");
    }
}
