//! Running a command over a pooled SSH connection: the sudo password fed only
//! on sudo's prompt, and the command stopped on the host at its deadline.

use std::sync::Arc;
use std::time::Duration;

use super::lines::{LineSplitter, MaskingSender};
use super::prepare::Prepared;
use super::sudo::StderrGate;
use super::{HostResult, STOP_GRACE, Stream, timed_out};
use crate::ssh::client::Connection;
use crate::ssh::{SshPool, SshTarget};
use russh::client::Msg;
use russh::{ChannelMsg, ChannelReadHalf, ChannelWriteHalf, Sig};
use tokio::time::Instant;

/// Why one attempt failed: before the server confirmed the command started
/// (safe to redial and retry) or after (never retried).
enum AttemptError {
    NotStarted(String),
    Failed(String),
}

/// Runs `command` on `target`; redials once if the pooled connection turns
/// out dead before the command started. At `deadline` (the run's `timeout`
/// from now) the command is stopped on the host, not just abandoned.
pub async fn run(
    pool: &SshPool,
    target: &SshTarget,
    prepared: &Prepared,
    (deadline, timeout): (Instant, Duration),
    events: &MaskingSender,
) -> Result<HostResult, String> {
    for attempt in 0..2 {
        let conn = pool.get(target).await.map_err(|e| e.to_string())?;
        match run_once(&conn, target, prepared, (deadline, timeout), events).await {
            Ok(result) => return Ok(result),
            Err(AttemptError::NotStarted(e)) if attempt == 0 => {
                tracing::info!(host = %target.name, error = %e, "pooled connection is dead; redialling once");
                pool.discard(target).await;
            }
            Err(AttemptError::NotStarted(e) | AttemptError::Failed(e)) => return Err(e),
        }
    }
    Err(format!("cannot run the command on {}", target.name))
}

/// The writing half of a running command's channel; if the run is dropped
/// (cancelled) before the command ended, the command is signalled on the host.
struct StopOnDrop {
    write: Arc<ChannelWriteHalf<Msg>>,
    armed: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let write = self.write.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = write.signal(Sig::TERM).await;
                tokio::time::sleep(STOP_GRACE).await;
                let _ = write.signal(Sig::KILL).await;
                let _ = write.close().await;
            });
        }
    }
}

/// Stops a command still running at its deadline: OpenSSH's sshd answers the
/// `signal` channel request with `killpg` on the session's process group, so
/// `sh -c` and everything it started (sudo relays to its command) get SIGTERM,
/// then SIGKILL if they have not exited after [`STOP_GRACE`].
async fn stop(read: &mut ChannelReadHalf, write: &ChannelWriteHalf<Msg>, host: &str) {
    for (signal, wait) in [(Sig::TERM, STOP_GRACE), (Sig::KILL, STOP_GRACE)] {
        if write.signal(signal.clone()).await.is_err() {
            break;
        }
        let exited = tokio::time::timeout(wait, async {
            while let Some(msg) = read.wait().await {
                if matches!(msg, ChannelMsg::ExitStatus { .. } | ChannelMsg::ExitSignal { .. } | ChannelMsg::Close) {
                    return true;
                }
            }
            true
        })
        .await
        .unwrap_or(false);
        if exited {
            tracing::info!(host, ?signal, "stopped a command at its deadline");
            break;
        }
    }
    let _ = write.close().await;
}

async fn run_once(
    conn: &Connection,
    target: &SshTarget,
    prepared: &Prepared,
    (deadline, timeout): (Instant, Duration),
    events: &MaskingSender,
) -> Result<HostResult, AttemptError> {
    let (command, sudo) = (prepared.command.as_str(), prepared.sudo.as_ref());
    let channel = conn
        .handle
        .channel_open_session()
        .await
        .map_err(|e| AttemptError::NotStarted(format!("cannot open a session on {}: {e}", target.name)))?;
    channel
        .exec(true, command)
        .await
        .map_err(|e| AttemptError::NotStarted(format!("cannot start the command: {e}")))?;
    let (mut read, write) = channel.split();
    let mut guard = StopOnDrop { write: Arc::new(write), armed: true };
    let write = guard.write.clone();
    if let Some(input) = &prepared.input {
        write
            .data_bytes(input.clone().into_bytes())
            .await
            .map_err(|e| AttemptError::Failed(format!("cannot write the command: {e}")))?;
    }
    let mut gate = sudo.cloned().map(StderrGate::new);
    if gate.is_none() {
        // No more input: commands that read stdin see end-of-file instead of waiting.
        let _ = write.eof().await;
    }
    let mut out = LineSplitter::new(&target.name, Stream::Stdout);
    let mut err = LineSplitter::new(&target.name, Stream::Stderr);
    let mut exit_code: Option<i32> = None;
    let mut started = false;
    loop {
        let msg = match tokio::time::timeout_at(deadline, read.wait()).await {
            Ok(Some(msg)) => msg,
            Ok(None) => break,
            Err(_) => {
                stop(&mut read, &write, &target.name).await;
                guard.armed = false;
                return Err(AttemptError::Failed(timed_out(timeout)));
            }
        };
        match msg {
            ChannelMsg::Success => started = true,
            ChannelMsg::Failure => {
                guard.armed = false;
                return Err(AttemptError::Failed(format!("{} refused to run the command", target.name)));
            }
            ChannelMsg::Data { data } => {
                started = true;
                out.push(&data, events)
            }
            ChannelMsg::ExtendedData { data, ext: 1 } => {
                started = true;
                let Some(gate) = gate.as_mut() else {
                    err.push(&data, events);
                    continue;
                };
                let gated = gate.push(&data);
                err.push(&gated.output, events);
                if let Some(password) = gated.write {
                    write
                        .data_bytes(password.into_bytes())
                        .await
                        .map_err(|e| AttemptError::Failed(format!("cannot write the sudo password: {e}")))?;
                }
                if gated.close_input {
                    let _ = write.eof().await;
                }
            }
            ChannelMsg::ExitStatus { exit_status } => {
                started = true;
                exit_code = Some(i32::try_from(exit_status).unwrap_or(255))
            }
            ChannelMsg::ExitSignal { signal_name, error_message, .. } => {
                started = true;
                exit_code.get_or_insert(255);
                err.push(format!("killed by signal {signal_name:?} {error_message}\n").as_bytes(), events);
            }
            ChannelMsg::Close => break,
            _ => {}
        }
    }
    guard.armed = false;
    if !started {
        return Err(AttemptError::NotStarted(format!("{} closed the session before the command started", target.name)));
    }
    if let Some(gate) = gate.as_mut() {
        err.push(&gate.finish(), events);
    }
    out.finish(events);
    err.finish(events);
    let error = exit_code.is_none().then(|| "the connection closed before the command exited".to_string());
    Ok(HostResult {
        host: target.name.clone(),
        exit_code,
        stdout: out.collected,
        stderr: err.collected,
        duration_ms: 0,
        error,
    })
}
