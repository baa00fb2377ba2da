//! Key bindings, listed once: the help overlay and the status-bar hints are
//! both generated from this table, so they cannot disagree with each other.
//! (The keymap-file issue replaces the constants with a loaded keymap.)

use super::model::Pane;

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyContext {
    /// Everywhere outside text input.
    Global,
    /// Inventory pane focused.
    Inventory,
    /// Output pane focused.
    Output,
    /// Chat pane focused.
    Chat,
    /// A prompt is on screen.
    Modal,
}

impl KeyContext {
    /// Heading in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            KeyContext::Global => "Global",
            KeyContext::Inventory => "Inventory",
            KeyContext::Output => "Output",
            KeyContext::Chat => "Chat",
            KeyContext::Modal => "Prompt",
        }
    }
}

/// One binding.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    /// Keys as shown to the user.
    pub keys: &'static str,
    /// What they do.
    pub action: &'static str,
    /// Where.
    pub context: KeyContext,
    /// Short label for the status bar; empty means "not shown there".
    pub hint: &'static str,
}

const fn b(keys: &'static str, action: &'static str, context: KeyContext, hint: &'static str) -> Binding {
    Binding { keys, action, context, hint }
}

/// Every binding of the console.
pub const BINDINGS: &[Binding] = &[
    b("Tab", "next pane (Shift-Tab: previous)", KeyContext::Global, "pane"),
    b("1 2 3", "inventory, output, chat", KeyContext::Global, ""),
    b("!", "run a command on the selection", KeyContext::Global, "run"),
    b(":", "command line: :exec TARGETS -- CMD, :reload, :clear, :q", KeyContext::Global, "cmd"),
    b("?", "this help", KeyContext::Global, "help"),
    b("q", "quit", KeyContext::Global, "quit"),
    b("j/k ↑/↓", "move", KeyContext::Inventory, ""),
    b("Space", "mark host", KeyContext::Inventory, "mark"),
    b("a", "mark all shown / none", KeyContext::Inventory, ""),
    b("/", "filter hosts", KeyContext::Inventory, "filter"),
    b("Enter", "run a command on the selection", KeyContext::Inventory, ""),
    b("j/k ↑/↓ PgUp/PgDn", "scroll", KeyContext::Output, ""),
    b("g/G", "top/bottom", KeyContext::Output, ""),
    b("f", "follow new output", KeyContext::Output, "follow"),
    b("c", "clear", KeyContext::Output, ""),
    b("i / Enter", "write to the agent", KeyContext::Chat, "write"),
    b("y / n", "answer yes / no", KeyContext::Modal, "yes/no"),
    b("Enter", "submit", KeyContext::Modal, "submit"),
    b("Esc", "decline (all queued too with Ctrl-C)", KeyContext::Modal, "decline"),
];

/// Hints for the status bar when `pane` has focus.
pub fn hints(pane: Pane) -> Vec<&'static Binding> {
    let context = pane_context(pane);
    BINDINGS
        .iter()
        .filter(|b| !b.hint.is_empty() && (b.context == context || b.context == KeyContext::Global))
        .collect()
}

/// The binding context of a pane.
pub fn pane_context(pane: Pane) -> KeyContext {
    match pane {
        Pane::Inventory => KeyContext::Inventory,
        Pane::Output => KeyContext::Output,
        Pane::Chat => KeyContext::Chat,
    }
}
