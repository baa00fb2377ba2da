//! `config.yaml`: typed settings with file/line errors, `${VAR}` expansion and
//! `MERLYA_<SECTION>_<KEY>` environment overrides.
//!
//! Loading order: read the file → expand `${VAR}` / `${VAR:-default}` → parse
//! (unknown keys and wrong types are errors naming the line) → apply
//! environment overrides (errors name the variable) → validate.

pub mod drift;
mod env_override;
mod expand;
pub mod mcp;
pub mod provision;
pub mod two_person;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use env_override::apply_env_overrides;
pub use expand::{ExpandError, expand_value, expand_vars};

/// Everything that can go wrong while loading the configuration. Each variant
/// names where the problem is so the user can fix it without guessing.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    /// `${VAR}` with no default and VAR unset.
    #[error("{path}:{line}: environment variable {var} is not set (write ${{{var}:-default}} to make it optional)")]
    UnsetVar { path: PathBuf, line: usize, var: String },
    /// `${` without a closing brace, or an invalid variable name.
    #[error("{path}:{line}: malformed variable reference: {detail}")]
    BadVar { path: PathBuf, line: usize, detail: String },
    /// YAML syntax, unknown key or wrong type in the file.
    #[error("{path}:{line}:{column}: {message}")]
    Parse { path: PathBuf, line: usize, column: usize, message: String },
    /// The file is too large, a folder or not UTF-8.
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// An environment override that does not fit the schema.
    #[error("environment variable {var}: {message}")]
    Env { var: String, message: String },
    /// A value that parses but makes no sense; `line` is where the file sets
    /// it, `var` the environment variable that set it instead.
    #[error("{}: {field}: {message}", place(path, *line, var.as_deref()))]
    Invalid { path: PathBuf, line: Option<usize>, var: Option<String>, field: String, message: String },
}

/// The whole configuration. Every section has defaults, so an empty or
/// missing file is a valid configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Which LLM to talk to. Empty means "no model": the console still works.
    pub model: ModelConfig,
    /// SSH connection behaviour.
    pub ssh: SshConfig,
    /// Safety and concurrency limits.
    pub policy: PolicyConfig,
    /// The console's look.
    pub ui: UiConfig,
    /// Log files.
    pub logging: LoggingConfig,
    /// Where secrets are kept.
    pub secrets: SecretsConfig,
    /// External MCP servers, and what `merlya mcp serve` offers.
    pub mcp: mcp::McpConfig,
    /// The audit log's witness outside MERLYA_HOME.
    pub audit: AuditConfig,
    /// Limits on the command output merlya keeps on disk.
    pub output: OutputConfig,
    /// Host baselines and drift checks.
    pub drift: drift::DriftConfig,
    /// Where provider credentials come from.
    pub provision: provision::ProvisionConfig,
    /// Where the store lives: SQLite in MERLYA_HOME, or a team's PostgreSQL.
    pub store: StoreConfig,
    /// Who is at this console, for a team's audit log and approvals.
    pub operator: OperatorConfig,
}

/// Where the store lives (ADR 0032).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Absent or `sqlite://PATH`: the file in MERLYA_HOME (or PATH); `postgres://USER@HOST/DB`: a team's
    /// PostgreSQL (`sslmode` and the other libpq parameters honoured). Never with a password in it.
    pub url: Option<String>,
    /// Where the PostgreSQL password comes from: `@service:host:field` (the keyring), `env:NAME` or
    /// `file:/PATH`; else libpq's own PGPASSWORD or PGPASSFILE (~/.pgpass).
    pub password: Option<String>,
}

/// Who is at this console.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OperatorConfig {
    /// The name audit entries and approvals carry; default user@machine.
    pub name: Option<String>,
}

impl OperatorConfig {
    /// The configured name, else `user@machine`.
    pub fn name(&self) -> String {
        self.name.clone().filter(|n| !n.trim().is_empty()).unwrap_or_else(crate::home::user_at_machine)
    }
}

