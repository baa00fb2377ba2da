//! Start-up and memory of the binary against the reference figures in
//! TESTBED-style measurements: `merlya --version` and `merlya hosts list`
//! (which opens the database), median wall time and peak RSS.
//!
//! Run: `cargo bench --bench startup`.

use std::process::Command;
use std::time::Instant;

fn measure(args: &[&str], home: &std::path::Path) -> (f64, u64) {
    let bin = env!("CARGO_BIN_EXE_merlya");
    let mut times = Vec::new();
    let mut rss = 0;
    for _ in 0..7 {
        let t = Instant::now();
        let status = Command::new(bin).args(args).env("MERLYA_HOME", home).output().unwrap();
        assert!(status.status.success());
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

fn main() {
    let home = std::env::temp_dir().join(format!("merlya-bench-{}", std::process::id()));
    let (version, _) = measure(&["--version"], &home);
    let (list, rss) = measure(&["hosts", "list"], &home);
    println!("{:<34} {:>9} {:>18}", "command", "seconds", "reference (0.8.5)");
    println!("{:<34} {:>9.3} {:>18}", "merlya --version", version, "0.15-0.18 s");
    println!("{:<34} {:>9.3} {:>18}", "merlya hosts list (opens the DB)", list, "2.0 s (/hosts list)");
    println!(
        "peak RSS of any child: {:.1} MiB (reference: 27 MiB for --version, 125 MiB for /hosts list)",
        rss as f64 / 1024.0
    );
    let _ = std::fs::remove_dir_all(&home);
}
