//! Pipeline overhead: the runner against the bare tool doing the same work, in the same run.
//!
//! - Terraform, 20 `terraform_data` resources: the bare sequence the runner runs (`init`, `plan -out
//!   -detailed-exitcode`, `show -json`, `apply PLAN`, `plan -detailed-exitcode`) against
//!   `merlya pipeline run terraform DIR --yes` (plan, diff, approval, apply, post-check, all persisted),
//!   and against the runner alone, in-process, as the console and the agent drive it (a store already
//!   open, no process of merlya's own to start and close).
//! - Ansible on 10 real sshd hosts, a `copy` task per host: bare `ansible-playbook --check --diff`, the
//!   playbook, then `--check` again, against `merlya pipeline run ansible --yes` (the same three runs).
//!
//! Run: `cargo bench --bench pipeline` (as root; BENCH_ROUNDS=3, BENCH_HOSTS=10, BENCH_ONLY=terraform|ansible).
//! Each round runs every side, the first one turning, after a round not counted; the table gives
//! the ratio of the medians, the median of each round's difference and a 95 % interval of that median
//! (Terraform's ~0.25 s varies by more than merlya's cost: use BENCH_ROUNDS=100 or more).

mod common;
#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Command;

use support::{Sshd, SshdOptions, TEST_USER, TestEnv, TestKey};

use common::{median, time};

fn ok(cmd: &mut Command, allowed: &[i32]) {
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(allowed.contains(&code), "{cmd:?}: {code}\n{}", String::from_utf8_lossy(&out.stderr));
}

fn terraform(rounds: usize, env: &TestEnv) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let rc = env.dir.path().join("terraformrc");
    std::fs::write(&rc, "").unwrap();
    // SAFETY: set before the in-process side starts its runtime, while this is the only thread; its
    // terraform runs inherit it, as the other sides get it on their command lines.
    unsafe { std::env::set_var("TF_CLI_CONFIG_FILE", &rc) };
    let config: String =
        (0..20).map(|i| format!("resource \"terraform_data\" \"r{i}\" {{\n  input = \"value-{i}\"\n}}\n")).collect();
    let fresh = |name: &str| {
        let dir = env.dir.path().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.tf"), &config).unwrap();
        dir
    };
    let tf = |dir: &Path, args: &[&str]| {
        let mut cmd = Command::new("terraform");
        cmd.args(args)
            .current_dir(dir)
            .env("TF_CLI_CONFIG_FILE", &rc)
            .env("TF_IN_AUTOMATION", "1")
            .env("TF_INPUT", "0")
            // As the runner calls it: no version check.
            .env("CHECKPOINT_DISABLE", "1");
        cmd
    };
    let bare_run = |round: usize| {
        let dir = fresh(&format!("bare{round}"));
        time(|| {
            ok(&mut tf(&dir, &["init", "-input=false", "-no-color"]), &[0]);
            ok(&mut tf(&dir, &["plan", "-input=false", "-no-color", "-detailed-exitcode", "-out=p.tfplan"]), &[2]);
            ok(&mut tf(&dir, &["show", "-no-color", "-json", "p.tfplan"]), &[0]);
            ok(&mut tf(&dir, &["apply", "-input=false", "-no-color", "p.tfplan"]), &[0]);
            ok(&mut tf(&dir, &["plan", "-input=false", "-no-color", "-detailed-exitcode"]), &[0]);
        })
    };
    let merlya_run = |round: usize| {
        let dir = fresh(&format!("merlya{round}"));
        let path = dir.display().to_string();
        time(|| {
            ok(
                env.merlya(&["pipeline", "run", "terraform", &path, "--yes", "--format", "json"])
                    .env("TF_CLI_CONFIG_FILE", &rc),
                &[0],
            );
        })
    };
    let runner = InProcess::open(&env.dir.path().join("in-process"));
    let runner_run = |round: usize| {
        let dir = fresh(&format!("runner{round}"));
        time(|| runner.terraform(dir))
    };
    let mut sides = interleaved(rounds, &mut [&mut { bare_run }, &mut { merlya_run }, &mut { runner_run }]);
    let in_process = sides.pop().unwrap_or_default();
    let cli = sides.pop().unwrap_or_default();
    (sides.pop().unwrap_or_default(), cli, in_process)
}

