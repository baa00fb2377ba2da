//! The workers behind effects that need the store, the keyring or the
//! network: agent turns (with the conversation so far), model switching,
//! dashboard refreshes, host checks and edits, secrets, audit and
//! conversation listings. Each runs on a task and reports back as messages.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr};

use super::command_line::SecretCommand;
use super::fleet::{FilterJob, Fleet};
use super::model::{Dashboard, ToastLevel};
use super::msg::Msg;
use super::prompter::TuiPrompter;
use super::sender::AppSender;
use crate::agent::{Agent, Limits, Observer};
use crate::approval::ApprovalGate;
use crate::context::Context;
use crate::exec::Executor;
use crate::inventory::Host;
use crate::llm::{LlmClient, ModelRole};
use crate::prompt::Prompter;
use crate::safety::clearance::Clearance;

/// What workers share.
pub(super) struct Services {
    pub ctx: Arc<Context>,
    pub executor: Arc<Executor>,
    pub gate: ApprovalGate,
    pub prompter: Arc<TuiPrompter>,
    pub llm: Arc<std::sync::RwLock<Option<Arc<LlmClient>>>>,
    /// The model settings in force (changed by `/model`).
    pub model_config: Arc<std::sync::RwLock<crate::config::ModelConfig>>,
    pub sender: AppSender,
    /// The conversation the next message continues (`None`: a new one).
    pub conversation: Arc<Mutex<Option<String>>>,
    /// The console's language, for what workers write (kept in step by the runtime).
    pub locale: std::sync::RwLock<crate::i18n::Locale>,
    /// Runs in flight and the agent's turn, to cancel them.
    pub control: Arc<super::run_control::RunControl>,
    /// The inventory version last loaded (-1: not read yet).
    pub inventory_version: Arc<std::sync::atomic::AtomicI64>,
    /// The newest filter job: an older one still running stops.
    pub filter_job: Arc<std::sync::atomic::AtomicU64>,
    /// The dashboard last sent to the console (an unchanged one is not sent again).
    pub last_dashboard: Arc<Mutex<Option<Dashboard>>>,
    /// The store's doorbell said the store is lost and not yet back: refreshes wait (the console
    /// says so once, not in an error every two seconds).
    pub store_lost: Arc<std::sync::atomic::AtomicBool>,
    /// "audit rewritten" was said (once per console).
    pub audit_warned: Arc<std::sync::atomic::AtomicBool>,
    /// External MCP servers, started on first use and kept for the console's life.
    pub mcp: Arc<crate::mcp::client::McpClients>,
    /// The skills (built-in and MERLYA_HOME/skills), read at start.
    pub skills: Arc<crate::skills::Library>,
}

impl Services {
    /// The language in force.
    pub fn locale(&self) -> crate::i18n::Locale {
        self.locale.read().map(|l| l.clone()).unwrap_or_default()
    }
}

/// Turns (operator, agent) of the current conversation, after recording the
/// new message in it (starting a conversation when there is none).
async fn continue_conversation(
    ctx: &Context,
    current: &Mutex<Option<String>>,
    text: &str,
) -> Result<(String, Vec<(String, String)>)> {
    let existing = current.lock().ok().and_then(|c| c.clone());
    let (id, turns) =
        crate::agent::conversation::begin_turn(&ctx.store, existing.as_deref(), &ctx.session_id, text).await?;
    if let Ok(mut c) = current.lock() {
        *c = Some(id.clone());
    }
    Ok((id, turns))
}

