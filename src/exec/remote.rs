//! Running a command over a pooled SSH connection.

use russh::ChannelMsg;
use tokio::sync::mpsc::UnboundedSender;

use super::lines::LineSplitter;
use super::{ExecEvent, HostResult, Stream};
use crate::ssh::{SshPool, SshTarget};

/// Runs `command` on `target`; redials once if the pooled connection turns out dead
/// before the command started.
pub async fn run(
    pool: &SshPool,
    target: &SshTarget,
    command: &str,
    events: &UnboundedSender<ExecEvent>,
) -> Result<HostResult, String> {
    let mut attempt = 0;
    let mut channel = loop {
        let conn = pool.get(target).await.map_err(|e| e.to_string())?;
        match conn.handle.channel_open_session().await {
            Ok(channel) => break channel,
            Err(e) if attempt == 0 => {
                tracing::info!(host = %target.name, error = %e, "pooled connection is dead; redialling once");
                pool.discard(target).await;
                attempt += 1;
            }
            Err(e) => return Err(format!("cannot open a session on {}: {e}", target.name)),
        }
    };
    channel.exec(true, command).await.map_err(|e| format!("cannot start the command: {e}"))?;
    let mut out = LineSplitter::new(&target.name, Stream::Stdout);
    let mut err = LineSplitter::new(&target.name, Stream::Stderr);
    let mut exit_code: Option<i32> = None;
    while let Some(msg) = channel.wait().await {
        match msg {
            ChannelMsg::Data { data } => out.push(&data, events),
            ChannelMsg::ExtendedData { data, ext: 1 } => err.push(&data, events),
            ChannelMsg::ExitStatus { exit_status } => exit_code = Some(exit_status as i32),
            ChannelMsg::ExitSignal { signal_name, error_message, .. } => {
                exit_code.get_or_insert(255);
                err.push(format!("killed by signal {signal_name:?} {error_message}\n").as_bytes(), events);
            }
            ChannelMsg::Close => break,
            _ => {}
        }
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