/// Command output spilled to `MERLYA_HOME/logs/output` (what a result does not keep in memory).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    /// Most MiB one command keeps on disk for one host; the rest is dropped after a marker.
    pub spill_max_mb: u64,
    /// Most MiB all spilled output may take in MERLYA_HOME; the oldest files go first.
    pub spill_total_mb: u64,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self { spill_max_mb: 64, spill_total_mb: 1024 }
    }
}

/// `policy.readonly_sandbox`: whether proven reads run in a read-only mount namespace (ADR 0026).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Every proven read runs read-only, or not at all.
    Require,
    /// Read-only where the host allows it, as before elsewhere.
    #[default]
    Prefer,
    /// Never.
    Off,
}

/// Audit log settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// `file:/absolute/path`, `journald[:NAMESPACE]` or `syslog[:/socket]`: every checkpoint is
    /// also written there, and `merlya audit verify` checks the chain against it (ADR 0026).
    pub witness: Option<String>,
}

/// Which secret store to use (defined beside the stores, which the config names).
pub use crate::secrets::SecretsBackend;

/// Secret store settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SecretsConfig {
    /// auto, secret-service, keyring or memory.
    pub backend: SecretsBackend,
}

/// Price of a model, for cost accounting.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// USD per million input tokens.
    pub input_per_mtok: f64,
    /// USD per million output tokens.
    pub output_per_mtok: f64,
}

/// LLM settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// `provider/model` used for reasoning, e.g. `openai/gpt-4o`.
    pub brain: Option<String>,
    /// `provider/model` used for extraction and summaries.
    pub fast: Option<String>,
    /// Base URL of an OpenAI-compatible or Anthropic endpoint.
    pub base_url: Option<String>,
    /// Name of the environment variable that holds the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Stream answers over SSE (tokens appear as they arrive).
    pub stream: bool,
    /// Seconds per call.
    pub timeout_secs: u64,
    /// Retries of a failed call (429, 5xx, timeouts, malformed bodies).
    pub max_retries: u32,
    /// First backoff delay in milliseconds (doubles each retry; `Retry-After` wins).
    pub retry_base_ms: u64,
    /// Most seconds one retry waits, whatever `Retry-After` asks: a provider
    /// asking for ten minutes should not freeze a session for ten minutes.
    pub max_retry_wait: u64,
    /// Most seconds one model call may take with all its retries and waits:
    /// past it the call fails, saying so, instead of waiting silently.
    pub turn_timeout_secs: u64,
    /// Consecutive failures that open the circuit breaker.
    pub breaker_threshold: u32,
    /// Seconds the breaker stays open.
    pub breaker_cooldown_secs: u64,
    /// Most tokens per answer.
    pub max_tokens: u32,
    /// Prices per model name, for cost.
    pub prices: std::collections::BTreeMap<String, ModelPrice>,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            brain: None,
            fast: None,
            base_url: None,
            api_key_env: None,
            stream: true,
            timeout_secs: 120,
            max_retries: 3,
            retry_base_ms: 1000,
            max_retry_wait: 60,
            turn_timeout_secs: 300,
            breaker_threshold: 5,
            breaker_cooldown_secs: 60,
            max_tokens: 4096,
            prices: std::collections::BTreeMap::new(),
        }
    }
}

/// How host keys are checked when a server's key is not yet known.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum HostKeyPolicy {
    /// Unknown keys are refused.
    Strict,
    /// Unknown keys are recorded in merlya's known_hosts and accepted.
    AcceptNew,
    /// A person decides (console modal or terminal prompt).
    Ask,
}

impl std::str::FromStr for HostKeyPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "strict" => Ok(Self::Strict),
            "accept-new" => Ok(Self::AcceptNew),
            "ask" => Ok(Self::Ask),
            other => Err(format!("unknown host key policy {other:?}: expected strict, accept-new or ask")),
        }
    }
}

