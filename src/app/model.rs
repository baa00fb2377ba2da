//! All console state. Plain data: `update` changes it, `view` reads it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use super::fleet::{Fleet, Shown};
use super::keymap::Keymap;
use super::msg::PromptRequest;
use super::output_buffer::OutputBuffer;
use super::theme::Theme;
use crate::i18n::Locale;
use crate::inventory::Host;

pub use super::boards::{Dashboard, DriftBoard, MetricHistory};
pub use super::inventory::InventoryState;
pub use super::pane::Pane;

/// What a reachability check or a run learnt about a host since the fleet
/// was loaded. Kept beside the fleet, which is shared and never changed in
/// place; the next reload brings the same from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Whether it answered.
    pub reachable: bool,
    /// When it was checked (RFC 3339), if it was a check.
    pub at: Option<String>,
}

/// The add/edit host form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostForm {
    /// The host being edited (`None` when adding).
    pub original: Option<String>,
    /// Field values, in [`HostForm::FIELDS`] order.
    pub values: Vec<String>,
    /// The field being typed in.
    pub focus: usize,
    /// Why the last save was refused.
    pub error: Option<crate::i18n::Text>,
}

impl HostForm {
    /// Locale keys of the fields: name, address, port, user, tags, jump, elevation.
    pub const FIELDS: [&'static str; 7] =
        ["form.name", "form.address", "form.port", "form.user", "form.tags", "form.jump", "form.elevation"];

    /// An empty form (adding) or one filled from `host` (editing).
    pub fn new(host: Option<&Host>) -> Self {
        let values = match host {
            None => vec![
                String::new(),
                String::new(),
                "22".into(),
                String::new(),
                String::new(),
                String::new(),
                "none".into(),
            ],
            Some(h) => vec![
                h.name.clone(),
                h.hostname.clone(),
                h.port.to_string(),
                h.username.clone().unwrap_or_default(),
                h.tags.join(","),
                h.jump.clone().unwrap_or_default(),
                h.elevation.as_str().to_string(),
            ],
        };
        Self { original: host.map(|h| h.name.clone()), values, focus: 0, error: None }
    }

    /// The host the form describes, or which field is wrong and why.
    pub fn to_host(&self) -> Result<Host, crate::i18n::Text> {
        use crate::i18n::Text;
        let v = |i: usize| self.values.get(i).map(|s| s.trim().to_string()).unwrap_or_default();
        crate::inventory::host::validate_name(&v(0)).map_err(|e| Text::key("form.err_name", &[("error", &e)]))?;
        if v(1).is_empty() {
            return Err(Text::key("form.err_address", &[]));
        }
        let bad_port = || Text::key("form.err_port", &[("value", &v(2))]);
        let port: u16 = v(2).parse().map_err(|_| bad_port())?;
        if port == 0 {
            return Err(bad_port());
        }
        let elevation = v(6).parse().map_err(|e: String| Text::key("form.err_elevation", &[("error", &e)]))?;
        let mut host = Host::new(v(0), v(1));
        host.port = port;
        host.username = Some(v(3)).filter(|u| !u.is_empty());
        for tag in v(4).split(',').map(str::trim).filter(|t| !t.is_empty()) {
            host.add_tag(tag);
        }
        host.jump = Some(v(5)).filter(|j| !j.is_empty());
        host.elevation = elevation;
        // Lengths and characters of every field, as the store checks them.
        crate::inventory::host::validate_host(&host).map_err(Text::Raw)?;
        Ok(host)
    }
}

/// Pipeline pane: the diff viewer's position and layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffView {
    /// First row shown.
    pub scroll: usize,
    /// Side by side instead of unified.
    pub side_by_side: bool,
}

/// Chat pane scrolling and the selected tool cell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatView {
    /// Rows scrolled up from the newest.
    pub scroll: usize,
    /// Index (in `Model::chat`) of the selected tool cell.
    pub selected: Option<usize>,
    /// Entries added while the person was not following the bottom (scrolled up or on a cell):
    /// shown as "↓ N new" until they go back down.
    pub unseen: usize,
    /// Esc was pressed once in the chat: a second Esc puts the last question back for editing.
    pub edit_armed: bool,
}

impl ChatView {
    /// Whether the pane shows the newest line as entries arrive.
    pub fn following(&self) -> bool {
        self.scroll == 0 && self.selected.is_none()
    }
}

/// How a toast looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToastLevel {
    Info,
    Success,
    Error,
}

