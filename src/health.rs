//! `merlya doctor`: is this machine ready? Each check says OK, WARN or FAIL,
//! what it found, and how to fix what is wrong. It runs even when the
//! configuration or the database cannot be used — that is when it is needed.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::config::Config;
use crate::home::MerlyaHome;
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

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked (`disk`, `database`, `mcp:fs`, …).
    pub name: String,
    /// OK, WARN or FAIL.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// How to fix it (empty when OK).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hint: String,
}

impl Check {
    /// A check's answer, with how to fix it when it is not OK.
    pub fn new(name: &str, status: Status, detail: impl Into<String>, hint: impl Into<String>) -> Self {
        Self { name: name.into(), status, detail: detail.into(), hint: hint.into() }
    }
    /// A check that passed, with what it found.
    pub fn ok(name: &str, detail: impl Into<String>) -> Self {
        Self::new(name, Status::Ok, detail, "")
    }
}

const MIB: u64 = 1024 * 1024;

/// MERLYA_HOME is its owner's alone: it holds the database, the audit key and the logs.
fn home_permissions(home: &MerlyaHome) -> Check {
    match home.open_to_others() {
        None => Check::ok("home", format!("{} (only its owner may enter it)", home.root().display())),
        Some(mode) => Check::new(
            "home",
            Status::Warn,
            format!("{} is {mode:o}: others may enter it", home.root().display()),
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
            checks.push(Check::new("config", Status::Fail, e.to_string(), "fix the file at the line named"));
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
    let detail = format!("{} MiB free on {}", free / MIB, probe.display());
    match free {
        f if f < 100 * MIB => Check::new("disk", Status::Fail, detail, "free space: the database and logs need room"),
        f if f < 1024 * MIB => {
            Check::new("disk", Status::Warn, detail, "less than 1 GiB left; prune logs/ and output/")
        }
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
            format!("{} MiB available", kb / 1024),
            "low memory: lower policy.max_parallel",
        ),
        Some(kb) => Check::ok("memory", format!("{} MiB available", kb / 1024)),
    }
}

/// An ssh-agent for keys protected by a passphrase (and Ansible, which cannot ask for one).
fn ssh_agent() -> Check {
    match std::env::var_os("SSH_AUTH_SOCK") {
        None => Check::new(
            "ssh-agent",
            Status::Warn,
            "SSH_AUTH_SOCK is not set",
            "keys with a passphrase are asked for each time; run `eval $(ssh-agent) && ssh-add`",
        ),
        Some(socket) => match std::os::unix::net::UnixStream::connect(&socket) {
            Ok(_) => Check::ok("ssh-agent", format!("listening at {}", Path::new(&socket).display())),
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
        Check::new(
            "keyring",
            Status::Warn,
            secrets.backend_name(),
            "secrets do not survive the process: start a Secret Service (gnome-keyring) or use the kernel keyring (keyutils)",
        )
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
            Check::ok("database", format!("{}: intact, writable, schema version {found}", path.display()))
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
            Check::ok("audit", format!("no entry yet: {} is created with the first recorded command", key.display()))
        }
        Ok(report) => {
            let found = report.describe();
            Check::ok("audit", found.lines().next().unwrap_or_default().to_string())
        }
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
            "no model configured: the console, exec and pipelines work without one",
            "merlya config set model.brain openai/gpt-4o (then set the key's variable or `merlya secret set llm:openai:api_key`)",
        );
    }
    let client = match LlmClient::from_config(&config.model, secrets) {
        Ok(client) => client,
        Err(e) => return Check::new("model", Status::Fail, e.to_string(), "fix model.* in config.yaml or add the key"),
    };
    let name = format!("{} ({})", client.model(ModelRole::Brain), client.provider_name(ModelRole::Brain));
    match client.probe(ModelRole::Brain).await {
        Ok(count) => Check::ok("model", format!("{name} reachable, {count} model(s) listed")),
        Err(crate::llm::LlmError::Status { status: 401 | 403, .. }) => {
            Check::new("model", Status::Fail, format!("{name}: the API key was refused"), "set a valid key")
        }
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
            checks.push(Check::ok(&label, "disabled"));
            continue;
        }
        checks.push(match clients.tools(name).await {
            Ok(tools) => Check::ok(&label, format!("started, {} tool(s)", tools.len())),
            Err(e) => Check::new(&label, Status::Fail, e.to_string(), format!("fix mcp.servers.{name} or remove it")),
        });
    }
    checks
}

fn tool_on_path(tool: &str, pipeline: &str) -> Check {
    if crate::pipeline::tool::found(tool) {
        Check::ok(tool, format!("on PATH: the {pipeline} pipeline can run here"))
    } else {
        Check::new(
            tool,
            Status::Warn,
            format!("not found: the {pipeline} pipeline is unavailable"),
            format!("install {tool} to use it"),
        )
    }
}
