//! Key bindings per context, loaded from YAML: the built-in `default` and
//! `vim` maps (embedded from keymaps/), patched by a user file of the same
//! name in `MERLYA_HOME/keymaps/` that overrides only the actions it names.
//! A key bound to two actions in one context is an error naming the file.
//! The help overlay and the status-bar hints are generated from the active
//! map, so they always tell the truth.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::pane::Pane;

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyContext {
    /// Everywhere outside text input.
    Global,
    /// Inventory pane focused.
    Inventory,
    /// Output pane focused.
    Output,
    /// Chat pane focused.
    Chat,
    /// Pipeline pane focused.
    Pipeline,
    /// Metrics pane focused (no keys of its own: the global ones).
    Metrics,
    /// Drift pane focused.
    Drift,
    /// A prompt is on screen.
    Modal,
}

impl KeyContext {
    /// All contexts, in help order.
    pub const ALL: [KeyContext; 8] = [
        KeyContext::Global,
        KeyContext::Inventory,
        KeyContext::Output,
        KeyContext::Chat,
        KeyContext::Pipeline,
        KeyContext::Metrics,
        KeyContext::Drift,
        KeyContext::Modal,
    ];

    /// The name used in keymap files.
    pub fn name(self) -> &'static str {
        match self {
            KeyContext::Global => "global",
            KeyContext::Inventory => "inventory",
            KeyContext::Output => "output",
            KeyContext::Chat => "chat",
            KeyContext::Pipeline => "pipeline",
            KeyContext::Metrics => "metrics",
            KeyContext::Drift => "drift",
            KeyContext::Modal => "modal",
        }
    }

    /// The binding context of a pane.
    pub fn of(pane: Pane) -> Self {
        match pane {
            Pane::Inventory => KeyContext::Inventory,
            Pane::Output => KeyContext::Output,
            Pane::Chat => KeyContext::Chat,
            Pane::Pipeline => KeyContext::Pipeline,
            Pane::Metrics => KeyContext::Metrics,
            Pane::Drift => KeyContext::Drift,
        }
    }
}

macro_rules! actions {
    ($($variant:ident = $name:literal, $help:literal, $hint:literal;)*) => {
        /// Everything a key can do.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum Action { $($variant),* }

        impl Action {
            /// Every action.
            pub const ALL: &'static [Action] = &[$(Action::$variant),*];
            /// The name used in keymap files.
            pub fn name(self) -> &'static str { match self { $(Action::$variant => $name),* } }
            /// What it does, for the help overlay.
            pub fn help(self) -> &'static str { match self { $(Action::$variant => $help),* } }
            /// The locale key of its help text (`action.<name>`).
            pub fn help_key(self) -> &'static str { match self { $(Action::$variant => concat!("action.", $name)),* } }
            /// The locale key of its status-bar label (`hint.<name>`).
            pub fn hint_key(self) -> &'static str { match self { $(Action::$variant => concat!("hint.", $name)),* } }
            /// Short label for the status bar; empty when not shown there.
            pub fn hint(self) -> &'static str { match self { $(Action::$variant => $hint),* } }
            fn from_name(name: &str) -> Option<Self> { Self::ALL.iter().copied().find(|a| a.name() == name) }
        }
    };
}

