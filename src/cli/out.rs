//! Standard output of CLI commands, safe against a reader that goes away.
//!
//! Rust ignores SIGPIPE, so writing to a closed pipe (`merlya … | head -1`)
//! fails with EPIPE, and `println!` panics on that. Restoring SIGPIPE's
//! default action would instead kill merlya on any write to a closed pipe or
//! socket — a local command's stdin, the ssh-agent or D-Bus socket — in the
//! middle of a run, before commands on hosts are audited. So output goes
//! through [`Output`]: once the reader has gone, further output is dropped
//! quietly and the command finishes its work and exits with its own code.
//! Any other write failure (a full disk) is kept and reported at exit.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write found the reader gone.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write failure other than a closed pipe.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

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
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => CLOSED.store(true, Ordering::Relaxed),
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
