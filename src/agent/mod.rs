//! The agent: a main agent that plans and delegates to four specialists
//! (diagnostic, security, execution, query), each a ReAct loop with its own
//! prompt and tools. Every rule is enforced by the tools in code: read-only
//! specialists cannot run a mutating command however they are prompted, and
//! no change runs without an approval decision.
//!
//! Limits: 50 tool calls per run, 3 malformed calls per tool (each fed back
//! to the model as a tool error), loop detection (warn, then stop).

pub mod context;
pub mod conversation;
pub mod hosts;
pub mod loop_detect;
mod mcp_tools;
mod pipeline_tools;
pub mod prompts;
pub mod raw_logs;
pub mod specialists;
pub mod tools;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::approval::ApprovalGate;
use crate::exec::Executor;
use crate::inventory::Host;
use crate::llm::{LlmClient, Message, ModelRole, ToolCall, ToolSpec, Usage};
use crate::prompt::Prompter;
use crate::store::Store;
use loop_detect::{LoopDetector, LoopVerdict};

/// Something the agent did, for live display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEvent {
    /// Streamed text from `agent`.
    Delta { agent: String, text: String },
    /// A tool was called.
    Tool { agent: String, name: String, arguments: String },
    /// A command ran (or was refused or denied) on a host.
    Command(CommandRecord),
    /// Something the operator should know (loop warning, limit).
    Notice(String),
    /// Live output of a command the agent runs.
    Exec(crate::exec::ExecEvent),
    /// A change pipeline's record each time it is stored.
    Pipeline(Box<crate::pipeline::PipelineRun>),
}

/// One command the agent ran or tried, for `--format json` and the console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandRecord {
    pub specialist: String,
    pub host: String,
    pub command: String,
    pub exit_code: Option<i32>,
    /// Why it did not run, when it did not.
    pub refused: Option<String>,
    /// Who approved it ("not required" for read-only).
    pub approved_by: Option<String>,
}

/// Receives events.
pub type Observer = Arc<dyn Fn(AgentEvent) + Send + Sync>;

/// Where the live output of the agent's commands goes when the reader can slow them down: the future
/// completes once there is room (the console's output budget), so a chatty host waits instead of
/// filling memory. Without one, output goes to the [`Observer`].
pub type ExecSink = Arc<dyn Fn(crate::exec::ExecEvent) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// Why a run ended without an answer.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum AgentError {
    #[error("the model could not be used: {0}")]
    Llm(String),
    #[error("stopped: the run reached its limit of {0} tool calls")]
    ToolLimit(usize),
    #[error("stopped: the model kept looping ({0}) after being told to change approach")]
    Loop(String),
    #[error("stopped: the model sent {1} malformed calls to `{0}`")]
    Malformed(String, u32),
    #[error("stopped: no answer after {0} turns")]
    Turns(usize),
    #[error("cancelled by the operator")]
    Cancelled,
}

/// Limits of one run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_tool_calls: usize,
    pub max_malformed_per_tool: u32,
    pub max_turns: usize,
    pub max_parallel_subagents: usize,
    /// Whether specialists may run commands on `localhost` (the operator's own machine).
    pub allow_localhost: bool,
    /// How long a host's detected pipeline tools are trusted.
    pub capability_ttl: std::time::Duration,
}

impl Limits {
    /// The limits the policy sets (the rest at their defaults).
    pub fn from_policy(policy: &crate::config::PolicyConfig) -> Self {
        Self {
            max_parallel_subagents: policy.max_parallel_subagents,
            allow_localhost: policy.agent_localhost,
            capability_ttl: std::time::Duration::from_secs(u64::from(policy.capability_ttl_hours) * 3600),
            ..Self::default()
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tool_calls: 50,
            max_malformed_per_tool: 3,
            max_turns: 60,
            max_parallel_subagents: 5,
            allow_localhost: false,
            capability_ttl: std::time::Duration::from_secs(24 * 3600),
        }
    }
}

