//! `merlya approvals list|revoke`: the stored "always allow" rules; `merlya approvals
//! pending|review`: changes waiting for a second person (two-person approval, ADR 0033).

use clap::Subcommand;
use color_eyre::eyre::Result;

use super::lang::{t, tf};
use super::{EXIT_ERROR, EXIT_OK, ListFormat, table};
use crate::approval::two_person;
use crate::context::Context;
use crate::term_safe::visible_line;
use std::io::IsTerminal;

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
    /// Changes waiting for a second person (two-person approval).
    Pending {
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Review a waiting change: shows what was planned, then approve or reject it (asked on the
    /// terminal unless --approve or --reject says).
    Review {
        id: i64,
        /// Approve without asking.
        #[arg(long, conflicts_with = "reject")]
        approve: bool,
        /// Reject without asking.
        #[arg(long)]
        reject: bool,
        /// Words kept with the review (and in the audit log).
        #[arg(long, default_value = "")]
        note: String,
    },
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
        ApprovalsCommand::Pending { format } => {
            let pending = ctx.store.pending_change_requests().await?;
            match format {
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&pending)?),
                ListFormat::Table => {
                    let rows: Vec<Vec<String>> = pending
                        .iter()
                        .map(|r| {
                            let summary = two_person::shown(r).map_or_else(|e| e, |q| q.summary);
                            vec![
                                r.id.to_string(),
                                r.requested_by.clone(),
                                r.why.clone(),
                                visible_line(&summary).into_owned(),
                                r.expires_at.clone(),
                            ]
                        })
                        .collect();
                    let headers = ["cli.h.id", "cli.h.by", "cli.h.why", "cli.h.summary", "cli.h.expires"].map(t);
                    print!("{}", table::render(&headers.each_ref().map(String::as_str), &rows));
                }
            }
        }
        ApprovalsCommand::Review { id, approve, reject, note } => return review(ctx, id, approve, reject, &note).await,
    }
    Ok(EXIT_OK)
}

/// Shows the request exactly as its requester's approval showed it, then records the decision.
async fn review(ctx: &Context, id: i64, approve: bool, reject: bool, note: &str) -> Result<u8> {
    let Some(stored) = ctx.store.change_request(id).await? else {
        eprintln!("{}", tf("cli.review.none", &[("id", &id.to_string())]));
        return Ok(EXIT_ERROR);
    };
    let request = match two_person::shown(&stored) {
        Ok(request) => request,
        Err(e) => {
            eprintln!("{e}");
            return Ok(EXIT_ERROR);
        }
    };
    let reviewer = ctx.config.operator.name();
    let by = [("id", id.to_string()), ("who", stored.requested_by.clone()), ("why", stored.why.clone())];
    let by: Vec<(&str, &str)> = by.iter().map(|(k, v)| (*k, v.as_str())).collect();
    eprint!("{}", tf("cli.review.header", &by));
    eprintln!();
    eprint!("{}", crate::approval::render_request_in(&request, &crate::i18n::Locale::default()));
    let approve = match (approve, reject) {
        (true, _) => true,
        (_, true) => false,
        _ if std::io::stdin().is_terminal() => {
            eprint!("{}", t("cli.review.ask"));
            let mut answer = String::new();
            std::io::stdin().read_line(&mut answer)?;
            match answer.trim() {
                "a" | "approve" | "y" | "yes" => true,
                "r" | "reject" | "n" | "no" => false,
                _ => {
                    eprintln!("{}", t("cli.review.undecided"));
                    return Ok(EXIT_ERROR);
                }
            }
        }
        _ => {
            eprintln!("{}", t("cli.review.no_terminal"));
            return Ok(EXIT_ERROR);
        }
    };
    match two_person::record_review(&ctx.store, &ctx.session_id, &stored, &reviewer, approve, note).await {
        Ok(done) => {
            let key = if approve { "cli.review.approved" } else { "cli.review.rejected" };
            println!("{}", tf(key, &[("id", &done.id.to_string()), ("who", &reviewer)]));
            Ok(EXIT_OK)
        }
        Err(e) => {
            eprintln!("{}: {e}", t("cli.error"));
            Ok(EXIT_ERROR)
        }
    }
}