/// SSH settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SshConfig {
    /// Unset means `ask` in the console and `strict` without a terminal.
    pub host_key_policy: Option<HostKeyPolicy>,
    /// Seconds for the connect phase: TCP + handshake + auth, then again for the host to start the
    /// command (a host that logs in and hangs gives its slot back instead of holding it).
    pub connect_timeout_secs: u64,
    /// Default per-command timeout for `exec`.
    pub command_timeout_secs: u64,
    /// Most pooled connections kept open at once.
    pub pool_max: usize,
    /// Idle pooled connections are closed after this many seconds.
    pub pool_idle_secs: u64,
    /// Login name when neither the host nor ~/.ssh/config gives one.
    pub default_user: Option<String>,
    /// Extra private keys tried after the agent and the host's own key.
    pub identity_files: Vec<PathBuf>,
    /// Whether to read ~/.ssh/config for hosts that are not in the inventory.
    pub use_ssh_config: bool,
}

impl Default for SshConfig {
    fn default() -> Self {
        Self {
            host_key_policy: None,
            connect_timeout_secs: 10,
            command_timeout_secs: 60,
            pool_max: 50,
            pool_idle_secs: 300,
            default_user: None,
            identity_files: Vec::new(),
            use_ssh_config: true,
        }
    }
}

/// Safety and concurrency limits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Hosts a fan-out talks to at once.
    pub max_parallel: usize,
    /// Paranoid mode: ask before every command, read-only ones included.
    pub confirm_all: bool,
    /// Specialists running at once (agent issue).
    pub max_parallel_subagents: usize,
    /// Days raw command output is kept in the database.
    pub raw_log_retention_days: u32,
    /// Whether the agent may run commands on `localhost` (off by default: it is
    /// the operator's own machine, with the operator's keys and keyring).
    pub agent_localhost: bool,
    /// Seconds a run may take (`--timeout` wins); unset: `ssh.command_timeout_secs`.
    pub command_timeout: Option<u64>,
    /// Hours a host's detected pipeline tools (ansible-playbook, terraform, kubectl, git, python) are
    /// trusted before they are probed again.
    pub capability_ttl_hours: u32,
    /// How much conversation the model is given: `auto` (from available RAM), `minimal`,
    /// `standard` or `extended`.
    pub context_tier: ContextTier,
    /// Most tokens one model answer may use (caps `model.max_tokens`); unset: no extra cap.
    pub max_tokens_per_call: Option<u32>,
    /// Most hosts one skill run may target (a skill's own `max_hosts` may be lower).
    pub max_hosts_per_skill: usize,
    /// A change is approved before it runs. Only `true` is accepted: the key exists so a
    /// configuration carried over from the seed system that sets it says what it expects.
    pub require_confirmation_for_write: bool,
    /// The tamper-evident audit log. Only `true` is accepted: approvals and refusals are recorded.
    pub audit_logging: bool,
    /// Commands refused outright, before any approval (word prefixes of a simple command:
    /// `iptables -F`, `shutdown`), in addition to what the classifier proves dangerous.
    pub blocked_commands: Vec<String>,
    /// Proven reads run in a read-only mount namespace: require, prefer (default) or off.
    pub readonly_sandbox: SandboxMode,
    /// The operator's own public domains (`example.com` covers every name under it) and networks
    /// (`203.0.113.0/24`): a read may send requests, lookups and probes there without an approval.
    /// Private, loopback and link-local addresses, single-label names and internal suffixes
    /// (`.internal`, `.local`, `.svc`…) are always inside (ADR 0030).
    pub egress_allow: Vec<String>,
    /// Changes that need a second operator's approval after their requester's (ADR 0033): `@tag`
    /// (a target host carries it) or a pipeline kind (`bash`, `ansible`, `terraform`, `kubernetes`,
    /// `mcp`). Meant for a team store (`store.url`), where teammates see and review the request.
    pub two_person_approval_for: Vec<String>,
    /// Minutes a change waits for its second person before it is given up.
    pub two_person_expiry_minutes: u32,
}

