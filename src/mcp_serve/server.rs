//! `merlya mcp serve`: merlya's agent as an MCP server (the Speelka idea).
//!
//! Three tools: `ask` (the agent on a task, its answer; changes refused unless
//! the server was started with `--yes`), `list_hosts` and `run_readonly` (a
//! diagnostic command on targets, proven read-only by the classifier, run
//! through the audited fan-out). `ask` reports progress while it runs and stops
//! — with its remote commands — when the client cancels the request.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::agent::{Agent, AgentEvent, Limits, Observer};
use crate::approval::{ApprovalGate, Route};
use crate::config::Config;
use crate::config::mcp::McpServeConfig;
use crate::exec::Executor;
use crate::inventory::Host;
use crate::llm::{LlmClient, ModelRole};
use crate::pipeline::Env;
use crate::pipeline::fanout::audited_fan_out;
use crate::secrets::SecretSource;
use crate::store::Store;

use crate::mcp::client::McpClients;

/// Bytes of each host's output `run_readonly` returns (its end: where errors are).
const OUTPUT_PER_HOST: usize = 16 * 1024;

/// What the served tools run with.
#[derive(Clone)]
pub struct Served {
    /// The configuration in force (model, policy, `mcp.serve`).
    pub config: Arc<Config>,
    /// The database (inventory, audit log).
    pub store: Store,
    /// The session audit rows belong to.
    pub session_id: String,
    /// Runs commands on hosts.
    pub executor: Arc<Executor>,
    /// Approves the served agent's changes without asking (`--yes`); otherwise the MCP client's person
    /// is asked through elicitation, and a client that cannot be asked approves nothing.
    pub yes: bool,
    /// Where API keys and secret references are read.
    pub secrets: Arc<dyn SecretSource>,
    /// The external MCP servers the served agent may use (`mcp.serve.servers`).
    pub clients: Arc<McpClients>,
}

impl Served {
    fn serve(&self) -> &McpServeConfig {
        &self.config.mcp.serve
    }

    /// The tools, with precise schemas and read-only annotations where true.
    pub fn tools(&self) -> Vec<Tool> {
        let object = |value: Value| Arc::new(value.as_object().cloned().unwrap_or_default());
        vec![
            Tool::new(
                self.serve().tool_name.clone(),
                self.serve().tool_description.clone(),
                object(json!({
                    "type": "object",
                    "properties": {"task": {"type": "string", "description": "what to investigate or do, in plain words"}},
                    "required": ["task"],
                    "additionalProperties": false
                })),
            )
            .with_annotations(ToolAnnotations::new().read_only(false).destructive(true).open_world(true)),
            Tool::new(
                "list_hosts",
                "The hosts in merlya's inventory (name, address, port, user, tags), optionally only those with a tag.",
                object(json!({
                    "type": "object",
                    "properties": {"tag": {"type": "string", "description": "only hosts with this tag"}},
                    "additionalProperties": false
                })),
            )
            .with_annotations(ToolAnnotations::new().read_only(true).destructive(false).idempotent(true)),
            Tool::new(
                "run_readonly",
                "Run a diagnostic shell command on target hosts; refused unless merlya's classifier proves it read-only.",
                object(json!({
                    "type": "object",
                    "properties": {
                        "targets": {"type": "string", "description": "host names, @tags, globs or a comma list"},
                        "command": {"type": "string", "description": "the read-only command"}
                    },
                    "required": ["targets", "command"],
                    "additionalProperties": false
                })),
            )
            .with_annotations(ToolAnnotations::new().read_only(true).destructive(false).open_world(true)),
        ]
    }

    async fn list_hosts(&self, args: &Value) -> Result<CallToolResult, String> {
        let tag = args.get("tag").and_then(Value::as_str);
        let hosts = self.store.list_hosts().await.map_err(|e| e.to_string())?;
        let rows: Vec<Value> = hosts
            .iter()
            .filter(|h| tag.is_none_or(|t| h.tags.iter().any(|x| x == t)))
            .map(|h| json!({"name": h.name, "address": h.hostname, "port": h.port, "user": h.username, "tags": h.tags}))
            .collect();
        let text = serde_json::to_string_pretty(&rows).unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }

