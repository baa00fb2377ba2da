//! What every command needs, opened once: home, configuration, database,
//! session id, and the executor with its SSH pool.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr, eyre};
use tracing_appender::non_blocking::WorkerGuard;

use crate::config::{Config, HostKeyPolicy};
use crate::exec::{Executor, HostResult};
use crate::home::MerlyaHome;
use crate::inventory::Host;
use crate::inventory::import::ssh_config::SshConfigFile;
use crate::prompt::Prompter;
use crate::secrets::Secrets;
use crate::ssh::SshPool;
use crate::ssh::client::ConnectContext;
use crate::ssh::target::ResolveContext;
use crate::store::Store;
use crate::store::audit::{AuditOutcome, AuditRequest, AuditTicket};
use crate::store::history::CommandRecord;

/// The opened runtime.
pub struct Context {
    /// Where files live.
    pub home: MerlyaHome,
    /// Effective configuration.
    pub config: Config,
    /// The database.
    pub store: Store,
    /// This run's session id (in history and audit rows).
    pub session_id: String,
    secrets: Arc<std::sync::OnceLock<Arc<Secrets>>>,
    _log_guard: WorkerGuard,
}

/// The secret store opened on its first lookup: an executor that never needs a secret (a Terraform
/// change, a host without a passphrase) never probes a keyring, which can cost a D-Bus round trip.
struct OnFirstLookup {
    backend: crate::config::SecretsBackend,
    opened: Arc<std::sync::OnceLock<Arc<Secrets>>>,
}

impl crate::secrets::SecretSource for OnFirstLookup {
    fn lookup(&self, name: &str) -> Option<String> {
        self.opened.get_or_init(|| Arc::new(Secrets::open(self.backend))).lookup(name)
    }
}

impl Context {
    /// Loads config, starts logging, opens the store and records a session of `kind`.
    pub async fn open(home: MerlyaHome, kind: &str) -> Result<Self> {
        let config = Self::load_config(&home)?;
        Self::open_with(home, kind, config).await
    }

    /// The home's configuration (the home is made first): what [`Context::open_with`] takes, for a
    /// command that starts work of its own before the store opens.
    pub fn load_config(home: &MerlyaHome) -> Result<Config> {
        home.ensure()?;
        Ok(Config::load(&home.config_file())?)
    }

    /// For the console: a config file that cannot be used does not keep the
    /// operator out in an incident; the defaults are used and the error
    /// (file, line, what was expected) is returned to be shown in a banner.
    pub async fn open_forgiving(home: MerlyaHome, kind: &str) -> Result<(Self, Option<String>)> {
        home.ensure()?;
        let (config, problem) = match Config::load(&home.config_file()) {
            Ok(config) => (config, None),
            Err(e) => (Config::parse(&home.config_file(), "", &[]).unwrap_or_default(), Some(e.to_string())),
        };
        Ok((Self::open_with(home, kind, config).await?, problem))
    }