/// How much of a conversation the model sees (ADR 0022).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextTier {
    /// Chosen from available memory at start.
    #[default]
    Auto,
    /// ~10 messages / 2,000 tokens.
    Minimal,
    /// ~30 messages / 4,000 tokens.
    Standard,
    /// ~100 messages / 8,000 tokens.
    Extended,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            max_parallel: 32,
            confirm_all: false,
            max_parallel_subagents: 5,
            raw_log_retention_days: 7,
            agent_localhost: false,
            command_timeout: None,
            capability_ttl_hours: 24,
            context_tier: ContextTier::Auto,
            max_tokens_per_call: None,
            max_hosts_per_skill: 100,
            require_confirmation_for_write: true,
            audit_logging: true,
            blocked_commands: Vec::new(),
            readonly_sandbox: SandboxMode::Prefer,
            egress_allow: Vec::new(),
            two_person_approval_for: Vec::new(),
            two_person_expiry_minutes: 30,
        }
    }
}

/// Console look and feel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UiConfig {
    /// Theme name (file in themes/).
    pub theme: String,
    /// Keymap name (file in keymaps/).
    pub keymap: String,
    /// Language code of the locale.
    pub language: String,
    /// Upper bound on redraws per second.
    pub max_fps: u32,
    /// Lines of output kept per host in the console.
    pub scrollback_lines: usize,
    /// The inventory table's columns, in order (names of `inventory::columns::Column`); the
    /// console's column picker changes them for the session.
    pub inventory_columns: Vec<String>,
}

impl Default for UiConfig {
    fn default() -> Self {
        Self {
            theme: "dark".into(),
            keymap: "default".into(),
            language: "en".into(),
            max_fps: 60,
            scrollback_lines: 10_000,
            inventory_columns: crate::inventory::columns::Column::ALL.iter().map(|c| c.name().to_string()).collect(),
        }
    }
}

/// Log file settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LoggingConfig {
    /// A tracing filter such as `info` or `merlya=debug,russh=warn`.
    pub level: String,
    /// Rolled log files kept.
    pub keep_files: usize,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        Self { level: "info".into(), keep_files: 7 }
    }
}

