//! Running a command over a pooled SSH connection: the sudo password fed only
//! on sudo's prompt, and the command stopped on the host at its deadline.

use std::sync::Arc;
use std::time::Duration;

use super::lines::{LineSplitter, MaskingSender};
use super::prepare::Prepared;
use super::sudo::StderrGate;
use super::{HostFailure, HostResult, RunError, STOP_GRACE, Stream, cancelled, timed_out};
use crate::ssh::client::Connection;
use crate::ssh::{SshPool, SshTarget};
use russh::client::Msg;
use russh::{ChannelMsg, ChannelReadHalf, ChannelWriteHalf, Sig};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why one attempt failed: before the server confirmed the command started
/// (safe to redial and retry) or after (never retried).
enum AttemptError {
    NotStarted(String),
    /// Logged in, then no answer to "open a session, run this" within the connect timeout: the
    /// host is hung; its connection is dropped (never reused) and its slot freed for the others.
    Hung(RunError),
    Failed(RunError),
}

/// A failure after the command may have started, of `kind`.
fn failed(kind: HostFailure, message: impl Into<String>) -> AttemptError {
    AttemptError::Failed(RunError::new(kind, message))
}

/// Runs `command` on `target`; redials once if the pooled connection turns
/// out dead before the command started. At `deadline` (the run's `timeout`
/// from now) or when `cancel` fires, the command is stopped on the host, not
/// just abandoned.
pub async fn run(
    pool: &SshPool,
    target: &SshTarget,
    prepared: &Prepared,
    (deadline, timeout): (Instant, Duration),
    cancel: &CancellationToken,
    events: &MaskingSender,
) -> Result<HostResult, RunError> {
    for attempt in 0..2 {
        // Nothing runs on the host while connecting: a cancel simply stops waiting.
        let conn = tokio::select! {
            conn = pool.get(target) => conn?,
            () = cancel.cancelled() => return Err(cancelled()),
        };
        let start_limit = pool.connect_timeout();
        match run_once(&conn, target, prepared, (deadline, timeout, start_limit), cancel, events).await {
            Ok(result) => return Ok(result),
            Err(AttemptError::Hung(e)) => {
                pool.discard(target).await;
                return Err(e);
            }
            Err(AttemptError::NotStarted(e)) if attempt == 0 => {
                tracing::info!(host = %target.name, error = %e, "pooled connection is dead; redialling once");
                pool.discard(target).await;
            }
            Err(AttemptError::NotStarted(e)) => return Err(RunError::new(HostFailure::Refused, e)),
            Err(AttemptError::Failed(e)) => return Err(e),
        }
    }
    Err(RunError::new(HostFailure::Refused, format!("cannot run the command on {}", target.name)))
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

/// The signals that stop a command at its deadline: SIGTERM, then SIGKILL.
const AT_DEADLINE: &[(Sig, Duration)] = &[(Sig::TERM, STOP_GRACE), (Sig::KILL, STOP_GRACE)];

/// The signals that stop a cancelled command: SIGINT (what Ctrl-C in a shell
/// would send), then SIGTERM, then SIGKILL.
const ON_CANCEL: &[(Sig, Duration)] =
    &[(Sig::INT, Duration::from_millis(500)), (Sig::TERM, STOP_GRACE), (Sig::KILL, STOP_GRACE)];

/// Stops a command still running: OpenSSH's sshd answers the `signal`
/// channel request with `killpg` on the session's process group, so `sh -c`
/// and everything it started (sudo relays to its command) get each signal in
/// turn until they exit; then the channel is closed.
async fn stop(read: &mut ChannelReadHalf, write: &ChannelWriteHalf<Msg>, host: &str, signals: &[(Sig, Duration)]) {
    for (signal, wait) in signals.iter().cloned() {
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
            tracing::info!(host, ?signal, "stopped a command on its host");
            break;
        }
    }
    let _ = write.close().await;
}

/// Opens a session on `conn` and asks it to run `prepared` (with a terminal when it needs one).
async fn start(
    conn: &Connection,
    target: &SshTarget,
    prepared: &Prepared,
) -> Result<russh::Channel<Msg>, AttemptError> {
    let channel = conn
        .handle
        .channel_open_session()
        .await
        .map_err(|e| AttemptError::NotStarted(format!("cannot open a session on {}: {e}", target.name)))?;
    if prepared.pty {
        // Wide, and no echo to undo: only the prompt and the command's output come back.
        let modes = [(russh::Pty::ECHO, 0), (russh::Pty::ONLCR, 0)];
        channel
            .request_pty(true, "dumb", 512, 50, 0, 0, &modes)
            .await
            .map_err(|e| AttemptError::NotStarted(format!("cannot get a terminal on {}: {e}", target.name)))?;
    }
    channel
        .exec(true, prepared.command.as_str())
        .await
        .map_err(|e| AttemptError::NotStarted(format!("cannot start the command: {e}")))?;
    Ok(channel)
}