/// A short notice in the corner about something that happened in the
/// background; it fades after a few seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toast {
    pub level: ToastLevel,
    pub text: String,
    /// Ticks (half-seconds) left on screen.
    pub ticks_left: u16,
}

/// Output pane scroll and search state.
#[derive(Debug, Clone)]
pub struct OutputView {
    /// The host picker (`h`) is open on this row (row 0 is "all hosts").
    pub host_picker: Option<usize>,
    /// Lines scrolled up from the newest.
    pub scroll: usize,
    /// Stick to the newest line.
    pub follow: bool,
    /// The search text (matching lines are highlighted).
    pub search: String,
    /// Whether keys go to the search text.
    pub searching: bool,
    /// Show only this host's lines.
    pub host: Option<String>,
    /// Where a line selection started (lines from the newest); the other end is `cursor`.
    pub anchor: Option<usize>,
    /// The selection's moving end (lines from the newest); the screen follows it.
    pub cursor: usize,
    /// Live lines, or a view of the focused run.
    pub mode: OutputMode,
    /// Rows scrolled down from the top of a run view (grouped, failed, diff).
    pub report_scroll: usize,
}

/// Who wrote a chat entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRole {
    /// The operator.
    User,
    /// The agent.
    Assistant,
    /// merlya itself (banners, notices).
    System,
    /// What the agent did (delegations, commands).
    Tool,
}

/// One chat entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatEntry {
    pub role: ChatRole,
    pub text: String,
    /// Output of a tool call (its cell shows it when expanded).
    pub detail: Vec<String>,
    /// Whether the detail is shown.
    pub expanded: bool,
    /// The agent's text rendered as Markdown, kept so frames do not parse and
    /// highlight the whole conversation again (`None`: render when drawn).
    pub rendered: Option<Vec<ratatui::text::Line<'static>>>,
    /// While the reply streams: its finished blocks rendered once, the growing one per chunk.
    pub streamed: Option<super::markdown::Streamed>,
}

impl ChatEntry {
    /// An entry with no detail. Its text may come from the model or a host:
    /// control characters are made visible before it is ever drawn.
    pub fn new(role: ChatRole, text: impl Into<String>) -> Self {
        let text: String = text.into();
        let text = crate::term_safe::visible(&text).into_owned();
        Self { role, text, detail: Vec::new(), expanded: false, rendered: None, streamed: None }
    }

    /// Renders the agent's Markdown once for every frame to come (a finished reply, whole).
    pub fn render_markdown(&mut self, theme: &Theme) {
        if self.role == ChatRole::Assistant {
            self.rendered = Some(super::markdown::render(&self.text, theme));
            self.streamed = None;
        }
    }

    /// Renders what a chunk added to a streaming reply (its finished blocks stay as rendered).
    pub fn stream_markdown(&mut self, theme: &Theme) {
        if self.role == ChatRole::Assistant {
            self.rendered = None;
            self.streamed.get_or_insert_with(Default::default).update(&self.text, theme);
        }
    }

    /// The reply's rendered lines, if rendered (whole, or as far as it streamed).
    pub fn markdown_lines(&self) -> Option<Box<dyn Iterator<Item = &ratatui::text::Line<'static>> + '_>> {
        match (&self.rendered, &self.streamed) {
            (Some(lines), _) => Some(Box::new(lines.iter())),
            (None, Some(streamed)) => Some(Box::new(streamed.lines())),
            (None, None) => None,
        }
    }
}

/// The editor at the bottom: a multi-line text area (Alt-Enter or Ctrl-J
/// for a new line), its history, and the completion popup's state.
#[derive(Debug, Clone, Default)]
pub struct InputLine {
    /// Whether keys go here.
    pub active: bool,
    /// The text being typed.
    pub editor: ratatui_textarea::TextArea<'static>,
    /// Submitted lines, oldest first.
    pub history: Vec<String>,
    /// Position while browsing history with Up/Down.
    pub history_pos: Option<usize>,
    /// The highlighted suggestion of the completion popup.
    pub completion: usize,
    /// The popup was closed with Esc for this text.
    pub completion_closed: bool,
}

impl InputLine {
    /// The text, lines joined with newlines.
    pub fn text(&self) -> String {
        self.editor.lines().join("\n")
    }

    /// Replaces the text, cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        let lines: Vec<String> = text.split('\n').map(String::from).collect();
        self.editor = ratatui_textarea::TextArea::new(lines);
        self.editor.move_cursor(ratatui_textarea::CursorMove::Bottom);
        self.editor.move_cursor(ratatui_textarea::CursorMove::End);
        self.completion = 0;
        self.completion_closed = false;
    }
}

