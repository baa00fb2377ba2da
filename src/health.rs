//! `merlya doctor`: is this machine ready? Each check says OK, WARN or FAIL,
//! what it found, and how to fix what is wrong. It runs even when the
//! configuration or the database cannot be used — that is when it is needed.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::config::Config;
use crate::home::MerlyaHome;
use crate::i18n::Text;
use crate::llm::{LlmClient, ModelRole};
use crate::mcp::client::McpClients;
use crate::secrets::Secrets;
use crate::store::Store;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Ready.
    Ok,
    /// Works, with a limit the operator should know.
    Warn,
    /// Does not work.
    Fail,
}

impl Status {
    /// As printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// One check's result. What was found and the fix are said in the reader's language (`merlya doctor`
/// in the console's); the JSON keeps English, as scripts read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked (`disk`, `database`, `mcp:fs`, …).
    pub name: String,
    /// OK, WARN or FAIL.
    pub status: Status,
    /// What was found.
    #[serde(serialize_with = "english")]
    pub detail: Text,
    /// How to fix it (empty when OK).
    #[serde(serialize_with = "english", skip_serializing_if = "no_text")]
    pub hint: Text,
}

fn english<S: serde::Serializer>(text: &Text, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&text.english())
}

fn no_text(text: &Text) -> bool {
    matches!(text, Text::Raw(raw) if raw.is_empty())
}

impl Check {
    /// Whether the check has a fix to show.
    pub fn has_hint(&self) -> bool {
        !no_text(&self.hint)
    }

    /// A check's answer, with how to fix it when it is not OK.
    pub fn new(name: &str, status: Status, detail: impl Into<Text>, hint: impl Into<Text>) -> Self {
        Self { name: name.into(), status, detail: detail.into(), hint: hint.into() }
    }
    /// A check that passed, with what it found.
    pub fn ok(name: &str, detail: impl Into<Text>) -> Self {
        Self::new(name, Status::Ok, detail, "")
    }
}

const MIB: u64 = 1024 * 1024;

/// MERLYA_HOME is its owner's alone: it holds the database, the audit key and the logs.
fn home_permissions(home: &MerlyaHome) -> Check {
    match home.open_to_others() {
        None => Check::ok("home", Text::key("doctor.home_ok", &[("path", &home.root().display().to_string())])),
        Some(mode) => Check::new(
            "home",
            Status::Warn,
            Text::key(
                "doctor.home_open",
                &[("path", &home.root().display().to_string()), ("mode", &format!("{mode:o}"))],
            ),
            format!("chmod 700 {}", home.root().display()),
        ),
    }
}

/// Every check, in the order printed. The configuration is read here (a broken one is a FAIL, and the
/// defaults are used for the rest).
pub async fn run_all(home: &MerlyaHome) -> Vec<Check> {
    let mut checks = Vec::new();
    let config = match Config::load(&home.config_file()) {
        Ok(config) => {
            checks.push(Check::ok("config", home.config_file().display().to_string()));
            config
        }
        Err(e) => {
            checks.push(Check::new("config", Status::Fail, e.to_string(), Text::key("doctor.config_fix", &[])));
            Config::default()
        }
    };
    checks.push(home_permissions(home));
    checks.push(disk(home.root()));
    checks.push(memory());
    checks.push(ssh_agent());
    let secrets = Arc::new(Secrets::open(config.secrets.backend));
    checks.push(keyring(&secrets));
    let (database, store) = database(&home.database()).await;
    checks.push(database);
    checks.push(audit(home, store.as_ref()).await);
    if let Some(store) = store {
        store.close().await;
    }
    checks.push(model(&config, &secrets).await);
    checks.extend(mcp(&config, secrets).await);
    for (tool, pipeline) in [("ansible-playbook", "Ansible"), ("terraform", "Terraform"), ("kubectl", "Kubernetes")] {
        checks.push(tool_on_path(tool, pipeline));
    }
    checks
}

/// The console's start-up check: what can be known cheaply and without starting anything (no full
/// database read, no MCP server started, the model probed only when one is configured). A missing
/// model is not reported: the console's banner already says how to add one.
pub async fn start_up(
    home: &MerlyaHome,
    config: &Config,
    secrets: &Secrets,
    store: &Store,
    clients: &McpClients,
) -> Vec<Check> {
    let mut checks = vec![home_permissions(home), disk(home.root()), memory(), ssh_agent(), keyring(secrets)];
    checks.push(match store.check_health().await {
        Ok((found, known)) if found == known => Check::ok("database", format!("writable, schema version {found}")),
        Ok((found, known)) => Check::new(
            "database",
            Status::Fail,
            format!("schema version {found}, this merlya knows {known}"),
            "upgrade merlya",
        ),
        Err(e) => Check::new("database", Status::Fail, e.to_string(), "run `merlya doctor`"),
    });
    checks.push(audit_since_verified(store).await);
    if config.has_model() {
        checks.push(model(config, secrets).await);
    }
    // The console's own clients: a server started here stays up for the first use of its tools.
    checks.extend(mcp_checks(config, clients).await);
    for (tool, pipeline) in [("ansible-playbook", "Ansible"), ("terraform", "Terraform"), ("kubectl", "Kubernetes")] {
        checks.push(tool_on_path(tool, pipeline));
    }
    checks
}

