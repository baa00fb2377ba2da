//! Everything that can happen in the console, and everything it can ask the
//! runtime to do.

use crossterm::event::{KeyEvent, MouseEvent};
use tokio::sync::oneshot;

use crate::exec::{ExecEvent, HostResult};
use crate::inventory::Host;

/// What a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// Yes or no.
    Confirm,
    /// Trust a host key never seen: yes, no, or trust every host key that waits, each listed.
    HostKey,
    /// A hidden answer (passphrase, one-time code).
    Secret,
    /// Approve a change: once, always for its prefix on these hosts, or deny.
    Approval,
    /// A visible free-text answer (the agent's `ask_user`).
    Text,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptAnswer {
    /// Confirmed (approved once).
    Yes,
    /// Approved, and remember the prefix for these hosts.
    Always,
    /// Declined or cancelled.
    No,
    /// The typed secret.
    Secret(String),
}

/// A question from a worker; the answer goes back on `reply`.
#[derive(Debug)]
pub struct PromptRequest {
    /// Short heading, drawn in the console's language.
    pub title: crate::i18n::Text,
    /// The question.
    pub body: crate::i18n::Text,
    /// Confirm, secret or approval.
    pub kind: PromptKind,
    /// The change to approve (for `PromptKind::Approval`).
    pub approval: Option<crate::approval::ApprovalRequest>,
    /// Where the answer goes (taken when answered).
    pub reply: Option<oneshot::Sender<PromptAnswer>>,
}

/// Inputs to [`super::update::update`].
#[derive(Debug)]
pub enum Msg {
    /// A drift check ended: resources found drifted or missing, host findings, checks that failed.
    DriftChecked { resources: usize, findings: usize, failed: Vec<String> },
    /// `drift.interval_secs` passed: check again unless a check runs.
    DriftTick,
    /// A resource or a host's drift was changed from the pane (accepted, ignored, reconciled): reload it.
    DriftChanged,
    /// A key press.
    Key(KeyEvent),
    /// A mouse event.
    Mouse(MouseEvent),
    /// Bracketed paste.
    Paste(String),
    /// The terminal changed size.
    Resize(u16, u16),
    /// The inventory was (re)loaded (laid out for the console by the worker that read it).
    HostsLoaded(std::sync::Arc<super::fleet::Fleet>),
    /// Each host's last health readings (at start, and after a runbook read new ones).
    Health(Vec<crate::store::host_health::HealthReading>),
    /// A worker's answer to filter job `job`.
    Filtered { job: u64, shown: Box<super::fleet::Shown> },
    /// Live output of run `run`.
    Exec { run: u64, event: ExecEvent },
    /// Run `run` passed the approval gate and starts on its hosts.
    RunStarted { run: u64 },
    /// A host's command failed (with the time, for the inventory's last error).
    HostFailed { host: String, failure: crate::exec::HostFailure, error: String, at: String },
    /// SIGTERM, SIGHUP or SIGINT reached the console: quit as `q` would, without asking.
    Terminate,
    /// Run `run` finished on every host.
    RunDone { run: u64, results: Vec<HostResult> },
    /// Run `run` was not approved.
    RunDenied { run: u64, by: String },
    /// Time for the next round of watch `watch`.
    WatchTick { watch: u64 },
    /// Watch `watch` was refused: its command is not proven read-only (the reasons, for the person).
    WatchRefused { watch: u64, why: String },
    /// A worker needs a person.
    Prompt(PromptRequest),
    /// Something the agent did during the current turn.
    Agent(crate::agent::AgentEvent),
    /// The agent's turn ended: its answer or why it stopped, and what it cost.
    AgentDone { error: Option<String>, summary: String },
    /// A background failure to show.
    Error(String),
    /// A notice for the chat pane.
    Note(String),
    /// Fresh pipeline runs and metrics.
    Dashboard(Box<super::model::Dashboard>),
    /// A change pipeline's record, each time the runner stores it (the Pipeline pane follows it live).
    Pipeline(Box<crate::pipeline::PipelineRun>),
    /// A background event worth a toast.
    Toast { level: super::model::ToastLevel, text: String },
    /// Half a second passed (toasts fade).
    Tick,
    /// A reachability check ended.
    HostChecked { host: String, reachable: bool, at: String, error: Option<(crate::exec::HostFailure, String)> },
    /// A saved conversation to show (`/conv ID`).
    ConversationLoaded(Vec<super::model::ChatEntry>),
    /// A command line a worker hands in as if it were typed (`/setup` saving its answers).
    Typed(String),
    /// The models a provider offers at `base_url`, or why they could not be listed (`/setup`).
    SetupModels { base_url: String, result: Result<Vec<String>, String> },
    /// `/setup`'s answers saved and the model in use, or why not.
    SetupSaved(Result<super::setup::SetupSaved, String>),
    /// The shared store's doorbell rang: another console (or this one) committed a change.
    StoreChanged(crate::store::doorbell::Topic),
    /// The store cannot be reached (why, without a password): the console is read-only until it is back.
    StoreLost(String),
    /// The store answers again: everything is read again (changes made meanwhile rang no bell).
    StoreBack,
}

