//! Running commands on hosts: locally for `localhost`, over pooled SSH for
//! everything else, streaming lines as they arrive, and fanning out to many
//! hosts with bounded concurrency.

pub mod failure;
pub mod fanout;
pub mod file_write;
pub mod lines;
pub mod local;
pub mod prepare;
pub mod remote;
pub mod runs;
pub mod sandbox;
pub mod spill;
pub mod sudo;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use failure::{HostFailure, RunError};
pub use lines::{EventSender, event_channel, no_events};

use crate::inventory::{Elevation, Host};
use crate::safety::clearance::Clearance;
use crate::secrets::reference::mask_values;
use crate::ssh::SshPool;
use crate::ssh::target::ResolveContext;

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Something that happened while a command ran, for live display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEvent {
    /// A host started.
    Started { host: String },
    /// One line of output.
    Line { host: String, stream: Stream, line: String },
    /// A host finished (or failed to run).
    Finished(HostResult),
}

/// The outcome on one host; this is also the `--format json` record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostResult {
    /// Host name.
    pub host: String,
    /// Exit code, `None` when the command did not complete.
    pub exit_code: Option<i32>,
    /// Collected standard output (capped at [`OUTPUT_CAP`]).
    pub stdout: String,
    /// Collected standard error (capped).
    pub stderr: String,
    /// Wall time.
    pub duration_ms: u64,
    /// Why the command could not run or complete (unreachable, timeout, ...).
    pub error: Option<String>,
    /// The kind of that failure.
    pub failure: Option<HostFailure>,
    /// Bytes of output past [`OUTPUT_CAP`] that `stdout`/`stderr` do not keep
    /// (they were streamed live); 0 when nothing was cut.
    pub output_cut_bytes: u64,
    /// Files that hold those bytes (masked), when the executor spills.
    pub output_spill: Vec<String>,
    /// Of those bytes, how many were kept nowhere: past `output.spill_max_mb` or
    /// `output.spill_total_mb`, or when the spill file could not be written.
    pub output_dropped_bytes: u64,
}

impl HostResult {
    /// Whether the host ran the command and it exited 0.
    pub fn success(&self) -> bool {
        self.error.is_none() && self.exit_code == Some(0)
    }

    /// A result for a command that never completed.
    pub fn failed(host: &str, started: Instant, error: RunError) -> Self {
        Self {
            host: host.to_string(),
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            duration_ms: started.elapsed().as_millis() as u64,
            error: Some(error.message),
            failure: Some(error.kind),
            output_cut_bytes: 0,
            output_spill: Vec::new(),
            output_dropped_bytes: 0,
        }
    }
}

/// How long a stopped remote command gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// When a run must end, and the timeout it was given (for messages): a host
/// that starts late in a fan-out gets what is left, and is reported in the
/// run's terms.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    pub at: tokio::time::Instant,
    pub timeout: Duration,
}

impl Deadline {
    /// `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Self { at: tokio::time::Instant::now() + timeout, timeout }
    }

    /// Time left.
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(tokio::time::Instant::now())
    }
}

/// The error of a command cut off by its timeout.
pub fn timed_out(timeout: Duration) -> RunError {
    RunError::new(HostFailure::TimedOut, format!("timed out after {}s", timeout.as_secs_f64()))
}

/// The error of a command the operator cancelled.
pub fn cancelled() -> RunError {
    RunError::new(HostFailure::Cancelled, "cancelled")
}

/// Output kept per host and stream in a [`HostResult`]; the live stream carries everything.
pub const OUTPUT_CAP: usize = 1 << 20;

