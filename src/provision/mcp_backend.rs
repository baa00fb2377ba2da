//! The MCP backend of the provisioner (issue 26): a template renders `request.json` — the server,
//! the tool that makes the resource and its arguments, the read-only tool that reads it back, what
//! it should hold — and [`McpChange`] makes the change through the pipeline runner (a run record,
//! the approval with the diff, a read back as its post-check), its calls through the one gated,
//! audited MCP path (`mcp::call`); the read is a read. Drift is the read-back compared
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

pub use crate::pipeline::McpSpec;

/// Who the calls of a change are made as, and to which servers.
#[derive(Clone)]
pub struct McpCaller {
    /// The servers.
    pub clients: std::sync::Arc<crate::mcp::client::McpClients>,
    /// The session the audit rows belong to.
    pub session_id: String,
    /// Who asked.
    pub requested_by: String,
}

/// A change of an MCP-backend resource, driven by the pipeline runner like any change: its plan
/// reads the request and the server's tools, its dry run reads the object back and shows the diff
/// to what will be there, its approval is the runner's, its apply the create (or delete) call made
/// through the gated, audited MCP path cleared by that approval alone, its post-check a read back.
pub struct McpChange {
    spec: McpSpec,
    caller: McpCaller,
    request: Option<McpRequest>,
    tool: Option<crate::mcp::ToolInfo>,
    diff: String,
}

/// Approves exactly the command lines an approval showed, as who approved it: the MCP path's own
/// gate inside an approved change, so the call is still checked and audited there.
struct Cleared {
    covers: Vec<String>,
    who: String,
}

#[async_trait::async_trait]
impl crate::approval::Approver for Cleared {
    async fn decide(&self, request: &crate::approval::ApprovalRequest) -> crate::approval::Decision {
        if self.covers.contains(&request.command) {
            crate::approval::Decision::Once
        } else {
            crate::approval::Decision::Deny
        }
    }
    fn who(&self) -> String {
        self.who.clone()
    }
    fn asks_a_person(&self) -> bool {
        false
    }
}

impl McpChange {
    /// The change `spec` asks for, its calls made as `caller`.
    pub fn new(spec: McpSpec, caller: McpCaller) -> Self {
        Self { spec, caller, request: None, tool: None, diff: String::new() }
    }

    /// The calls of this change through `gate` (`read_only`: reads only).
    fn calls(&self, env: &crate::pipeline::Env, gate: crate::approval::ApprovalGate, read_only: bool) -> CallEnv {
        CallEnv {
            clients: self.caller.clients.clone(),
            gate,
            store: env.store.clone(),
            session_id: self.caller.session_id.clone(),
            requested_by: self.caller.requested_by.clone(),
            read_only,
            cancel: env.cancel.clone(),
        }
    }

    /// The read-back calls (a gate that approves nothing: only read-only tools run).
    fn reads(&self, env: &crate::pipeline::Env) -> CallEnv {
        let deny = std::sync::Arc::new(crate::approval::DenyAll);
        self.calls(env, crate::approval::ApprovalGate::new(deny, env.store.clone(), false), true)
    }

    /// The call that makes the change: the create tool, or the delete tool.
    fn change_call(&self) -> Option<&ToolRequest> {
        let request = self.request.as_ref()?;
        if self.spec.delete { request.delete.as_ref() } else { Some(&request.create) }
    }

    fn target(&self) -> Option<String> {
        if self.spec.delete { None } else { self.request.as_ref().map(|r| r.expected.clone()) }
    }
}

#[async_trait::async_trait]
impl crate::pipeline::Change for McpChange {
    fn kind(&self) -> crate::pipeline::Kind {
        crate::pipeline::Kind::Mcp
    }

    fn targets(&self) -> String {
        match &self.request {
            Some(r) => format!("mcp:{}", r.server),
            None => self.spec.dir.display().to_string(),
        }
    }

    fn spec(&self) -> crate::pipeline::Spec {
        crate::pipeline::Spec::Mcp(self.spec.clone())
    }

    async fn plan(
        &mut self,
        _env: &crate::pipeline::Env,
        _run: &crate::pipeline::PipelineRun,
    ) -> Result<crate::pipeline::StageOutcome, crate::pipeline::PipelineError> {
        use crate::pipeline::PipelineError::Invalid;
        let request = load(&self.spec.dir).map_err(Invalid)?;
        self.request = Some(request.clone());
        let call = self.change_call().cloned().ok_or_else(|| {
            Invalid(format!("the {} server's template names no delete tool: remove it there", request.server))
        })?;
        let tools = self.caller.clients.tools(&request.server).await.map_err(|e| Invalid(e.to_string()))?;
        let tool = tools
            .iter()
            .find(|t| t.name == call.tool)
            .cloned()
            .ok_or_else(|| Invalid(format!("the MCP server {} has no tool {}", request.server, call.tool)))?;
        self.tool = Some(tool.clone());
        Ok(crate::pipeline::StageOutcome::ok(format!("{} through MCP server {}", tool.qualified(), request.server), ""))
    }