/// Work for the runtime, returned by `update`.
#[derive(Debug)]
pub enum Effect {
    /// Run `command` on `hosts` as run number `run`.
    RunCommand { run: u64, hosts: Vec<Host>, command: String },
    /// One round of a watch: like `RunCommand`, but refused, never asked, when not proven read-only.
    RunWatchRound { run: u64, watch: u64, hosts: Vec<Host>, command: String },
    /// Check that `command` is proven read-only, then tick every `every` seconds (the first at once).
    StartWatch { watch: u64, every: u64, command: String },
    /// Stop the watch's timer (a round in flight is cancelled with `CancelRun`).
    StopWatch,
    /// Start a change pipeline of another kind than Bash (`:change`).
    StartChange { kind: crate::pipeline::Kind, path: String, hosts: Vec<Host>, plan_only: bool },
    /// Stop run `run` on its hosts (SIGINT, SIGTERM, then SIGKILL there).
    CancelRun(u64),
    /// Stop the agent's turn and the commands it started.
    CancelAgent,
    /// Write a run to a file (`.md` or `.json`).
    ExportRun { run: Box<crate::exec::runs::Run>, path: String },
    /// Answer a worker's prompt.
    AnswerPrompt { reply: oneshot::Sender<PromptAnswer>, answer: PromptAnswer },
    /// Reload the inventory from the database.
    ReloadHosts,
    /// Filter a fleet too large to filter between two frames.
    Filter(super::fleet::FilterJob),
    /// Free a fleet no longer shown (on a worker: it takes a frame or two).
    Discard(std::sync::Arc<super::fleet::Fleet>),
    /// `/hosts import PATH`: add the hosts of a file, then reload.
    ImportHosts(String),
    /// Record a host's reachability.
    SetReachable { host: String, reachable: bool },
    /// Append a line to the input history file.
    SaveHistory(String),
    /// Start an agent turn on the operator's message.
    AgentTurn(String),
    /// Reload pipeline runs and metrics.
    Refresh,
    /// Check provisioned resources and hosts with a baseline for drift (the Drift pane's `c`).
    CheckDrift,
    /// Apply a resource's expected configuration again, through the approval modal (the Drift pane's `r`).
    Reconcile(String),
    /// Accept a resource as it is now (a refresh-only change through the approval modal).
    AcceptResource(String),
    /// A decision about a host's drift (accept its last check, ignore a finding), asked first.
    DecideHost(crate::baseline::decide::HostDecision),
    /// Save one setting to config.yaml (`ui.language`, ...).
    SaveSetting { key: String, value: String },
    /// Give the terminal back to the shell until `fg`.
    Suspend,
    /// `s`: leave the screen, run the system `ssh` to this host (the inventory's user, port, jumps,
    /// keys and merlya's known_hosts), wait for it, and take the screen back. Audited as the start
    /// of an interactive session; the session itself is the operator's.
    Ssh(Box<Host>),
    /// Put text on the clipboard through the terminal (OSC 52).
    Copy(String),
    /// Show (`None`) or switch and save a model role.
    Model(Option<(crate::llm::ModelRole, String)>),
    /// Check that these hosts answer (connect and run `true`), recording the result.
    CheckHosts(Vec<Host>),
    /// Add a host, or replace `original` with it.
    SaveHost { original: Option<String>, host: Host },
    /// Delete these hosts (the person confirmed).
    DeleteHosts(Vec<String>),
    /// `/secret list|set|rm`.
    Secret(super::command_line::SecretCommand),
    /// `/audit N`: show the newest entries in the chat.
    ShowAudit(usize),
    /// `/conv`: list conversations, or load one.
    Conversations(super::command_line::ConvCommand),
    /// `/new`: the next message starts a new conversation.
    NewConversation,
    /// `/mcp list|tools|test`: ask the external MCP servers.
    Mcp(super::command_line::McpCommand),
    /// A chat message with no model configured: run the runbook that answers it, if any.
    Runbook(String),
    /// `/setup`: ask the provider at `base_url` for its models (`GET …/models`).
    SetupListModels { provider: super::setup::SetupProvider, base_url: String, key: Option<super::setup::SecretText> },
    /// `/setup`: store the key, write the model to config.yaml and use it now.
    SetupSave(super::setup::SetupChoice),
    /// `/setup`'s last question: the inventories found on this machine, each previewed.
    SetupImport,
    /// `/report [FILE]`: write this session's incident report.
    Report(Option<String>),
    /// `:review ID`: show a teammate's waiting change in the approval modal, record the decision.
    Review(i64),
    /// Verify the audit entries appended since the head this home verified last (another operator
    /// appended): a store that no longer extends it is "audit rewritten".
    CheckAudit,
    /// `/skill`: list the runbooks, or run one.
    Skill(super::command_line::SkillLine),
}

impl Effect {
    /// Whether this work writes to the store (an audit entry, a host, a rule, a conversation...):
    /// refused while the store cannot be reached, so nothing runs unaudited and nothing is lost.
    pub fn writes_store(&self) -> bool {
        use Effect::*;
        match self {
            RunCommand { .. }
            | RunWatchRound { .. }
            | StartWatch { .. }
            | StartChange { .. }
            | ImportHosts(_)
            | SetReachable { .. }
            | AgentTurn(_)
            | CheckDrift
            | Reconcile(_)
            | AcceptResource(_)
            | DecideHost(_)
            | Ssh(_)
            | CheckHosts(_)
            | SaveHost { .. }
            | DeleteHosts(_)
            | Secret(_)
            | Runbook(_)
            | SetupImport
            | Review(_)
            | Skill(_) => true,
            StopWatch
            | CancelRun(_)
            | CancelAgent
            | ExportRun { .. }
            | AnswerPrompt { .. }
            | ReloadHosts
            | Filter(_)
            | Discard(_)
            | SaveHistory(_)
            | Refresh
            | SaveSetting { .. }
            | Suspend
            | Copy(_)
            | Model(_)
            | ShowAudit(_)
            | Conversations(_)
            | NewConversation
            | SetupListModels { .. }
            | SetupSave(_)
            | Mcp(_)
            | CheckAudit
            | Report(_) => false,
        }
    }
}