/// Everything a run uses; shared by the main agent and specialists.
pub struct Agent {
    pub llm: Arc<LlmClient>,
    pub executor: Arc<Executor>,
    pub gate: ApprovalGate,
    pub store: Store,
    pub session_id: String,
    pub retention_days: u32,
    /// The hosts it may target: in the console, the executor's copy, shared (a fleet is held once).
    pub inventory: Arc<Vec<Host>>,
    pub prompter: Arc<dyn Prompter>,
    pub limits: Limits,
    pub role: ModelRole,
    pub command_timeout: std::time::Duration,
    pub observer: Observer,
    /// Live command output with backpressure (the console), else the observer gets it.
    pub exec_sink: Option<ExecSink>,
    /// Earlier turns of the conversation, given to the main agent before the task.
    pub history: Vec<Message>,
    /// Fires when the operator cancels the turn: running commands are stopped
    /// on their hosts and no further model call or tool call starts.
    pub cancel: tokio_util::sync::CancellationToken,
    /// External MCP servers whose tools are offered (none when `None`).
    pub mcp: Option<Arc<crate::mcp::client::McpClients>>,
    /// Replaces the main agent's system prompt (`mcp.serve.system_prompt`).
    pub main_prompt: Option<String>,
    /// merlya's own tools this agent may use (`mcp.serve.tools`; `None`: all). External MCP tools are
    /// governed by which servers it is given.
    pub allowed_tools: Option<Vec<String>>,
    state: Mutex<RunState>,
}

#[derive(Debug, Default)]
struct RunState {
    tool_calls: usize,
    commands: Vec<CommandRecord>,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub answer: Option<String>,
    pub error: Option<String>,
    pub commands: Vec<CommandRecord>,
    pub usage: Usage,
    pub cost_usd: f64,
}

/// A tool's implementation for one ReAct loop.
#[async_trait::async_trait]
pub trait ToolBox: Send + Sync {
    /// The tools offered.
    fn specs(&self) -> Vec<ToolSpec>;
    /// Runs a call whose arguments parsed as JSON; `Err` is a malformed call (wrong fields).
    async fn call(&self, agent: &Agent, name: &str, args: serde_json::Value) -> Result<String, String>;
}

