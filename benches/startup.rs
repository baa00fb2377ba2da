//! Start-up and memory of the binary against the reference figures in
//! TESTBED-style measurements: `merlya --version` and `merlya hosts list`
//! (which opens the database), median wall time and peak RSS; then a large fleet: `exec localhost`
//! with 1 and with 200,000 hosts in the inventory (a command naming one host reads only its row).
//!
//! Run: `cargo bench --bench startup` (BENCH_FLEET=200000 hosts by default).

#[path = "common/mod.rs"]
mod common;

use common::measure;

fn main() {
    let home = std::env::temp_dir().join(format!("merlya-bench-{}", std::process::id()));
    let (version, version_rss) = measure(&["--version"], &home);
    let (list, rss) = measure(&["hosts", "list"], &home);
    println!("{:<34} {:>9} {:>18}", "command", "seconds", "reference (0.8.5)");
    println!("{:<34} {:>9.3} {:>18}", "merlya --version", version, "0.15-0.18 s");
    println!("{:<34} {:>9.3} {:>18}", "merlya hosts list (opens the DB)", list, "2.0 s (/hosts list)");
    println!(
        "peak RSS: --version {:.1} MiB, hosts list {:.1} MiB (reference: 27 MiB for --version, 125 MiB for /hosts list)",
        mib(version_rss),
        mib(rss)
    );
    let _ = std::fs::remove_dir_all(&home);
    large_fleet();
}

/// `exec localhost -- true` with one host and with BENCH_FLEET hosts imported, and each one's peak RSS.
fn large_fleet() {
    let count: usize = std::env::var("BENCH_FLEET").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let small = std::env::temp_dir().join(format!("merlya-bench-small-{}", std::process::id()));
    let big = std::env::temp_dir().join(format!("merlya-bench-fleet-{}", std::process::id()));
    let exec = ["exec", "localhost", "--", "true"];
    let (exec_small, rss_small) = measure(&exec, &small);
    let csv = big.with_extension("csv");
    let mut rows = String::from("name,hostname,port,username,tags\n");
    for i in 0..count {
        rows.push_str(&format!(
            "node{i:06},10.{}.{}.{},22,ops,rack{}\n",
            i >> 16 & 255,
            i >> 8 & 255,
            i & 255,
            i % 100
        ));
    }
    std::fs::write(&csv, rows).unwrap();
    let bin = env!("CARGO_BIN_EXE_merlya");
    let imported = common::time(|| {
        let out = std::process::Command::new(bin)
            .args(["hosts", "import"])
            .arg(&csv)
            .env("MERLYA_HOME", &big)
            .output()
            .unwrap();
        assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
    });
    let (exec_big, rss_big) = measure(&exec, &big);
    println!("\n{:<52} {:>9} {:>12}", format!("large fleet ({count} hosts)"), "seconds", "peak RSS");
    println!(
        "{:<52} {:>9.3} {:>8.1} MiB",
        "exec localhost -- true, 1 host in the inventory",
        exec_small,
        mib(rss_small)
    );
    println!("{:<52} {:>9.3} {:>8.1} MiB", format!("exec localhost -- true, {count} hosts"), exec_big, mib(rss_big));
    println!("{:<52} {:>9.3} {:>12}", format!("hosts import of {count} hosts (once)"), imported, "");
    for dir in [&small, &big] {
        let _ = std::fs::remove_dir_all(dir);
    }
    let _ = std::fs::remove_file(&csv);
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