/// Runs one agent turn on a worker; events stream back as messages.
pub(super) fn agent_turn(services: &Services, text: String) {
    let Some(llm) = services.llm.read().ok().and_then(|l| l.clone()) else {
        services.sender.send(Msg::AgentDone { error: Some("no model is configured".into()), summary: String::new() });
        return;
    };
    let (ctx, executor, gate, sender) =
        (services.ctx.clone(), services.executor.clone(), services.gate.clone(), services.sender.clone());
    let prompter: Arc<dyn crate::prompt::Prompter> = services.prompter.clone();
    let conversation = services.conversation.clone();
    let mcp = services.mcp.clone();
    let locale = services.locale();
    let cancel = tokio_util::sync::CancellationToken::new();
    let token = cancel.clone();
    let task = services.control.spawn(async move {
        let (id, earlier) = match continue_conversation(&ctx, &conversation, &text).await {
            Ok(found) => found,
            Err(e) => {
                sender.send(Msg::AgentDone { error: Some(format!("{e:#}")), summary: String::new() });
                return;
            }
        };
        // The console's inventory, shared: no second copy of a large fleet for the turn.
        let inventory = executor.inventory();
        // Past its context tier, the conversation's older turns are summarised (or truncated).
        let budget = crate::agent::context::budget(ctx.config.policy.context_tier);
        let earlier = crate::agent::context::fit(&ctx.store, Some(&llm), &id, earlier, budget).await;
        let spent_before = llm.spend();
        let events = sender.clone();
        let observer: Observer = Arc::new(move |event| events.send(Msg::Agent(event)));
        let limits = Limits::from_policy(&ctx.config.policy);
        let agent_llm = llm.clone();
        let agent = Agent::new(
            llm,
            executor,
            gate,
            ctx.store.clone(),
            ctx.session_id.clone(),
            ctx.config.policy.raw_log_retention_days,
            inventory,
            prompter,
            limits,
            ModelRole::Brain,
            ctx.config.command_timeout(),
            observer,
        )
        .with_history(&earlier)
        .with_cancel(token)
        .with_mcp(mcp)
        .with_exec_sink({
            // The agent's command output shares the console's output budget: a chatty host waits.
            let sender = sender.clone();
            Arc::new(move |event| {
                let sender = sender.clone();
                Box::pin(async move { sender.send_output(Msg::Agent(crate::agent::AgentEvent::Exec(event))).await })
            })
        });
        let report = agent.run_task(&text).await;
        // A cancelled turn is part of the conversation: the next turn tells the model it was stopped.
        let cancelled = agent.cancel.is_cancelled().then(|| CANCELLED_TURN.to_string());
        let answer = report.answer.as_deref().or(cancelled.as_deref());
        let spent_after = agent_llm.spend();
        let saved = crate::agent::conversation::save_turn(
            &ctx.store,
            &id,
            &ctx.session_id,
            &report,
            answer,
            &spent_before,
            &spent_after,
        )
        .await;
        if let Err(e) = saved {
            sender.send(Msg::Error(locale.tf("error.answer_not_saved", &[("error", &e.to_string())])));
        }
        if cancelled.is_some() {
            // The console already said so when the operator cancelled.
            return;
        }
        let approx = if report.usage.approximate { "~" } else { "" };
        let summary = locale.tf(
            "agent.summary",
            &[
                ("input", &format!("{approx}{}", report.usage.input_tokens)),
                ("output", &format!("{approx}{}", report.usage.output_tokens)),
                ("cost", &format!("{:.4}", report.cost_usd)),
            ],
        );
        sender.send(Msg::AgentDone { error: report.error, summary });
    });
    services.control.set_agent(task.abort_handle(), cancel);
}