/// Finished runs kept for rerun, grouping and export (the newest ones).
pub const KEPT_RUNS: usize = 20;

/// A host's last failure, shown in the inventory until it next succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    pub failure: crate::exec::HostFailure,
    /// The words of the error (host text made visible).
    pub message: String,
    /// When it happened (RFC 3339, UTC).
    pub at: String,
}

/// What the output pane shows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Every host's lines as they arrive.
    #[default]
    Live,
    /// The focused run with identical outputs folded (`dshbak -c`).
    Grouped,
    /// The focused run's failed hosts only, grouped.
    Failed,
    /// A diff of two hosts' outputs in the focused run.
    Diff(String, String),
}

/// Where a key goes, decided in one place: the first layer that is open wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// A prompt (a worker's question or the console's own).
    Prompt,
    /// The add/edit host form.
    Form,
    /// `/setup`'s model questions.
    Setup,
    /// The tag picker over the inventory.
    TagPicker,
    /// The inventory's order or column picker.
    InventoryPicker,
    /// The help overlay.
    Help,
    /// The text input at the bottom (`!`, `:`, `/`, chat).
    Editor,
    /// The inventory's filter text.
    Filter,
    /// The output pane's search text.
    Search,
    /// Typing the Drift pane's filter.
    DriftFilter,
    /// Key bindings of the focused pane, then the global ones.
    Panes,
}

/// What a "yes" to the console's own question does.
#[derive(Debug)]
pub enum OnYes {
    /// Work for a worker (deleting hosts).
    Effect(super::msg::Effect),
    /// Quit, cancelling the runs in flight. `only_for_runs`: the question was
    /// asked only because runs were in flight, so it answers itself once they end.
    Quit { only_for_runs: bool },
}

/// A prompt on screen or queued, with what has been typed for a secret.
#[derive(Debug)]
pub struct PendingPrompt {
    pub request: PromptRequest,
    pub typed: String,
    /// Rows the body is scrolled (long diffs).
    pub scroll: usize,
    /// Work to do when the console's own question is answered yes (deleting hosts, quitting).
    pub on_yes: Option<OnYes>,
}

impl PendingPrompt {
    /// A worker's request.
    pub fn new(request: PromptRequest) -> Self {
        Self { request, typed: String::new(), scroll: 0, on_yes: None }
    }
}

/// Everything the console shows.
#[derive(Debug)]
pub struct Model {
    /// The inventory, shared with the executor and workers (one copy of a large fleet).
    pub hosts: Arc<Fleet>,
    /// Reachability learnt since `hosts` was loaded, by host name.
    pub checked: BTreeMap<String, Checked>,
    pub inventory: InventoryState,
    pub output: OutputBuffer,
    pub output_view: OutputView,
    pub chat: Vec<ChatEntry>,
    pub focus: Pane,
    /// Which tab the top-right area shows.
    pub view: Pane,
    /// Pipeline runs, metrics.
    pub dashboard: Dashboard,
    /// The metrics over time.
    pub metric_history: MetricHistory,
    /// Whether a dashboard has arrived (the first is the baseline of the history).
    pub dashboard_seen: bool,
    /// Selected pipeline run.
    pub pipeline_cursor: usize,
    /// Selected row of the Drift pane (resources first, then host findings).
    pub drift_cursor: usize,
    /// A drift check is running (the pane says so; another is not started).
    pub drift_checking: bool,
    /// The selected row's diff fills the Drift pane (Enter), scrolled by `diff_view`.
    pub drift_diff_open: bool,
    /// The Drift pane's filter (`/`): rows holding every word.
    pub drift_filter: String,
    /// The filter is being typed.
    pub drift_filtering: bool,
    pub input: InputLine,
    /// Diff viewer state of the pipeline pane.
    pub diff_view: DiffView,
    /// Chat scrolling and tool-cell selection.
    pub chat_view: ChatView,
    /// Output of agent commands still running, per host (moved into the tool cell when done).
    pub agent_output: BTreeMap<String, Vec<String>>,
    /// The add/edit host form, when open.
    pub form: Option<HostForm>,
    /// `/setup`'s model questions, while asked.
    pub setup: Option<super::setup::SetupFlow>,
    /// Background notices, newest last.
    pub toasts: VecDeque<Toast>,
    /// Why the shared store cannot be reached, while it cannot: the console shows what it has and
    /// refuses work that would write (ADR 0032).
    pub store_down: Option<String>,
    /// This console's `operator.name`: a change it requested is not offered to it for review.
    pub operator: String,
    /// The focused pane fills the screen (`z`).
    pub zoomed: bool,
    /// Front is on screen; the rest wait.
    pub prompts: VecDeque<PendingPrompt>,
    pub help_open: bool,
    /// Rows the help overlay is scrolled.
    pub help_scroll: usize,
    /// Runs in flight and the newest finished ones, by id.
    pub runs: BTreeMap<u64, crate::exec::runs::Run>,
    /// The hosts of each run, to rerun it (a run's tracker keeps names only).
    pub run_hosts: BTreeMap<u64, (Vec<Host>, String)>,
    pub next_run: u64,
    /// Concrete host names of ~/.ssh/config, usable as targets outside the inventory.
    pub ssh_aliases: Vec<String>,
    /// The run that stands for the agent's current turn (its commands, per host).
    pub agent_run: Option<u64>,
    /// The watch in progress (`:watch N -- CMD`).
    pub watch: Option<super::watch::Watch>,
    /// Watches started (the newest's number: a tick of an older one is ignored).
    pub watches: u64,
    /// Each host's last failure, by host name.
    pub host_errors: BTreeMap<String, HostError>,
    /// Each host's last health readings (load, disk, memory), by host name.
    pub health: BTreeMap<String, super::inventory::Health>,
    /// One-line notice in the status bar (errors, confirmations).
    pub flash: Option<String>,
    pub model_configured: bool,
    /// An agent turn is running.
    pub agent_busy: bool,
    pub theme: Theme,
    /// The active key bindings.
    pub keymap: Keymap,
    /// The strings of the chosen language.
    pub locale: Locale,
    pub should_quit: bool,
    /// Terminal size, for paging.
    pub size: (u16, u16),
}