    /// Starts logging, opens the store and records a session of `kind`, under `config`.
    pub async fn open_with(home: MerlyaHome, kind: &str, config: Config) -> Result<Self> {
        // A proven read never opens merlya's own files (its audit key, database, output).
        crate::safety::set_private_home(home.root());
        // Where a proven read may send something without an approval (ADR 0030).
        crate::safety::egress::configure(
            crate::safety::egress::EgressAllow::parse(&config.policy.egress_allow).unwrap_or_default(),
        );
        // Spilled output follows the raw logs' retention.
        let retention = Duration::from_secs(u64::from(config.policy.raw_log_retention_days) * 86_400);
        crate::exec::spill::prune(&home.output_dir(), retention);
        let log_guard = crate::logging::init(&home, &config.logging)?;
        let store = open_store(&home, &config).await?;
        // Who signs this home's entries in a team's audit log (ADR 0032).
        store.set_operator(config.operator.name());
        // On a team store the operator is registered at start, so a teammate who has used merlya on it
        // can review a change requested later (a name registered after a request cannot: ADR 0033).
        // A name taken by another key is said when this home first signs, not here.
        // Only a name the operator chose: a default one would bind the key before they pick theirs.
        if store.backend() == crate::store::Backend::Postgres
            && config.operator.name.as_deref().is_some_and(|n| !n.trim().is_empty())
            && let Err(e) = store.operator_signer().await
        {
            tracing::warn!(error = %e, "cannot register this operator in the team store");
        }
        set_witness(&home, &config, &store)?;
        // A change pipeline whose process died (crash, kill -9) is marked interrupted, never re-applied.
        match store.mark_interrupted_pipelines(merlya_is_running).await {
            Ok(runs) => {
                for run in runs {
                    tracing::warn!(id = %run.id, kind = run.kind.as_str(), "change pipeline marked interrupted");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot check for interrupted change pipelines"),
        }
        // Written beside the command's first work (ADR 0024).
        let session_id = store.start_session(kind);
        tracing::info!(session = %session_id, kind, "session started");
        Ok(Self { home, config, store, session_id, secrets: Arc::default(), _log_guard: log_guard })
    }

    /// The secret store, opened on first use (probing keyrings costs a round trip).
    pub fn secrets(&self) -> Arc<Secrets> {
        self.secrets.get_or_init(|| Arc::new(Secrets::open(self.config.secrets.backend))).clone()
    }

    /// The host key policy: configured, else `ask` when a person is there, else `strict`.
    pub fn host_key_policy(&self, interactive: bool) -> HostKeyPolicy {
        self.config.ssh.host_key_policy.unwrap_or(if interactive { HostKeyPolicy::Ask } else { HostKeyPolicy::Strict })
    }

    /// ~/.ssh/config as parsed (empty when `ssh.use_ssh_config` is off or there is no home).
    pub fn ssh_config(&self) -> Result<SshConfigFile> {
        if !self.config.ssh.use_ssh_config {
            return Ok(SshConfigFile::default());
        }
        match dirs::home_dir() {
            Some(h) => SshConfigFile::load(&h.join(".ssh").join("config")).map_err(color_eyre::eyre::Report::msg),
            None => Ok(SshConfigFile::default()),
        }
    }

    /// The part of the inventory a command on `targets` needs: the hosts the expression can select
    /// and, transitively, the jump hosts they connect through. `all` and globs read everything;
    /// a few names or tags read only their rows, however large the inventory.
    pub async fn inventory_for(&self, targets: &str) -> Result<Vec<Host>> {
        let crate::inventory::Scope::Only { names, tags } = crate::inventory::scope_of(targets) else {
            return Ok(self.store.list_hosts().await?);
        };
        let ssh_config = self.ssh_config()?;
        let jumps_of = |name: &str, jump: Option<&String>| -> Vec<String> {
            let spec = jump.cloned().or_else(|| ssh_config.resolve(name).proxy_jump);
            spec.iter().flat_map(|s| s.split(',')).map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
        };
        let mut hosts = self.store.hosts_matching(&names, &tags).await?;
        // A target outside the inventory (an ~/.ssh/config alias) may still jump through one inside.
        let mut wanted: Vec<String> = names.iter().flat_map(|n| jumps_of(n, None)).collect();
        // Jump chains are at most 8 deep (ssh::target); one more round finds nothing new.
        for _ in 0..9 {
            wanted.extend(hosts.iter().flat_map(|h| jumps_of(&h.name, h.jump.as_ref())));
            wanted.retain(|w| !hosts.iter().any(|h| &h.name == w));
            wanted.sort();
            wanted.dedup();
            if wanted.is_empty() {
                break;
            }
            let more = self.store.hosts_matching(&wanted, &[]).await?;
            if more.is_empty() {
                break;
            }
            hosts.extend(more);
            wanted.clear();
        }
        hosts.sort_by(|a, b| {
            (a.name != crate::inventory::LOCALHOST, &a.name).cmp(&(b.name != crate::inventory::LOCALHOST, &b.name))
        });
        Ok(hosts)
    }

    /// The hosts `targets` selects within `inventory` (from [`Context::inventory_for`]); a name
    /// that is not there is an error whose "did you mean" hint comes from the whole inventory.
    pub async fn resolve_targets(
        &self,
        targets: &str,
        inventory: &[Host],
        ssh_aliases: &[String],
    ) -> Result<Vec<Host>> {
        use crate::inventory::{TargetError, resolve_targets};
        match resolve_targets(targets, inventory, ssh_aliases) {
            Ok(hosts) => Ok(hosts),
            Err(TargetError::UnknownHost(..)) => {
                let everything = self.store.list_hosts().await?;
                resolve_targets(targets, &everything, ssh_aliases).map_err(|e| eyre!("{e}"))
            }
            Err(e) => Err(eyre!("{e}")),
        }
    }

    /// An executor over a fresh pool, resolving hosts against `inventory` (a `Vec`, or the
    /// console's shared fleet, which it then holds without copying).
    pub fn executor(
        &self,
        inventory: impl Into<Arc<Vec<Host>>>,
        prompter: Arc<dyn Prompter>,
        interactive: bool,
    ) -> Result<Executor> {
        let ssh = &self.config.ssh;
        let ssh_config = self.ssh_config()?;
        let mut known_hosts_files = Vec::new();
        if let Some(h) = dirs::home_dir() {
            known_hosts_files.push(h.join(".ssh").join("known_hosts"));
        }
        known_hosts_files.push(self.home.known_hosts());
        let ctx = ConnectContext {
            known_hosts_files,
            own_known_hosts: self.home.known_hosts(),
            policy: self.host_key_policy(interactive),
            prompter,
            secrets: Arc::new(OnFirstLookup {
                backend: self.config.secrets.backend,
                opened: Arc::clone(&self.secrets),
            }),
            connect_timeout: Duration::from_secs(ssh.connect_timeout_secs),
        };
        let pool = Arc::new(SshPool::new(ctx, ssh.pool_max, Duration::from_secs(ssh.pool_idle_secs)));
        let resolve = ResolveContext {
            inventory: inventory.into(),
            ssh_config,
            default_user: ssh.default_user.clone(),
            identity_files: ssh.identity_files.clone(),
        };
        let store = self.store.clone();
        let sink: crate::exec::ElevationSink = Arc::new(move |name: String, elevation| {
            let store = store.clone();
            Box::pin(async move {
                if let Ok(mut host) = store.get_host(&name).await {
                    host.elevation = elevation;
                    if let Err(e) = store.upsert_hosts(std::slice::from_ref(&host)).await {
                        tracing::warn!(host = %name, error = %e, "cannot cache the detected elevation");
                    }
                }
            })
        });
        Ok(Executor::new(pool, resolve)
            .with_elevation_sink(sink)
            .with_spill(crate::exec::spill::SpillBudget::new(
                self.home.output_dir(),
                self.config.output.spill_max_mb,
                self.config.output.spill_total_mb,
            ))
            .with_readonly_sandbox(self.config.policy.readonly_sandbox)
            .with_hidden_home(self.home.root().to_path_buf()))
    }

    /// Writes a finished command to the command history (the audit log is
    /// written through an [`AuditTicket`] around the run).
    pub async fn record(&self, command: &str, result: &HostResult) -> Result<()> {
        record_history(&self.store, &self.session_id, self.config.policy.raw_log_retention_days, command, result).await
    }

    /// The audit request for `command` on `host`, asked by `requested_by` and approved by `approved_by`.
    pub fn audit_request(
        &self,
        executor: &Executor,
        requested_by: &str,
        host: &Host,
        command: &str,
        approved_by: &str,
    ) -> AuditRequest {
        audit_request(&self.session_id, executor, requested_by, host, command, approved_by)
    }
}

/// Whether process `pid` is alive and runs merlya (a reused pid running something else is not).
/// merlya is not dumpable (`crate::hardening`): unless root, its `exe` link cannot be read, its
/// The store `store.url` names: MERLYA_HOME's merlya.db by default, another SQLite file, or a team's
/// PostgreSQL (its password from `store.password`, else libpq's PGPASSWORD or ~/.pgpass).
async fn open_store(home: &MerlyaHome, config: &Config) -> Result<Store> {
    use crate::store::postgres::StoreUrl;
    let url = config.store.url.as_deref().map(StoreUrl::parse).transpose().map_err(|e| eyre!("store.url: {e}"))?;
    match url {
        None => {
            Ok(Store::open(&home.database()).await.map_err(|e| e.or_no_space(&home.database(), "open the database"))?)
        }
        Some(StoreUrl::Sqlite(path)) => {
            Ok(Store::open(&path).await.map_err(|e| e.or_no_space(&path, "open the database"))?)
        }
        Some(StoreUrl::Postgres(url)) => {
            let password = store_password(config)?;
            Ok(Store::open_postgres(&home.database(), &url, password.as_deref()).await?)
        }
    }
}

/// The PostgreSQL password from `store.password` (keyring, `env:`, `file:`), or `None` to leave it to
/// libpq's PGPASSWORD and ~/.pgpass: for `store.url`, and for `merlya store migrate --to`.
pub fn store_password(config: &Config) -> Result<Option<String>> {
    let Some(source) = config.store.password.as_deref() else { return Ok(None) };
    let secrets = Secrets::open(config.secrets.backend);
    Ok(Some(crate::config::provision::read_credential(source, "store.password", &secrets).map_err(|e| eyre!(e))?))
}

/// Makes `store` write its audit checkpoints also to `audit.witness`, when one is configured.
pub fn set_witness(home: &MerlyaHome, config: &Config, store: &Store) -> Result<()> {
    let Some(spec) = &config.audit.witness else { return Ok(()) };
    let witness = crate::store::audit::witness::Witness::parse(spec).map_err(|e| eyre!("audit.witness: {e}"))?;
    if let Some(file) = witness.file().filter(|f| f.starts_with(home.root())) {
        return Err(eyre!(
            "audit.witness: {} is inside MERLYA_HOME; a witness beside the log it witnesses proves nothing",
            file.display()
        ));
    }
    store.set_audit_witness(witness);
    Ok(())
}

/// Whether `pid` is a running merlya: by its executable's name, or, when another user's process hides
/// that link, by its command name (`comm`).
fn merlya_is_running(pid: u32) -> bool {
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(exe) => exe.file_name().is_some_and(|n| n.to_string_lossy().starts_with("merlya")),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|name| name.starts_with("merlya"))
        }
        Err(_) => false,
    }
}

