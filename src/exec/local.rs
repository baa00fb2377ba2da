//! `localhost`: commands run through `sh -c` without SSH, in a process group
//! of their own so that a timeout or a cancellation stops everything they
//! started, not just the shell.

use std::process::Stdio;

use super::lines::{LineSplitter, MaskingSender};
use super::prepare::Prepared;
use super::sudo::StderrGate;
use super::{HostResult, RunError, STOP_GRACE, Stream, cancelled};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// Kills the command's process group if the run is dropped before it ended.
struct KillGroup {
    pgid: Option<u32>,
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
            // SAFETY: kill(2) with a negative pid signals the group created for this child only.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

/// Stops a cancelled command's process group as a terminal would: SIGINT,
/// then SIGTERM, then SIGKILL, each after the group had time to exit.
async fn stop_group(child: &mut Child, group: &mut KillGroup) {
    let Some(pgid) = group.pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) else { return };
    for (signal, wait) in [(libc::SIGINT, STOP_GRACE / 4), (libc::SIGTERM, STOP_GRACE)] {
        // SAFETY: kill(2) with a negative pid signals the group created for this child only.
        unsafe {
            libc::kill(-pgid, signal);
        }
        if tokio::time::timeout(wait, child.wait()).await.is_ok() {
            break;
        }
    }
    // Dropping the guard sends SIGKILL to whatever is left of the group.
}

/// Runs `command` locally; the whole process group is killed if the future is
/// dropped (timeout), and stopped gradually when `cancel` fires. A `sudo`
/// password is written only on sudo's prompt.
/// The variables a command on localhost inherits from merlya.
/// (The D-Bus session address is not one: the Secret Service is reached through it.)
pub const COMMAND_ENVIRONMENT: [&str; 12] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "SSH_AUTH_SOCK",
];