actions! {
    Quit = "quit", "quit (asks when runs are in flight)", "quit";
    Interrupt = "interrupt", "stop a watch, else cancel the newest run (or the agent's turn); with nothing running, ask to quit", "";
    Rerun = "rerun", "run the newest run again on the same hosts", "rerun";
    RerunFailed = "rerun_failed", "run the newest run again on its failed hosts", "";
    Group = "group", "fold identical outputs of the newest run (again: live lines)", "group";
    FailedOnly = "failed_only", "only the failed hosts of the newest run (again: live lines)", "";
    Suspend = "suspend", "suspend to the shell (fg to come back)", "";
    Copy = "copy", "copy the selection (or the lines on screen) to the clipboard (OSC 52)", "copy";
    Select = "select", "start or end a line selection (then move, then copy)", "select";
    Help = "help", "show every key", "help";
    Zoom = "zoom", "the focused pane fills the screen (again to go back)", "";
    NextPane = "next_pane", "next pane", "pane";
    PreviousPane = "previous_pane", "previous pane", "";
    FocusInventory = "focus_inventory", "focus the inventory", "";
    FocusOutput = "focus_output", "focus the output", "";
    FocusChat = "focus_chat", "focus the chat", "";
    FocusPipeline = "focus_pipeline", "focus the change pipelines", "";
    FocusMetrics = "focus_metrics", "focus the metrics", "";
    FocusDrift = "focus_drift", "focus the drift of resources", "";
    RunOnSelection = "run_on_selection", "run a command on the selection", "run";
    CommandLine = "command_line", "command line (:exec T -- CMD, :reload, :q)", "cmd";
    Down = "down", "move or scroll down", "";
    Up = "up", "move or scroll up", "";
    PageUp = "page_up", "page up", "";
    PageDown = "page_down", "page down", "";
    Top = "top", "first line", "";
    Bottom = "bottom", "last line", "";
    Mark = "mark", "mark the host", "mark";
    MarkAll = "mark_all", "mark all shown / none", "all";
    Filter = "filter", "filter hosts", "filter";
    Open = "open", "open an exec prompt on the selection", "exec";
    Details = "details", "show or hide the host's details", "details";
    Tags = "tags", "filter by tag", "tags";
    Sort = "sort", "order by a column (again on the same column: reverse)", "order";
    Columns = "columns", "choose the columns shown (this session)", "columns";
    Ssh = "ssh", "an interactive SSH session to the host (the console comes back on exit)", "ssh";
    Check = "check", "check reachability of the selection (Drift: check for drift now)", "check";
    Reconcile = "reconcile", "apply the selected resource's expected configuration again (asks first)", "reconcile";
    Accept = "accept", "accept the selected row as it is now (asks first)", "accept";
    Ignore = "ignore", "ignore the selected host finding from now on (asks first)", "ignore";
    Add = "add", "add a host", "add";
    Edit = "edit", "edit the host", "edit";
    Delete = "delete", "delete the selection (asks first)", "";
    Reset = "reset", "clear filter and marks", "";
    Follow = "follow", "follow new output", "follow";
    Clear = "clear", "clear the output", "";
    Search = "search", "search the output", "search";
    NextHost = "next_host", "one host at a time (a picker of the hosts with output)", "host";
    Fold = "fold", "fold or unfold the output of the host on the current line", "fold";
    FoldAll = "fold_all", "fold every host's output (again: unfold all)", "";
    NextMatch = "next_match", "next (older) match", "";
    PreviousMatch = "previous_match", "previous (newer) match", "";
    Write = "write", "write to the agent", "write";
    Slash = "slash", "a chat command (/setup, /conv, /new…)", "/cmd";
    Expand = "expand", "expand or collapse the selected tool call's output", "expand";
    Retry = "retry", "send your last question to the agent again", "retry";
    EditLast = "edit_last", "your last question back in the input line to edit (Esc twice)", "";
    ScrollDiffDown = "scroll_diff_down", "scroll the diff down", "";
    ScrollDiffUp = "scroll_diff_up", "scroll the diff up", "";
    NextHunk = "next_hunk", "next hunk of the diff", "hunk";
    PreviousHunk = "previous_hunk", "previous hunk of the diff", "";
    SideBySide = "side_by_side", "unified or side-by-side diff", "split";
    Yes = "yes", "approve once / yes", "yes";
    No = "no", "deny / no", "no";
    Always = "always", "always allow this prefix on these hosts", "always";
    Submit = "submit", "submit the answer", "";
    Decline = "decline", "decline", "decline";
    DeclineAll = "decline_all", "decline every queued request", "";
}

/// One key with modifiers, as written in keymap files (`ctrl-c`, `G`, `shift-tab`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

