//! External MCP tools offered to the model (ADR 0021).
//!
//! People see `server.tool`; model APIs accept only `[A-Za-z0-9_-]{1,64}` as a
//! tool name, so on the wire the name is `server__tool` (a tool whose name does
//! not fit is not offered, and the log says so). Read-only specialists and the
//! main agent are offered the tools their server annotates read-only; the
//! execution specialist is offered every tool, and each call of one that is not
//! read-only is a change: approved through the one gate and audited
//! ([`crate::mcp::call`]).

use serde_json::Value;

use super::{Agent, CommandRecord};
use crate::llm::ToolSpec;
use crate::mcp::call::{CallEnv, call as gated_call};
use crate::mcp::{McpError, ToolInfo};

/// The tools to offer: every enabled server's (started on first use), read-only ones only when
/// `read_only`. A server that cannot start is reported to the operator and left out.
pub async fn offer(agent: &Agent, read_only: bool) -> Vec<ToolInfo> {
    let Some(clients) = &agent.mcp else { return Vec::new() };
    let (tools, errors) = clients.all_tools().await;
    for e in errors {
        (agent.observer)(super::AgentEvent::Notice(e.to_string()));
    }
    let mut seen = std::collections::HashSet::new();
    tools
        .into_iter()
        .filter(|t| !read_only || t.read_only)
        // A name listed twice is ambiguous: only its first listing is offered.
        .filter(|t| wire_name(t).is_some_and(|name| seen.insert(name)))
        .collect()
}

/// Longest tool description the model is given (a server's words are not a place to hide a prompt
/// the size of a book).
const MAX_DESCRIPTION: usize = 1000;

/// `server__tool`, when it is a name model APIs accept.
pub fn wire_name(tool: &ToolInfo) -> Option<String> {
    let name = format!("{}__{}", tool.server, tool.name);
    let fits = name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !fits {
        tracing::info!(tool = %tool.qualified(), "MCP tool not offered: its name does not fit a model tool name");
    }
    fits.then_some(name)
}

/// The tool specs, with the server's schema and a description that names the tool and its risk.
pub fn specs(tools: &[ToolInfo]) -> Vec<ToolSpec> {
    tools
        .iter()
        .filter_map(|tool| {
            let risk = if tool.read_only { "read-only" } else { "a change: a person approves or denies each call" };
            Some(ToolSpec {
                name: wire_name(tool)?,
                description: format!(
                    "MCP tool {} ({risk}). {}",
                    tool.qualified(),
                    tool.description.chars().take(MAX_DESCRIPTION).collect::<String>()
                ),
                parameters: tool.input_schema.clone(),
            })
        })
        .collect()
}

/// Runs the call when `name` is one of `tools`; `None` when it is not an MCP tool.
pub async fn call(
    agent: &Agent,
    tools: &[ToolInfo],
    name: &str,
    value: Value,
    asker: &str,
    read_only: bool,
) -> Option<Result<String, String>> {
    let tool = tools.iter().find(|t| wire_name(t).as_deref() == Some(name))?;
    let clients = agent.mcp.clone()?;
    let Value::Object(arguments) = value else {
        return Some(Err(format!("`{name}` takes a JSON object of arguments")));
    };
    let env = CallEnv {
        clients,
        gate: agent.gate.clone(),
        store: agent.store.clone(),
        session_id: agent.session_id.clone(),
        requested_by: asker.to_string(),
        read_only,
        cancel: agent.cancel.clone(),
    };
    let shown = crate::mcp::call::describe(tool, &arguments);
    let outcome = gated_call(&env, &tool.server, &tool.name, arguments).await;
    let (refused, approved_by) = match &outcome {
        Err(McpError::Refused { why, .. }) => (Some(why.clone()), None),
        Err(e) => (Some(e.to_string()), None),
        Ok(result) => (None, Some(result.approved_by.clone())),
    };
    agent.record_command(CommandRecord {
        specialist: asker.to_string(),
        host: format!("mcp:{}", tool.server),
        command: shown,
        exit_code: match &outcome {
            Ok(r) if r.is_error => Some(1),
            Ok(_) => Some(0),
            Err(_) => None,
        },
        refused,
        approved_by,
    });
    Some(Ok(match outcome {
        Ok(result) if result.is_error => {
            format!(
                "MCP tool {} reported an error:\n{}",
                tool.qualified(),
                super::raw_logs::for_model(&agent.store, &result.text)
            )
        }
        Ok(result) => format!(
            "MCP tool {} answered:\n{}",
            tool.qualified(),
            super::raw_logs::for_model(&agent.store, &result.text)
        ),
        Err(McpError::Refused { why, .. }) => format!("REFUSED, not run: {why}"),
        Err(e) => format!("ERROR: {e}"),
    }))
}
