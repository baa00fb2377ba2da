//! The console runtime: terminal set-up and restore, the event loop with a
//! frame-rate cap, and the workers that carry out effects.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use color_eyre::eyre::{Result, WrapErr};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event, EventStream,
};
use futures::StreamExt;
use ratatui::DefaultTerminal;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::keymap::Keymap;
use super::model::{ChatEntry, ChatRole, Model};
use super::msg::{Effect, Msg};
use super::prompter::TuiPrompter;
use super::sender::AppSender;
use super::theme::{ColorDepth, Theme};
use super::update::update;
use super::view::view;
use super::workers::{self, Services, agent_turn, refresh_dashboard, switch_model};
use crate::approval::ApprovalGate;
use crate::context::Context;
use crate::home::MerlyaHome;
use crate::llm::LlmClient;

/// Most messages applied between two frames, so a flood of output cannot starve drawing.
const MAX_BATCH: usize = 4096;

/// Opens the console and runs it until the user quits.
pub fn run_console(
    runtime: &tokio::runtime::Runtime,
    home: MerlyaHome,
    metrics_addr: Option<std::net::SocketAddr>,
    resume: Option<String>,
) -> Result<u8> {
    runtime.block_on(async move {
        let (ctx, config_problem) = Context::open_forgiving(home, "console").await?;
        let ctx = Arc::new(ctx);
        // Before the terminal is taken: a bad address is an error on the shell, not a broken screen.
        if let Some(addr) = metrics_addr {
            ctx.store.seed_metrics().await?;
            crate::metrics::serve(addr, tokio_util::sync::CancellationToken::new()).await?;
        }
        // The inventory's version before it is read: a host another process adds while the console
        // starts (before its first refresh) is then seen as a change, not taken for the start.
        let inventory_version = ctx.store.inventory_version().await.unwrap_or(-1);
        let fleet = workers::load_fleet(&ctx).await?;
        let (tx, rx) = unbounded_channel();
        let sender = AppSender::new(tx);
        let prompter = Arc::new(TuiPrompter::new(sender.clone()));
        // One copy of the hosts: the executor resolves jump hosts with the model's.
        let executor = Arc::new(ctx.executor(fleet.shared(), prompter.clone(), true)?);
        let gate = ApprovalGate::with_policy(prompter.clone(), ctx.store.clone(), &ctx.config);
        let theme = Theme::load(&ctx.config.ui.theme, &ctx.home.themes_dir(), ColorDepth::detect())?;
        let mut model = Model::new(Vec::new(), ctx.config.has_model(), ctx.config.ui.scrollback_lines, theme);
        model.set_fleet(fleet);
        model.input.history = load_history(&ctx.home);
        model.ssh_aliases = executor.ssh_aliases();
        model.operator = ctx.config.operator.name();
        // Each host's last error, from this session or an earlier one.
        for e in ctx.store.host_errors().await.unwrap_or_default() {
            if let Some(failure) = crate::exec::HostFailure::from_name(&e.kind) {
                let record = super::model::HostError { failure, message: e.message, at: e.at };
                model.host_errors.insert(e.host, record);
            }
        }
        // Each host's last health readings (the inventory's load, disk and memory columns).
        model.health = super::inventory::by_host(ctx.store.host_health().await.unwrap_or_default());
        // Validated with the configuration: a name that is not a column never gets here.
        model.inventory.columns = crate::inventory::columns::Column::parse_list(&ctx.config.ui.inventory_columns)
            .unwrap_or_else(|_| crate::inventory::columns::Column::ALL.to_vec());
        model.keymap = Keymap::load(&ctx.config.ui.keymap, &ctx.home.keymaps_dir())?;
        let locale = crate::i18n::Locale::new(&ctx.config.ui.language).map_err(|code| {
            color_eyre::eyre::eyre!(
                "{}: ui.language: unknown language {code:?}; expected one of {}",
                ctx.home.config_file().display(),
                crate::i18n::languages().join(", ")
            )
        })?;
        model.set_locale(locale);
        if let Some(problem) = config_problem {
            let text = model.locale.tf("banner.config_broken", &[("error", &problem)]);
            model.push_chat(ChatEntry::new(ChatRole::System, text));
            model.toast(super::model::ToastLevel::Error, model.locale.t("toast.config_broken").to_string());
        }
        let llm = if ctx.config.has_model() {
            match LlmClient::from_config(&ctx.config.model, ctx.secrets().as_ref()) {
                Ok(client) => Some(Arc::new(client)),
                Err(e) => {
                    model.model_configured = false;
                    let text = crate::i18n::Locale::default().tf("banner.model_unusable", &[("error", &e.to_string())]);
                    model.push_chat(ChatEntry::new(ChatRole::System, text));
                    None
                }
            }
        } else {
            None
        };
        let services = Services {
            ctx: ctx.clone(),
            executor,
            gate,
            prompter,
            llm: Arc::new(std::sync::RwLock::new(llm)),
            model_config: Arc::new(std::sync::RwLock::new(ctx.config.model.clone())),
            sender: sender.clone(),
            conversation: Default::default(),
            locale: std::sync::RwLock::new(model.locale.clone()),
            control: Default::default(),
            inventory_version: Arc::new(std::sync::atomic::AtomicI64::new(inventory_version)),
            filter_job: Default::default(),
            last_dashboard: Default::default(),
            store_lost: Default::default(),
            audit_warned: Default::default(),
            mcp: Arc::new(crate::mcp::client::McpClients::new(ctx.config.mcp.servers.clone(), ctx.secrets())),
            // Read once here, so routing a chat message never reads files on the loop thread.
            skills: Arc::new(crate::skills::Library::load(&ctx.home.skills_dir())),
        };
        super::highlight::warm_up();
        start_up_check(&services);
        offer_setup(&ctx.home, &services);
        if let Some(id) = resume {
            // `--resume` without an id: the conversation updated last.
            let id = match id.is_empty() {
                true => ctx.store.latest_conversation().await?.unwrap_or_default(),
                false => id,
            };
            super::conv_worker::run(&services, super::command_line::ConvCommand::Load(id));
        }

        // ratatui::try_init installs a panic hook that restores the terminal before the report.
        let mut terminal = ratatui::try_init().wrap_err("cannot open the terminal")?;
        let _ = crossterm::execute!(std::io::stdout(), EnableBracketedPaste, EnableMouseCapture);
        // On a panic, also give back the mouse and paste modes before ratatui's hook restores the rest.
        let restore_terminal = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = crossterm::execute!(std::io::stdout(), DisableBracketedPaste, DisableMouseCapture);
            restore_terminal(info);
        }));
        let outcome = event_loop(&mut terminal, &mut model, &services, rx).await;
        // Nothing is left running on a host: runs in flight are cancelled and waited for.
        services.sender.close_output();
        services.control.shut_down().await;
        services.mcp.shutdown().await;
        let _ = crossterm::execute!(std::io::stdout(), DisableBracketedPaste, DisableMouseCapture);
        ratatui::restore();
        ctx.store.close().await;
        // Ended by a signal: the shell sees it (128 + N), as it would for any program it ended.
        outcome.map(|signal| signal.map_or(0, |n| 128 + n))
    })
}

