//! `localhost`: commands run through `sh -c` without SSH.

use std::process::Stdio;

use super::lines::{LineSplitter, MaskingSender};
use super::{HostResult, Stream};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// Runs `command` locally; the child is killed if the future is dropped (timeout).
pub async fn run(host: &str, command: &str, stdin: Option<&str>, events: &MaskingSender) -> Result<HostResult, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        use tokio::io::AsyncWriteExt;
        pipe.write_all(input.as_bytes()).await.map_err(|e| format!("cannot write to the command's stdin: {e}"))?;
        // Dropping the pipe closes stdin.
    }
    let mut stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let mut stderr = child.stderr.take().ok_or("no stderr pipe")?;
    let mut out = LineSplitter::new(host, Stream::Stdout);
    let mut err = LineSplitter::new(host, Stream::Stderr);
    let (mut out_buf, mut err_buf) = ([0u8; 8192], [0u8; 8192]);
    let (mut out_open, mut err_open) = (true, true);
    while out_open || err_open {
        tokio::select! {
            n = stdout.read(&mut out_buf), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => out.push(&out_buf[..n], events),
            },
            n = stderr.read(&mut err_buf), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => err.push(&err_buf[..n], events),
            },
        }
    }
    out.finish(events);
    err.finish(events);
    let status = child.wait().await.map_err(|e| format!("cannot wait for the command: {e}"))?;
    let exit_code = status.code().or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map(|s| 128 + s)
    });
    Ok(HostResult {
        host: host.to_string(),
        exit_code,
        stdout: out.collected,
        stderr: err.collected,
        duration_ms: 0,
        error: None,
    })
}