/// The audit request for `command` on `host` (shared by the CLI, the console and the agent).
pub fn audit_request(
    session_id: &str,
    executor: &Executor,
    requested_by: &str,
    host: &Host,
    command: &str,
    approved_by: &str,
) -> AuditRequest {
    let (address, port, login_user) = executor.login_of(host);
    AuditRequest {
        session_id: session_id.to_string(),
        requested_by: requested_by.to_string(),
        host: host.name.clone(),
        address,
        port,
        login_user,
        command: command.to_string(),
        approved_by: approved_by.to_string(),
        approval_ref: None,
    }
}

/// The open audit tickets of a fan-out, by host name (a name may repeat for ad-hoc targets).
#[derive(Debug, Default)]
pub struct HostTickets(HashMap<String, VecDeque<AuditTicket>>);

impl HostTickets {
    /// The ticket of the next result reported for `host`.
    pub fn take(&mut self, host: &str) -> Option<AuditTicket> {
        self.0.get_mut(host).and_then(VecDeque::pop_front)
    }

    /// Closes the tickets left once a run is over (hosts that never reported).
    pub async fn finish_rest(self, outcome: AuditOutcome, reason: &str) {
        for ticket in self.0.into_values().flatten() {
            if let Err(e) = ticket.finish(outcome, None, Some(reason.to_string())).await {
                tracing::warn!(error = %e, "cannot finish an audit entry");
            }
        }
    }
}