impl KeySpec {
    /// Parses `ctrl-c`, `alt-x`, `shift-tab`, `pageup`, `?`, `G`...
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = text;
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                modifiers |= KeyModifiers::CONTROL;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-") {
                modifiers |= KeyModifiers::ALT;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "tab" => KeyCode::Tab,
            "shift-tab" | "backtab" => KeyCode::BackTab,
            "enter" => KeyCode::Enter,
            "esc" => KeyCode::Esc,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "delete" => KeyCode::Delete,
            "pagedown" => KeyCode::PageDown,
            f if f.starts_with('f') && f.len() > 1 && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) => {
                KeyCode::F(f[1..].parse().unwrap_or(1))
            }
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
            other => return Err(format!("unknown key {other:?}")),
        };
        Ok(Self { code, modifiers })
    }

    /// Whether a key press is this key (Shift is carried by the character itself).
    pub fn matches(&self, key: &KeyEvent) -> bool {
        let relevant = |m: KeyModifiers| m & (KeyModifiers::CONTROL | KeyModifiers::ALT);
        let code = match key.code {
            KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => KeyCode::Char(c.to_ascii_lowercase()),
            other => other,
        };
        code == self.code && relevant(key.modifiers) == relevant(self.modifiers)
    }
}

impl fmt::Display for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            write!(f, "Ctrl-")?;
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            write!(f, "Alt-")?;
        }
        match self.code {
            KeyCode::Char(' ') => write!(f, "Space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Tab => write!(f, "Tab"),
            KeyCode::BackTab => write!(f, "S-Tab"),
            KeyCode::Enter => write!(f, "Enter"),
            KeyCode::Esc => write!(f, "Esc"),
            KeyCode::Delete => write!(f, "Del"),
            KeyCode::Up => write!(f, "↑"),
            KeyCode::Down => write!(f, "↓"),
            KeyCode::Left => write!(f, "←"),
            KeyCode::Right => write!(f, "→"),
            KeyCode::PageUp => write!(f, "PgUp"),
            KeyCode::PageDown => write!(f, "PgDn"),
            KeyCode::Home => write!(f, "Home"),
            KeyCode::End => write!(f, "End"),
            KeyCode::F(n) => write!(f, "F{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// A keymap file that cannot be used, with where and why.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {detail}")]
pub struct KeymapError {
    pub file: String,
    pub detail: String,
}

type Table = BTreeMap<KeyContext, BTreeMap<Action, Vec<KeySpec>>>;

/// The active bindings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keymap {
    table: Table,
}

const BUILTIN: [(&str, &str); 2] =
    [("default", include_str!("../../keymaps/default.yaml")), ("vim", include_str!("../../keymaps/vim.yaml"))];

impl Default for Keymap {
    fn default() -> Self {
        // The embedded default is checked by a test; an empty map is the impossible fallback.
        Self::builtin("default").unwrap_or(Self { table: Table::new() })
    }
}

