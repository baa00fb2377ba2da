//! What the bench binaries share: timing the real binary and reading its
//! peak memory through wait4(2).
#![allow(dead_code)]

use std::process::Command;
use std::time::Instant;

/// The middle value (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Seconds `f` took.
pub fn time(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// Median wall time of 7 runs of `merlya ARGS` with `MERLYA_HOME=home` (and `env`), and the largest
/// peak RSS (KiB) of those runs themselves (wait4's own usage of each child, not of every child so far).
pub fn measure(args: &[&str], home: &std::path::Path) -> (f64, u64) {
    measure_with(args, home, &[])
}

/// [`measure`] with extra environment variables.
pub fn measure_with(args: &[&str], home: &std::path::Path, env: &[(&str, &str)]) -> (f64, u64) {
    let bin = env!("CARGO_BIN_EXE_merlya");
    let mut times = Vec::new();
    let mut rss = 0;
    for _ in 0..7 {
        let t = Instant::now();
        let child = Command::new(bin)
            .args(args)
            .env("MERLYA_HOME", home)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (status, peak) = wait_with_peak(child);
        assert!(status == 0, "merlya {args:?} exited {status}");
        times.push(t.elapsed().as_secs_f64());
        rss = rss.max(peak);
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (times[times.len() / 2], rss)
}

/// Waits for `child` with wait4(2): its exit status and its own peak RSS in KiB.
pub fn wait_with_peak(child: std::process::Child) -> (i32, u64) {
    use std::io::Read;
    let pid = child.id() as libc::pid_t;
    // Drain stderr on a thread so a chatty child never blocks on a full pipe.
    let drain = child.stderr.map(|mut err| {
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = err.read_to_end(&mut sink);
        })
    });
    let mut status = 0;
    // SAFETY: rusage is a plain struct of integers that wait4 fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our own child, not yet waited for; both pointers are valid.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4");
    if let Some(drain) = drain {
        let _ = drain.join();
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (code, usage.ru_maxrss as u64)
}
