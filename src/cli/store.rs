//! `merlya store migrate --to postgres://…`: this home's store copied into a team's new PostgreSQL
//! database (ADR 0032). The password comes from `store.password`, PGPASSWORD or ~/.pgpass, as for
//! `store.url`: a URL holding one is refused, so it never sits in argv.

use clap::Subcommand;
use color_eyre::eyre::{Result, bail};

use super::lang::{locale, tf};
use super::{EXIT_INTEGRITY, EXIT_OK};
use crate::context::Context;
use crate::store::Store;
use crate::store::audit::AuditRequest;
use crate::store::migrate::{MigrateError, Migrated, migrate};
use crate::store::postgres::{StoreUrl, redact};

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum StoreCommand {
    /// Copy this home's store (audit chain verified before and after) into a new, empty PostgreSQL database.
    Migrate {
        /// The team's database: postgres://USER@HOST[:PORT]/DB[?sslmode=…] (no password: store.password,
        /// PGPASSWORD or ~/.pgpass).
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

pub async fn run(ctx: &Context, cmd: StoreCommand) -> Result<u8> {
    let StoreCommand::Migrate { to } = cmd;
    let url = match StoreUrl::parse(&to) {
        Ok(StoreUrl::Postgres(url)) => url,
        Ok(StoreUrl::Sqlite(_)) => bail!("{}", tf("cli.store.not_postgres", &[("url", &redact(&to))])),
        Err(e) => bail!("--to: {e}"),
    };
    let password = crate::context::store_password(&ctx.config)?;
    let target = Store::open_postgres(&ctx.home.database(), &url, password.as_deref()).await?;
    // The pin is signed by this operator, as every entry of a team store is (ADR 0032).
    target.set_operator(ctx.config.operator.name());
    crate::context::set_witness(&ctx.home, &ctx.config, &target)?;
    let (from, shown) = (ctx.store.location().to_string(), target.location().to_string());
    eprintln!("{}", tf("cli.store.copying", &[("from", &from), ("to", &shown)]));
    let user = crate::ssh::target::local_user();
    let command = format!("merlya store migrate --to {shown}");
    let pin = AuditRequest::local(&ctx.session_id, &user, &command, &user, None);
    let outcome = migrate(&ctx.store, &target, pin).await;
    target.close().await;
    match outcome {
        Ok(done) => {
            println!("{}", summary(&done, &from, &shown));
            Ok(EXIT_OK)
        }
        Err(MigrateError::BrokenChain { report, .. }) => {
            eprintln!("{}", tf("cli.store.broken", &[("from", &from)]));
            eprintln!("{}", report.describe_in(locale()));
            Ok(EXIT_INTEGRITY)
        }
        Err(e) => bail!("{}", explain(&e)),
    }
}

/// What was copied and pinned, and how to use the team store from now on.
fn summary(done: &Migrated, from: &str, to: &str) -> String {
    let rows: u64 = done.tables.iter().map(|(_, n)| n).sum();
    let mut lines = vec![tf(
        "cli.store.migrated",
        &[
            ("from", from),
            ("to", to),
            ("rows", &rows.to_string()),
            ("tables", &done.tables.iter().filter(|(_, n)| *n > 0).count().to_string()),
        ],
    )];
    let at = done.pinned_at.to_string();
    lines.push(match &done.old_head {
        Some(h) => tf(
            "cli.store.pinned",
            &[("id", &h.last_id.to_string()), ("count", &h.count.to_string()), ("hash", &h.hash), ("at", &at)],
        ),
        None => tf("cli.store.pinned_empty", &[("at", &at)]),
    });
    lines.push(done.report.describe_in(locale()));
    lines.push(tf("cli.store.next", &[("from", from), ("to", to)]));
    lines.join("\n")
}

/// A refusal or failure in the CLI's language.
fn explain(e: &MigrateError) -> String {
    match e {
        MigrateError::SameStore { target } => tf("cli.store.same", &[("to", target)]),
        MigrateError::BrokenChain { from, .. } => tf("cli.store.broken", &[("from", from)]),
        MigrateError::Unkeyed { from, count } => {
            tf("cli.store.unkeyed", &[("from", from), ("count", &count.to_string())])
        }
        MigrateError::NotEmpty { target, found } => {
            let found: Vec<String> = found
                .iter()
                .map(|(table, rows)| tf("cli.store.rows_in", &[("table", table), ("rows", &rows.to_string())]))
                .collect();
            tf("cli.store.not_empty", &[("to", target), ("found", &found.join(", "))])
        }
        MigrateError::SourceChanged { from } => tf("cli.store.changed", &[("from", from)]),
        MigrateError::Schema { from, target, what } => {
            tf("cli.store.schema", &[("from", from), ("to", target), ("what", what)])
        }
        MigrateError::Value { table, column, detail } => {
            tf("cli.store.value", &[("column", &format!("{table}.{column}")), ("detail", detail)])
        }
        MigrateError::NotIdentical { target, detail } => {
            tf("cli.store.not_identical", &[("to", target), ("detail", detail)])
        }
        MigrateError::Store(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_said_in_words() {
        let e = MigrateError::NotEmpty { target: "postgres://ops@db/team".into(), found: vec![("hosts".into(), 2)] };
        let text = explain(&e);
        assert!(text.contains("postgres://ops@db/team") && text.contains("hosts") && text.contains('2'), "{text}");
        assert!(!text.contains('{'), "{text}");
        let e = MigrateError::Unkeyed { from: "/h/merlya.db".into(), count: 3 };
        assert!(explain(&e).contains("/h/merlya.db"));
        let e = MigrateError::Value { table: "hosts".into(), column: "port".into(), detail: "x".into() };
        assert!(explain(&e).contains("hosts.port"));
    }
}