impl Config {
    /// How long a run may take: `policy.command_timeout`, else `ssh.command_timeout_secs`.
    pub fn command_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.policy.command_timeout.unwrap_or(self.ssh.command_timeout_secs))
    }

    /// Loads `path` (a missing file yields the defaults) and applies the
    /// process environment's overrides.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Self::load_with_env(path, &vars)
    }

    /// Like [`Config::load`], with an explicit environment (for tests).
    pub fn load_with_env(path: &Path, env: &[(String, String)]) -> Result<Self, ConfigError> {
        let text = read_config_file(path)?;
        Self::parse(path, &text, env)
    }

    /// Parses configuration text as if read from `path`.
    pub fn parse(path: &Path, text: &str, env: &[(String, String)]) -> Result<Self, ConfigError> {
        let lookup = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let expanded = expand_vars(text, &lookup).map_err(|e| e.into_config_error(path))?;
        let parsed: Config = if expanded.trim().is_empty() {
            Config::default()
        } else {
            crate::input::from_yaml(&expanded).map_err(|e| yaml_error(path, &e))?
        };
        let mut config = apply_env_overrides(parsed, env)?;
        config.validate(path, &expanded, env)?;
        if let Some(cap) = config.policy.max_tokens_per_call {
            config.model.max_tokens = config.model.max_tokens.min(cap);
        }
        Ok(config)
    }

    /// Refuses values that parse but cannot work (a zero timeout, no
    /// parallelism), naming the file and line, or the variable, that set them.
    fn validate(&self, path: &Path, text: &str, env: &[(String, String)]) -> Result<(), ConfigError> {
        if let Some((name, (field, message))) =
            self.mcp.servers.iter().find_map(|(name, server)| mcp::check_server(name, server).map(|bad| (name, bad)))
        {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: line_of(text, "mcp", name),
                var: None,
                field,
                message: message.to_string(),
            });
        }
        if let Err(message) = crate::safety::egress::EgressAllow::parse(&self.policy.egress_allow) {
            let var = "MERLYA_POLICY_EGRESS_ALLOW";
            let from_env = env.iter().any(|(k, _)| k == var);
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: if from_env { None } else { line_of(text, "policy", "egress_allow") },
                var: from_env.then(|| var.to_string()),
                field: "policy.egress_allow".into(),
                message,
            });
        }
        if !(1..=two_person::MAX_EXPIRY_MINUTES).contains(&self.policy.two_person_expiry_minutes) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: line_of(text, "policy", "two_person_expiry_minutes"),
                var: None,
                field: "policy.two_person_expiry_minutes".into(),
                message: format!(
                    "{}: expected 1 to {} minutes",
                    self.policy.two_person_expiry_minutes,
                    two_person::MAX_EXPIRY_MINUTES
                ),
            });
        }
        if let Err(message) = two_person::Needs::parse_list(&self.policy.two_person_approval_for) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: line_of(text, "policy", "two_person_approval_for"),
                var: None,
                field: "policy.two_person_approval_for".into(),
                message,
            });
        }
        if let Err(bad) = crate::inventory::columns::Column::parse_list(&self.ui.inventory_columns) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: line_of(text, "ui", "inventory_columns"),
                var: None,
                field: "ui.inventory_columns".into(),
                message: format!(
                    "unknown column {bad:?}; expected a list of {}",
                    crate::inventory::columns::Column::names()
                ),
            });
        }
        const COUNT: &str = "expected a whole number of at least 1";
        const SECONDS: &str = "expected a number of seconds of at least 1";
        let (m, s, p, u) = (&self.model, &self.ssh, &self.policy, &self.ui);
        let witness_ok =
            self.audit.witness.as_deref().is_none_or(|w| crate::store::audit::witness::Witness::parse(w).is_ok());
        let o = &self.output;
        let d = &self.drift;
        let drift_sections_ok = d.ignore.iter().all(|r| {
            r.section.as_deref().is_none_or(|s| drift::SECTIONS.contains(&s))
                && !r.key.is_empty()
                && !r.name.trim().is_empty()
        });
        let credentials_ok = self.provision.credentials.values().flatten().all(|(name, source)| {
            provision::is_variable_name(name) && provision::CredentialSource::parse(source).is_ok()
        });
        if let Some(Err(message)) = self.store.url.as_deref().map(crate::store::postgres::StoreUrl::parse) {
            let var = "MERLYA_STORE_URL";
            let from_env = env.iter().any(|(k, _)| k == var);
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: if from_env { None } else { line_of(text, "store", "url") },
                var: from_env.then(|| var.to_string()),
                field: "store.url".into(),
                message,
            });
        }
        let store_password_ok =
            self.store.password.as_deref().is_none_or(|p| provision::CredentialSource::parse(p).is_ok());
        let checks: [(&str, bool, &str); 28] = [
            ("store.password", store_password_ok, "expected @service:host:field, env:NAME or file:/PATH"),
            (
                "provision.credentials",
                credentials_ok,
                "expected PROVIDER: {VARIABLE: SOURCE}, each variable a name like AWS_ACCESS_KEY_ID or TF_VAR_token, \
                 each source @service:host:field, env:NAME or file:/PATH",
            ),
            (
                "drift.interval_secs",
                d.interval_secs.is_none_or(|s| s >= 10),
                "expected a number of seconds of at least 10",
            ),
            (
                "drift.paths",
                d.paths.iter().chain(&d.contents).all(|p| p.starts_with('/')),
                "expected absolute paths (drift.paths and drift.contents)",
            ),
            (
                "drift.ignore",
                drift_sections_ok,
                "expected rules with a name, a key pattern and a section among os, packages, units_enabled, \
                 units_failed, ports, users, groups, sysctl, mounts, files, package_files, contents",
            ),
            ("output.spill_max_mb", o.spill_max_mb > 0 && o.spill_max_mb <= 1 << 20, "expected MiB from 1 to 1048576"),
            (
                "output.spill_total_mb",
                o.spill_total_mb >= o.spill_max_mb && o.spill_total_mb <= 1 << 24,
                "expected MiB of at least output.spill_max_mb (and at most 16777216)",
            ),
            (
                "audit.witness",
                witness_ok,
                "expected file:/absolute/path (outside MERLYA_HOME), journald[:NAMESPACE] or syslog[:/socket]",
            ),
            ("policy.max_hosts_per_skill", p.max_hosts_per_skill > 0, COUNT),
            ("policy.max_tokens_per_call", p.max_tokens_per_call != Some(0), COUNT),
            (
                "policy.require_confirmation_for_write",
                p.require_confirmation_for_write,
                "expected true: merlya never changes a host without an approval (use approval rules to skip asking)",
            ),
            (
                "policy.audit_logging",
                p.audit_logging,
                "expected true: every command and decision is written to the audit log",
            ),
            (
                "policy.blocked_commands",
                p.blocked_commands.iter().all(|b| !b.trim().is_empty()),
                "expected non-empty command prefixes such as \"iptables -F\"",
            ),
            ("policy.command_timeout", p.command_timeout != Some(0), SECONDS),
            ("policy.capability_ttl_hours", p.capability_ttl_hours > 0, "expected a number of hours of at least 1"),
            ("model.turn_timeout_secs", m.turn_timeout_secs > 0, SECONDS),
            ("policy.max_parallel", p.max_parallel > 0, COUNT),
            ("policy.max_parallel_subagents", p.max_parallel_subagents > 0, COUNT),
            ("ssh.pool_max", s.pool_max > 0, COUNT),
            ("ssh.connect_timeout_secs", s.connect_timeout_secs > 0, SECONDS),
            ("ssh.command_timeout_secs", s.command_timeout_secs > 0, SECONDS),
            ("model.timeout_secs", m.timeout_secs > 0, SECONDS),
            ("model.max_retry_wait", m.max_retry_wait > 0, SECONDS),
            ("model.max_tokens", m.max_tokens > 0, COUNT),
            ("model.breaker_threshold", m.breaker_threshold > 0, COUNT),
            ("ui.max_fps", u.max_fps > 0, COUNT),
            ("ui.scrollback_lines", u.scrollback_lines > 0, COUNT),
            (
                "model.brain",
                m.brain.as_ref().is_none_or(|v| v.contains('/')),
                "expected provider/model, e.g. openai/gpt-4o",
            ),
        ];
        let fast = (
            "model.fast",
            m.fast.as_ref().is_none_or(|v| v.contains('/')),
            "expected provider/model, e.g. openai/gpt-4o",
        );
        let prices = m.prices.iter().find(|(_, p)| {
            !(p.input_per_mtok.is_finite()
                && p.output_per_mtok.is_finite()
                && p.input_per_mtok >= 0.0
                && p.output_per_mtok >= 0.0)
        });
        let price_field = prices.map(|(name, _)| format!("model.prices.{name}"));
        let price_check =
            price_field.as_deref().map(|f| (f, false, "expected prices of 0 or more USD per million tokens"));
        let Some((field, _, expected)) = checks.into_iter().chain([fast]).chain(price_check).find(|(_, ok, _)| !ok)
        else {
            return Ok(());
        };
        let (section, key) = field.split_once('.').unwrap_or((field, ""));
        let key = key.split('.').next().unwrap_or(key);
        let var = format!("MERLYA_{}_{}", section.to_ascii_uppercase(), key.to_ascii_uppercase());
        let from_env = env.iter().any(|(k, _)| *k == var);
        Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            line: if from_env { None } else { line_of(text, section, key) },
            var: from_env.then_some(var),
            field: field.to_string(),
            message: expected.to_string(),
        })
    }

    /// Whether an LLM is configured at all.
    pub fn has_model(&self) -> bool {
        self.model.brain.is_some()
    }
}

