//! Runbook benchmark: `merlya skill run incident_triage` (11 checks) on N real sshd daemons on loopback
//! ports, cold connections, no model — against OpenSSH running the same 11 commands on every host in
//! parallel (one connection per host, the commands joined by `;`), in the same run on the same daemons.
//!
//! Run: `cargo bench --bench skills` (as root; BENCH_HOSTS=100 by default, BENCH_ROUNDS=3).

mod common;
#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::process::Command;

use common::{median, time};
use support::TEST_USER;

/// The built-in incident_triage's commands, as merlya runs them (`since` at its default).
const TRIAGE: [&str; 11] = [
    "cat /proc/loadavg; nproc",
    "cat /proc/meminfo",
    "cat /proc/meminfo",
    "df -P -x tmpfs -x devtmpfs -x squashfs",
    "df -P -i -x tmpfs -x devtmpfs -x squashfs",
    "systemctl --failed --no-legend --plain",
    "dmesg",
    "journalctl -p err -q --no-pager --since '1 hour ago'",
    "ss -ltnH",
    "cat /proc/uptime",
    "date +%s",
];

fn main() {
    let n: usize = std::env::var("BENCH_HOSTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let (key, daemons, env) = support::bench_fleet(n, "t");
    // Every host at once, as OpenSSH below.
    std::fs::write(
        env.merlya_home().join("config.yaml"),
        format!("policy:\n  max_parallel: {n}\n  max_hosts_per_skill: {n}\n"),
    )
    .unwrap();
    let known = env.home().join(".ssh/known_hosts");
    let ports: Vec<String> = daemons.iter().map(|d| d.port.to_string()).collect();
    let script = TRIAGE.iter().map(|c| format!("{c} 2>&1")).collect::<Vec<_>>().join("; ").replace('\'', "'\\''");
    let openssh = || {
        let line = format!(
            "printf '%s\\n' {} | xargs -P {n} -I{{}} ssh -q -i '{}' -o UserKnownHostsFile='{}' -o StrictHostKeyChecking=yes -o BatchMode=yes -p {{}} {TEST_USER}@127.0.0.1 '{script}' > /dev/null",
            ports.join(" "),
            key.private.display(),
            known.display()
        );
        let status = Command::new("sh").args(["-c", &line]).status().unwrap();
        assert!(status.success(), "openssh fan-out failed");
    };
    let merlya = || {
        let out = env.run(&["skill", "run", "incident_triage", "--targets", "@bench", "--format", "json"]);
        assert!(matches!(out.status.code(), Some(0 | 4)), "{}", String::from_utf8_lossy(&out.stderr));
        let outcome: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(outcome["findings"].as_array().map(Vec::len), Some(11 * n), "every check on every host");
    };
    let (mut ssh, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        ssh.push(time(openssh));
        ours.push(time(merlya));
    }
    let (ssh, ours) = (median(ssh), median(ours));
    println!(
        "incident_triage (11 checks) on {n} sshd daemons on loopback ({} cores), cold connections, no model, median of {rounds}",
        std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1)
    );
    println!("| runner | seconds | vs OpenSSH |");
    println!("|---|---:|---:|");
    println!("| OpenSSH in parallel (xargs -P {n}, the 11 commands in one session per host) | {ssh:.3} | 1.00x |");
    println!("| merlya skill run incident_triage (binary: audit, history, ranking) | {ours:.3} | {:.2}x |", ssh / ours);
    println!("(ratios above 1 mean merlya is faster; goal: merlya ≤ 5 s)");
}