impl Keymap {
    /// A built-in map by name.
    pub fn builtin(name: &str) -> Result<Self, KeymapError> {
        let text = BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).ok_or_else(|| KeymapError {
            file: format!("keymaps/{name}.yaml"),
            detail: format!("no built-in keymap {name:?}; expected default or vim"),
        })?;
        let mut map = Self { table: Table::new() };
        map.apply(&format!("keymaps/{name}.yaml (built in)"), text)?;
        Ok(map)
    }

    /// The built-in map `name` patched by `user_dir/<name>.yaml` if it exists. A file there that
    /// cannot be read (a folder, not UTF-8, too large) is an error, not a keymap left unpatched.
    pub fn load(name: &str, user_dir: &Path) -> Result<Self, KeymapError> {
        let mut map = Self::builtin(name)?;
        let path: PathBuf = user_dir.join(format!("{name}.yaml"));
        let text = crate::input::read_optional(&path, crate::input::SETTINGS_LIMIT, "a keymap")
            .map_err(|e| KeymapError { file: path.display().to_string(), detail: e.detail() })?;
        if let Some(text) = text {
            map.apply(&path.display().to_string(), &text)?;
        }
        Ok(map)
    }

    /// Applies a file: each action it names gets exactly the keys it lists.
    fn apply(&mut self, file: &str, text: &str) -> Result<(), KeymapError> {
        let err = |detail: String| KeymapError { file: file.to_string(), detail };
        let parsed: BTreeMap<String, BTreeMap<String, Vec<String>>> = crate::input::from_yaml(text)
            .map_err(|e| err(format!("line {}: {}; expected CONTEXT: {{ ACTION: [KEYS] }}", e.line(), e.message())))?;
        for (context_name, actions) in parsed {
            let context = KeyContext::ALL.iter().copied().find(|c| c.name() == context_name).ok_or_else(|| {
                let names: Vec<&str> = KeyContext::ALL.iter().map(|c| c.name()).collect();
                err(format!("unknown context {context_name:?}; expected one of {}", names.join(", ")))
            })?;
            for (action_name, keys) in actions {
                let action = Action::from_name(&action_name).ok_or_else(|| {
                    let names: Vec<&str> = Action::ALL.iter().map(|a| a.name()).collect();
                    err(format!("{context_name}.{action_name}: unknown action; expected one of {}", names.join(", ")))
                })?;
                let keys = keys
                    .iter()
                    .map(|k| KeySpec::parse(k).map_err(|e| err(format!("{context_name}.{action_name}: {e}"))))
                    .collect::<Result<Vec<_>, _>>()?;
                self.table.entry(context).or_default().insert(action, keys);
            }
        }
        self.check_duplicates(file)
    }

    fn check_duplicates(&self, file: &str) -> Result<(), KeymapError> {
        for (context, actions) in &self.table {
            let mut seen: Vec<(KeySpec, Action)> = Vec::new();
            for (action, keys) in actions {
                for key in keys {
                    if let Some((_, other)) = seen.iter().find(|(k, _)| k == key) {
                        return Err(KeymapError {
                            file: file.to_string(),
                            detail: format!(
                                "{}: key {key} is bound to both {} and {}",
                                context.name(),
                                other.name(),
                                action.name()
                            ),
                        });
                    }
                    seen.push((*key, *action));
                }
            }
        }
        Ok(())
    }

    /// The action `key` triggers in `context`, if any.
    pub fn action(&self, context: KeyContext, key: &KeyEvent) -> Option<Action> {
        self.table.get(&context)?.iter().find(|(_, keys)| keys.iter().any(|k| k.matches(key))).map(|(a, _)| *a)
    }

    /// The keys of an action, for display (`q/Ctrl-c`).
    pub fn keys(&self, context: KeyContext, action: Action) -> String {
        self.table
            .get(&context)
            .and_then(|a| a.get(&action))
            .map(|keys| keys.iter().map(ToString::to_string).collect::<Vec<_>>().join("/"))
            .unwrap_or_default()
    }

    /// Every binding of a context, for the help overlay.
    pub fn bindings(&self, context: KeyContext) -> Vec<(Action, String)> {
        self.table
            .get(&context)
            .map(|a| a.keys().map(|action| (*action, self.keys(context, *action))).collect())
            .unwrap_or_default()
    }

    /// Status-bar hints for the focused pane: the first key of each hinted
    /// action, with the action (its label comes from the locale), most
    /// important first (the global keys, then the pane's): a bar too narrow
    /// for all of them keeps the first ones.
    pub fn hints(&self, pane: Pane) -> Vec<(String, Action)> {
        let mut out = Vec::new();
        for context in [KeyContext::Global, KeyContext::of(pane)] {
            for (action, keys) in self.table.get(&context).into_iter().flatten() {
                if let (false, Some(first)) = (action.hint().is_empty(), keys.first()) {
                    out.push((first.to_string(), *action));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn builtins_load_and_resolve_keys() {
        for name in ["default", "vim"] {
            Keymap::builtin(name).unwrap();
        }
        let map = Keymap::default();
        assert_eq!(map.action(KeyContext::Global, &press(KeyCode::Char('q'), KeyModifiers::NONE)), Some(Action::Quit));
        assert_eq!(
            map.action(KeyContext::Global, &press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Interrupt)
        );
        assert_eq!(map.action(KeyContext::Global, &press(KeyCode::Char('c'), KeyModifiers::NONE)), None);
        assert_eq!(
            map.action(KeyContext::Output, &press(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Action::Bottom)
        );
        assert_eq!(
            map.action(KeyContext::Global, &press(KeyCode::BackTab, KeyModifiers::SHIFT)),
            Some(Action::PreviousPane)
        );
        let vim = Keymap::builtin("vim").unwrap();
        assert_eq!(
            vim.action(KeyContext::Output, &press(KeyCode::Char('d'), KeyModifiers::CONTROL)),
            Some(Action::PageDown)
        );
        assert_eq!(map.keys(KeyContext::Global, Action::Quit), "q");
        assert_eq!(map.keys(KeyContext::Global, Action::Interrupt), "Ctrl-c");
    }

    #[test]
    fn a_user_file_overrides_only_what_it_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("default.yaml"), "global:\n  quit: [ctrl-q]\n").unwrap();
        let map = Keymap::load("default", dir.path()).unwrap();
        assert_eq!(
            map.action(KeyContext::Global, &press(KeyCode::Char('q'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(map.action(KeyContext::Global, &press(KeyCode::Char('q'), KeyModifiers::NONE)), None);
        assert_eq!(map.action(KeyContext::Global, &press(KeyCode::Char('?'), KeyModifiers::NONE)), Some(Action::Help));
        let hints: Vec<String> =
            map.hints(Pane::Inventory).into_iter().map(|(k, a)| format!("{k} {}", a.hint())).collect();
        assert!(hints.contains(&"Ctrl-q quit".to_string()) && hints.contains(&"/ filter".to_string()), "{hints:?}");
    }

    #[test]
    fn mistakes_name_the_file_and_the_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("default.yaml");
        let cases = [
            ("inventory:\n  mark: [a]\n", "inventory: key a is bound to both mark and mark_all"),
            ("global:\n  teleport: [t]\n", "global.teleport: unknown action"),
            ("sidebar:\n  quit: [q]\n", "unknown context \"sidebar\""),
            ("global:\n  quit: [hyper-q]\n", "global.quit: unknown key \"hyper-q\""),
            ("global: [\n", "line "),
        ];
        for (text, expected) in cases {
            std::fs::write(&file, text).unwrap();
            let e = Keymap::load("default", dir.path()).unwrap_err();
            assert_eq!(e.file, file.display().to_string());
            assert!(e.detail.contains(expected), "{text:?} → {}", e.detail);
        }
        assert!(Keymap::builtin("emacs").unwrap_err().detail.contains("expected default or vim"));
    }

    #[test]
    fn a_user_keymap_that_is_a_folder_not_utf8_or_too_deep_stops_the_load() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vim.yaml");
        std::fs::write(&file, b"global:\n  quit: [\xff]\n").unwrap();
        let e = Keymap::load("vim", dir.path()).unwrap_err();
        assert_eq!(e.file, file.display().to_string());
        assert!(e.detail.contains("line 2: column 10: byte 0xff is not UTF-8"), "{}", e.detail);

        std::fs::write(&file, format!("global:\n  quit: {}\n", "- ".repeat(200_000))).unwrap();
        let e = Keymap::load("vim", dir.path()).unwrap_err();
        assert!(e.detail.contains("line 2: nested deeper than 100 levels"), "{}", e.detail);

        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        let e = Keymap::load("vim", dir.path()).unwrap_err();
        assert_eq!(e.detail, "is a folder, expected a file");
    }

    #[test]
    fn every_action_has_translated_help_and_hints() {
        let en = crate::i18n::Locale::new("en").unwrap();
        for action in Action::ALL {
            assert_ne!(en.t(action.help_key()), action.help_key(), "locales/en.yaml lacks {}", action.help_key());
            if !action.hint().is_empty() {
                assert_ne!(en.t(action.hint_key()), action.hint_key(), "locales/en.yaml lacks {}", action.hint_key());
            }
        }
    }
}
