//! Host baselines (issue 26): capture of N real sshd hosts on loopback (cold, the binary), against
//! OpenSSH running the same script in parallel in the same run; then the group comparison of
//! BENCH_BASELINES (1,000) host baselines made from a real capture of this machine, each host with a
//! few differences of its own.
//!
//! Last, `merlya state check` of BENCH_RESOURCES (20) `terraform_data` resources against running
//! Terraform's refresh-only plan alone in each of their folders, one after the other.
//!
//! Run: `cargo bench --bench baseline` (as root; BENCH_HOSTS=50, BENCH_BASELINES=1000, BENCH_RESOURCES=20,
//! BENCH_ROUNDS=3).

mod common;
#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::process::Command;
use std::time::Instant;

use merlya::baseline::capture::{CapturePlan, parse, script};
use merlya::baseline::compare::against_group;
use merlya::baseline::rules::Filter;
use merlya::baseline::{Facts, Section};
use merlya::safety::clearance::Clearance;
use support::TEST_USER;

use common::{median, time};

fn main() {
    let n: usize = std::env::var("BENCH_HOSTS").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let count: usize = std::env::var("BENCH_BASELINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let (key, daemons, env) = support::bench_fleet(n, "b");
    let known = env.home().join(".ssh/known_hosts");
    let plan = CapturePlan { paths: vec!["/etc".into()], contents: Vec::new() };
    let rendered = Clearance::read_only(&script(&plan, "bench")).expect("the capture script is a proven read");
    let command = rendered.command().to_string();
    let script_file = env.dir.path().join("capture.sh");
    std::fs::write(&script_file, &command).unwrap();

    // OpenSSH: the same script on every host at once, output kept per host.
    let ports: Vec<String> = daemons.iter().map(|d| d.port.to_string()).collect();
    let out_dir = env.dir.path().join("openssh");
    std::fs::create_dir_all(&out_dir).unwrap();
    let openssh = || {
        let line = format!(
            "printf '%s\\n' {} | xargs -P {n} -I{{}} sh -c \"ssh -q -i '{}' -o UserKnownHostsFile='{}' -o StrictHostKeyChecking=yes -o BatchMode=yes -p {{}} {TEST_USER}@127.0.0.1 sh < '{}' > '{}/{{}}'\"",
            ports.join(" "),
            key.private.display(),
            known.display(),
            script_file.display(),
            out_dir.display()
        );
        let status = Command::new("sh").args(["-c", &line]).status().unwrap();
        assert!(status.success(), "openssh capture failed");
    };
    let merlya_capture = || {
        let out = env.run(&["baseline", "capture", "@bench", "--format", "json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let (mut ssh_times, mut merlya_times) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        ssh_times.push(time(openssh));
        merlya_times.push(time(merlya_capture));
    }
    let (ssh, merlya) = (median(ssh_times), median(merlya_times));
    println!(
        "capture of {n} hosts (cold, median of {rounds}): merlya {merlya:.2} s, OpenSSH {ssh:.2} s, ratio {:.2}",
        merlya / ssh
    );

    // The group comparison: a real capture of this machine, copied with a few differences per host.
    let output = std::fs::read_to_string(out_dir.join(&ports[0])).unwrap();
    let base = parse(&output, "bench").expect("a capture");
    let hosts: Vec<(String, Facts)> = (0..count)
        .map(|i| {
            let mut facts = base.clone();
            if i % 10 == 0 {
                facts.insert(Section::Packages, "nginx", format!("1.{}", i % 3));
            }
            if i % 97 == 0 {
                facts.insert(Section::Files, format!("/etc/odd-{i}"), "0123");
            }
            (format!("h{i:04}"), facts)
        })
        .collect();
    let mut compare_times = Vec::new();
    let mut rows = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        rows = against_group(&hosts, Filter::new(Vec::new())).rows.len();
        compare_times.push(t.elapsed().as_secs_f64());
    }
    println!(
        "group comparison of {count} baselines ({} facts each): {:.0} ms (median of {rounds}), {rows} rows",
        base.len(),
        median(compare_times.clone()) * 1000.0
    );

    state_check(rounds);
}

/// `merlya state check` of N resources against Terraform's refresh-only plan alone, in the same run.
fn state_check(rounds: usize) {
    let count: usize = std::env::var("BENCH_RESOURCES").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let env = support::TestEnv::new();
    for i in 0..count {
        let name = format!("r{i:02}");
        let out = env.run(&[
            "provision",
            "create",
            "data-marker",
            "--var",
            &format!("message=m{i}"),
            "--name",
            &name,
            "--yes",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let folders: Vec<std::path::PathBuf> =
        (0..count).map(|i| env.merlya_home().join("resources").join(format!("r{i:02}"))).collect();
    let terraform_alone = || {
        for dir in &folders {
            let status = Command::new("terraform")
                .args(["plan", "-refresh-only", "-input=false", "-lock=false", "-no-color", "-json"])
                .current_dir(dir)
                .env("TF_IN_AUTOMATION", "1")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success() || status.code() == Some(2));
        }
    };
    let merlya_check = || {
        let out = env.run(&["state", "check", "--format", "json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let (mut alone, mut check) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        alone.push(time(terraform_alone));
        check.push(time(merlya_check));
    }
    let (alone, check) = (median(alone), median(check));
    println!(
        "state check of {count} terraform_data resources (median of {rounds}): merlya {check:.2} s, terraform refresh-only alone {alone:.2} s, ratio {:.2}",
        check / alone
    );
}