/// The pipeline runner in this process, as the console drives it: the home's store opened once, then
/// one `runner::run` per change, approved as `--yes` would, its live lines dropped.
struct InProcess {
    runtime: tokio::runtime::Runtime,
    ctx: merlya::context::Context,
}

impl InProcess {
    fn open(home: &Path) -> Self {
        // As the CLI runs a pipeline: one thread (ADR 0024).
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let home = merlya::home::MerlyaHome::at(home.to_path_buf());
        let config = merlya::context::Context::load_config(&home).unwrap();
        let ctx = runtime.block_on(merlya::context::Context::open_with(home, "bench", config)).unwrap();
        Self { runtime, ctx }
    }

    fn terraform(&self, dir: std::path::PathBuf) {
        use std::sync::Arc;

        use merlya::pipeline::{Env, runner, terraform};
        let ctx = &self.ctx;
        let done = self.runtime.block_on(async {
            let mut change = terraform::TerraformChange::new(terraform::TerraformSpec { dir, ..Default::default() });
            let executor = Arc::new(ctx.executor(Vec::new(), Arc::new(merlya::prompt::NoPrompter), false).unwrap());
            let approver = Arc::new(merlya::approval::AutoApprove);
            let gate = merlya::approval::ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
            let cancel = tokio_util::sync::CancellationToken::new();
            let env = Env::from_context(ctx, executor, gate, cancel, merlya::exec::no_events());
            let record = runner::record_of(&env, &change);
            runner::run(&env, &mut change, record, &|_| {}).await.unwrap()
        });
        assert_eq!(done.status, merlya::store::pipelines::PipelineStatus::Succeeded, "{done:?}");
    }
}

/// `rounds` rounds of one run of each side, after one round not counted (cold caches): the times of
/// each side, in the order given. The side that goes first turns round by round, so none always runs
/// on a machine another just left busy.
fn interleaved(rounds: usize, sides: &mut [&mut dyn FnMut(usize) -> f64]) -> Vec<Vec<f64>> {
    let n = sides.len();
    let mut times = vec![Vec::new(); n];
    for round in 0..=rounds {
        for k in 0..n {
            let side = (round + k) % n;
            let t = sides[side](round);
            if round > 0 {
                times[side].push(t);
            }
        }
    }
    times
}

