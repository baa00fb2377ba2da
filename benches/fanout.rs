//! Fan-out benchmark: `uptime` on N real sshd daemons on loopback ports.
//!
//! Compares, in the same run on the same daemons:
//! - OpenSSH in parallel (`xargs -P N ssh ...`), cold connections;
//! - `merlya exec @bench -- uptime` (the binary), cold connections;
//! - merlya's pooled executor, second fan-out on warm connections.
//!
//! Run: `cargo bench --bench fanout` (as root; BENCH_HOSTS=50 by default, BENCH_ROUNDS=3).

mod common;
#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use merlya::config::HostKeyPolicy;
use merlya::exec::Executor;
use merlya::exec::fanout::fan_out;
use merlya::inventory::Host;
use merlya::prompt::NoPrompter;
use merlya::safety::clearance::Clearance;
use merlya::ssh::SshPool;
use merlya::ssh::client::ConnectContext;
use merlya::ssh::target::ResolveContext;
use support::TEST_USER;

use common::{median, time};

fn main() {
    let n: usize = std::env::var("BENCH_HOSTS").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let (key, daemons, env) = support::bench_fleet(n, "b");
    let known = env.home().join(".ssh/known_hosts");

    // OpenSSH, one process per host, all at once.
    let ports: Vec<String> = daemons.iter().map(|d| d.port.to_string()).collect();
    let openssh = |ports: &[String]| {
        let script = format!(
            "printf '%s\\n' {} | xargs -P {n} -I{{}} ssh -q -i '{}' -o UserKnownHostsFile='{}' -o StrictHostKeyChecking=yes -o BatchMode=yes -p {{}} {TEST_USER}@127.0.0.1 uptime > /dev/null",
            ports.join(" "),
            key.private.display(),
            known.display()
        );
        let status = Command::new("sh").args(["-c", &script]).status().unwrap();
        assert!(status.success(), "openssh fan-out failed");
    };
    let merlya_cli = || {
        let out = env.run(&["exec", "@bench", "--parallel", &n.to_string(), "--format", "json", "--", "uptime"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };

    let mut ssh_times = Vec::new();
    let mut cli_times = Vec::new();
    for _ in 0..rounds {
        ssh_times.push(time(|| openssh(&ports)));
        cli_times.push(time(merlya_cli));
    }

    // The pooled executor: first fan-out dials, the next ones reuse connections.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (cold, warm, cancelled) = runtime.block_on(async {
        let ctx = ConnectContext {
            known_hosts_files: vec![known.clone()],
            own_known_hosts: known.clone(),
            policy: HostKeyPolicy::Strict,
            prompter: Arc::new(NoPrompter),
            secrets: Arc::new(merlya::secrets::Secrets::memory()),
            connect_timeout: Duration::from_secs(20),
        };
        let pool = Arc::new(SshPool::new(ctx, n + 1, Duration::from_secs(300)));
        let executor = Arc::new(Executor::new(
            pool,
            ResolveContext { identity_files: vec![key.private.clone()], ..Default::default() },
        ));
        let hosts: Vec<Host> = daemons
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mut h = Host::new(format!("b{i:03}"), "127.0.0.1");
                h.port = d.port;
                h.username = Some(TEST_USER.into());
                h
            })
            .collect();
        let once = |executor: Arc<Executor>, hosts: Vec<Host>| async move {
            let tx = merlya::exec::no_events();
            let t = Instant::now();
            let uptime = Clearance::read_only("uptime").expect("uptime is read-only");
            let results = fan_out(executor, hosts, uptime, n, Duration::from_secs(60), Default::default(), tx).await;
            assert!(results.iter().all(|r| r.success()), "{:?}", results.iter().find(|r| !r.success()));
            t.elapsed().as_secs_f64()
        };
        let cold = once(executor.clone(), hosts.clone()).await;
        let mut warm = Vec::new();
        for _ in 0..rounds {
            warm.push(once(executor.clone(), hosts.clone()).await);
        }
        // Cancel a run of a long sleep on every host: time until no remote process is left.
        let sleep = format!("sleep 600.{}", std::process::id() % 100_000);
        let remote = |pattern: &str| {
            let out = Command::new("pgrep").args(["-f", "-x", pattern]).output().unwrap();
            String::from_utf8_lossy(&out.stdout).lines().count()
        };
        let cancel = tokio_util::sync::CancellationToken::new();
        let run = Clearance::read_only(&sleep).expect("sleep is read-only");
        let runner = tokio::spawn(fan_out(
            executor.clone(),
            hosts.clone(),
            run,
            n,
            Duration::from_secs(900),
            cancel.clone(),
            merlya::exec::no_events(),
        ));
        while remote(&sleep) < n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let t = Instant::now();
        cancel.cancel();
        while remote(&sleep) > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let cancelled = t.elapsed().as_secs_f64();
        let _ = runner.await;
        (cold, median(warm), cancelled)
    });

    let ssh = median(ssh_times);
    let cli = median(cli_times);
    println!(
        "fan-out of `uptime` to {n} sshd daemons on loopback ({} cores), median of {rounds}",
        std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1)
    );
    println!("{:<46} {:>9} {:>16}", "runner", "seconds", "vs OpenSSH");
    println!("{:<46} {:>9.3} {:>16}", "OpenSSH in parallel (xargs -P, cold)", ssh, "1.00x");
    println!("{:<46} {:>9.3} {:>15.2}x", "merlya exec (binary, cold)", cli, ssh / cli);
    println!("{:<46} {:>9.3} {:>15.2}x", "merlya executor, first fan-out (cold)", cold, ssh / cold);
    println!("{:<46} {:>9.3} {:>15.2}x", "merlya executor, pooled (warm)", warm, ssh / warm);
    println!("(ratios above 1 mean merlya is faster)");
    println!(
        "per host, cold: OpenSSH {:.1} ms, merlya exec {:.1} ms",
        ssh / n as f64 * 1000.0,
        cli / n as f64 * 1000.0
    );
    println!("cancelling `sleep 600` on {n} hosts: no remote process left after {cancelled:.3} s");
}