    async fn run_readonly(
        &self,
        args: &Value,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<CallToolResult, String> {
        let (Some(targets), Some(command)) =
            (args.get("targets").and_then(Value::as_str), args.get("command").and_then(Value::as_str))
        else {
            return Err("run_readonly needs `targets` and `command` strings".into());
        };
        // Only the rows the targets can select (jump hosts are resolved by the served executor).
        let inventory = self.store.hosts_in_scope(targets).await.map_err(|e| e.to_string())?;
        // An MCP client is an agent: localhost only when the policy opens it to agents.
        let localhost = self.config.policy.agent_localhost;
        let hosts: Vec<Host> =
            crate::inventory::resolve_inventory_targets(targets, &inventory, localhost).map_err(|e| e.to_string())?;
        let (tx, mut rx) = crate::exec::event_channel();
        let env = Env {
            store: self.store.clone(),
            executor: self.executor.clone(),
            // Read-only: cleared by the classifier, never asked.
            gate: ApprovalGate::with_policy(Arc::new(crate::approval::DenyAll), self.store.clone(), &self.config),
            session_id: self.session_id.clone(),
            requested_by: "mcp client".into(),
            retention_days: self.config.policy.raw_log_retention_days,
            parallel: self.config.policy.max_parallel.max(1),
            timeout: self.config.command_timeout(),
            cancel,
            events: tx,
            at_approval: crate::pipeline::AtApproval::NobodyToAsk,
            ask_before_dry_run: true,
            deferred: crate::pipeline::Deferred::default(),
        };
        // One routing decision: only a proven read runs here, as merlya's rendering of it.
        let clearance = match env.gate.route(command) {
            Route::Read(clearance) => clearance,
            Route::Ask { analysis, proven } => {
                let why = match (proven, env.gate.blocked_by(command)) {
                    (_, Some(prefix)) => format!("policy.blocked_commands ({prefix})"),
                    (Some(_), None) => "policy.confirm_all asks a person for every command".into(),
                    (None, None) => analysis.reasons.join("; "),
                };
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "REFUSED by merlya's safety policy, not executed: {why}"
                ))]));
            }
        };
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let results = audited_fan_out(&env, &hosts, clearance, None).await.map_err(|e| e.to_string())?;
        drop(env);
        let _ = drain.await;
        // Each host's output under its header, its last 16 KiB, secrets masked and made visible:
        // what the caller asked for, not only how many hosts answered.
        let output = crate::pipeline::fanout::combined_output(&results, OUTPUT_PER_HOST);
        let output = crate::redact::redact_command(&crate::term_safe::visible(&output));
        let text = format!("{}\n\n{output}", crate::pipeline::fanout::describe_results(&results));
        let failed = results.iter().any(|r| !r.success());
        let content = vec![ContentBlock::text(text)];
        Ok(if failed { CallToolResult::error(content) } else { CallToolResult::success(content) })
    }

    async fn ask(&self, args: &Value, context: &RequestContext<RoleServer>) -> Result<CallToolResult, String> {
        let Some(task) = args.get("task").and_then(Value::as_str) else {
            return Err("ask needs a `task` string".into());
        };
        let mut model = self.config.model.clone();
        if let Some(chosen) = &self.serve().model {
            model.brain = Some(chosen.clone());
        }
        if model.brain.is_none() {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "merlya has no model configured: set model.brain (or mcp.serve.model) in its config.yaml",
            )]));
        }
        let llm = Arc::new(LlmClient::from_config(&model, self.secrets.as_ref()).map_err(|e| e.to_string())?);
        let inventory = self.store.list_hosts().await.map_err(|e| e.to_string())?;
        let progress = progress_reporter(context);
        let limits =
            Limits { max_tool_calls: self.serve().max_tool_calls as usize, ..Limits::from_policy(&self.config.policy) };
        let approver = Arc::new(super::elicit::ElicitingApprover::new(context.peer.clone(), self.yes));
        let gate = ApprovalGate::with_policy(approver, self.store.clone(), &self.config);
        let mut agent = Agent::new(
            llm,
            self.executor.clone(),
            gate,
            self.store.clone(),
            self.session_id.clone(),
            self.config.policy.raw_log_retention_days,
            inventory,
            Arc::new(crate::prompt::NoPrompter),
            limits,
            ModelRole::Brain,
            self.config.command_timeout(),
            progress,
        )
        .with_cancel(context.ct.clone());
        agent.main_prompt = self.serve().system_prompt.clone();
        agent.allowed_tools = (!self.serve().tools.is_empty()).then(|| self.serve().tools.clone());
        if !self.serve().servers.is_empty() {
            agent = agent.with_mcp(self.clients.clone());
        }
        let deadline = std::time::Duration::from_secs(self.serve().timeout.max(1));
        let report = match tokio::time::timeout(deadline, agent.run_task(task)).await {
            Ok(report) => report,
            Err(_) => {
                agent.cancel.cancel();
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "stopped: the task took longer than {} s",
                    deadline.as_secs()
                ))]));
            }
        };
        Ok(match (report.answer, report.error) {
            (Some(answer), _) => CallToolResult::success(vec![ContentBlock::text(answer)]),
            (None, error) => CallToolResult::error(vec![ContentBlock::text(error.unwrap_or_default())]),
        })
    }
}

/// Sends `notifications/progress` for each tool call and command of the agent, when the client gave a
/// progress token.
fn progress_reporter(context: &RequestContext<RoleServer>) -> Observer {
    let token = context.meta.get_progress_token();
    let peer = context.peer.clone();
    let step = Arc::new(std::sync::atomic::AtomicU32::new(0));
    Arc::new(move |event: AgentEvent| {
        let Some(token) = token.clone() else { return };
        let message = match event {
            AgentEvent::Tool { agent, name, arguments } => format!("{agent}: {name} {arguments}"),
            AgentEvent::Command(c) => format!("{} on {}: {}", c.specialist, c.host, c.command),
            _ => return,
        };
        let n = step.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let mut param = ProgressNotificationParam::new(token, f64::from(n));
        param.message = Some(message);
        let peer = peer.clone();
        tokio::spawn(async move {
            let _ = peer.notify_progress(param).await;
        });
    })
}

impl ServerHandler for Served {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("merlya", env!("CARGO_PKG_VERSION")))
            .with_instructions("merlya: an operations agent for a fleet of Linux hosts. Use list_hosts and run_readonly to look, and the agent tool for a task.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let outcome = match request.name.as_ref() {
            "list_hosts" => self.list_hosts(&args).await,
            "run_readonly" => self.run_readonly(&args, context.ct.clone()).await,
            name if name == self.serve().tool_name => self.ask(&args, &context).await,
            other => return Err(ErrorData::invalid_params(format!("no tool named {other}"), None)),
        };
        match outcome {
            Ok(result) => Ok(result.into()),
            Err(message) => Err(ErrorData::invalid_params(message, None)),
        }
    }
}
