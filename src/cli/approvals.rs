//! `merlya approvals list|revoke`: the stored "always allow" rules.

use clap::Subcommand;
use color_eyre::eyre::Result;

use super::lang::{t, tf};
use super::{EXIT_ERROR, EXIT_OK, ListFormat, table};
use crate::context::Context;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ApprovalsCommand {
    /// List stored rules.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Delete a rule by id.
    Revoke { id: i64 },
}

pub async fn run(ctx: &Context, cmd: ApprovalsCommand) -> Result<u8> {
    match cmd {
        ApprovalsCommand::List { format } => {
            let rules = ctx.store.list_rules().await?;
            match format {
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&rules)?),
                ListFormat::Table => {
                    let rows: Vec<Vec<String>> = rules
                        .iter()
                        .map(|r| {
                            vec![
                                r.id.to_string(),
                                r.prefix.clone(),
                                r.hosts.join(","),
                                r.created_by.clone(),
                                r.created_at.clone(),
                            ]
                        })
                        .collect();
                    let headers = ["cli.h.id", "cli.h.prefix", "cli.h.hosts", "cli.h.by", "cli.h.created"].map(t);
                    print!("{}", table::render(&headers.each_ref().map(String::as_str), &rows));
                }
            }
        }
        ApprovalsCommand::Revoke { id } => {
            if !ctx.store.revoke_rule(id).await? {
                eprintln!("{}", tf("cli.approvals.no_rule", &[("id", &id.to_string())]));
                return Ok(EXIT_ERROR);
            }
            println!("{}", tf("cli.approvals.revoked", &[("id", &id.to_string())]));
        }
    }
    Ok(EXIT_OK)
}