/// Sets `section.key` to `value` (read as a YAML scalar) in the file at
/// `path`, checking that the result is a valid configuration before writing.
/// Comments in the file are not preserved.
pub fn set_value(path: &Path, dotted: &str, value: &str) -> Result<Config, ConfigError> {
    let Some((section, key)) = dotted.split_once('.') else {
        return Err(invalid_edit(path, dotted, "expected SECTION.KEY, e.g. model.brain".into()));
    };
    edit(path, dotted, |root| {
        let entry = root
            .entry(yaml_serde::Value::String(section.to_string()))
            .or_insert_with(|| yaml_serde::Value::Mapping(Default::default()));
        let table = entry.as_mapping_mut().ok_or_else(|| format!("{section} is not a mapping"))?;
        let parsed: yaml_serde::Value =
            crate::input::from_yaml(value).unwrap_or(yaml_serde::Value::String(value.to_string()));
        table.insert(yaml_serde::Value::String(key.to_string()), parsed);
        Ok(())
    })
}

fn invalid_edit(path: &Path, field: &str, message: String) -> ConfigError {
    ConfigError::Invalid { path: path.to_path_buf(), line: None, var: None, field: field.to_string(), message }
}

/// Applies `change` to the file's top-level mapping and writes it back, only when the result is a
/// valid configuration (`field` names what was edited, for errors). Comments are not preserved.
pub fn edit(
    path: &Path,
    field: &str,
    change: impl FnOnce(&mut yaml_serde::Mapping) -> Result<(), String>,
) -> Result<Config, ConfigError> {
    let text = read_config_file(path)?;
    let mut tree: yaml_serde::Value = if text.trim().is_empty() {
        yaml_serde::Value::Mapping(Default::default())
    } else {
        crate::input::from_yaml(&text).map_err(|e| yaml_error(path, &e))?
    };
    let root = tree
        .as_mapping_mut()
        .ok_or_else(|| invalid_edit(path, field, "the file is not a mapping of sections".into()))?;
    change(root).map_err(|message| invalid_edit(path, field, message))?;
    let rendered = yaml_serde::to_string(&tree).map_err(|e| invalid_edit(path, field, e.to_string()))?;
    // Validate exactly what will be written (no environment involved).
    let config = Config::parse(path, &rendered, &[])?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| ConfigError::Read { path: parent.to_path_buf(), source })?;
    }
    std::fs::write(path, rendered).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    Ok(config)
}