/// Runs commands on inventory hosts.
pub struct Executor {
    pool: Arc<SshPool>,
    resolve: std::sync::RwLock<ResolveContext>,
    /// Elevation found by probing, per host, for this process.
    detected: std::sync::Mutex<std::collections::HashMap<String, Elevation>>,
    /// Where a detected elevation is remembered (the inventory).
    elevation_sink: Option<ElevationSink>,
    /// Where output past what a result keeps is written, and its limits (`exec::spill`).
    spill: Option<Arc<spill::SpillBudget>>,
    /// Whether proven reads run in a read-only mount namespace (`exec::sandbox`).
    sandbox: sandbox::SandboxMode,
    /// merlya's home, hidden from proven reads on localhost (they could read the database and the audit key).
    own_home: Option<std::path::PathBuf>,
}

/// Receives the elevation detected for a host, to cache it on the host.
pub type ElevationSink = Arc<dyn Fn(String, Elevation) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

impl Executor {
    /// An executor over `pool`, resolving SSH settings with `resolve`.
    pub fn new(pool: Arc<SshPool>, resolve: ResolveContext) -> Self {
        Self {
            pool,
            resolve: std::sync::RwLock::new(resolve),
            detected: std::sync::Mutex::new(std::collections::HashMap::new()),
            elevation_sink: None,
            spill: None,
            sandbox: sandbox::SandboxMode::default(),
            own_home: None,
        }
    }

    /// How proven reads are sandboxed.
    pub fn readonly_sandbox(&self) -> sandbox::SandboxMode {
        self.sandbox
    }

    /// Runs proven reads in a read-only mount namespace as `mode` says.
    pub fn with_readonly_sandbox(mut self, mode: sandbox::SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }

    /// Hides `home` (merlya's own) from proven reads on localhost, with merlya's `/proc` entries.
    pub fn with_hidden_home(mut self, home: std::path::PathBuf) -> Self {
        self.own_home = Some(home);
        self
    }

    /// Writes output past what a result keeps to files, within `budget`'s limits.
    pub fn with_spill(mut self, budget: Arc<spill::SpillBudget>) -> Self {
        self.spill = Some(budget);
        self
    }

    /// Remembers detected elevations through `sink`.
    pub fn with_elevation_sink(mut self, sink: ElevationSink) -> Self {
        self.elevation_sink = Some(sink);
        self
    }

    /// For a `sudo` command on a host whose elevation is not known, probes it
    /// once (sudo -n, then doas, then su) and caches the answer.
    /// Whether running `command` on `host` needs its elevation found first (a `sudo` command on a
    /// host whose method is not known yet): the door probes it, audited, before the command runs.
    pub fn needs_elevation_probe(&self, host: &Host, command: &str) -> bool {
        host.elevation == Elevation::None
            && command.trim_start().starts_with("sudo ")
            && !self.detected.lock().is_ok_and(|d| d.contains_key(&host.name))
    }

    /// Remembers the elevation `found` on `host` (for this process, and the inventory through the sink).
    pub async fn remember_elevation(&self, host: &str, found: Elevation) {
        tracing::info!(host = %host, elevation = found.as_str(), "detected elevation");
        if let Ok(mut d) = self.detected.lock() {
            d.insert(host.to_string(), found);
        }
        if let Some(sink) = &self.elevation_sink
            && found != Elevation::None
        {
            sink(host.to_string(), found).await;
        }
    }

    async fn known_elevation(&self, host: &Host, command: &str, timeout: Duration) -> Host {
        let mut host = host.clone();
        if host.elevation != Elevation::None || !command.trim_start().starts_with("sudo ") {
            return host;
        }
        if let Some(found) = self.detected.lock().ok().and_then(|d| d.get(&host.name).copied()) {
            host.elevation = found;
            return host;
        }
        // Not probed through the door (a caller of the executor itself): probed here, unaudited.
        let tx = no_events();
        let probe = self
            // Not sandboxed: it asks sudo and doas what they allow, which a user namespace would hide.
            .run_prepared(
                &host,
                (prepare::ELEVATION_PROBE, false, true),
                Deadline::after(timeout),
                &CancellationToken::new(),
                &tx,
            )
            .await;
        let Some(found) = probe.stdout.trim().parse::<Elevation>().ok().filter(|_| probe.success()) else {
            return host;
        };
        self.remember_elevation(&host.name, found).await;
        host.elevation = found;
        host
    }

