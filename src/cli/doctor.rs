//! `merlya doctor [--format json]`: every health check, OK/WARN/FAIL with a fix; exit 1 on any FAIL.

use clap::Args;
use color_eyre::eyre::Result;

use super::{EXIT_ERROR, EXIT_OK, ListFormat};
use crate::health::{Status, run_all};
use crate::home::MerlyaHome;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}

/// Runs before the usual start-up, so a broken configuration or database is reported, not fatal.
pub fn run(runtime: &tokio::runtime::Runtime, home: MerlyaHome, args: DoctorArgs) -> Result<u8> {
    let checks = runtime.block_on(run_all(&home));
    if args.format == ListFormat::Json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for check in &checks {
            let detail = crate::term_safe::visible_line(&check.detail);
            println!("{:<4}  {:<width$}  {detail}", check.status.as_str(), check.name);
            if !check.hint.is_empty() {
                println!("      {:<width$}  → {}", "", crate::term_safe::visible_line(&check.hint));
            }
        }
    }
    Ok(if checks.iter().any(|c| c.status == Status::Fail) { EXIT_ERROR } else { EXIT_OK })
}