/// `:export`: writes the run as Markdown or JSON (by the file's extension).
pub(super) fn export_run(services: &Services, run: crate::exec::runs::Run, path: String) {
    let (sender, locale) = (services.sender.clone(), services.locale());
    tokio::spawn(async move {
        let text = if path.ends_with(".json") {
            serde_json::to_string_pretty(&run).map_err(|e| e.to_string())
        } else {
            Ok(run.to_markdown())
        };
        let written = match text {
            Ok(text) => tokio::fs::write(&path, text).await.map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        match written {
            Ok(()) => {
                let text = locale.tf("toast.exported", &[("id", &run.id.to_string()), ("path", &path)]);
                sender.send(Msg::Toast { level: ToastLevel::Success, text });
            }
            Err(e) => sender.send(Msg::Error(locale.tf("error.export", &[("path", &path), ("error", &e)]))),
        }
    });
}

/// What the conversation records for a turn the operator cancelled.
const CANCELLED_TURN: &str = "(The operator cancelled this turn; its running commands were stopped.)";

/// `/model`: shows the roles, or switches one, saves it to config.yaml and
/// rebuilds the client — on a worker (a file write and a keyring lookup).
pub(super) fn switch_model(services: &Services, change: Option<(ModelRole, String)>) {
    let (ctx, sender, locale) = (services.ctx.clone(), services.sender.clone(), services.locale());
    let (model_config, llm) = (services.model_config.clone(), services.llm.clone());
    tokio::task::spawn_blocking(move || {
        let Ok(mut config) = model_config.write() else { return };
        let Some((role, spec)) = change else {
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| locale.t("note.not_set").to_string());
            let note = locale.tf("note.model_roles", &[("brain", &show(&config.brain)), ("fast", &show(&config.fast))]);
            sender.send(Msg::Note(note));
            return;
        };
        let key = match role {
            ModelRole::Brain => "model.brain",
            ModelRole::Fast => "model.fast",
        };
        let note = match crate::config::set_value(&ctx.home.config_file(), key, &spec) {
            Err(e) => locale.tf("note.model_not_changed", &[("key", key), ("error", &e.to_string())]),
            Ok(_) => {
                match role {
                    ModelRole::Brain => config.brain = Some(spec.clone()),
                    ModelRole::Fast => config.fast = Some(spec.clone()),
                }
                match LlmClient::from_config(&config, ctx.secrets().as_ref()) {
                    Ok(client) => {
                        if let Ok(mut llm) = llm.write() {
                            *llm = Some(Arc::new(client));
                        }
                        locale.tf("note.model_saved", &[("key", key), ("spec", &spec)])
                    }
                    Err(e) => locale.tf("note.model_unusable", &[("key", key), ("error", &e.to_string())]),
                }
            }
        };
        sender.send(Msg::Note(note));
    });
}