pub async fn run(
    host: &str,
    prepared: &Prepared,
    cancel: &CancellationToken,
    events: &MaskingSender,
) -> Result<HostResult, RunError> {
    let not_started = |e: String| RunError::new(super::HostFailure::NotStarted, e);
    let lost = |e: String| RunError::new(super::HostFailure::Lost, e);
    let sudo = prepared.sudo.as_ref();
    // The read-only proof reads commands as bash does (tree-sitter-bash): run them in bash.
    let shell = if std::path::Path::new("/bin/bash").exists() { "/bin/bash" } else { "sh" };
    let mut child = Command::new(shell)
        // merlya's own environment (a model's API key, tokens) is not the command's: only what a
        // program needs to start and how text looks (`printenv`, /proc/self/environ show nothing else).
        .env_clear()
        .envs(COMMAND_ENVIRONMENT.iter().filter_map(|name| std::env::var(name).ok().map(|v| (*name, v))))
        .arg("-c")
        .arg(&prepared.command)
        .stdin(if sudo.is_some() || prepared.input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| not_started(format!("cannot start {shell}: {e}")))?;
    let mut group = KillGroup { pgid: child.id() };
    let mut stdin = child.stdin.take();
    if let (Some(input), Some(pipe)) = (prepared.input.as_ref(), stdin.as_mut()) {
        pipe.write_all(input.as_bytes()).await.map_err(|e| lost(format!("cannot write the command: {e}")))?;
    }
    if sudo.is_none() {
        stdin = None;
    }
    let mut gate = sudo.cloned().map(StderrGate::new);
    let mut stdout = child.stdout.take().ok_or_else(|| not_started("no stdout pipe".into()))?;
    let mut stderr = child.stderr.take().ok_or_else(|| not_started("no stderr pipe".into()))?;
    let spill = |stream| super::spill::for_stream(prepared.spill.as_ref(), stream, &prepared.mask);
    let mut out = LineSplitter::new(host, Stream::Stdout).spilling(spill("stdout"));
    let mut err = LineSplitter::new(host, Stream::Stderr).spilling(spill("stderr"));
    let (mut out_buf, mut err_buf) = ([0u8; 8192], [0u8; 8192]);
    let (mut out_open, mut err_open) = (true, true);
    while out_open || err_open {
        tokio::select! {
            () = cancel.cancelled() => {
                stop_group(&mut child, &mut group).await;
                return Err(cancelled());
            }
            n = stdout.read(&mut out_buf), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => out.push(&out_buf[..n], events).await,
            },
            n = stderr.read(&mut err_buf), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => match gate.as_mut() {
                    None => err.push(&err_buf[..n], events).await,
                    Some(gate) => {
                        let gated = gate.push(&err_buf[..n]);
                        err.push(&gated.output, events).await;
                        if let (Some(password), Some(pipe)) = (gated.write, stdin.as_mut()) {
                            pipe.write_all(password.as_bytes())
                                .await
                                .map_err(|e| lost(format!("cannot write the sudo password: {e}")))?;
                        }
                        if gated.close_input {
                            // Dropping the pipe closes stdin.
                            stdin = None;
                        }
                    }
                },
            },
        }
    }
    if let Some(gate) = gate.as_mut() {
        err.push(&gate.finish(), events).await;
    }
    out.finish(events).await;
    err.finish(events).await;
    drop(stdin);
    let status = child.wait().await.map_err(|e| lost(format!("cannot wait for the command: {e}")))?;
    group.pgid = None;
    let exit_code = status.code().or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map(|s| 128 + s)
    });
    let spilled: Vec<String> = out.spilled().into_iter().chain(err.spilled()).collect();
    let dropped = out.dropped() + err.dropped();
    Ok(HostResult {
        host: host.to_string(),
        exit_code,
        stdout: out.collected,
        stderr: err.collected,
        duration_ms: 0,
        error: None,
        failure: None,
        output_cut_bytes: out.cut + err.cut,
        output_spill: spilled,
        output_dropped_bytes: dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::sudo::SudoFeed;

    #[tokio::test]
    async fn the_password_is_written_on_the_prompt_and_stdin_closes_after_it() {
        let feed = SudoFeed::new("pw-local".into()).unwrap();
        // Plays sudo: prompts with the marker, reads one line, then the "command" starts and reads stdin.
        let command = format!(
            "printf %s {} >&2; IFS= read -r pw; echo got-$pw; printf %s {} >&2; cat; echo end",
            feed.prompt(),
            feed.started()
        );
        let tx = crate::exec::no_events();
        let events = MaskingSender::new(tx, Vec::new());
        let prepared = |command: String| Prepared {
            command,
            sudo: Some(feed.clone()),
            mask: Vec::new(),
            input: None,
            spill: None,
            pty: false,
            elevated_sandbox: false,
        };
        let result = run("localhost", &prepared(command), &CancellationToken::new(), &events).await.unwrap();
        assert_eq!(result.stdout, "got-pw-local\nend\n", "cat after the password reads end-of-file");
        assert_eq!(result.stderr, "", "both markers are stripped");
        // No prompt: nothing is written, and the start marker closes stdin.
        let command = format!("printf %s {} >&2; cat; echo end", feed.started());
        let result = run("localhost", &prepared(command), &CancellationToken::new(), &events).await.unwrap();
        assert_eq!(result.stdout, "end\n");
    }

    #[tokio::test]
    async fn a_command_holding_secrets_reaches_the_shell_on_stdin_not_in_argv() {
        let script = "echo from-stdin; cat; echo end".to_string();
        let command = format!("eval \"$(dd bs=1 count={} 2>/dev/null)\"", script.len());
        let prepared = Prepared {
            command,
            sudo: None,
            mask: Vec::new(),
            input: Some(script),
            spill: None,
            pty: false,
            elevated_sandbox: false,
        };
        let tx = crate::exec::no_events();
        let result =
            run("localhost", &prepared, &CancellationToken::new(), &MaskingSender::new(tx, Vec::new())).await.unwrap();
        assert_eq!(result.stdout, "from-stdin\nend\n", "the script ran and its own stdin is at end-of-file");
    }
}
