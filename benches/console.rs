//! The console as a person meets it, measured through a real pseudo-terminal:
//! time from exec to the first frame (the inventory drawn), CPU used by an
//! idle console over 10 s, and the peak RSS of `merlya --version`; then a
//! console holding BENCH_FLEET generated hosts (200,000) against one holding
//! 10: peak RSS with the inventory drawn, and filter keystroke to redrawn screen.
//!
//! Run: `cargo bench --bench console` (BENCH_RUNS=7, BENCH_FLEET=200000; BENCH_MERLYA=path
//! measures another merlya binary with the same harness; BENCH_KEYS=1 prints every keystroke's time).

#[path = "common/mod.rs"]
mod common;
#[path = "console_parts/fleet.rs"]
mod fleet;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A console started on a fresh pty, with everything it prints collected by a thread.
struct Console {
    child: Child,
    master: std::fs::File,
    screen: Arc<Mutex<Vec<u8>>>,
    /// When the console last printed anything.
    last_output: Arc<Mutex<Instant>>,
    started: Instant,
}

impl Console {
    fn start(home: &std::path::Path) -> Self {
        let (mut master_fd, mut slave_fd) = (0, 0);
        let size = libc::winsize { ws_row: 34, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: openpty fills two descriptors it creates; the size is a plain struct.
        let rc = unsafe { libc::openpty(&mut master_fd, &mut slave_fd, std::ptr::null_mut(), std::ptr::null(), &size) };
        assert_eq!(rc, 0, "openpty");
        // SAFETY: both descriptors were just created by openpty and are owned here.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master_fd), OwnedFd::from_raw_fd(slave_fd)) };
        let stdio = || Stdio::from(slave.try_clone().unwrap());
        // BENCH_MERLYA: another build of merlya to measure with the same harness (an older one).
        let bin = std::env::var("BENCH_MERLYA").unwrap_or_else(|_| env!("CARGO_BIN_EXE_merlya").to_string());
        let mut command = Command::new(bin);
        command
            .env("MERLYA_HOME", home)
            .env("MERLYA_SETUP", "skip")
            .env("TERM", "xterm-256color")
            .stdin(stdio())
            .stdout(stdio())
            .stderr(stdio());
        // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
        // controlling terminal is the pty, as a shell would give it.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let started = Instant::now();
        let child = command.spawn().unwrap();
        drop(slave);
        let master = std::fs::File::from(master);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let last_output = Arc::new(Mutex::new(started));
        let (mut reader, sink, last) = (master.try_clone().unwrap(), screen.clone(), last_output.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
                *last.lock().unwrap() = Instant::now();
            }
        });
        Self { child, master, screen, last_output, started }
    }

    /// Time from exec until `text` was printed.
    fn wait_for(&self, text: &str) -> Duration {
        loop {
            if String::from_utf8_lossy(&self.screen.lock().unwrap()).contains(text) {
                return self.started.elapsed();
            }
            assert!(self.started.elapsed() < Duration::from_secs(60), "no {text:?} on screen");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// User plus system CPU time of the console, in clock ticks.
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // Fields after the command name (which is in parentheses): utime is the 14th field, stime the 15th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    fn quit(mut self) {
        let _ = self.master.write_all(b"q");
        let _ = self.child.wait();
        let _ = self.master.as_raw_fd();
    }
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let home = std::env::temp_dir().join(format!("merlya-bench-console-{}", std::process::id()));
    // --version first, so the peak RSS of children is its own.
    let (version, version_rss) = common::measure(&["--version"], &home);
    // A first start creates the home and the database; frames are timed on later starts.
    Console::start(&home).quit();
    let mut frames = Vec::new();
    for _ in 0..runs {
        let console = Console::start(&home);
        frames.push(console.wait_for("Inventory").as_secs_f64() * 1000.0);
        console.quit();
    }
    frames.sort_by(|a, b| a.total_cmp(b));
    let console = Console::start(&home);
    console.wait_for("Inventory");
    std::thread::sleep(Duration::from_secs(2));
    let (before, at) = (console.cpu_ticks(), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let ticks = console.cpu_ticks() - before;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let idle = ticks as f64 / per_second / at.elapsed().as_secs_f64() * 100.0;
    console.quit();
    println!("{:<44} {:>12} {:>12}", "figure", "merlya", "target");
    println!("{:<44} {:>10.1} MiB {:>12}", "merlya --version peak RSS", version_rss as f64 / 1024.0, "≤ 10 MiB");
    println!("{:<44} {:>11.3} s {:>12}", "merlya --version wall time (median)", version, "-");
    println!(
        "{:<44} {:>9.1} ms {:>12}",
        "first frame (exec → inventory drawn), median",
        frames[frames.len() / 2],
        "≤ 15 ms"
    );
    println!("{:<44} {:>9.1} ms {:>12}", "first frame, slowest", frames[frames.len() - 1], "-");
    println!("{:<44} {:>10.2} % {:>12}", "idle console CPU over 10 s", idle, "< 0.5 %");
    let _ = std::fs::remove_dir_all(&home);
    fleet_figures();
}

/// A 10-host console and a BENCH_FLEET-host one, measured one after the other.
fn fleet_figures() {
    let large: usize = std::env::var("BENCH_FLEET").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let mut figures = Vec::new();
    for hosts in [10, large] {
        let home = std::env::temp_dir().join(format!("merlya-bench-fleet-{}-{hosts}", std::process::id()));
        Console::start(&home).quit();
        // localhost is there already.
        let t = Instant::now();
        fleet::fill(&home, hosts - 1);
        eprintln!("{hosts} hosts written in {:.1} s", t.elapsed().as_secs_f64());
        let measured = fleet::measure(&home);
        // BENCH_KEYS=1: every keystroke's time, to see which keys are slow.
        if std::env::var_os("BENCH_KEYS").is_some() {
            eprintln!("{hosts} hosts, typed (ms): {:.1?}", measured.typed);
            eprintln!("{hosts} hosts, erased (ms): {:.1?}", measured.erased);
        }
        figures.push(measured);
        let _ = std::fs::remove_dir_all(&home);
    }
    println!();
    println!("{:<44} {:>12} {:>12}", "figure", "10 hosts", format!("{large} hosts"));
    let row = |name: &str, unit: &str, f: &dyn Fn(&fleet::Figures) -> f64| {
        println!("{name:<44} {:>9.1} {unit:<2} {:>9.1} {unit:<2}", f(&figures[0]), f(&figures[1]));
    };
    row("exec → inventory drawn", "s", &|f| f.first_frame);
    row("peak RSS, inventory drawn", "MiB", &|f| f.rss_drawn);
    row("peak RSS, after the filter keystrokes", "MiB", &|f| f.rss_after);
    let slowest = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    row("keystroke typed → screen redrawn, median", "ms", &|f| common::median(f.typed.clone()));
    row("keystroke typed → screen redrawn, slowest", "ms", &|f| slowest(&f.typed));
    row("keystroke erased → screen redrawn, median", "ms", &|f| common::median(f.erased.clone()));
    row("keystroke erased → screen redrawn, slowest", "ms", &|f| slowest(&f.erased));
    row("any keystroke → screen redrawn, median", "ms", &|f| common::median([&f.typed[..], &f.erased[..]].concat()));
    let count = figures[0].typed.len() + figures[0].erased.len();
    println!("({count} keystrokes each: {:?} typed a character at a time, then erased)", fleet::QUERIES);
}