/// Loads pipeline runs and metrics from the store and the model client, and
/// the inventory again when another process (or this one) changed it.
pub(super) fn refresh_dashboard(services: &Services) {
    let (store, sender) = (services.ctx.store.clone(), services.sender.clone());
    let llm = services.llm.read().ok().and_then(|l| l.clone());
    let (ctx, executor, seen) = (services.ctx.clone(), services.executor.clone(), services.inventory_version.clone());
    let (last_sent, locale) = (services.last_dashboard.clone(), services.locale());
    if services.store_lost.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    tokio::spawn(async move {
        use std::sync::atomic::Ordering;
        if let Ok(version) = store.inventory_version().await {
            let before = seen.swap(version, Ordering::Relaxed);
            if before >= 0 && before != version {
                reload_hosts(&ctx, &executor, &sender).await;
            }
        }
        let (pipelines, stats) = match (store.list_pipeline_runs().await, store.command_stats().await) {
            (Ok(p), Ok(s)) => (p, s),
            (Err(e), _) | (_, Err(e)) => {
                sender.send(Msg::Error(format!("{}: {e}", locale.t("error.metrics"))));
                return;
            }
        };
        let (spend, breaker_open) = match &llm {
            Some(llm) => (llm.spend().into_iter().collect(), llm.breaker_open()),
            None => (Vec::new(), false),
        };
        let drift = match drift_board(&store).await {
            Ok(drift) => drift,
            Err(e) => {
                sender.send(Msg::Error(format!("{}: {e}", locale.t("error.metrics"))));
                return;
            }
        };
        let reviews = match store.pending_change_requests().await {
            Ok(pending) => pending.iter().map(pending_review).collect(),
            Err(e) => {
                sender.send(Msg::Error(format!("{}: {e}", locale.t("error.metrics"))));
                return;
            }
        };
        // Teammates' runs: started in the last hour, still running or ended in the last minute.
        let ago = |secs: i64| {
            (chrono::Utc::now() - chrono::Duration::seconds(secs)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let team_runs = match store.backend() {
            crate::store::Backend::Postgres => {
                store.team_runs(&ctx.session_id, &ago(3600), &ago(60)).await.unwrap_or_default()
            }
            crate::store::Backend::Sqlite => Vec::new(),
        };
        let dashboard = Dashboard { pipelines, stats, spend, breaker_open, drift, reviews, team_runs };
        // An idle console draws nothing: only news is sent.
        if let Ok(mut last) = last_sent.lock() {
            if last.as_ref() == Some(&dashboard) {
                return;
            }
            *last = Some(dashboard.clone());
        }
        sender.send(Msg::Dashboard(Box::new(dashboard)));
    });
}

/// A stored request as the Pipeline pane lists it (a request that does not match its digest says so).
fn pending_review(stored: &crate::store::change_requests::ChangeRequest) -> super::boards::PendingReview {
    let summary = crate::approval::two_person::shown(stored).map_or_else(|e| e, |r| r.summary);
    super::boards::PendingReview {
        id: stored.id,
        requested_by: stored.requested_by.clone(),
        why: stored.why.clone(),
        summary,
        expires_at: stored.expires_at.clone(),
    }
}

/// `:review ID`: the teammate's change in the approval modal, exactly as its requester saw it; the
/// answer is recorded as this operator's review (approve: once or always; anything else rejects).
pub(super) fn review(services: &Services, id: i64) {
    let (ctx, sender, prompter, locale) =
        (services.ctx.clone(), services.sender.clone(), services.prompter.clone(), services.locale());
    tokio::spawn(async move {
        let reviewer = ctx.config.operator.name();
        let refused = |text: String| Msg::Toast { level: ToastLevel::Error, text };
        let stored = match ctx.store.change_request(id).await {
            Ok(Some(stored)) => stored,
            Ok(None) => return sender.send(refused(locale.tf("toast.review_none", &[("id", &id.to_string())]))),
            Err(e) => return sender.send(refused(e.to_string())),
        };
        // Refused before the modal opens: the requester's own request, or one already decided.
        if stored.requested_by == reviewer {
            let own = crate::store::change_requests::ReviewRefused::OwnRequest { id, who: reviewer };
            return sender.send(refused(own.to_string()));
        }
        let mut request = match crate::approval::two_person::shown(&stored) {
            Ok(request) => request,
            Err(e) => return sender.send(refused(e)),
        };
        request.summary = locale.tf(
            "prompt.review_summary",
            &[("id", &id.to_string()), ("who", &stored.requested_by), ("summary", &request.summary)],
        );
        let approve =
            crate::approval::Approver::decide(prompter.as_ref(), &request).await != crate::approval::Decision::Deny;
        let msg = match crate::approval::two_person::record_review(
            &ctx.store,
            &ctx.session_id,
            &stored,
            &reviewer,
            approve,
            "",
        )
        .await
        {
            Ok(_) => {
                let key = if approve { "toast.review_approved" } else { "toast.review_rejected" };
                Msg::Toast { level: ToastLevel::Success, text: locale.tf(key, &[("id", &id.to_string())]) }
            }
            Err(e) => refused(e.to_string()),
        };
        sender.send(msg);
    });
}

/// Verifies what was appended since the head this home verified last; a chain that no longer
/// extends it ("audit rewritten") or a broken entry is said once, in full.
pub(super) fn check_audit(services: &Services) {
    let (ctx, sender, locale, warned) =
        (services.ctx.clone(), services.sender.clone(), services.locale(), services.audit_warned.clone());
    tokio::spawn(async move {
        let Ok(report) = ctx.store.audit_since_verified().await else { return };
        if report.broken.is_some() && !warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let detail = report.describe();
            sender.send(Msg::Toast { level: ToastLevel::Error, text: locale.t("toast.audit_rewritten").to_string() });
            sender.send(Msg::Note(locale.tf("startup.audit", &[("detail", &detail)])));
        }
    });
}

/// Connects to each host and runs `true`, recording reachability and the time.
pub(super) fn check_hosts(services: &Services, hosts: Vec<Host>) {
    let timeout = Duration::from_secs(services.ctx.config.ssh.connect_timeout_secs.max(1) + 5);
    for host in hosts {
        let (ctx, executor, sender) = (services.ctx.clone(), services.executor.clone(), services.sender.clone());
        let locale = services.locale();
        tokio::spawn(async move {
            let tx = crate::exec::no_events();
            // A login check runs `true` on the host: audited like any command, through the one door.
            let who = crate::ssh::target::local_user();
            let Some(probe) = Clearance::read_only("true") else { return };
            let cancel = tokio_util::sync::CancellationToken::new();
            let door = crate::door::Door::of_context(&ctx, &executor, &who, timeout, &cancel);
            let ran = door.run_one(&host, &probe, None, &tx).await;
            if ran.audit_id.is_none() {
                let error = ran.result.error.clone().unwrap_or_default();
                sender
                    .send(Msg::Error(locale.tf("error.audit_not_checked", &[("host", &host.name), ("error", &error)])));
                return;
            }
            let result = ran.result;
            let failure = result.failure.map(|f| (f.name(), result.error.as_deref().unwrap_or_default()));
            if let Err(e) = ctx.store.set_host_error(&host.name, failure).await {
                sender.send(Msg::Error(e.to_string()));
            }
            let reachable = super::update::reachability(&result).unwrap_or(false);
            if let Err(e) = ctx.store.set_reachable(&host.name, reachable).await {
                sender.send(Msg::Error(e.to_string()));
            }
            let at = crate::store::now_rfc3339();
            let error = result.failure.zip(result.error);
            sender.send(Msg::HostChecked { host: host.name.clone(), reachable, at, error });
        });
    }
}

/// Adds a host or replaces one, then reloads the inventory.
pub(super) fn save_host(services: &Services, original: Option<String>, host: Host) {
    let (ctx, executor, sender) = (services.ctx.clone(), services.executor.clone(), services.sender.clone());
    let locale = services.locale();
    tokio::spawn(async move {
        let saved = match &original {
            None => ctx.store.add_host(&host).await.map_err(|e| e.to_string()),
            Some(name) => ctx.store.replace_host(name, &host).await.map_err(|e| e.to_string()),
        };
        match saved {
            Ok(()) => {
                let text = locale.tf("toast.host_saved", &[("host", &host.name)]);
                sender.send(Msg::Toast { level: ToastLevel::Success, text });
            }
            Err(e) => {
                sender.send(Msg::Error(locale.tf("error.host_not_saved", &[("host", &host.name), ("error", &e)])))
            }
        }
        reload_hosts(&ctx, &executor, &sender).await;
    });
}

/// Deletes hosts, then reloads the inventory.
pub(super) fn delete_hosts(services: &Services, names: Vec<String>) {
    let (ctx, executor, sender) = (services.ctx.clone(), services.executor.clone(), services.sender.clone());
    let locale = services.locale();
    tokio::spawn(async move {
        let mut deleted = Vec::new();
        for name in names {
            match ctx.store.remove_host(&name).await {
                Ok(()) => deleted.push(name),
                Err(e) => {
                    let text = locale.tf("error.host_not_deleted", &[("host", &name), ("error", &e.to_string())]);
                    sender.send(Msg::Error(text));
                }
            }
        }
        if !deleted.is_empty() {
            let text = locale.tf("toast.hosts_deleted", &[("hosts", &deleted.join(", "))]);
            sender.send(Msg::Toast { level: ToastLevel::Success, text });
        }
        reload_hosts(&ctx, &executor, &sender).await;
    });
}

/// `/hosts import PATH`: the same reading as `merlya hosts import`, then a reload.
pub(super) fn import_hosts(services: &Services, path: String) {
    let (ctx, executor, sender, locale) =
        (services.ctx.clone(), services.executor.clone(), services.sender.clone(), services.locale());
    tokio::spawn(async move {
        let file = crate::inventory::import::ssh_config::expand_tilde(&path);
        let read = tokio::task::spawn_blocking(move || crate::inventory::import::read_import_file(&file, None)).await;
        let report = match read {
            Ok(Ok(report)) => report,
            Ok(Err(e)) => return sender.send(Msg::Note(e)),
            Err(e) => return sender.send(Msg::Error(e.to_string())),
        };
        let note = match ctx.store.upsert_hosts(&report.hosts).await {
            Ok((added, updated)) => {
                let (added, updated, total) = (added.to_string(), updated.to_string(), report.hosts.len().to_string());
                let mut note = locale.tf(
                    "note.imported",
                    &[("count", &total), ("path", &path), ("added", &added), ("updated", &updated)],
                );
                for line in report.skipped.iter().chain(report.merged.iter()).take(20) {
                    note.push_str(&format!("\n  {line}"));
                }
                note
            }
            Err(e) => locale.tf("note.import_failed", &[("path", &path), ("error", &e.to_string())]),
        };
        sender.send(Msg::Note(note));
        reload_hosts(&ctx, &executor, &sender).await;
    });
}

/// Reads the inventory and lays it out for the console, off the loop thread
/// (linear in the fleet: a second or so for 200,000 hosts).
pub(super) async fn load_fleet(ctx: &Context) -> Result<Arc<Fleet>> {
    let hosts = ctx.store.list_hosts_streamed().await?;
    let fleet =
        tokio::task::spawn_blocking(move || Fleet::new(hosts)).await.wrap_err("cannot lay out the inventory")?;
    Ok(Arc::new(fleet))
}

/// Reads the inventory again and hands it to the console, and the same copy to the executor.
pub(super) async fn reload_hosts(ctx: &Context, executor: &Executor, sender: &AppSender) {
    match load_fleet(ctx).await {
        Ok(fleet) => {
            executor.set_inventory(fleet.shared());
            sender.send(Msg::HostsLoaded(fleet));
        }
        Err(e) => sender.send(Msg::Error(format!("cannot reload hosts: {e:#}"))),
    }
}

/// Lets go of a fleet the console no longer shows, off the loop thread: freeing
/// 200,000 hosts takes a frame or two. When it was the last holder, the
/// memory goes back to the system (glibc keeps what a thread freed in its
/// arena, and each reload would otherwise leave a fleet's worth behind).
pub(super) fn discard(fleet: Arc<Fleet>) {
    tokio::task::spawn_blocking(move || {
        if let Some(fleet) = Arc::into_inner(fleet) {
            drop(fleet);
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            // SAFETY: malloc_trim only walks the allocator's own free lists; it has no preconditions.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    });
}

/// Answers a filter too large for the loop thread; a newer job stops this one.
pub(super) fn filter(services: &Services, job: FilterJob) {
    use std::sync::atomic::Ordering;
    let (newest, sender) = (services.filter_job.clone(), services.sender.clone());
    newest.fetch_max(job.id, Ordering::Relaxed);
    tokio::task::spawn_blocking(move || {
        let id = job.id;
        if let Some(shown) = job.run(&|| newest.load(Ordering::Relaxed) != id) {
            sender.send(Msg::Filtered { job: id, shown: Box::new(shown) });
        }
    });
}

/// `/secret list|set|rm`: names only ever; a value is asked for hidden.
pub(super) fn secret(services: &Services, command: SecretCommand) {
    let (ctx, sender, prompter) = (services.ctx.clone(), services.sender.clone(), services.prompter.clone());
    let locale = services.locale();
    tokio::spawn(async move {
        let note = match secret_command(&ctx, prompter.as_ref(), &locale, command).await {
            Ok(note) => note,
            Err(e) => format!("{e:#}"),
        };
        sender.send(Msg::Note(note));
    });
}

async fn secret_command(
    ctx: &Context,
    prompter: &dyn Prompter,
    locale: &crate::i18n::Locale,
    command: SecretCommand,
) -> Result<String> {
    let secrets = ctx.secrets();
    Ok(match command {
        SecretCommand::List => {
            let names = ctx.store.secret_names().await?;
            if names.is_empty() {
                locale.t("secrets.none").to_string()
            } else {
                let rows: Vec<String> =
                    names.iter().map(|n| format!("  {}  ({}, {})", n.name, n.backend, n.updated_at)).collect();
                format!("{}\n{}", locale.tf("secrets.list", &[("count", &names.len().to_string())]), rows.join("\n"))
            }
        }
        SecretCommand::Set(name) => {
            crate::secrets::validate_name(&name)?;
            let title = crate::i18n::Text::key("secrets.prompt_title", &[("name", &name)]);
            let Some(value) = prompter.secret(&title, &crate::i18n::Text::key("secrets.prompt", &[])).await else {
                return Ok(locale.tf("secrets.unchanged", &[("name", &name)]));
            };
            secrets.set(&name, &value).wrap_err_with(|| format!("cannot store {name}"))?;
            ctx.store.index_secret(&name, secrets.backend_name()).await?;
            locale.tf("secrets.stored", &[("name", &name), ("backend", secrets.backend_name())])
        }
        SecretCommand::Remove(name) => {
            let removed = secrets.remove(&name).wrap_err_with(|| format!("cannot remove {name}"))?;
            ctx.store.unindex_secret(&name).await?;
            locale.tf(if removed { "secrets.removed" } else { "secrets.absent" }, &[("name", &name)])
        }
    })
}

/// `/audit N`: the newest entries, one line each.
pub(super) fn show_audit(services: &Services, count: usize) {
    let (ctx, sender, locale) = (services.ctx.clone(), services.sender.clone(), services.locale());
    tokio::spawn(async move {
        let filter = crate::store::audit::AuditFilter { limit: i64::try_from(count).ok(), ..Default::default() };
        let note = match ctx.store.list_audit(&filter).await {
            Err(e) => format!("cannot read the audit log: {e}"),
            Ok(entries) if entries.is_empty() => locale.t("audit.empty").to_string(),
            Ok(entries) => {
                let rows: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        let exit = e.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "-".into());
                        format!(
                            "  #{} {} {} $ {} → {} {exit} ({})",
                            e.id,
                            e.ts,
                            e.host,
                            e.command,
                            e.outcome.as_str(),
                            e.approved_by
                        )
                    })
                    .collect();
                format!("{}\n{}", locale.tf("audit.header", &[("count", &entries.len().to_string())]), rows.join("\n"))
            }
        };
        sender.send(Msg::Note(note));
    });
}

/// `/new`: the next message starts a conversation.
pub(super) fn new_conversation(services: &Services) {
    if let Ok(mut c) = services.conversation.lock() {
        *c = None;
    }
}

/// What the Drift pane shows, read from the store: resources, and each host's last findings.
async fn drift_board(store: &crate::store::Store) -> Result<super::model::DriftBoard, crate::store::StoreError> {
    let resources = store.list_resources().await?;
    let recorded = store.host_drift().await?;
    let checked_hosts = recorded.len();
    let mut hosts = Vec::new();
    for (host, at, findings) in recorded {
        let rows: Vec<crate::baseline::compare::Row> = serde_json::from_str(&findings).unwrap_or_default();
        hosts.extend(rows.into_iter().map(|row| (host.clone(), at.clone(), row)));
    }
    Ok(super::model::DriftBoard { resources, hosts, checked_hosts })
}
