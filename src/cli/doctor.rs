//! `merlya doctor [--format json]`: every health check, OK/WARN/FAIL with a fix; exit 1 on any FAIL.

use clap::Args;
use color_eyre::eyre::Result;

use super::{EXIT_ERROR, EXIT_OK, ListFormat};
use crate::health::{Check, Status, run_all};
use crate::home::MerlyaHome;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}

/// Runs before the usual start-up, so a broken configuration or database is reported, not fatal.
pub fn run(runtime: &tokio::runtime::Runtime, home: MerlyaHome, args: DoctorArgs) -> Result<u8> {
    let mut checks = runtime.block_on(run_all(&home));
    let at = checks.iter().position(|c| c.name == "config").map_or(checks.len(), |i| i + 1);
    checks.splice(at..at, console_settings(&home));
    if args.format == ListFormat::Json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        let word = |status: Status| {
            super::lang::t(match status {
                Status::Ok => "cli.doctor.ok",
                Status::Warn => "cli.doctor.warn",
                Status::Fail => "cli.doctor.fail",
            })
        };
        let status_width = [Status::Ok, Status::Warn, Status::Fail].map(|s| word(s).chars().count()).into_iter().max();
        let status_width = status_width.unwrap_or(4).max(4);
        let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for check in &checks {
            let detail = check.detail.render(super::lang::locale());
            let detail = crate::term_safe::visible_line(&detail);
            let status = super::lang::pad(&word(check.status), status_width);
            println!("{status}  {:<width$}  {detail}", check.name);
            if check.has_hint() {
                let hint = check.hint.render(super::lang::locale());
                let indent = " ".repeat(status_width + 2);
                println!("{indent}{:<width$}  → {}", "", crate::term_safe::visible_line(&hint));
            }
        }
        let count = |status: Status| checks.iter().filter(|c| c.status == status).count().to_string();
        let (fail, warn) = (count(Status::Fail), count(Status::Warn));
        println!();
        match (fail.as_str(), warn.as_str()) {
            ("0", "0") => println!("{}", super::lang::t("cli.doctor.all_ok")),
            _ => println!("{}", super::lang::tf("cli.doctor.summary", &[("fail", &fail), ("warn", &warn)])),
        }
    }
    Ok(if checks.iter().any(|c| c.status == Status::Fail) { EXIT_ERROR } else { EXIT_OK })
}

/// The console's own files (theme, keymap, language), read by the loaders the console starts with,
/// so doctor never says OK for a configuration the console would refuse.
fn console_settings(home: &MerlyaHome) -> Vec<Check> {
    let Ok(config) = crate::config::Config::load(&home.config_file()) else { return Vec::new() };
    [("ui.theme", &config.ui.theme), ("ui.keymap", &config.ui.keymap), ("ui.language", &config.ui.language)]
        .into_iter()
        .map(|(key, value)| match crate::app::check_ui_setting(home, key, value) {
            Ok(()) => Check::ok(key, value.clone()),
            Err(e) => Check::new(key, Status::Fail, e, crate::i18n::Text::key("doctor.ui_setting_fix", &[])),
        })
        .collect()
}