/// Write-ahead audit for a fan-out: one start entry per host before any
/// command runs. If one cannot be written, those already written are closed
/// as cancelled and nothing runs.
pub async fn audit_start_all(store: &Store, requests: Vec<AuditRequest>) -> Result<HostTickets> {
    let mut tickets = HostTickets::default();
    for request in requests {
        let host = request.host.clone();
        match store.audit_start(request).await {
            Ok(ticket) => tickets.0.entry(host).or_default().push_back(ticket),
            Err(e) => {
                tickets.finish_rest(AuditOutcome::Cancelled, "the audit log could not record every host").await;
                return Err(e).wrap_err("cannot write the audit log; nothing was run");
            }
        }
    }
    Ok(tickets)
}

/// Records a refused or denied attempt on each host; failures are logged
/// (the command is not run either way).
pub async fn audit_refused_all(store: &Store, requests: &[AuditRequest], outcome: AuditOutcome, reason: &str) {
    for request in requests {
        if let Err(e) = store.audit_refused(request, outcome, reason).await {
            tracing::warn!(error = %e, host = %request.host, "cannot record a refused attempt in the audit log");
        }
    }
}

/// The command history for one host result (shared by the CLI and console workers).
pub async fn record_history(
    store: &Store,
    session_id: &str,
    retention_days: u32,
    command: &str,
    result: &HostResult,
) -> Result<()> {
    let rec = CommandRecord {
        session_id,
        host: &result.host,
        command,
        exit_code: result.exit_code,
        duration_ms: result.duration_ms,
        error: result.error.as_deref(),
        stdout: &result.stdout,
        stderr: &result.stderr,
    };
    store.record_command(&rec, retention_days).await.wrap_err("cannot write command history")?;
    // A command that exited (even non-zero) reached the host: only a failure to run is a host's
    // error; a cancel says nothing about the host.
    if result.failure != Some(crate::exec::HostFailure::Cancelled) {
        let failure = result.failure.map(|f| (f.name(), result.error.as_deref().unwrap_or_default()));
        store.set_host_error(&result.host, failure).await.wrap_err("cannot record the host's last error")?;
    }
    Ok(())
}