impl Agent {
    /// An agent over the given services.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        llm: Arc<LlmClient>,
        executor: Arc<Executor>,
        gate: ApprovalGate,
        store: Store,
        session_id: String,
        retention_days: u32,
        inventory: impl Into<Arc<Vec<Host>>>,
        prompter: Arc<dyn Prompter>,
        limits: Limits,
        role: ModelRole,
        command_timeout: std::time::Duration,
        observer: Observer,
    ) -> Self {
        // Raw logs past their retention go before new ones are written (a folder scan).
        raw_logs::expire(&raw_logs::dir(&store), retention_days);
        Self {
            llm,
            executor,
            gate,
            store,
            session_id,
            retention_days,
            inventory: inventory.into(),
            prompter,
            limits,
            role,
            command_timeout,
            observer,
            exec_sink: None,
            history: Vec::new(),
            cancel: tokio_util::sync::CancellationToken::new(),
            mcp: None,
            main_prompt: None,
            allowed_tools: None,
            state: Mutex::new(RunState::default()),
        }
    }

    /// The same agent continuing a conversation: `(operator, agent)` pairs, oldest first.
    pub fn with_history(mut self, turns: &[(String, String)]) -> Self {
        self.history = turns
            .iter()
            .flat_map(|(question, answer)| {
                [Message::user(question.clone()), Message::assistant(answer.clone(), Vec::new())]
            })
            .collect();
        self
    }

    /// The same agent, offered the tools of these MCP servers.
    pub fn with_mcp(mut self, clients: Arc<crate::mcp::client::McpClients>) -> Self {
        self.mcp = Some(clients);
        self
    }

    /// The same agent, stopped by `cancel`.
    pub fn with_cancel(mut self, cancel: tokio_util::sync::CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Runs one task to an answer or an error.
    pub async fn run_task(&self, task: &str) -> RunReport {
        let mut user = task.to_string();
        if let Some(context) = hosts::context_for(self, task).await {
            user = format!("{context}\n\n{task}");
        }
        let main = tools::MainTools { mcp: mcp_tools::offer(self, true).await };
        let system = self.main_prompt.clone().unwrap_or_else(|| prompts::MAIN.to_string());
        let outcome = self.react("main", system, user, &main).await;
        let spend = self.llm.spend();
        let mut usage = Usage::default();
        let mut cost = 0.0;
        for s in spend.values() {
            usage.add(s.usage);
            cost += s.cost_usd;
        }
        let commands = self.state.lock().map(|s| s.commands.clone()).unwrap_or_default();
        match outcome {
            Ok(answer) => RunReport { answer: Some(answer), error: None, commands, usage, cost_usd: cost },
            Err(e) => RunReport { answer: None, error: Some(e.to_string()), commands, usage, cost_usd: cost },
        }
    }

    /// What a change pipeline started by this agent runs with: its store, executor, gate, session and
    /// cancel, one host at a time, each stage bounded by the command timeout.
    pub fn pipeline_env(&self, requested_by: &str, events: crate::exec::EventSender) -> crate::pipeline::Env {
        crate::pipeline::Env {
            store: self.store.clone(),
            executor: self.executor.clone(),
            gate: self.gate.clone(),
            session_id: self.session_id.clone(),
            requested_by: requested_by.to_string(),
            retention_days: self.retention_days,
            parallel: 1,
            timeout: self.command_timeout,
            cancel: self.cancel.clone(),
            events,
            at_approval: crate::pipeline::AtApproval::Ask,
            ask_before_dry_run: false,
            deferred: crate::pipeline::Deferred::default(),
        }
    }

    /// Sends live command output to `sink` (with backpressure) instead of the observer.
    pub fn with_exec_sink(mut self, sink: ExecSink) -> Self {
        self.exec_sink = Some(sink);
        self
    }

    /// A channel for the live output of one command or pipeline, and the task forwarding it to the
    /// exec sink (or the observer); the task ends when every sender is dropped.
    pub fn exec_forwarder(&self) -> (crate::exec::EventSender, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = crate::exec::event_channel();
        let (observer, sink) = (self.observer.clone(), self.exec_sink.clone());
        let task = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                match &sink {
                    Some(sink) => sink(event).await,
                    None => observer(AgentEvent::Exec(event)),
                }
            }
        });
        (tx, task)
    }

    /// Records a command for the report and the observer.
    pub fn record_command(&self, record: CommandRecord) {
        (self.observer)(AgentEvent::Command(record.clone()));
        if let Ok(mut s) = self.state.lock() {
            s.commands.push(record);
        }
    }

    fn count_tool_call(&self) -> Result<(), AgentError> {
        let mut s = self.state.lock().map_err(|_| AgentError::ToolLimit(self.limits.max_tool_calls))?;
        s.tool_calls += 1;
        if s.tool_calls > self.limits.max_tool_calls {
            return Err(AgentError::ToolLimit(self.limits.max_tool_calls));
        }
        Ok(())
    }

    /// Whether a tool may be offered: external MCP tools (`server__tool`) always (their servers were
    /// chosen), merlya's own when no allow-list is set or it names them.
    fn may_use(&self, tool: &str) -> bool {
        let external = self.mcp.as_ref().is_some_and(|clients| {
            crate::mcp::split_qualified(tool).is_some_and(|(server, _)| clients.configured().contains_key(server))
        });
        external || self.allowed_tools.as_ref().is_none_or(|allowed| allowed.iter().any(|a| a == tool))
    }

    /// One ReAct loop: ask the model, run its tool calls, feed results back, until it answers.
    pub async fn react(
        &self,
        agent: &str,
        system: String,
        user: String,
        toolbox: &dyn ToolBox,
    ) -> Result<String, AgentError> {
        let specs: Vec<ToolSpec> = toolbox.specs().into_iter().filter(|s| self.may_use(&s.name)).collect();
        let names: Vec<String> = specs.iter().map(|t| t.name.clone()).collect();
        let mut messages = vec![Message::system(system)];
        if agent == "main" {
            messages.extend(self.history.iter().cloned());
        }
        messages.push(Message::user(user));
        let mut loops = LoopDetector::default();
        let mut malformed: HashMap<String, u32> = HashMap::new();
        let observer = self.observer.clone();
        let agent_name = agent.to_string();
        let sink = move |text: &str| observer(AgentEvent::Delta { agent: agent_name.clone(), text: text.to_string() });
        let observer = self.observer.clone();
        let notice = move |text: String| observer(AgentEvent::Notice(text));
        for _turn in 0..self.limits.max_turns {
            let answer = tokio::select! {
                answer = self.llm.chat(self.role, messages.clone(), specs.clone(), &sink, &notice) => answer,
                () = self.cancel.cancelled() => return Err(AgentError::Cancelled),
            };
            let answer = answer.map_err(|e| AgentError::Llm(e.to_string()))?;
            messages.push(Message::assistant(answer.content.clone(), answer.tool_calls.clone()));
            if answer.tool_calls.is_empty() {
                return Ok(answer.content);
            }
            let mut warning = None;
            for call in &answer.tool_calls {
                if self.cancel.is_cancelled() {
                    return Err(AgentError::Cancelled);
                }
                self.count_tool_call()?;
                (self.observer)(AgentEvent::Tool {
                    agent: agent.into(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                match loops.observe(call) {
                    LoopVerdict::Fine => {}
                    LoopVerdict::Warn(kind) => {
                        let text = format!(
                            "merlya detected a loop: {}. Change your approach (another command, another host, or \
                             answer with what you know).",
                            kind.describe()
                        );
                        (self.observer)(AgentEvent::Notice(text.clone()));
                        warning = Some(text);
                    }
                    LoopVerdict::Stop(kind) => return Err(AgentError::Loop(kind.describe().to_string())),
                }
                let result = match self.dispatch(agent, call, &names, toolbox).await {
                    Ok(text) => text,
                    Err(problem) => {
                        let count = malformed.entry(call.name.clone()).or_insert(0);
                        *count += 1;
                        if *count > self.limits.max_malformed_per_tool {
                            return Err(AgentError::Malformed(call.name.clone(), *count));
                        }
                        format!("ERROR: {problem}")
                    }
                };
                messages.push(Message::tool(&call.id, result));
            }
            if let Some(text) = warning {
                messages.push(Message::user(text));
            }
        }
        Err(AgentError::Turns(self.limits.max_turns))
    }

    /// Validates a call (known tool, JSON object arguments) and runs it.
    async fn dispatch(
        &self,
        agent: &str,
        call: &ToolCall,
        names: &[String],
        toolbox: &dyn ToolBox,
    ) -> Result<String, String> {
        if !names.contains(&call.name) {
            return Err(format!("unknown tool `{}`; the tools are: {}", call.name, names.join(", ")));
        }
        let args: serde_json::Value = if call.arguments.trim().is_empty() {
            serde_json::json!({})
        } else {
            serde_json::from_str(&call.arguments)
                .map_err(|e| format!("the arguments of `{}` are not valid JSON ({e})", call.name))?
        };
        if !args.is_object() {
            return Err(format!("the arguments of `{}` must be a JSON object", call.name));
        }
        tracing::debug!(agent, tool = %call.name, "tool call");
        toolbox.call(self, &call.name, args).await
    }
}