/// Free space where merlya keeps its files.
fn disk(dir: &Path) -> Check {
    let probe = if dir.exists() { dir } else { dir.parent().unwrap_or(Path::new("/")) };
    let Some(free) = free_bytes(probe) else {
        return Check::new("disk", Status::Warn, format!("cannot read the free space of {}", probe.display()), "");
    };
    let args = [("mib", (free / MIB).to_string()), ("path", probe.display().to_string())];
    let detail = Text::key("doctor.disk", &args.each_ref().map(|(k, v)| (*k, v.as_str())));
    match free {
        f if f < 100 * MIB => Check::new("disk", Status::Fail, detail, Text::key("doctor.disk_full", &[])),
        f if f < 1024 * MIB => Check::new("disk", Status::Warn, detail, Text::key("doctor.disk_low", &[])),
        _ => Check::ok("disk", detail),
    }
}

fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: statvfs writes a plain struct for a NUL-terminated path we own.
    let ok = unsafe { libc::statvfs(c_path.as_ptr(), stats.as_mut_ptr()) } == 0;
    // SAFETY: initialised by the successful call above.
    ok.then(|| unsafe { stats.assume_init() }).map(|s| s.f_bavail * s.f_frsize)
}

/// Bytes of memory available now (`MemAvailable`), if the kernel says (the context tier follows it).
pub fn available_memory_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.split_whitespace().next().and_then(|kb| kb.parse::<u64>().ok()))
            .map(|kb| kb * 1024)
    })
}

/// Memory available now (`MemAvailable`).
fn memory() -> Check {
    let available = available_memory_bytes().map(|bytes| bytes / 1024);
    match available {
        None => Check::new("memory", Status::Warn, "cannot read /proc/meminfo", ""),
        Some(kb) if kb < 256 * 1024 => Check::new(
            "memory",
            Status::Warn,
            Text::key("doctor.memory", &[("mib", &(kb / 1024).to_string())]),
            Text::key("doctor.memory_low", &[]),
        ),
        Some(kb) => Check::ok("memory", Text::key("doctor.memory", &[("mib", &(kb / 1024).to_string())])),
    }
}

/// An ssh-agent for keys protected by a passphrase (and Ansible, which cannot ask for one).
fn ssh_agent() -> Check {
    match std::env::var_os("SSH_AUTH_SOCK") {
        None => Check::new(
            "ssh-agent",
            Status::Warn,
            Text::key("doctor.agent_unset", &[]),
            Text::key("doctor.agent_unset_fix", &[]),
        ),
        Some(socket) => match std::os::unix::net::UnixStream::connect(&socket) {
            Ok(_) => Check::ok(
                "ssh-agent",
                Text::key("doctor.agent_ok", &[("path", &Path::new(&socket).display().to_string())]),
            ),
            Err(e) => Check::new(
                "ssh-agent",
                Status::Warn,
                format!("SSH_AUTH_SOCK={} cannot be reached: {e}", Path::new(&socket).display()),
                "start an agent: `eval $(ssh-agent) && ssh-add`",
            ),
        },
    }
}

fn keyring(secrets: &Secrets) -> Check {
    if let Some(e) = secrets.unavailable() {
        return Check::new(
            "keyring",
            Status::Fail,
            e.to_string(),
            "set secrets.backend to auto, or start the store named",
        );
    }
    if secrets.is_persistent() {
        Check::ok("keyring", secrets.backend_name())
    } else {
        Check::new("keyring", Status::Warn, secrets.backend_name(), Text::key("doctor.keyring_memory", &[]))
    }
}

/// Opens the database (as every command does), then reads it whole, checks the schema and writes.
/// The store is handed back for the audit check when it opened.
async fn database(path: &Path) -> (Check, Option<Store>) {
    let store = match Store::open(path).await {
        Ok(store) => store,
        Err(e) => {
            let check = Check::new(
                "database",
                Status::Fail,
                e.to_string(),
                "see the message: restore a backup or move the file away",
            );
            return (check, None);
        }
    };
    let check = match store.check_health().await {
        Ok((found, known)) if found == known => {
            let args = [("path", path.display().to_string()), ("version", found.to_string())];
            Check::ok("database", Text::key("doctor.database_ok", &args.each_ref().map(|(k, v)| (*k, v.as_str()))))
        }
        Ok((found, known)) => Check::new(
            "database",
            Status::Fail,
            format!("{}: schema version {found}, this merlya knows {known}", path.display()),
            "upgrade merlya",
        ),
        Err(e) => Check::new("database", Status::Fail, e.to_string(), "restore a backup or move the file away"),
    };
    (check, Some(store))
}

