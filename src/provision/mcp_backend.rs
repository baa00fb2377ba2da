//! The MCP backend of the provisioner (issue 26): a template renders `request.json` — the server,
//! the tool that makes the resource and its arguments, the read-only tool that reads it back, what
//! it should hold — and merlya makes the calls through the one gated, audited MCP path
//! (`mcp::call`): the change asks for approval, the read is a read. Drift is the read-back compared
//! with what is expected; an error reading it back (the object is gone) is `missing`.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::mcp::call::{CallEnv, call};
use crate::store::resources::Drift;

/// One tool call of a request.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolRequest {
    /// The tool's name on the server.
    pub tool: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
}

/// What a rendered `request.json` asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpRequest {
    /// The configured server (`mcp.servers`).
    pub server: String,
    /// The call that makes (or updates) the resource.
    pub create: ToolRequest,
    /// The read-only call that reads it back.
    pub read: ToolRequest,
    /// The call that removes it, when the server offers one.
    #[serde(default)]
    pub delete: Option<ToolRequest>,
    /// What the read-back holds when nothing drifted.
    pub expected: String,
    /// The resource's outputs.
    #[serde(default)]
    pub outputs: Value,
}

/// Reads `dir/request.json`.
pub fn load(dir: &Path) -> Result<McpRequest, String> {
    let path = dir.join("request.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not an MCP request: {e}", path.display()))
}

/// Makes (or updates) the resource: `(expected, outputs)` as recorded (the next check reads it back).
pub async fn apply(env: &CallEnv, request: &McpRequest) -> Result<(Value, Value), String> {
    let made = call(env, &request.server, &request.create.tool, request.create.arguments.clone())
        .await
        .map_err(|e| e.to_string())?;
    if made.is_error {
        return Err(format!("{}.{}: {}", request.server, request.create.tool, made.text.trim()));
    }
    Ok((serde_json::json!({ "content": request.expected }), request.outputs.clone()))
}

/// Removes the resource with the server's delete tool (refused when the template names none).
pub async fn delete(env: &CallEnv, request: &McpRequest) -> Result<(), String> {
    let Some(delete) = &request.delete else {
        return Err(format!("the {} server's template names no delete tool: remove it there", request.server));
    };
    let done = call(env, &request.server, &delete.tool, delete.arguments.clone()).await.map_err(|e| e.to_string())?;
    if done.is_error { Err(done.text.trim().to_string()) } else { Ok(()) }
}

/// Reads the resource back and compares it with what is expected.
pub async fn check(env: &CallEnv, request: &McpRequest) -> Result<(Drift, Vec<String>, Value), String> {
    let read = call(env, &request.server, &request.read.tool, request.read.arguments.clone()).await;
    let at = format!("{}.{}", request.server, request.read.tool);
    match read {
        Ok(r) if r.is_error => Ok((Drift::Missing, vec![format!("{at}: {}", first_line(&r.text))], Value::Null)),
        Ok(r) if r.text == request.expected => {
            Ok((Drift::NoDrift, Vec::new(), serde_json::json!({ "content": r.text })))
        }
        Ok(r) => Ok((
            Drift::Drifted,
            vec![format!("{at}: the content differs from what merlya wrote")],
            serde_json::json!({ "content": r.text }),
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
