//! merlya as an MCP client, on the official SDK (rmcp).
//!
//! - [`client`]: the external servers configured under `mcp.servers` — started
//!   on first use, their stderr drained into merlya's log, every call bounded
//!   and cancellable, a dead server restarted on next use.
//! - [`call`]: the one path by which anything calls an external tool — a tool
//!   annotated read-only runs at once; any other is a change, asked through the
//!   approval gate and written to the audit log with its outcome.
//! - [`launch`]: `${VAR}` and secret references resolved when a server starts.
//!
//! merlya as an MCP server is [`crate::mcp_serve`], a layer above the agent.

pub mod call;
pub mod client;
pub mod launch;

#[cfg(test)]
mod tests;

use serde::Serialize;

/// What can go wrong talking to an external MCP server; every variant names the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// No `mcp.servers.NAME` entry.
    #[error("no MCP server named {0} (see `merlya mcp list`)")]
    Unknown(String),
    /// `enabled: false`.
    #[error("MCP server {0} is disabled in the configuration")]
    Disabled(String),
    /// A `${VAR}` in its env or headers with VAR unset and no default.
    #[error("MCP server {server}: environment variable {var} is not set")]
    UnsetVar { server: String, var: String },
    /// A secret reference with no stored value.
    #[error("MCP server {server}: no stored secret {secrets} (add it with `merlya secret set`)")]
    MissingSecret { server: String, secrets: String },
    /// A value that cannot be used.
    #[error("MCP server {server}: {detail}")]
    Config { server: String, detail: String },
    /// It would not start or did not complete the MCP handshake.
    #[error("MCP server {server} did not start: {detail}")]
    Start { server: String, detail: String },
    /// No such tool on the server.
    #[error("MCP server {server} has no tool {tool}")]
    UnknownTool { server: String, tool: String },
    /// The connection ended (the server died); it is started again on next use.
    #[error("MCP server {server} stopped during the call ({detail}); it is restarted on next use")]
    Died { server: String, detail: String },
    /// The call took longer than the server's timeout; the server was told to cancel it.
    #[error("MCP call {server}.{tool} timed out after {secs} s (the server was told to cancel it)")]
    TimedOut { server: String, tool: String, secs: u64 },
    /// The run was cancelled; the server was told.
    #[error("MCP call {server}.{tool} was cancelled")]
    Cancelled { server: String, tool: String },
    /// The server answered with a protocol error.
    #[error("MCP call {server}.{tool} failed: {detail}")]
    Failed { server: String, tool: String, detail: String },
    /// A change that was not approved.
    #[error("MCP call {server}.{tool} was not run: {why}")]
    Refused { server: String, tool: String, why: String },
}

/// A tool an external server offers, as merlya shows and gates it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The server's name in the configuration.
    pub server: String,
    /// The tool's name on that server.
    pub name: String,
    /// What it does, in the server's words.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
    /// Annotated read-only (and not destructive): usable without an approval.
    pub read_only: bool,
}

impl ToolInfo {
    /// `server.tool`, as people see it.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.server, self.name)
    }
}

/// A tool's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallResult {
    /// Its content as text (text items as they are; other items described).
    pub text: String,
    /// The tool reported an error (`isError`).
    pub is_error: bool,
    /// Structured content, when the tool gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
    /// Who approved the call (`not required` for a read).
    #[serde(skip)]
    pub approved_by: String,
}

/// `value` with secrets hidden: in every string (keys too) the values of `secrets` masked, and with
/// `by_name` everything under a key with a secret-like name (`password`, `token`, `Authorization`)
/// replaced by `***` — tool arguments shown in an approval or written to the audit log.
pub fn mask_json(value: &serde_json::Value, secrets: &[String], by_name: bool) -> serde_json::Value {
    use crate::secrets::reference::mask_values;
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(mask_values(s, secrets)),
        Value::Array(items) => Value::Array(items.iter().map(|v| mask_json(v, secrets, by_name)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let masked = if by_name && crate::redact::is_secret_name(k) && !v.is_null() {
                        Value::String(crate::redact::MASK.into())
                    } else {
                        mask_json(v, secrets, by_name)
                    };
                    (mask_values(k, secrets), masked)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Splits `server.tool` (or the wire form `server__tool`, since model APIs refuse dots in tool names).
pub fn split_qualified(name: &str) -> Option<(&str, &str)> {
    name.split_once('.')
        .or_else(|| name.split_once("__"))
        .filter(|(server, tool)| !server.is_empty() && !tool.is_empty())
}