async fn run_once(
    conn: &Connection,
    target: &SshTarget,
    prepared: &Prepared,
    (deadline, timeout, start_limit): (Instant, Duration, Duration),
    cancel: &CancellationToken,
    events: &MaskingSender,
) -> Result<HostResult, AttemptError> {
    let sudo = prepared.sudo.as_ref();
    // The connect phase ends when the host confirms the command started, within the connect
    // timeout: a host that logs in and then hangs gives its slot back instead of holding it
    // until the run's deadline while healthy hosts wait.
    let channel = tokio::select! {
        started = tokio::time::timeout(start_limit, start(conn, target, prepared)) => match started {
            Ok(channel) => channel?,
            Err(_) => {
                return Err(AttemptError::Hung(RunError::new(
                    HostFailure::Refused,
                    format!(
                        "{} logged us in, then did not start the command within {}s (ssh.connect_timeout_secs): the host looks hung",
                        target.name,
                        start_limit.as_secs_f64()
                    ),
                )));
            }
        },
        () = cancel.cancelled() => return Err(AttemptError::Failed(cancelled())),
    };
    let (mut read, write) = channel.split();
    let mut guard = StopOnDrop { write: Arc::new(write), armed: true };
    let write = guard.write.clone();
    if let Some(input) = &prepared.input {
        write
            .data_bytes(input.clone().into_bytes())
            .await
            .map_err(|e| failed(HostFailure::Lost, format!("cannot write the command: {e}")))?;
    }
    let mut gate = sudo.cloned().map(StderrGate::new);
    if gate.is_none() {
        // No more input: commands that read stdin see end-of-file instead of waiting.
        let _ = write.eof().await;
    }
    let spill = |stream| super::spill::for_stream(prepared.spill.as_ref(), stream, &prepared.mask);
    let mut out = LineSplitter::new(&target.name, Stream::Stdout).spilling(spill("stdout"));
    let mut err = LineSplitter::new(&target.name, Stream::Stderr).spilling(spill("stderr"));
    let mut exit_code: Option<i32> = None;
    let mut started = false;
    loop {
        let msg = tokio::select! {
            msg = tokio::time::timeout_at(deadline, read.wait()) => match msg {
                Ok(Some(msg)) => msg,
                Ok(None) => break,
                Err(_) => {
                    stop(&mut read, &write, &target.name, AT_DEADLINE).await;
                    guard.armed = false;
                    return Err(AttemptError::Failed(timed_out(timeout)));
                }
            },
            () = cancel.cancelled() => {
                stop(&mut read, &write, &target.name, ON_CANCEL).await;
                guard.armed = false;
                return Err(AttemptError::Failed(cancelled()));
            }
        };
        match msg {
            ChannelMsg::Success => started = true,
            ChannelMsg::Failure => {
                guard.armed = false;
                return Err(failed(HostFailure::Refused, format!("{} refused to run the command", target.name)));
            }
            // On a terminal everything comes as stdout: the password gate watches it there.
            ChannelMsg::Data { data } if prepared.pty && gate.is_some() => {
                started = true;
                let Some(gate) = gate.as_mut() else { continue };
                let gated = gate.push(&data);
                out.push(&gated.output, events).await;
                if let Some(password) = gated.write {
                    write
                        .data_bytes(password.into_bytes())
                        .await
                        .map_err(|e| failed(HostFailure::Lost, format!("cannot write the doas password: {e}")))?;
                }
                if gated.close_input {
                    let _ = write.eof().await;
                }
            }
            ChannelMsg::Data { data } => {
                started = true;
                out.push(&data, events).await;
            }
            ChannelMsg::ExtendedData { data, ext: 1 } => {
                started = true;
                let Some(gate) = gate.as_mut() else {
                    err.push(&data, events).await;
                    continue;
                };
                let gated = gate.push(&data);
                err.push(&gated.output, events).await;
                if let Some(password) = gated.write {
                    write
                        .data_bytes(password.into_bytes())
                        .await
                        .map_err(|e| failed(HostFailure::Lost, format!("cannot write the sudo password: {e}")))?;
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
                err.push(format!("killed by signal {signal_name:?} {error_message}\n").as_bytes(), events).await;
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
        let rest = gate.finish();
        if prepared.pty { out.push(&rest, events).await } else { err.push(&rest, events).await }
    }
    out.finish(events).await;
    err.finish(events).await;
    let error = exit_code.is_none().then(|| "the connection closed before the command exited".to_string());
    let spilled: Vec<String> = out.spilled().into_iter().chain(err.spilled()).collect();
    let dropped = out.dropped() + err.dropped();
    Ok(HostResult {
        host: target.name.clone(),
        exit_code,
        stdout: out.collected,
        stderr: err.collected,
        duration_ms: 0,
        failure: error.is_some().then_some(HostFailure::Lost),
        error,
        output_cut_bytes: out.cut + err.cut,
        output_spill: spilled,
        output_dropped_bytes: dropped,
    })
}