    /// The inventory it resolves hosts with (the console keeps it current); shared, not copied.
    pub fn inventory(&self) -> Arc<Vec<Host>> {
        self.resolve.read().map(|r| r.inventory.clone()).unwrap_or_default()
    }

    /// Replaces the inventory used to resolve jump hosts (after the console reloads it): the
    /// console's own copy, shared, so a large fleet is held once.
    pub fn set_inventory(&self, hosts: Arc<Vec<Host>>) {
        if let Ok(mut resolve) = self.resolve.write() {
            resolve.inventory = hosts;
        }
    }

    /// Where and as whom `host` is reached: address, SSH port (`None` when
    /// local) and login user, resolved as a run would, for the audit log.
    pub fn login_of(&self, host: &Host) -> (String, Option<u16>, String) {
        if host.is_local() {
            return (host.hostname.clone(), None, crate::ssh::target::local_user());
        }
        match self.resolve.read().map_err(|_| ()).and_then(|r| r.resolve(host).map_err(|_| ())) {
            Ok(target) => (target.hostname, Some(target.port), target.user),
            Err(()) => (
                host.hostname.clone(),
                Some(host.port),
                host.username.clone().unwrap_or_else(crate::ssh::target::local_user),
            ),
        }
    }

    /// How `host` is reached (address, port, login, keys, jump hosts), as SSH connections make it;
    /// for tools that connect on their own (ansible-playbook).
    pub fn target_of(&self, host: &Host) -> Result<crate::ssh::target::SshTarget, String> {
        self.resolve.read().map_err(|_| "the inventory lock is poisoned".to_string())?.resolve(host)
    }

    /// Concrete host names of ~/.ssh/config: targets that may be used without being in the inventory.
    pub fn ssh_aliases(&self) -> Vec<String> {
        self.resolve.read().map(|r| r.ssh_config.concrete_aliases()).unwrap_or_default()
    }

    /// The SSH pool (for statistics).
    pub fn pool(&self) -> &SshPool {
        &self.pool
    }

    /// Runs `command` on `host`, sending events to `events`, within `timeout`.
    pub async fn run(&self, host: &Host, clearance: &Clearance, timeout: Duration, events: &EventSender) -> HostResult {
        self.run_until(host, clearance, Deadline::after(timeout), &CancellationToken::new(), events).await
    }

    /// Runs `command` on `host` until it ends, the deadline passes or `cancel`
    /// fires; either of the last two stops the command on the host
    /// (SIGINT, SIGTERM, SIGKILL to its process group) before returning.
    pub async fn run_until(
        &self,
        host: &Host,
        clearance: &Clearance,
        deadline: Deadline,
        cancel: &CancellationToken,
        events: &EventSender,
    ) -> HostResult {
        let command = clearance.command();
        let host = tokio::select! {
            host = self.known_elevation(host, command, deadline.left()) => host,
            () = cancel.cancelled() => {
                let result = HostResult::failed(&host.name, Instant::now(), cancelled());
                let _ = events.send(ExecEvent::Finished(result.clone())).await;
                return result;
            }
        };
        let sandboxed = clearance.is_proven_read_only();
        self.run_prepared(&host, (command, sandboxed, clearance.elevates()), deadline, cancel, events).await
    }

