//! What the bench binaries share: timing the real binary and reading its
//! peak memory through getrusage(2).
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

/// Median wall time of 7 runs of `merlya ARGS` with `MERLYA_HOME=home` (and `env`), and the peak RSS
/// (KiB) of any child so far.
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
        let out = Command::new(bin).args(args).env("MERLYA_HOME", home).envs(env.iter().copied()).output().unwrap();
        assert!(out.status.success(), "merlya {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        times.push(t.elapsed().as_secs_f64());
        let mut usage = std::mem::MaybeUninit::<libc_rusage::RUsage>::zeroed();
        // SAFETY: getrusage writes a plain struct of integers.
        let ok = unsafe { libc_rusage::getrusage(libc_rusage::RUSAGE_CHILDREN, usage.as_mut_ptr()) } == 0;
        if ok {
            // SAFETY: initialised by a successful getrusage.
            rss = rss.max(unsafe { usage.assume_init() }.ru_maxrss as u64);
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (times[times.len() / 2], rss)
}

/// The part of getrusage(2) needed here, without a libc dependency.
mod libc_rusage {
    pub const RUSAGE_CHILDREN: i32 = -1;
    #[repr(C)]
    pub struct TimeVal {
        pub tv_sec: i64,
        pub tv_usec: i64,
    }
    #[repr(C)]
    pub struct RUsage {
        pub ru_utime: TimeVal,
        pub ru_stime: TimeVal,
        pub ru_maxrss: i64,
        pub rest: [i64; 13],
    }
    unsafe extern "C" {
        pub fn getrusage(who: i32, usage: *mut RUsage) -> i32;
    }
}
