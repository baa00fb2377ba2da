//! The console: one Elm loop.
//!
//! - [`model::Model`] holds all UI state; nothing else does.
//! - [`msg::Msg`] is everything that can happen: keys, paste, resize, and
//!   reports from workers (command output, prompts from the SSH layer).
//! - [`update::update`] is pure: it changes the model and returns
//!   [`msg::Effect`]s; it never awaits and never does I/O, so it is unit-tested.
//! - [`view::view`] draws the model and changes nothing.
//! - [`runtime`] owns the terminal, turns events into messages, runs effects
//!   on tokio tasks (workers) and feeds their results back as messages over an
//!   [`sender::AppSender`], which never panics on a closed channel.
//!
//! A worker that needs a person (unknown host key, passphrase, MFA code) sends
//! a prompt carrying a `oneshot` reply; prompts queue while one is on screen.

/// What the Pipeline, Metrics and Drift panes show, from the store.
pub mod boards;
/// What a line typed at the bottom means (`!`, `:`, `/`, chat).
pub mod command_line;
/// Suggestions for the completion popup, from the parser's own tables.
pub mod completion;
/// `/conv` sub-commands, answered by a worker.
mod conv_worker;
/// A unified diff as rows and hunks, unified or side by side.
pub mod diff_view;
mod drift_worker;
/// The inventory held once and filtered within a frame.
pub mod fleet;
/// syntect highlighting for code blocks and diffs.
pub mod highlight;
/// The inventory table's order, pickers and health readings.
pub mod inventory;
/// Which inventory columns are drawn, how wide, and the width the table would like.
pub mod inventory_table;
/// Key bindings per context, from YAML.
pub mod keymap;
/// Where each pane sits for a screen size.
pub mod layout;
/// Markdown to terminal lines for the chat.
pub mod markdown;
/// `/mcp` in the console, answered by a worker.
mod mcp_worker;
/// All console state.
pub mod model;
/// Messages in, effects out.
pub mod msg;
/// Per-host bounded scrollback.
pub mod output_buffer;
/// The panes and their order.
pub mod pane;
/// The console's `Prompter` and `Approver`: questions become modals.
pub mod prompter;
/// Cancel tokens of runs and the agent's turn.
mod run_control;
/// The worker behind a console run.
mod run_worker;
/// The terminal and the event loop.
pub mod runtime;
/// The channel workers report on.
pub mod sender;
/// `/setup`'s model questions: the state machine the update applies.
pub mod setup;
/// `/setup`'s work: listing a provider's models, saving the answers, importing inventories.
mod setup_worker;
/// `/skill` and chat messages a runbook answers, run on a worker.
mod skill_worker;
/// `s` on a host: an interactive session with the system `ssh`.
pub mod ssh_session;
/// The shared store's doorbell: changes to re-read, the store lost and back.
mod store_worker;
/// Giving the terminal away (Ctrl-Z, `s`) and taking it back.
mod terminal_handover;
/// Colours from YAML themes.
pub mod theme;
/// The pure state transition.
pub mod update;
/// Drawing.
pub mod view;
/// A command run again every N seconds, with what changed marked.
pub mod watch;
/// Effects that touch the store, the keyring or the network.
mod workers;

pub use runtime::run_console;

/// Whether the console could start with `key` set to `value` (`ui.theme`,
/// `ui.keymap`, `ui.language`); the error names the valid values. Other keys
/// are the config loader's business.
pub fn check_ui_setting(home: &crate::home::MerlyaHome, key: &str, value: &str) -> Result<(), String> {
    match key {
        "ui.theme" => theme::Theme::load(value, &home.themes_dir(), theme::ColorDepth::TrueColor)
            .map(|_| ())
            .map_err(|e| format!("ui.theme: {e}")),
        "ui.keymap" => {
            keymap::Keymap::load(value, &home.keymaps_dir()).map(|_| ()).map_err(|e| format!("ui.keymap: {e}"))
        }
        "ui.language" => crate::i18n::Locale::new(value).map(|_| ()).map_err(|code| {
            format!("ui.language: unknown language {code:?}; expected one of {}", crate::i18n::languages().join(", "))
        }),
        _ => Ok(()),
    }
}
