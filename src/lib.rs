//! merlya: a full-screen terminal operations console for fleets of Linux hosts.
//!
//! The crate is a library with a thin binary. Read `docs/ARCHITECTURE.md` for
//! the map; in short: `config`, `store`, `inventory`, `ssh` and `exec` are the
//! foundation; `cli` is the command-line surface; `app` is the console (an Elm
//! loop: `Model`, `Msg`, pure `update`, `view`, workers on channels).

pub mod agent;
pub mod app;
pub mod approval;
pub mod baseline;
pub mod cli;
pub mod config;
pub mod context;
pub mod door;
pub mod exec;
pub mod hardening;
pub mod health;
pub mod home;
pub mod i18n;
pub mod input;
pub mod inventory;
pub mod llm;
pub mod logging;
pub mod mcp;
pub mod mcp_serve;
pub mod metrics;
pub mod pipeline;
pub mod prompt;
pub mod provision;
pub mod redact;
pub mod report;
pub mod safety;
pub mod secrets;
pub mod skills;
pub mod ssh;
pub mod store;
pub mod term_safe;
pub mod text_table;
pub mod tls;