    async fn dry_run(
        &mut self,
        env: &crate::pipeline::Env,
        _run: &crate::pipeline::PipelineRun,
    ) -> Option<crate::pipeline::DryRun> {
        use crate::pipeline::{DryRun, StageOutcome};
        let request = self.request.clone()?;
        let now = match check(&self.reads(env), &request).await {
            Ok((Drift::Missing, _, _)) => None,
            Ok((_, _, actual)) => actual["content"].as_str().map(str::to_string),
            Err(e) => {
                return Some(DryRun {
                    outcome: StageOutcome::failed(format!("cannot read it back: {e}"), ""),
                    diff: String::new(),
                    changes: false,
                });
            }
        };
        let target = self.target();
        if now == target {
            return Some(DryRun {
                outcome: StageOutcome::ok("no changes: it already holds what is expected", ""),
                diff: String::new(),
                changes: false,
            });
        }
        let (before, after) = (now.unwrap_or_default(), target.unwrap_or_default());
        let name = format!("{}.{}", request.server, request.read.tool);
        let unified = similar::TextDiff::from_lines(&before, &after).unified_diff().to_string();
        self.diff = format!("--- {name} (now)\n+++ {name} (after)\n{unified}");
        let verb = if self.spec.delete { "removes it" } else { "writes what is expected" };
        Some(DryRun { outcome: StageOutcome::ok(verb, ""), diff: self.diff.clone(), changes: true })
    }

    fn approval(&self, _run: &crate::pipeline::PipelineRun) -> crate::approval::ApprovalRequest {
        let (Some(tool), Some(call), Some(request)) = (&self.tool, self.change_call(), &self.request) else {
            let analysis = crate::safety::Analysis {
                class: crate::safety::Class::Mutating,
                reasons: vec!["the change was not planned".into()],
                commands: Vec::new(),
                rule_keys: None,
            };
            return crate::approval::ApprovalRequest::new("not planned".into(), "", Vec::new(), &analysis, Vec::new());
        };
        let mut approval = crate::mcp::call::approval(tool, &call.arguments);
        approval.summary = format!(
            "{} {} through {}",
            if self.spec.delete { "remove" } else { "make" },
            self.spec.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            tool.qualified()
        );
        approval.diff = Some(self.diff.clone());
        approval.post_check = Some(format!("{}.{} (read back)", request.server, request.read.tool));
        approval.reasons.push("no rollback: the MCP backend keeps no earlier content to put back".into());
        approval
    }

    async fn audit_refused(
        &self,
        env: &crate::pipeline::Env,
        outcome: crate::store::audit::AuditOutcome,
        decided_by: &str,
        why: &str,
    ) {
        let Some(request) = &self.request else { return };
        let audit = crate::store::audit::AuditRequest {
            session_id: self.caller.session_id.clone(),
            requested_by: self.caller.requested_by.clone(),
            host: format!("mcp:{}", request.server),
            address: String::new(),
            port: None,
            login_user: crate::ssh::target::local_user(),
            command: self.approval_command(),
            approved_by: decided_by.to_string(),
            approval_ref: None,
        };
        if let Err(e) = env.store.audit_refused(&audit, outcome, why).await {
            tracing::warn!(error = %e, "cannot record a refused MCP change");
        }
    }

    async fn apply(
        &mut self,
        env: &crate::pipeline::Env,
        _run: &crate::pipeline::PipelineRun,
        decision: &crate::pipeline::Approved,
    ) -> crate::pipeline::StageOutcome {
        use crate::pipeline::StageOutcome;
        let (Some(request), Some(call)) = (self.request.clone(), self.change_call().cloned()) else {
            return StageOutcome::failed("the change was not planned", "");
        };
        let Some(who) = decision.outcome().approved_by() else {
            return StageOutcome::failed("not approved", "");
        };
        // The MCP path's own gate clears exactly the call the approval showed.
        let cleared = Cleared { covers: vec![self.approval_command()], who };
        let gate = crate::approval::ApprovalGate::new(std::sync::Arc::new(cleared), env.store.clone(), false);
        match crate::mcp::call::call(&self.calls(env, gate, false), &request.server, &call.tool, call.arguments).await {
            Ok(r) if r.is_error => StageOutcome::failed(
                format!("{}.{} failed", request.server, call.tool),
                crate::term_safe::visible(&r.text).into_owned(),
            ),
            Ok(_) => StageOutcome::ok(format!("{}.{} done", request.server, call.tool), ""),
            Err(e) => StageOutcome::failed(e.to_string(), ""),
        }
    }

    async fn post_check(
        &mut self,
        env: &crate::pipeline::Env,
        _run: &crate::pipeline::PipelineRun,
        _decision: &crate::pipeline::Approved,
    ) -> Option<crate::pipeline::StageOutcome> {
        use crate::pipeline::StageOutcome;
        let request = self.request.clone()?;
        Some(match (check(&self.reads(env), &request).await, self.spec.delete) {
            (Ok((Drift::Missing, _, _)), true) => StageOutcome::ok("it is gone", ""),
            (Ok((Drift::NoDrift, _, _)), false) => StageOutcome::ok("read back: it holds what is expected", ""),
            (Ok((drift, detail, _)), _) => {
                StageOutcome::failed(format!("read back: {}", drift.as_str()), detail.join("\n"))
            }
            (Err(e), _) => StageOutcome::failed(format!("cannot read it back: {e}"), ""),
        })
    }

    async fn rollback(
        &mut self,
        _env: &crate::pipeline::Env,
        _run: &crate::pipeline::PipelineRun,
        _decision: &crate::pipeline::Approved,
    ) -> Option<crate::pipeline::StageOutcome> {
        None
    }

    fn rollback_approval(&self, _run: &crate::pipeline::PipelineRun) -> Option<crate::approval::ApprovalRequest> {
        None
    }
}

impl McpChange {
    /// The command line the approval shows for the change call.
    fn approval_command(&self) -> String {
        match (&self.tool, self.change_call()) {
            (Some(tool), Some(call)) => crate::mcp::call::describe(tool, &call.arguments),
            _ => String::new(),
        }
    }
}
