//! The one path by which merlya calls an external MCP tool (console, CLI and
//! agent alike): the same approval gate and write-ahead audit as commands.
//!
//! A tool the server annotates read-only (and not destructive) is a read; any
//! other is a change: the gate asks (modal, prompt, `--yes`) with the tool and
//! its arguments shown, a refusal is audited, an approved call is audited
//! before it starts and finished with its result status.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::client::McpClients;
use super::{CallResult, McpError, ToolInfo};
use crate::approval::{ApprovalGate, ApprovalRequest};
use crate::redact::redact_command;
use crate::safety::{Analysis, Class};
use crate::store::Store;
use crate::store::audit::{AuditOutcome, AuditRequest};

/// Who calls, and what decides and records the call.
#[derive(Clone)]
pub struct CallEnv {
    /// The servers.
    pub clients: Arc<McpClients>,
    /// The one approval gate.
    pub gate: ApprovalGate,
    /// Where the audit log is.
    pub store: Store,
    /// The session audit rows belong to.
    pub session_id: String,
    /// Who asked (`alice`, `agent@diagnostic`).
    pub requested_by: String,
    /// Only tools annotated read-only (the diagnostic specialist).
    pub read_only: bool,
    /// Cancels the call (the server is told).
    pub cancel: CancellationToken,
}

impl CallEnv {
    /// The calls of a command's own context (its store and session) through `gate`.
    pub fn of_context(
        ctx: &crate::context::Context,
        clients: Arc<McpClients>,
        gate: ApprovalGate,
        requested_by: String,
        read_only: bool,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            clients,
            gate,
            store: ctx.store.clone(),
            session_id: ctx.session_id.clone(),
            requested_by,
            read_only,
            cancel,
        }
    }
}

/// How a call is shown in the approval and the audit log: `server.tool {arguments}`, secrets masked
/// (values under secret-like keys, and secret shapes inside strings).
pub fn describe(tool: &ToolInfo, arguments: &serde_json::Map<String, serde_json::Value>) -> String {
    let args = super::mask_json(&serde_json::Value::Object(arguments.clone()), &[], true).to_string();
    redact_command(&format!("{} {args}", tool.qualified()))
}

/// The approval a call of `tool` asks for.
pub fn approval(tool: &ToolInfo, arguments: &serde_json::Map<String, serde_json::Value>) -> ApprovalRequest {
    let command = describe(tool, arguments);
    let (class, reasons) = if tool.read_only {
        (Class::ReadOnly, vec![format!("{} is annotated read-only by its server", tool.qualified())])
    } else {
        (
            Class::Mutating,
            vec![
                format!("{} is not annotated read-only: it may change things", tool.qualified()),
                tool.description.clone(),
            ],
        )
    };
    let analysis = Analysis { class, reasons, commands: vec![command.clone()], rule_keys: None };
    let summary = format!("call MCP tool {}", tool.qualified());
    let mut request =
        ApprovalRequest::new(summary, &command, vec![format!("mcp:{}", tool.server)], &analysis, Vec::new());
    // An MCP tool call is a change of kind `mcp` (two-person approval can name it).
    request.kind = Some(crate::store::pipelines::Kind::Mcp);
    request
}

/// Calls `server.tool` with `arguments` through the gate and the audit log.
pub async fn call(
    env: &CallEnv,
    server: &str,
    tool: &str,
    arguments: serde_json::Map<String, serde_json::Value>,
) -> Result<CallResult, McpError> {
    let tools = env.clients.tools(server).await?;
    let info = tools
        .iter()
        .find(|t| t.name == tool)
        .ok_or_else(|| McpError::UnknownTool { server: server.into(), tool: tool.into() })?;
    let request = approval(info, &arguments);
    let audit = AuditRequest {
        session_id: env.session_id.clone(),
        requested_by: env.requested_by.clone(),
        host: format!("mcp:{server}"),
        address: address_of(env, server),
        port: None,
        login_user: crate::ssh::target::local_user(),
        command: request.command.clone(),
        approved_by: String::new(),
        approval_ref: None,
    };
    let refuse = |why: String| McpError::Refused { server: server.into(), tool: tool.into(), why };
    if env.read_only && !info.read_only {
        let why = format!("{} is not annotated read-only, and this caller may only read", info.qualified());
        record_refusal(env, &audit, AuditOutcome::Refused, &why).await;
        return Err(refuse(why));
    }
    let decision = tokio::select! {
        decision = env.gate.check(&request) => decision,
        () = env.cancel.cancelled() => return Err(McpError::Cancelled { server: server.into(), tool: tool.into() }),
    };
    let Some(approved_by) = decision.approved_by() else {
        let why = format!("denied by {}", decision.decided_by());
        record_refusal(env, &AuditRequest { approved_by: decision.decided_by(), ..audit }, AuditOutcome::Denied, &why)
            .await;
        return Err(refuse(why));
    };
    let ticket = env
        .store
        .audit_start(AuditRequest { approved_by: approved_by.clone(), ..audit })
        .await
        .map_err(|e| refuse(format!("the audit log cannot be written ({e})")))?;
    let result = env.clients.call_raw(server, tool, arguments, &env.cancel).await;
    let (outcome, error) = match &result {
        Ok(r) if !r.is_error => (AuditOutcome::Ok, None),
        Ok(r) => (AuditOutcome::Failed, Some(first_line(&r.text))),
        Err(McpError::Cancelled { .. }) => (AuditOutcome::Cancelled, Some("cancelled".to_string())),
        Err(McpError::TimedOut { secs, .. }) => (AuditOutcome::TimedOut, Some(format!("timed out after {secs} s"))),
        Err(e) => (AuditOutcome::Failed, Some(e.to_string())),
    };
    crate::metrics::mcp_call(server, outcome.as_str());
    if let Err(e) = ticket.finish(outcome, None, error).await {
        tracing::warn!(error = %e, "cannot finish an MCP audit entry");
    }
    result.map(|r| CallResult { approved_by, ..r })
}

async fn record_refusal(env: &CallEnv, audit: &AuditRequest, outcome: AuditOutcome, why: &str) {
    if let Err(e) = env.store.audit_refused(audit, outcome, why).await {
        tracing::warn!(error = %e, "cannot record a refused MCP call");
    }
}

/// The server as the audit log names it: its URL, or its program.
fn address_of(env: &CallEnv, server: &str) -> String {
    env.clients
        .configured()
        .get(server)
        .map(|s| s.url.clone().or_else(|| s.command.clone()).unwrap_or_default())
        .unwrap_or_default()
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().chars().take(200).collect()
}
