//! All console state. Plain data: `update` changes it, `view` reads it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::keymap::Keymap;
use super::msg::PromptRequest;
use super::output_buffer::OutputBuffer;
use super::theme::Theme;
use crate::i18n::Locale;
use crate::inventory::Host;

/// The panes that take focus. Output, Pipeline, Metrics and Drift share the
/// top-right area as tabs; the last one focused is shown there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Inventory,
    Output,
    Pipeline,
    Metrics,
    Drift,
    Chat,
}

impl Pane {
    /// Tab order.
    pub const ALL: [Pane; 6] = [Pane::Inventory, Pane::Output, Pane::Pipeline, Pane::Metrics, Pane::Drift, Pane::Chat];

    /// The tabs of the top-right area.
    pub const VIEWS: [Pane; 4] = [Pane::Output, Pane::Pipeline, Pane::Metrics, Pane::Drift];

    /// The pane after this one (Tab).
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// The pane before this one (Shift-Tab).
    pub fn previous(self) -> Self {
        let i = Self::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Self::ALL[(i + Self::ALL.len() - 1) % Self::ALL.len()]
    }

    /// Whether it is one of the top-right tabs.
    pub fn is_view(self) -> bool {
        Self::VIEWS.contains(&self)
    }

    /// Name in titles.
    pub fn title(self) -> &'static str {
        match self {
            Pane::Inventory => "Inventory",
            Pane::Output => "Output",
            Pane::Pipeline => "Pipeline",
            Pane::Metrics => "Metrics",
            Pane::Drift => "Drift",
            Pane::Chat => "Chat",
        }
    }

    /// The locale key of its title.
    pub fn key(self) -> &'static str {
        match self {
            Pane::Inventory => "pane.inventory",
            Pane::Output => "pane.output",
            Pane::Pipeline => "pane.pipeline",
            Pane::Metrics => "pane.metrics",
            Pane::Drift => "pane.drift",
            Pane::Chat => "pane.chat",
        }
    }
}

/// What the metrics and pipeline panes show, refreshed from the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dashboard {
    /// Change pipeline runs, newest first.
    pub pipelines: Vec<crate::store::pipelines::PipelineRun>,
    /// Commands by outcome and latency.
    pub stats: crate::store::metrics::CommandStats,
    /// LLM calls, tokens and cost per model.
    pub spend: Vec<(String, crate::llm::client::Spend)>,
    /// Whether the LLM circuit breaker is open.
    pub breaker_open: bool,
}

/// Inventory pane state.
#[derive(Debug, Clone, Default)]
pub struct InventoryState {
    /// Row under the cursor, among the filtered hosts.
    pub cursor: usize,
    /// Names of marked hosts.
    pub marked: BTreeSet<String>,
    /// Current filter text.
    pub filter: String,
    /// Whether keys go to the filter.
    pub filtering: bool,
}

/// Output pane scroll and search state.
#[derive(Debug, Clone)]
pub struct OutputView {
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
}

/// The single-line editor at the bottom.
#[derive(Debug, Clone, Default)]
pub struct InputLine {
    /// Whether keys go here.
    pub active: bool,
    /// The text.
    pub text: String,
    /// Cursor position in characters.
    pub cursor: usize,
    /// Submitted lines, oldest first.
    pub history: Vec<String>,
    /// Position while browsing history with Up/Down.
    pub history_pos: Option<usize>,
}

/// A run in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunProgress {
    pub command: String,
    pub hosts: usize,
    pub done: usize,
    pub failed: usize,
}

/// A prompt on screen or queued, with what has been typed for a secret.
#[derive(Debug)]
pub struct PendingPrompt {
    pub request: PromptRequest,
    pub typed: String,
}

/// Everything the console shows.
#[derive(Debug)]
pub struct Model {
    pub hosts: Vec<Host>,
    pub inventory: InventoryState,
    pub output: OutputBuffer,
    pub output_view: OutputView,
    pub chat: Vec<ChatEntry>,
    pub focus: Pane,
    /// Which tab the top-right area shows.
    pub view: Pane,
    /// Pipeline runs, metrics.
    pub dashboard: Dashboard,
    /// Selected pipeline run.
    pub pipeline_cursor: usize,
    pub input: InputLine,
    /// Front is on screen; the rest wait.
    pub prompts: VecDeque<PendingPrompt>,
    pub help_open: bool,
    pub runs: BTreeMap<u64, RunProgress>,
    pub next_run: u64,
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

impl Model {
    /// A model showing `hosts`, keeping `scrollback` output lines.
    pub fn new(hosts: Vec<Host>, model_configured: bool, scrollback: usize, theme: Theme) -> Self {
        let mut chat = Vec::new();
        if !model_configured {
            chat.push(ChatEntry { role: ChatRole::System, text: Locale::default().t("banner.no_model").into() });
        }
        Self {
            hosts,
            inventory: InventoryState::default(),
            output: OutputBuffer::new(scrollback),
            output_view: OutputView { scroll: 0, follow: true, search: String::new(), searching: false, host: None },
            chat,
            focus: Pane::Inventory,
            view: Pane::Output,
            dashboard: Dashboard::default(),
            pipeline_cursor: 0,
            input: InputLine::default(),
            prompts: VecDeque::new(),
            help_open: false,
            runs: BTreeMap::new(),
            next_run: 1,
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

    /// Moves focus; a top-right tab also becomes the one shown.
    pub fn set_focus(&mut self, pane: Pane) {
        self.focus = pane;
        if pane.is_view() {
            self.view = pane;
        }
    }

    /// Hosts that pass the filter: `@tag` words keep hosts with that tag; the
    /// rest is matched fuzzily (nucleo) against name, address and tags, best
    /// matches first.
    pub fn visible_hosts(&self) -> Vec<&Host> {
        use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
        use nucleo_matcher::{Config, Matcher, Utf32Str};
        let (tags, words): (Vec<&str>, Vec<&str>) =
            self.inventory.filter.split_whitespace().partition(|w| w.starts_with('@') && w.len() > 1);
        let tagged = self.hosts.iter().filter(|h| tags.iter().all(|t| h.tags.iter().any(|ht| ht == &t[1..])));
        if words.is_empty() {
            return tagged.collect();
        }
        let pattern = Pattern::parse(&words.join(" "), CaseMatching::Ignore, Normalization::Smart);
        let mut matcher = Matcher::new(Config::DEFAULT);
        let mut buf = Vec::new();
        let mut scored: Vec<(u32, usize, &Host)> = tagged
            .enumerate()
            .filter_map(|(i, h)| {
                let haystack = format!("{} {} {}", h.name, h.hostname, h.tags.join(" "));
                pattern.score(Utf32Str::new(&haystack, &mut buf), &mut matcher).map(|s| (s, i, h))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, _, h)| h).collect()
    }

    /// The marked hosts, or the one under the cursor when none is marked.
    pub fn selection(&self) -> Vec<Host> {
        if !self.inventory.marked.is_empty() {
            return self.hosts.iter().filter(|h| self.inventory.marked.contains(&h.name)).cloned().collect();
        }
        self.visible_hosts().get(self.inventory.cursor).map(|h| vec![(*h).clone()]).unwrap_or_default()
    }
}