/// A distribution-free 95 % confidence interval of the median of `v` (order statistics of the
/// binomial(n, ½) bounds), `None` below 6 values.
fn median_interval(mut v: Vec<f64>) -> Option<(f64, f64)> {
    let n = v.len();
    if n < 6 {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let k = ((n as f64) / 2.0 - 0.98 * (n as f64).sqrt()).floor().max(0.0) as usize;
    Some((v[k], v[n - 1 - k]))
}

fn ansible(rounds: usize, hosts: usize) -> (Vec<f64>, Vec<f64>) {
    let bin = support::ansible_bin();
    let key = TestKey::generate("");
    let env = TestEnv::new();
    env.install_default_key(&key);
    let daemons: Vec<Sshd> = (0..hosts).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    let known = env.home().join(".ssh/known_hosts");
    let mut inventory = String::from("[bench]\n");
    for (i, d) in daemons.iter().enumerate() {
        env.trust(d);
        env.add_host(&format!("b{i:02}"), d, &["--tag", "bench"]);
        inventory.push_str(&format!(
            "b{i:02} ansible_host=127.0.0.1 ansible_port={} ansible_user={TEST_USER} ansible_ssh_private_key_file={} ansible_python_interpreter=auto_silent ansible_ssh_common_args='-o UserKnownHostsFile={} -o StrictHostKeyChecking=yes'\n",
            d.port,
            key.private.display(),
            known.display()
        ));
    }
    let work = tempfile::tempdir().unwrap();
    support::give_to_test_user(work.path());
    let inv = work.path().join("inventory.ini");
    std::fs::write(&inv, inventory).unwrap();
    let out = work.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    support::give_to_test_user(&out);
    let play = work.path().join("play.yml");
    std::fs::write(
        &play,
        format!("- hosts: all\n  gather_facts: false\n  tasks:\n    - copy:\n        dest: \"{}/{{{{ inventory_hostname }}}}.txt\"\n        content: \"round {{{{ r }}}}\\n\"\n", out.display()),
    )
    .unwrap();
    let path = support::path_with(&bin);
    let playbook = |extra: &[&str], r: usize| {
        let mut cmd = Command::new(bin.join("ansible-playbook"));
        cmd.arg("-i").arg(&inv).arg(&play).args(["-f", "10", "-e", &format!("r={r}")]).args(extra).env("PATH", &path);
        cmd.env("ANSIBLE_HOST_KEY_CHECKING", "True");
        cmd
    };
    let bare_run = |round: usize| {
        time(|| {
            ok(&mut playbook(&["--check", "--diff"], 2 * round), &[0]);
            ok(&mut playbook(&[], 2 * round), &[0]);
            ok(&mut playbook(&["--check"], 2 * round), &[0]);
        })
    };
    let merlya_run = |round: usize| {
        let p = play.display().to_string();
        let r = format!("r={}", 2 * round + 1);
        time(|| {
            ok(
                env.merlya(&[
                    "pipeline",
                    "run",
                    "ansible",
                    &p,
                    "--targets",
                    "@bench",
                    "-e",
                    &r,
                    "--yes",
                    "--format",
                    "json",
                ])
                .env("PATH", &path)
                .env("ANSIBLE_FORKS", "10"),
                &[0],
            );
        })
    };
    let mut sides = interleaved(rounds, &mut [&mut { bare_run }, &mut { merlya_run }]);
    let merlya = sides.pop().unwrap_or_default();
    (sides.pop().unwrap_or_default(), merlya)
}

fn main() {
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let hosts: usize = std::env::var("BENCH_HOSTS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    // BENCH_ONLY=terraform or ansible runs one of the two.
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let env = TestEnv::new();
    let mut rows = Vec::new();
    if only != "ansible" {
        let (bare, merlya, in_process) = terraform(rounds, &env);
        let what = "terraform, 20 terraform_data: plan, apply, post-check plan";
        rows.push((format!("{what}: `merlya pipeline run`"), bare.clone(), merlya));
        rows.push((format!("{what}: the runner in-process (console, agent)"), bare, in_process));
    }
    if only != "terraform" {
        let (bare, merlya) = ansible(rounds, hosts);
        rows.push((format!("ansible-playbook on {hosts} hosts: --check --diff, apply, --check"), bare, merlya));
    }
    println!(
        "| work | rounds | bare tool (s) | merlya pipeline (s) | overhead | paired overhead | its 95 % interval |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (what, bare, merlya) in rows {
        // Each round's difference leaves out the machine's drift over the run; its median is the
        // second estimate, with an interval that says how far the noise could move it.
        let diffs: Vec<f64> = merlya.iter().zip(&bare).map(|(m, b)| m - b).collect();
        let n = diffs.len();
        let interval = median_interval(diffs.clone());
        let paired = median(diffs);
        let (bare, merlya) = (median(bare), median(merlya));
        let interval = interval.map_or_else(
            || "(more rounds)".to_string(),
            |(lo, hi)| format!("{:+.1} … {:+.1} %", lo / bare * 100.0, hi / bare * 100.0),
        );
        println!(
            "| {what} | {n} | {bare:.3} | {merlya:.3} | {:+.1} % | {:+.1} ms ({:+.1} %) | {interval} |",
            (merlya / bare - 1.0) * 100.0,
            paired * 1000.0,
            paired / bare * 100.0
        );
    }
}