/// What every recorded command needs: an audit key it can append with (or none yet, for a log that
/// was never keyed) and a chain that `merlya audit verify` accepts. Without the database, only the
/// key file is read.
async fn audit(home: &MerlyaHome, store: Option<&Store>) -> Check {
    let key = home.audit_key();
    let Some(store) = store else {
        let files = crate::store::audit::keys::AuditFiles::beside(&home.database());
        return match files.load_key() {
            Ok(_) => Check::new(
                "audit",
                Status::Warn,
                "not checked: the chain is in the database, which cannot be opened",
                "fix the database first (see above)",
            ),
            Err(e) => Check::new("audit", Status::Fail, format!("the audit key is unusable: {e}"), restore_hint(&key)),
        };
    };
    match store.verify_audit().await {
        Err(e) => Check::new("audit", Status::Fail, e.to_string(), "fix the database first (see above)"),
        Ok(report) if report.broken.is_some() => Check::new(
            "audit",
            Status::Fail,
            report.describe(),
            format!("{}; `merlya audit verify` says the same", restore_hint(&key)),
        ),
        Ok(report) if !report.key_present && report.entries == 0 => {
            Check::ok("audit", Text::key("doctor.audit_empty", &[("path", &key.display().to_string())]))
        }
        Ok(report) => {
            let found = report.describe();
            Check::ok("audit", found.lines().next().unwrap_or_default().to_string())
        }
    }
}

/// The console's audit check: the entries since the head this home verified last (ADR 0032). A store
/// that no longer holds that head is "audit rewritten"; a broken entry is named as `audit verify` does.
async fn audit_since_verified(store: &Store) -> Check {
    match store.audit_since_verified().await {
        Err(e) => Check::new("audit", Status::Warn, e.to_string(), "run `merlya audit verify`"),
        Ok(report) if report.broken.is_some() => {
            Check::new("audit", Status::Fail, report.describe(), "run `merlya audit verify`")
        }
        Ok(report) => Check::ok("audit", report.describe().lines().next().unwrap_or_default().to_string()),
    }
}

/// Commands stop when the audit log cannot be appended to or proven: the files to put back.
fn restore_hint(key: &Path) -> String {
    format!(
        "restore {} and the checkpoint beside it from a backup (merlya does not start a new chain over a kept one)",
        key.display()
    )
}

/// The configured model answers with its key (its model list; no tokens spent).
async fn model(config: &Config, secrets: &Secrets) -> Check {
    if !config.has_model() {
        return Check::new(
            "model",
            Status::Warn,
            Text::key("doctor.no_model", &[]),
            Text::key("doctor.no_model_fix", &[]),
        );
    }
    let client = match LlmClient::from_config(&config.model, secrets) {
        Ok(client) => client,
        Err(e) => return Check::new("model", Status::Fail, e.to_string(), "fix model.* in config.yaml or add the key"),
    };
    let name = format!("{} ({})", client.model(ModelRole::Brain), client.provider_name(ModelRole::Brain));
    match client.probe(ModelRole::Brain).await {
        Ok(count) => {
            Check::ok("model", Text::key("doctor.model_ok", &[("name", &name), ("count", &count.to_string())]))
        }
        Err(crate::llm::LlmError::Status { status: 401 | 403, .. }) => Check::new(
            "model",
            Status::Fail,
            Text::key("doctor.model_refused", &[("name", &name)]),
            Text::key("doctor.model_refused_fix", &[]),
        ),
        Err(e) => Check::new("model", Status::Fail, format!("{name}: {e}"), "check model.base_url and the network"),
    }
}

/// Each enabled MCP server starts and lists its tools.
async fn mcp(config: &Config, secrets: Arc<Secrets>) -> Vec<Check> {
    let clients = McpClients::new(config.mcp.servers.clone(), secrets);
    let checks = mcp_checks(config, &clients).await;
    clients.shutdown().await;
    checks
}

/// One check per configured MCP server, started through `clients`.
async fn mcp_checks(config: &Config, clients: &McpClients) -> Vec<Check> {
    let mut checks = Vec::new();
    for (name, server) in &config.mcp.servers {
        let label = format!("mcp:{name}");
        if !server.enabled {
            checks.push(Check::ok(&label, Text::key("doctor.mcp_disabled", &[])));
            continue;
        }
        checks.push(match clients.tools(name).await {
            Ok(tools) => Check::ok(&label, Text::key("doctor.mcp_started", &[("count", &tools.len().to_string())])),
            Err(e) => Check::new(&label, Status::Fail, e.to_string(), format!("fix mcp.servers.{name} or remove it")),
        });
    }
    checks
}

fn tool_on_path(tool: &str, pipeline: &str) -> Check {
    if crate::pipeline::tool::found(tool) {
        Check::ok(tool, Text::key("doctor.tool_ok", &[("pipeline", pipeline)]))
    } else {
        Check::new(
            tool,
            Status::Warn,
            Text::key("doctor.tool_missing", &[("pipeline", pipeline)]),
            Text::key("doctor.tool_install", &[("tool", tool)]),
        )
    }
}