async fn event_loop(
    terminal: &mut DefaultTerminal,
    model: &mut Model,
    services: &Services,
    mut rx: UnboundedReceiver<Msg>,
) -> Result<Option<u8>> {
    let ctx = &services.ctx;
    // The signal that asked the console to quit, if one did (its exit status is 128 + N).
    let mut signalled: Option<u8> = None;
    let mut events = EventStream::new();
    let frame_interval = Duration::from_millis(1000 / u64::from(ctx.config.ui.max_fps.clamp(1, 240)));
    let mut dirty = true;
    let mut last_draw = Instant::now() - frame_interval;
    // Since when a worker answers the filter: for up to a frame, the screen waits for the answer, so a
    // keystroke and the hosts it keeps are drawn together instead of one frame apart.
    let mut filter_since: Option<Instant> = None;
    // Whether the frame waited for a worker's answer was drawn without it (the worker took longer):
    // the answer is then drawn the moment it lands, not a whole frame later (issue 25: a 17 ms
    // answer was on screen at 33 ms). At most one extra frame per answer.
    let mut answer_owed = false;
    let size = terminal.size().wrap_err("cannot read the terminal size")?;
    update(model, Msg::Resize(size.width, size.height));
    refresh_dashboard(services);
    super::drift_worker::start_interval(services);
    super::store_worker::start(services);
    // SIGTERM, SIGHUP and SIGINT quit as a confirmed `q` does: runs are stopped, the terminal restored.
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).wrap_err("cannot watch SIGTERM")?;
    let mut hangup = signal(SignalKind::hangup()).wrap_err("cannot watch SIGHUP")?;
    let mut interrupt = signal(SignalKind::interrupt()).wrap_err("cannot watch SIGINT")?;
    let mut refresh = tokio::time::interval(Duration::from_secs(2));
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    // The tick is only polled while toasts are shown; missed ticks must not fire in a burst.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        filter_since = model.inventory.pending.as_ref().map(|_| filter_since.unwrap_or_else(Instant::now));
        let filter_wait = filter_since.map_or(Duration::ZERO, |since| frame_interval.saturating_sub(since.elapsed()));
        let answered = answer_owed && model.inventory.pending.is_none();
        if dirty && (last_draw.elapsed() >= frame_interval || answered) && filter_wait.is_zero() {
            terminal.draw(|frame| view(model, frame)).wrap_err("cannot draw")?;
            last_draw = Instant::now();
            dirty = false;
            answer_owed = model.inventory.pending.is_some();
        }
        let wait = match dirty {
            true => frame_interval.saturating_sub(last_draw.elapsed()).max(filter_wait),
            false => Duration::from_secs(3600),
        };
        let first = tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => event_to_msg(event),
                Some(Err(e)) => return Err(e).wrap_err("terminal input failed"),
                None => return Ok(signalled),
            },
            Some(msg) = rx.recv() => Some(msg),
            _ = terminate.recv() => {
                signalled.get_or_insert(libc::SIGTERM as u8);
                Some(Msg::Terminate)
            }
            _ = hangup.recv() => {
                signalled.get_or_insert(libc::SIGHUP as u8);
                Some(Msg::Terminate)
            }
            _ = interrupt.recv() => {
                signalled.get_or_insert(libc::SIGINT as u8);
                Some(Msg::Terminate)
            }
            _ = refresh.tick() => {
                refresh_dashboard(services);
                None
            }
            // Toasts fade; an idle console with none does not redraw.
            _ = tick.tick(), if !model.toasts.is_empty() => Some(Msg::Tick),
            _ = tokio::time::sleep(wait) => None,
        };
        let mut batch: Vec<Msg> = first.into_iter().collect();
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(msg) => batch.push(msg),
                Err(_) => break,
            }
        }
        for msg in batch {
            dirty = true;
            if matches!(msg, Msg::Exec { .. } | Msg::Agent(crate::agent::AgentEvent::Exec(_))) {
                services.sender.output_taken();
            }
            for effect in update(model, msg) {
                match effect {
                    Effect::Suspend => super::terminal_handover::suspend(terminal)?,
                    Effect::Ssh(host) => {
                        // The terminal's reader is idle here (it just gave the key that asked for
                        // the session, and is not polled again until the session ends): `ssh` alone
                        // reads the keys.
                        super::ssh_session::run(terminal, services, &host).await?;
                        // The window may have changed size meanwhile.
                        if let Ok(size) = terminal.size() {
                            update(model, Msg::Resize(size.width, size.height));
                        }
                        // A Ctrl-C typed before `ssh` took the terminal was the session's, not the console's.
                        while futures::FutureExt::now_or_never(interrupt.recv()).flatten().is_some() {}
                    }
                    Effect::Copy(text) => {
                        let _ = std::io::stdout().write_all(osc52(&text).as_bytes());
                        let _ = std::io::stdout().flush();
                    }
                    other => run_effect(other, services),
                }
            }
        }
        // Workers write in the language the console shows.
        if let Ok(mut locale) = services.locale.write()
            && locale.code() != model.locale.code()
        {
            *locale = model.locale.clone();
        }
        if model.should_quit {
            return Ok(signalled);
        }
    }
}