    async fn run_prepared(
        &self,
        host: &Host,
        (command, sandboxed, elevates): (&str, bool, bool),
        deadline: Deadline,
        cancel: &CancellationToken,
        events: &EventSender,
    ) -> HostResult {
        let started = Instant::now();
        let _ = events.send(ExecEvent::Started { host: host.name.clone() }).await;
        let ctx = self.pool.context();
        let hide = || if host.is_local() { sandbox::merlya_itself(self.own_home.as_deref()) } else { Vec::new() };
        // A proven read that elevates is sandboxed as the user it becomes (prepare knows how).
        let elevated = (sandboxed && elevates && self.sandbox != sandbox::SandboxMode::Off)
            .then(|| sandbox::ElevatedRead { mode: self.sandbox, hide: hide() });
        let prepare =
            prepare::prepare_read(host, command, ctx.secrets.as_ref(), ctx.prompter.as_ref(), elevated.as_ref());
        let prepared = tokio::select! {
            prepared = prepare => prepared.map_err(|e| RunError::new(HostFailure::NotStarted, e)),
            () = cancel.cancelled() => Err(cancelled()),
        };
        // A person may have taken the whole deadline to type a password: then nothing starts.
        let prepared =
            prepared.and_then(|p| if deadline.left().is_zero() { Err(timed_out(deadline.timeout)) } else { Ok(p) });
        let prepared = match prepared {
            Ok(mut p) => {
                p.spill = self.spill.as_ref().map(|budget| spill::SpillTarget::for_host(budget, &host.name));
                // A proven read (no password, no secret fed on stdin) runs in the read-only sandbox;
                // on this machine, without merlya's home and /proc entries.
                let wrap = if sandboxed && !elevates && p.sudo.is_none() && p.input.is_none() {
                    Some(sandbox::wrap(&p.command, self.sandbox, false, &hide()))
                } else if sandboxed && elevates && !p.elevated_sandbox {
                    // An elevation the sandbox could not be put inside: as it is, or refused under `require`.
                    Some(sandbox::wrap(&p.command, self.sandbox, true, &[]))
                } else {
                    None
                };
                if let Some(wrapped) = wrap {
                    match wrapped {
                        Ok(wrapped) => p.command = wrapped,
                        Err(e) => {
                            let result =
                                HostResult::failed(&host.name, started, RunError::new(HostFailure::NotStarted, e));
                            let _ = events.send(ExecEvent::Finished(result.clone())).await;
                            return result;
                        }
                    }
                }
                p
            }
            Err(e) => {
                let result = HostResult::failed(&host.name, started, e);
                let _ = events.send(ExecEvent::Finished(result.clone())).await;
                return result;
            }
        };
        let masked = lines::MaskingSender::new(events.clone(), prepared.mask.clone());
        let events = &masked;
        let (timeout, left) = (deadline.timeout, deadline.left());
        let deadline = deadline.at;
        let run = async {
            if host.is_local() {
                local::run(&host.name, &prepared, cancel, events).await
            } else {
                let target = match self.resolve.read() {
                    Ok(resolve) => resolve.resolve(host),
                    Err(_) => Err("the host resolver is unavailable".to_string()),
                };
                match target {
                    Ok(target) => {
                        remote::run(&self.pool, &target, &prepared, (deadline, timeout), cancel, events).await
                    }
                    Err(e) => Err(RunError::new(HostFailure::NotStarted, e)),
                }
            }
        };
        // A remote command is stopped on its host at the deadline (remote::run); the grace lets
        // that finish, and covers connecting. Dropping a local run kills its process group.
        let limit = if host.is_local() { left } else { left + STOP_GRACE * 3 };
        let mut result = match tokio::time::timeout(limit, run).await {
            Ok(Ok(mut result)) => {
                result.duration_ms = started.elapsed().as_millis() as u64;
                result
            }
            Ok(Err(error)) => HostResult::failed(&host.name, started, error),
            Err(_) => HostResult::failed(&host.name, started, timed_out(timeout)),
        };
        result.host = host.name.clone();
        result.stdout = mask_values(&result.stdout, &prepared.mask);
        result.stderr = mask_values(&result.stderr, &prepared.mask);
        events.send(ExecEvent::Finished(result.clone())).await;
        result
    }
}
