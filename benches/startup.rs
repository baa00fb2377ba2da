//! Start-up and memory of the binary against the reference figures in
//! TESTBED-style measurements: `merlya --version` and `merlya hosts list`
//! (which opens the database), median wall time and peak RSS.
//!
//! Run: `cargo bench --bench startup`.

#[path = "common/mod.rs"]
mod common;

use common::measure;

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
