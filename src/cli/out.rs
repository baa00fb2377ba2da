//! Standard output of CLI commands, safe against a reader that goes away.
//!
//! Rust ignores SIGPIPE, so writing to a closed pipe (`merlya … | head -1`)
//! fails with EPIPE, and `println!` panics on that. Restoring SIGPIPE's
//! default action would instead kill merlya on any write to a closed pipe or
//! socket — a local command's stdin, the ssh-agent or D-Bus socket — in the
//! middle of a run, before commands on hosts are audited. So output goes
//! through [`Output`]: once the reader has gone, further output is dropped
//! quietly, and a command that registered its run ([`stop_when_closed`]) is
//! cancelled: `merlya exec … | head -1` stops the command on every host (it is
//! audited as cancelled) instead of running to its timeout and spilling what
//! nobody reads. Any other write failure (a full disk) is kept and reported at exit.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write found the reader gone.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write failure other than a closed pipe.
static FAILED: Mutex<Option<String>> = Mutex::new(None);
/// The run to stop when the reader goes away.
static ON_CLOSE: Mutex<Option<tokio_util::sync::CancellationToken>> = Mutex::new(None);

/// Cancels `run` when the reader of standard output goes away (at once if it has already): on
/// the next write, or — when standard output is a pipe — as soon as the kernel says its reader
/// closed it, even while the command prints nothing.
pub fn stop_when_closed(run: tokio_util::sync::CancellationToken) {
    if CLOSED.load(Ordering::Relaxed) {
        run.cancel();
    }
    if let Ok(mut slot) = ON_CLOSE.lock() {
        *slot = Some(run.clone());
    }
    if stdout_is_a_pipe() {
        // A thread of its own (not the runtime's blocking pool, which a runtime waits for when it
        // shuts down): it sleeps in poll(2) until the pipe has no reader, or the process ends.
        let _ = std::thread::Builder::new().name("stdout-reader".into()).spawn(move || {
            let mut fd = libc::pollfd { fd: libc::STDOUT_FILENO, events: 0, revents: 0 };
            loop {
                // SAFETY: one valid pollfd, for the length of the call.
                let ready = unsafe { libc::poll(&mut fd, 1, -1) };
                if ready > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                    CLOSED.store(true, Ordering::Relaxed);
                    run.cancel();
                    return;
                }
                if ready < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                    return;
                }
            }
        });
    }
}

/// Whether standard output is a pipe (poll(2) then reports a reader that went away).
fn stdout_is_a_pipe() -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata("/proc/self/fd/1").is_ok_and(|m| m.file_type().is_fifo())
}

/// Standard output that never fails: a closed pipe ends output quietly, other
/// errors are kept for [`failure`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Output;

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if !CLOSED.load(Ordering::Relaxed) {
            let mut out = std::io::stdout().lock();
            settle(out.write_all(buf).and_then(|()| out.flush()));
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !CLOSED.load(Ordering::Relaxed) {
            settle(std::io::stdout().lock().flush());
        }
        Ok(())
    }
}

/// Notes the outcome of a write.
fn settle(result: std::io::Result<()>) {
    match result {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            if let Some(run) = ON_CLOSE.lock().ok().and_then(|slot| slot.clone()) {
                run.cancel();
            }
        }
        Err(e) => {
            CLOSED.store(true, Ordering::Relaxed);
            if let Ok(mut failed) = FAILED.lock() {
                failed.get_or_insert_with(|| e.to_string());
            }
        }
    }
}

/// What `print!` in the command modules expands to.
pub fn print(args: std::fmt::Arguments<'_>) {
    let _ = Output.write_all(args.to_string().as_bytes());
}

/// What `println!` in the command modules expands to: one write, so lines
/// from several tasks do not interleave.
pub fn println(args: std::fmt::Arguments<'_>) {
    let mut line = args.to_string();
    line.push('\n');
    let _ = Output.write_all(line.as_bytes());
}

/// The first write error other than a closed pipe, if any.
pub fn failure() -> Option<String> {
    FAILED.lock().ok().and_then(|f| f.clone())
}