/// Where an invalid value came from: `path:line`, or the variable that set it.
fn place(path: &Path, line: Option<usize>, var: Option<&str>) -> String {
    match (var, line) {
        (Some(var), _) => format!("environment variable {var} (over {})", path.display()),
        (None, Some(line)) => format!("{}:{line}", path.display()),
        (None, None) => path.display().to_string(),
    }
}

/// The line of `section:` → `key:` in block-style YAML `text` (the section's
/// line when the key is not written on a line of its own), if any.
fn line_of(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut section_line = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.len() == line.len() {
            // A top-level key: entering or leaving the section.
            if section_line.is_some() {
                break;
            }
            if trimmed.strip_prefix(section).is_some_and(|rest| rest.starts_with(':')) {
                section_line = Some(index + 1);
            }
        } else if section_line.is_some() && trimmed.strip_prefix(key).is_some_and(|rest| rest.starts_with(':')) {
            return Some(index + 1);
        }
    }
    section_line
}

/// Turns a yaml_serde error into a [`ConfigError::Parse`] carrying the line.
pub fn yaml_error(path: &Path, e: &crate::input::YamlError) -> ConfigError {
    ConfigError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.message().to_string(),
    }
}

/// The text of `config.yaml` (empty when there is none), within the size of a settings file.
fn read_config_file(path: &Path) -> Result<String, ConfigError> {
    Ok(crate::input::read_optional(path, crate::input::SETTINGS_LIMIT, "a configuration file")?.unwrap_or_default())
}

/// The commented configuration written by `merlya config init`.
pub const DEFAULT_CONFIG_YAML: &str = include_str!("default_config.yaml");

#[cfg(test)]
mod tests;