/// Notifications shown at once (the newest); the others wait, counted.
pub const NOTICES: usize = 3;

impl Model {
    /// What the Drift pane lists: every row, or those its filter keeps.
    pub fn drift_board(&self) -> std::borrow::Cow<'_, DriftBoard> {
        if self.drift_filter.trim().is_empty() {
            std::borrow::Cow::Borrowed(&self.dashboard.drift)
        } else {
            std::borrow::Cow::Owned(self.dashboard.drift.filtered(&self.drift_filter))
        }
    }

    /// Adds an entry to the chat; counted as unseen when the person is not following the bottom.
    pub fn push_chat(&mut self, entry: ChatEntry) {
        self.chat.push(entry);
        if !self.chat_view.following() {
            self.chat_view.unseen += 1;
        }
    }

    /// A model showing `hosts`, keeping `scrollback` output lines.
    pub fn new(hosts: Vec<Host>, model_configured: bool, scrollback: usize, theme: Theme) -> Self {
        let mut chat = Vec::new();
        if !model_configured {
            chat.push(ChatEntry::new(ChatRole::System, Locale::default().t("banner.no_model")));
        }
        let hosts = Arc::new(Fleet::new(hosts));
        Self {
            inventory: InventoryState {
                shown: Shown::all(hosts.clone()),
                columns: crate::inventory::columns::Column::ALL.to_vec(),
                ..Default::default()
            },
            hosts,
            checked: BTreeMap::new(),
            output: OutputBuffer::new(scrollback),
            output_view: OutputView {
                host_picker: None,
                scroll: 0,
                follow: true,
                search: String::new(),
                searching: false,
                host: None,
                anchor: None,
                cursor: 0,
                mode: OutputMode::Live,
                report_scroll: 0,
            },
            chat,
            focus: Pane::Inventory,
            view: Pane::Output,
            dashboard: Dashboard::default(),
            metric_history: MetricHistory::default(),
            dashboard_seen: false,
            drift_cursor: 0,
            drift_checking: false,
            drift_diff_open: false,
            drift_filter: String::new(),
            drift_filtering: false,
            pipeline_cursor: 0,
            input: InputLine::default(),
            diff_view: DiffView::default(),
            chat_view: ChatView::default(),
            agent_output: BTreeMap::new(),
            form: None,
            setup: None,
            toasts: VecDeque::new(),
            store_down: None,
            operator: String::new(),
            zoomed: false,
            prompts: VecDeque::new(),
            help_open: false,
            help_scroll: 0,
            runs: BTreeMap::new(),
            run_hosts: BTreeMap::new(),
            next_run: 1,
            watch: None,
            watches: 0,
            ssh_aliases: Vec::new(),
            agent_run: None,
            host_errors: BTreeMap::new(),
            health: BTreeMap::new(),
            flash: None,
            model_configured,
            agent_busy: false,
            theme,
            keymap: Keymap::default(),
            locale: Locale::default(),
            should_quit: false,
            size: (80, 24),
        }
    }

    /// Switches the language, translating the no-model banner if it is shown.
    pub fn set_locale(&mut self, locale: Locale) {
        let old = self.locale.t("banner.no_model").to_string();
        for entry in self.chat.iter_mut().filter(|e| e.role == ChatRole::System && e.text == old) {
            entry.text = locale.t("banner.no_model").to_string();
        }
        self.locale = locale;
    }

    /// Removes the "no model is configured" note: a model was set up and works.
    pub fn forget_no_model_note(&mut self) {
        let note = self.locale.t("banner.no_model").to_string();
        self.chat.retain(|e| !(e.role == ChatRole::System && e.text == note));
    }

    /// Shows a toast for about four seconds (at most five on screen).
    pub fn toast(&mut self, level: ToastLevel, text: impl Into<String>) {
        if self.toasts.len() == 5 {
            self.toasts.pop_front();
        }
        // Toasts carry host errors: control characters are shown, not sent to the terminal.
        let text = crate::term_safe::visible_line(&text.into()).into_owned();
        self.toasts.push_back(Toast { level, text, ticks_left: 8 });
    }

    /// Every tag in the inventory with its host count, by name (counted once per load).
    pub fn tags(&self) -> &[(String, usize)] {
        self.hosts.tags()
    }

    /// Replaces the inventory (tests and fixtures; the console gets fleets built by a worker).
    pub fn set_hosts(&mut self, hosts: Vec<Host>) {
        self.set_fleet(Arc::new(Fleet::new(hosts)));
    }

    /// Shows `fleet`, unfiltered (at start: the filter is empty).
    pub fn set_fleet(&mut self, fleet: Arc<Fleet>) {
        self.hosts = fleet;
        self.inventory.shown = Shown::all(self.hosts.clone());
        self.inventory.order = None;
        self.inventory.pending = None;
        self.inventory.answers.clear();
        self.checked.clear();
    }

    /// Whether `host` answered last time anyone looked (`None`: never checked).
    pub fn reachable(&self, host: &Host) -> Option<bool> {
        self.checked.get(&host.name).map(|c| c.reachable).or(host.reachable)
    }

    /// When `host` was last checked.
    pub fn last_check<'a>(&'a self, host: &'a Host) -> Option<&'a str> {
        self.checked.get(&host.name).and_then(|c| c.at.as_deref()).or(host.last_check.as_deref())
    }

    /// The host under the inventory cursor.
    pub fn current_host(&self) -> Option<&Host> {
        self.inventory.row(self.inventory.cursor)
    }

    /// How many hosts the inventory lists.
    pub fn visible_count(&self) -> usize {
        self.inventory.len()
    }

    /// The diff of the selected pipeline run, parsed.
    pub fn selected_diff(&self) -> Option<super::diff_view::Diff> {
        let run = self.dashboard.pipelines.get(self.pipeline_cursor)?;
        let diff = run.diff.as_str();
        (!diff.is_empty()).then(|| super::diff_view::Diff::parse(diff))
    }

    /// Rows inside the output pane's border.
    pub fn output_rows(&self) -> usize {
        let screen = ratatui::layout::Rect::new(0, 0, self.size.0, self.size.1);
        usize::from(self.areas(screen).view.height.saturating_sub(2)).max(1)
    }

    /// Where each pane sits on `screen`: on a wide screen the inventory takes the width the
    /// columns of its rows on screen would like (up to half of it).
    pub fn areas(&self, screen: ratatui::layout::Rect) -> super::layout::Areas {
        let input = self.input_rows();
        let zoomed = self.zoomed_pane();
        let wants = if screen.width >= super::layout::WIDE && zoomed.is_none() {
            // The table's rows: the body less the input, the status bar, two borders and the header.
            let body = screen.height.saturating_sub(input.max(1) + 1 + 3);
            let (_, hosts) = super::inventory_table::on_screen(self, usize::from(body));
            u16::try_from(super::inventory_table::wanted_width(self, &hosts)).unwrap_or(u16::MAX)
        } else {
            0
        };
        super::layout::Areas::of(screen, input, zoomed, wants)
    }

    /// The newest line on screen, counted from the newest line held: the
    /// scroll position, except near the oldest lines, where the screen stays
    /// full instead of ending in blank rows.
    pub fn output_bottom(&self, rows: usize) -> usize {
        let total = self.output.count(self.output_view.host.as_deref());
        self.output_view.scroll.min(total.saturating_sub(rows))
    }

    /// The selected lines, oldest first as positions from the newest: (high, low).
    pub fn output_selection(&self) -> Option<(usize, usize)> {
        let view = &self.output_view;
        view.anchor.map(|a| (a.min(view.cursor), a.max(view.cursor)))
    }

    /// Where the next key goes.
    pub fn input_mode(&self) -> InputMode {
        if !self.prompts.is_empty() {
            InputMode::Prompt
        } else if self.form.is_some() {
            InputMode::Form
        } else if self.setup.is_some() {
            InputMode::Setup
        } else if self.inventory.tag_picker.is_some() || self.output_view.host_picker.is_some() {
            InputMode::TagPicker
        } else if self.inventory.picker.is_some() {
            InputMode::InventoryPicker
        } else if self.help_open {
            InputMode::Help
        } else if self.input.active {
            InputMode::Editor
        } else if self.inventory.filtering {
            InputMode::Filter
        } else if self.output_view.searching {
            InputMode::Search
        } else if self.drift_filtering {
            InputMode::DriftFilter
        } else {
            InputMode::Panes
        }
    }

    /// Runs that may still start or report, oldest first.
    pub fn active_runs(&self) -> Vec<&crate::exec::runs::Run> {
        self.runs.values().filter(|r| r.state.is_active()).collect()
    }

    /// The run the output pane's run views and `r` act on: the newest.
    pub fn focused_run(&self) -> Option<&crate::exec::runs::Run> {
        self.runs.values().next_back()
    }

    /// The newest run still in flight (what Ctrl-C cancels).
    pub fn newest_active_run(&self) -> Option<&crate::exec::runs::Run> {
        self.runs.values().rev().find(|r| r.state.is_active())
    }

    /// A host's state in the newest run that reached it: a run denied or stopped before it
    /// started there leaves the state it had before (a host is not "pending" on a change that
    /// will never run).
    pub fn host_run_state(&self, host: &str) -> Option<crate::exec::runs::HostState> {
        use crate::exec::runs::HostState;
        self.runs
            .values()
            .rev()
            .filter_map(|r| r.hosts.get(host).map(|h| (r.state, h.state)))
            .find(|(run, state)| {
                *run != crate::exec::runs::RunState::Denied && (run.is_active() || *state != HostState::Pending)
            })
            .map(|(_, state)| state)
    }

    /// Whether an approval is on screen or queued.
    pub fn awaiting_approval(&self) -> bool {
        self.prompts.iter().any(|p| p.request.kind == super::msg::PromptKind::Approval)
    }

    /// The pane that fills the screen, if zoomed.
    pub fn zoomed_pane(&self) -> Option<Pane> {
        self.zoomed.then_some(self.focus)
    }

    /// Rows the input line takes: one, or up to six while a multi-line message is typed.
    pub fn input_rows(&self) -> u16 {
        let editor =
            if self.input.active { u16::try_from(self.input.editor.lines().len().clamp(1, 6)).unwrap_or(6) } else { 1 };
        editor + self.notice_rows()
    }

    /// Notifications shown above the input line (the newest three): rows taken from the panes,
    /// so that a notification hides nothing.
    pub fn notice_rows(&self) -> u16 {
        u16::try_from(self.toasts.len().min(NOTICES)).unwrap_or(0)
    }

    /// Moves focus; a top-right tab also becomes the one shown.
    pub fn set_focus(&mut self, pane: Pane) {
        self.focus = pane;
        if pane.is_view() {
            self.view = pane;
        }
    }

    /// Hosts that pass the filter, best matches first (see [`super::fleet::filter`]); every one
    /// of them, so linear in the fleet: screens take a window of the inventory.
    pub fn visible_hosts(&self) -> Vec<&Host> {
        self.inventory.window(0, usize::MAX)
    }

    /// The marked hosts, or the one under the cursor when none is marked.
    pub fn selection(&self) -> Vec<Host> {
        if !self.inventory.marked.is_empty() {
            return self.hosts.iter().filter(|h| self.inventory.marked.contains(&h.name)).cloned().collect();
        }
        self.current_host().map(|h| vec![h.clone()]).unwrap_or_default()
    }
}
