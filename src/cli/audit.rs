//! `merlya audit list|export|verify`.

use clap::Subcommand;
use color_eyre::eyre::{Result, bail};

use super::lang::{locale, t, tf};
use super::{EXIT_INTEGRITY, EXIT_OK, ListFormat, table};
use crate::context::Context;
use crate::store::audit::{AuditFilter, AuditOutcome, AuditRecord};

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum AuditCommand {
    /// List entries, oldest first.
    List {
        /// Only this host.
        #[arg(long)]
        host: Option<String>,
        /// Only entries since a time: RFC 3339 (2026-11-22T10:00:00Z), a date, or an age like 30m, 2h, 7d.
        #[arg(long)]
        since: Option<String>,
        /// Only this outcome (`unfinished`: started, no outcome ever written).
        #[arg(long, value_enum)]
        outcome: Option<AuditOutcome>,
        /// Only the newest N.
        #[arg(long)]
        limit: Option<i64>,
        /// Only one run of `merlya exec` (or one console session): the id it printed.
        #[arg(long)]
        run: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Export every stored entry (start, finish, attempt, re-base) with its hashes.
    Export {
        #[arg(long, value_enum)]
        format: AuditExportFormat,
    },
    /// Check the keyed chain against the checkpoint and the witness; exit 5 naming what broke.
    Verify {
        /// Read the witnessed heads from this file (what the log server keeps for a syslog witness,
        /// or `journalctl -t merlya-audit -o cat` saved on another machine).
        #[arg(long, value_name = "FILE")]
        witness_log: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditExportFormat {
    Jsonl,
    Csv,
}

pub async fn run(ctx: &Context, cmd: AuditCommand) -> Result<u8> {
    match cmd {
        AuditCommand::List { host, since, outcome, limit, run, format } => {
            let since = since.map(|s| parse_since(&s, chrono::Utc::now())).transpose()?;
            let filter = AuditFilter { host, since, outcome, limit, session: run };
            let entries = ctx.store.list_audit(&filter).await?;
            match format {
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&entries)?),
                ListFormat::Table => print!("{}", render_table(&entries)),
            }
        }
        AuditCommand::Export { format } => {
            let entries = ctx.store.audit_entries().await?;
            match format {
                AuditExportFormat::Jsonl => {
                    for e in &entries {
                        println!("{}", serde_json::to_string(e)?);
                    }
                }
                AuditExportFormat::Csv => {
                    let mut w = csv::Writer::from_writer(super::out::Output);
                    for e in &entries {
                        w.serialize(e)?;
                    }
                    w.flush()?;
                }
            }
        }
        AuditCommand::Verify { witness_log } => {
            if witness_log.is_some() && ctx.config.audit.witness.is_none() {
                bail!("{}", t("cli.audit.no_witness"));
            }
            let report = ctx.store.verify_audit_with(witness_log.as_deref()).await?;
            return Ok(if report.broken.is_none() {
                println!("{}", report.describe_in(locale()));
                EXIT_OK
            } else {
                eprintln!("{}", report.describe_in(locale()));
                EXIT_INTEGRITY
            });
        }
    }
    Ok(EXIT_OK)
}

fn render_table(entries: &[AuditRecord]) -> String {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.id.to_string(),
                e.ts.clone(),
                e.host.clone(),
                e.requested_by.clone(),
                e.outcome.as_str().to_string(),
                e.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                format!("{}ms", e.duration_ms),
                e.approved_by.clone(),
                e.command.clone(),
            ]
        })
        .collect();
    let headers = [
        "cli.h.id",
        "cli.h.time",
        "cli.h.host",
        "cli.h.asked_by",
        "cli.h.outcome",
        "cli.h.exit",
        "cli.h.duration",
        "cli.h.approved_by",
        "cli.h.command",
    ]
    .map(t);
    table::render(&headers.each_ref().map(String::as_str), &rows)
}

/// `--since`: RFC 3339, a date, or an age (`90s`, `30m`, `2h`, `7d`).
pub fn parse_since(value: &str, now: chrono::DateTime<chrono::Utc>) -> Result<String> {
    let fmt = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(value) {
        return Ok(fmt(t.with_timezone(&chrono::Utc)));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d")
        && let Some(t) = d.and_hms_opt(0, 0, 0)
    {
        return Ok(fmt(t.and_utc()));
    }
    let (number, unit) = value.split_at(value.len().saturating_sub(1));
    let seconds = match (number.parse::<i64>(), unit) {
        (Ok(n), "s") => n,
        (Ok(n), "m") => n * 60,
        (Ok(n), "h") => n * 3600,
        (Ok(n), "d") => n * 86400,
        _ => bail!("{}", tf("cli.audit.bad_since", &[("value", &format!("{value:?}"))])),
    };
    Ok(fmt(now - chrono::Duration::seconds(seconds)))
}

#[cfg(test)]
mod tests {
    use super::parse_since;

    #[test]
    fn since_accepts_times_dates_and_ages() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z").unwrap().with_timezone(&chrono::Utc);
        assert_eq!(parse_since("2h", now).unwrap(), "2026-11-22T10:00:00.000Z");
        assert_eq!(parse_since("2026-11-01", now).unwrap(), "2026-11-01T00:00:00.000Z");
        assert_eq!(parse_since("2026-11-22T11:00:00+01:00", now).unwrap(), "2026-11-22T10:00:00.000Z");
        assert!(parse_since("yesterday", now).is_err());
    }
}
