//! The integration tests: one test binary (one link of the whole crate), one module per area.
//! Tests share this process and run on parallel threads: a test changes no process-wide state
//! (environment, current folder, umask) and names what it starts uniquely (see tests/integration/support).

mod support;

mod agent;
mod agent_hostile;
mod audit_writers;
mod bad_day;
mod cli_language;
mod console;
mod console_runs;
mod doctor;
mod drift;
mod exec_safety;
mod first_hour;
mod first_run;
mod input_files;
mod local_sandbox;
mod mcp;
mod mcp_server;
mod metrics;
mod pipeline;
mod pipeline_ansible;
mod provision;
mod report;
mod secrets;
mod sessions;
mod skills;
mod sql_read;
mod ssh;
mod store_cli;
mod store_migrate;
mod team_console;
mod team_store;
mod template;
mod tui_e2e;
mod two_person;
