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

pub mod command_line;
pub mod completion;
pub mod diff_view;
pub mod highlight;
pub mod keymap;
pub mod layout;
pub mod markdown;
pub mod model;
pub mod msg;
pub mod output_buffer;
pub mod prompter;
pub mod runtime;
pub mod sender;
pub mod theme;
pub mod update;
pub mod view;
mod workers;

pub use runtime::run_console;