fn event_to_msg(event: Event) -> Option<Msg> {
    match event {
        Event::Key(key) => Some(Msg::Key(key)),
        Event::Mouse(mouse) => Some(Msg::Mouse(mouse)),
        Event::Paste(text) => Some(Msg::Paste(text)),
        Event::Resize(w, h) => Some(Msg::Resize(w, h)),
        _ => None,
    }
}

/// Starts the work an effect asks for; results come back as messages.
fn run_effect(effect: Effect, services: &Services) {
    let Services { ctx, executor, sender, .. } = services;
    match effect {
        Effect::AgentTurn(text) => {
            // A request a runbook answers, naming its hosts, runs the runbook (no model needed).
            if !super::skill_worker::routed(services, &text, true) {
                agent_turn(services, text);
            }
        }
        // Handled by the loop, which owns the terminal.
        Effect::Suspend | Effect::Copy(_) | Effect::Ssh(_) => {}
        Effect::Refresh => refresh_dashboard(services),
        Effect::CheckDrift => super::drift_worker::check_all(services),
        Effect::Reconcile(name) => super::drift_worker::reconcile(services, name),
        Effect::AcceptResource(name) => super::drift_worker::accept(services, name),
        Effect::DecideHost(decision) => super::drift_worker::decide_host(services, decision),
        Effect::SaveSetting { key, value } => {
            // File writes happen on a worker, never on the loop thread.
            let (path, sender, locale) = (ctx.home.config_file(), sender.clone(), services.locale());
            tokio::task::spawn_blocking(move || {
                if let Err(e) = crate::config::set_value(&path, &key, &value) {
                    sender.send(Msg::Error(
                        locale.tf("error.setting_not_saved", &[("key", &key), ("error", &e.to_string())]),
                    ));
                }
            });
        }
        Effect::Model(change) => switch_model(services, change),
        Effect::CheckHosts(hosts) => workers::check_hosts(services, hosts),
        Effect::SaveHost { original, host } => workers::save_host(services, original, host),
        Effect::DeleteHosts(names) => workers::delete_hosts(services, names),
        Effect::Secret(command) => workers::secret(services, command),
        Effect::ShowAudit(count) => workers::show_audit(services, count),
        Effect::Review(id) => workers::review(services, id),
        Effect::CheckAudit => workers::check_audit(services),
        Effect::Conversations(command) => super::conv_worker::run(services, command),
        Effect::NewConversation => workers::new_conversation(services),
        Effect::Mcp(command) => super::mcp_worker::run(services, command),
        Effect::Skill(line) => super::skill_worker::run(services, line),
        Effect::Report(path) => super::conv_worker::report(services, path),
        Effect::SetupListModels { provider, base_url, key } => {
            super::setup_worker::list_models(services, provider, base_url, key)
        }
        Effect::SetupSave(choice) => super::setup_worker::save(services, choice),
        Effect::SetupImport => super::setup_worker::import(services),
        Effect::Runbook(text) => {
            if !super::skill_worker::routed(services, &text, false) {
                services.sender.send(Msg::Note(services.locale().t("chat.no_answer").to_string()));
            }
        }
        Effect::AnswerPrompt { reply, answer } => {
            let _ = reply.send(answer);
        }
        Effect::RunCommand { run, hosts, command } => {
            super::run_worker::run_command(services, run, hosts, command, None)
        }
        Effect::RunWatchRound { run, watch, hosts, command } => {
            super::run_worker::run_command(services, run, hosts, command, Some(watch))
        }
        Effect::StartWatch { watch, every, command } => super::run_worker::start_watch(services, watch, every, command),
        Effect::StopWatch => services.control.stop_watch(),
        Effect::StartChange { kind, path, hosts, plan_only } => {
            super::run_worker::start_change(services, kind, path, hosts, plan_only)
        }
        Effect::CancelRun(run) => services.control.cancel(run),
        Effect::CancelAgent => {
            if services.control.cancel_agent() {
                sender.send(Msg::AgentDone {
                    error: Some(services.locale().t("agent.cancelled").to_string()),
                    summary: String::new(),
                });
            }
        }
        Effect::ExportRun { run, path } => workers::export_run(services, *run, path),
        Effect::ImportHosts(path) => workers::import_hosts(services, path),
        Effect::Filter(job) => workers::filter(services, job),
        Effect::Discard(fleet) => workers::discard(fleet),
        Effect::ReloadHosts => {
            let (ctx, executor, sender) = (ctx.clone(), executor.clone(), sender.clone());
            tokio::spawn(async move { workers::reload_hosts(&ctx, &executor, &sender).await });
        }
        Effect::SetReachable { host, reachable } => {
            let (ctx, sender) = (ctx.clone(), sender.clone());
            tokio::spawn(async move {
                if let Err(e) = ctx.store.set_reachable(&host, reachable).await {
                    sender.send(Msg::Error(format!("{e}")));
                }
            });
        }
        Effect::SaveHistory(line) => {
            let path = ctx.home.history_file();
            tokio::task::spawn_blocking(move || {
                let appended = crate::home::private_file_options()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .and_then(|mut f| writeln!(f, "{}", line.replace('\n', " ")));
                if let Err(e) = appended {
                    tracing::warn!(path = %path.display(), error = %e, "cannot save history");
                }
            });
        }
    }
}

