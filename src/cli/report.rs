//! `merlya report [--session ID] [--since TIME] [--out FILE.md] [--format json]`: the incident report.

use clap::Args;
use color_eyre::eyre::{Result, WrapErr};

use super::lang::tf;
use super::{EXIT_OK, ListFormat};
use crate::context::Context;
use crate::report::{Scope, build, markdown};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// One session (`merlya exec` prints `run SESSION`; `merlya audit list` shows them).
    #[arg(long)]
    pub session: Option<String>,
    /// Everything at or after this time (RFC 3339, e.g. 2026-11-24T03:00:00Z).
    #[arg(long)]
    pub since: Option<String>,
    /// Write it to this file (0600) instead of standard output.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}

pub async fn run(ctx: &Context, args: ReportArgs) -> Result<u8> {
    let report = build(&ctx.store, &Scope { session: args.session, since: args.since }).await?;
    let text = match args.format {
        ListFormat::Json => serde_json::to_string_pretty(&report)?,
        ListFormat::Table => markdown(&report),
    };
    match args.out {
        Some(path) => {
            crate::home::write_private(&path, text.as_bytes())
                .wrap_err_with(|| tf("cli.cannot_write", &[("path", &path.display().to_string())]))?;
            let (path, events) = (path.display().to_string(), report.timeline.len().to_string());
            eprintln!("{}", tf("cli.report.wrote", &[("path", &path), ("events", &events)]));
        }
        None => print!("{text}"),
    }
    Ok(EXIT_OK)
}
