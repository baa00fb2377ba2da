//! The `mcp:` section: external MCP servers merlya uses (`servers`), and what
//! `merlya mcp serve` offers to MCP clients (`serve`).
//!
//! `env` and `headers` values keep their `${VAR}` / `${VAR:-default}` and
//! `@service:host:field` references here; they are resolved only when the
//! server starts (see `crate::mcp::launch`), so that a missing variable stops
//! that one server with an error naming it, and a secret is never held longer
//! than the connection needs it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The MCP section.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// External servers by name (the model sees their tools as `NAME.TOOL`).
    pub servers: BTreeMap<String, McpServerConfig>,
    /// What `merlya mcp serve` offers.
    pub serve: McpServeConfig,
}

/// One external server: a program on stdio, or a streamable HTTP endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// Program to start (stdio transport).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment added for it (references resolved at start).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Its working folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP endpoint (instead of `command`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers (references resolved at start).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Seconds one call may take before it is cancelled (the server is told).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// `false` keeps the entry but never starts it.
    #[serde(skip_serializing_if = "is_true")]
    pub enabled: bool,
}

fn is_true(value: &bool) -> bool {
    *value
}

impl McpServerConfig {
    /// Seconds a call may take: `timeout`, else 60.
    pub fn call_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout.unwrap_or(60))
    }
}

/// `merlya mcp serve`: the agent as an MCP tool (Speelka's options).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct McpServeConfig {
    /// Name of the tool that runs the agent.
    pub tool_name: String,
    /// Its description, as MCP clients show it.
    pub tool_description: String,
    /// Replaces the agent's system prompt when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `provider/model` for served tasks, else the configured brain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tool calls one task may make.
    pub max_tool_calls: u32,
    /// Seconds one task may take.
    pub timeout: u64,
    /// merlya's own tools the served agent may use (empty: all of them).
    pub tools: Vec<String>,
    /// External MCP servers the served agent may use (empty: none).
    pub servers: Vec<String>,
    /// `--http`: most sessions open at once (a client past it gets 503 until one closes or expires).
    pub max_sessions: usize,
    /// `--http`: seconds a session may go unused before it is closed and its memory freed.
    pub session_idle_secs: u64,
}

impl Default for McpServeConfig {
    fn default() -> Self {
        Self {
            tool_name: "ask".into(),
            tool_description: "Ask merlya's operations agent to investigate or act on the fleet of Linux hosts it manages; returns its answer.".into(),
            system_prompt: None,
            model: None,
            max_tool_calls: 30,
            timeout: 600,
            tools: Vec::new(),
            servers: Vec::new(),
            max_sessions: 64,
            session_idle_secs: 600,
        }
    }
}

/// Why a server entry cannot work, as `(field, what was expected)`.
pub fn check_server(name: &str, server: &McpServerConfig) -> Option<(String, &'static str)> {
    let field = |key: &str| format!("mcp.servers.{name}{key}");
    if name.is_empty()
        || name.contains("__")
        || name.starts_with('_')
        || name.ends_with('_')
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Some((
            field(""),
            "expected a name of letters, digits, - and single inner _ (it prefixes tool names as NAME__TOOL)",
        ));
    }
    match (&server.command, &server.url) {
        (Some(_), Some(_)) => return Some((field(".url"), "expected either command (stdio) or url (HTTP), not both")),
        (None, None) => return Some((field(""), "expected command (stdio) or url (streamable HTTP)")),
        (Some(c), None) if c.trim().is_empty() => return Some((field(".command"), "expected a program to run")),
        (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
            return Some((field(".url"), "expected an http:// or https:// address"));
        }
        _ => {}
    }
    if server.timeout == Some(0) {
        return Some((field(".timeout"), "expected a number of seconds of at least 1"));
    }
    if server.command.is_some() && !server.headers.is_empty() {
        return Some((field(".headers"), "headers apply to url servers only"));
    }
    None
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            timeout: None,
            enabled: true,
        }
    }
}

/// Adds (or replaces) server `name` in the configuration file at `path`; `None` removes it. The file
/// is written only when the result is valid (comments are not preserved).
pub fn set_server(
    path: &std::path::Path,
    name: &str,
    server: Option<&McpServerConfig>,
) -> Result<super::Config, super::ConfigError> {
    let field = format!("mcp.servers.{name}");
    super::edit(path, &field, |root| {
        let key = |k: &str| yaml_serde::Value::String(k.to_string());
        let mcp = root.entry(key("mcp")).or_insert_with(|| yaml_serde::Value::Mapping(Default::default()));
        let mcp = mcp.as_mapping_mut().ok_or("mcp is not a mapping")?;
        let servers = mcp.entry(key("servers")).or_insert_with(|| yaml_serde::Value::Mapping(Default::default()));
        let servers = servers.as_mapping_mut().ok_or("mcp.servers is not a mapping")?;
        match server {
            Some(server) => {
                let value = yaml_serde::to_value(server).map_err(|e| e.to_string())?;
                servers.insert(key(name), value);
            }
            None => {
                servers.remove(key(name)).ok_or_else(|| format!("no MCP server named {name}"))?;
            }
        }
        Ok(())
    })
}