/// The last 500 lines of the history file.
fn load_history(home: &MerlyaHome) -> Vec<String> {
    let text = std::fs::read_to_string(home.history_file()).unwrap_or_default();
    let lines: Vec<String> = text.lines().filter(|l| !l.trim().is_empty()).map(String::from).collect();
    lines[lines.len().saturating_sub(500)..].to_vec()
}

/// The OSC 52 sequence that puts `text` on the clipboard (also through SSH and tmux).
pub fn osc52(text: &str) -> String {
    use base64::Engine;
    format!("\x1b]52;c;{}\x07", base64::engine::general_purpose::STANDARD.encode(text))
}

/// The start-up check on a worker: one line in the chat when something is not OK, naming the checks
/// and pointing at `merlya doctor` for the details and fixes.
/// On the first run (no configuration yet, never offered before) the setup questions open at once;
/// every one can be skipped, and `/setup` asks them again. `MERLYA_SETUP=skip` never offers them
/// (scripted sessions).
fn offer_setup(home: &crate::home::MerlyaHome, services: &Services) {
    let marker = home.root().join(".setup-offered");
    let skip = std::env::var("MERLYA_SETUP").is_ok_and(|v| v == "skip");
    if skip || home.config_file().exists() || marker.exists() {
        return;
    }
    if let Err(e) = crate::home::write_private(&marker, b"") {
        tracing::warn!(error = %e, "cannot remember that setup was offered");
    }
    services.sender.send(Msg::Typed("/setup".into()));
}

fn start_up_check(services: &Services) {
    let (ctx, sender, locale) = (services.ctx.clone(), services.sender.clone(), services.locale());
    let mcp = services.mcp.clone();
    tokio::spawn(async move {
        let checks = crate::health::start_up(&ctx.home, &ctx.config, &ctx.secrets(), &ctx.store, &mcp).await;
        let flagged: Vec<String> = checks
            .iter()
            .filter(|c| c.status != crate::health::Status::Ok)
            .map(|c| format!("{} {}", c.status.as_str(), c.name))
            .collect();
        if !flagged.is_empty() {
            sender.send(Msg::Note(locale.tf("startup.check", &[("checks", &flagged.join(", "))])));
        }
        // A broken or rewritten audit chain ("audit rewritten") is said in full, not only named.
        if let Some(audit) = checks.iter().find(|c| c.name == "audit" && c.status == crate::health::Status::Fail) {
            let detail = audit.detail.render(&locale);
            sender.send(Msg::Note(locale.tf("startup.audit", &[("detail", &detail)])));
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn osc52_encodes_for_the_clipboard() {
        assert_eq!(super::osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
