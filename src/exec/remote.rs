//! Running a command over a pooled SSH connection.

use super::lines::{LineSplitter, MaskingSender};
use super::{HostResult, Stream};
use crate::ssh::client::Connection;
use crate::ssh::{SshPool, SshTarget};
use russh::ChannelMsg;

/// Why one attempt failed: before the server confirmed the command started
/// (safe to redial and retry) or after (never retried).
enum AttemptError {
    NotStarted(String),
    Failed(String),
}

/// Runs `command` on `target`; redials once if the pooled connection turns
/// out dead before the command started.
pub async fn run(
    pool: &SshPool,
    target: &SshTarget,
    command: &str,
    stdin: Option<&str>,
    events: &MaskingSender,
) -> Result<HostResult, String> {
    for attempt in 0..2 {
        let conn = pool.get(target).await.map_err(|e| e.to_string())?;
        match run_once(&conn, target, command, stdin, events).await {
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

async fn run_once(
    conn: &Connection,
    target: &SshTarget,
    command: &str,
    stdin: Option<&str>,
    events: &MaskingSender,
) -> Result<HostResult, AttemptError> {
    let mut channel = conn
        .handle
        .channel_open_session()
        .await
        .map_err(|e| AttemptError::NotStarted(format!("cannot open a session on {}: {e}", target.name)))?;
    channel
        .exec(true, command)
        .await
        .map_err(|e| AttemptError::NotStarted(format!("cannot start the command: {e}")))?;
    if let Some(input) = stdin {
        channel.data(input.as_bytes()).await.map_err(|e| AttemptError::Failed(format!("cannot write stdin: {e}")))?;
    }
    // No more input: commands that read stdin see end-of-file instead of waiting.
    let _ = channel.eof().await;
    let mut out = LineSplitter::new(&target.name, Stream::Stdout);
    let mut err = LineSplitter::new(&target.name, Stream::Stderr);
    let mut exit_code: Option<i32> = None;
    let mut started = false;
    while let Some(msg) = channel.wait().await {
        match msg {
            ChannelMsg::Success => started = true,
            ChannelMsg::Failure => {
                return Err(AttemptError::Failed(format!("{} refused to run the command", target.name)));
            }
            ChannelMsg::Data { data } => {
                started = true;
                out.push(&data, events)
            }
            ChannelMsg::ExtendedData { data, ext: 1 } => {
                started = true;
                err.push(&data, events)
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
    if !started {
        return Err(AttemptError::NotStarted(format!("{} closed the session before the command started", target.name)));
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
