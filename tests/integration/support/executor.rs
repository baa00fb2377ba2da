//! Executors and hosts for tests that drive `merlya::exec` directly against real sshd.

use std::sync::Arc;
use std::time::Duration;

use merlya::config::HostKeyPolicy;
use merlya::exec::Executor;
use merlya::inventory::Host;
use merlya::prompt::Prompter;
use merlya::safety::clearance::Clearance;
use merlya::ssh::SshPool;
use merlya::ssh::client::ConnectContext;
use merlya::ssh::target::ResolveContext;

use super::sshd::Sshd;
use super::{TEST_USER, TestKey};

/// An executor that logs in with `key`, trusts `known_hosts` under `policy`, and pools up to `max`.
pub fn pooled_executor(
    key: &TestKey,
    known_hosts: std::path::PathBuf,
    policy: HostKeyPolicy,
    prompter: Arc<dyn Prompter>,
    max: usize,
    idle: Duration,
) -> Executor {
    pooled_executor_timed(key, known_hosts, policy, prompter, (max, idle), Duration::from_secs(10))
}

/// [`pooled_executor`] whose hosts have `connect_timeout` to connect, log in and start a command.
pub fn pooled_executor_timed(
    key: &TestKey,
    known_hosts: std::path::PathBuf,
    policy: HostKeyPolicy,
    prompter: Arc<dyn Prompter>,
    (max, idle): (usize, Duration),
    connect_timeout: Duration,
) -> Executor {
    let ctx = ConnectContext {
        known_hosts_files: vec![known_hosts.clone()],
        own_known_hosts: known_hosts,
        policy,
        prompter,
        secrets: Arc::new(merlya::secrets::Secrets::memory()),
        connect_timeout,
    };
    let pool = Arc::new(SshPool::new(ctx, max, idle));
    let resolve = ResolveContext { identity_files: vec![key.private.clone()], ..Default::default() };
    Executor::new(pool, resolve)
}

/// An inventory host for `sshd`, logging in as the test user.
pub fn host_for(name: &str, sshd: &Sshd) -> Host {
    let mut h = Host::new(name, "127.0.0.1");
    h.port = sshd.port;
    h.username = Some(TEST_USER.into());
    h
}

/// The clearance of a read-only test command (the executor runs nothing else).
pub fn cleared(command: &str) -> Clearance {
    Clearance::read_only(command).unwrap_or_else(|| panic!("`{command}` is not read-only"))
}
