//! `merlya baseline capture|accept|show` and `merlya drift TARGETS`: host
//! baselines, and what differs from them or from a host's siblings (issue 26).

use std::sync::Arc;

use clap::{Args, Subcommand};
use color_eyre::eyre::{Result, eyre};
use serde_json::json;

use super::lang::{t, tf};
use super::{EXIT_ERROR, EXIT_HOST_FAILED, EXIT_OK, ListFormat};
use crate::baseline::Facts;
use crate::baseline::check::{Against, Captured, capture_and_record, check, filter_of, plan_of};
use crate::baseline::compare::Row;
use crate::baseline::decide::{Decided, HostDecision, Who, decide};
use crate::context::Context;
use crate::door::Door;
use crate::exec::Executor;
use crate::inventory::Host;

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Record each host's facts now as its baseline (the state you accept; first use: everything current).
    Capture(TargetArgs),
    /// Make each host's last drift check its baseline (rebase on what it is now; asks first).
    Accept {
        #[command(flatten)]
        targets: TargetArgs,
        /// Approve without asking (recorded as such in the audit log).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Hide findings from every drift check from now on, counted under NAME (asks first; the
    /// config's `drift.ignore` holds rules kept with the config).
    Ignore {
        /// Shown with the count of what it hides.
        #[arg(long)]
        name: String,
        /// The keys it hides (`*` any run of characters, `?` one): `/etc/ssl/certs/*`, `nginx`.
        #[arg(long)]
        key: String,
        /// Only this section (`files`, `packages`, `sysctl`…); every section when omitted.
        #[arg(long)]
        section: Option<String>,
        /// Only these hosts (a target expression: `@web`, `db*`); every host when omitted.
        #[arg(long)]
        hosts: Option<String>,
        /// Approve without asking (recorded as such in the audit log).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// A host's baseline: facts per section, or every fact with --format json.
    Show {
        /// The host.
        host: String,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
}

#[derive(Debug, Args)]
pub struct TargetArgs {
    /// Hosts: names, globs, @tags, `all`.
    pub targets: String,
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    /// Hosts: names, globs, @tags, `all`.
    pub targets: String,
    /// Compare each host with its own baseline, or with the majority of the hosts named.
    #[arg(long, value_enum, default_value_t)]
    pub against: Against,
    /// Exit 1 when drift is found (like `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}

/// Asks about `decision` (a terminal prompt, or `--yes`), applies it and says how it ended.
async fn decided(ctx: &Context, yes: bool, decision: &HostDecision) -> Result<u8> {
    let approver = super::Asking::detect(yes).approver;
    let gate = crate::approval::ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
    let who = Who { session_id: ctx.session_id.clone(), requested_by: crate::ssh::target::local_user() };
    Ok(match decide(&ctx.store, &gate, &who, decision).await? {
        Decided::Done(what) => {
            println!("{what}");
            EXIT_OK
        }
        Decided::Nothing(why) => {
            eprintln!("{why}");
            EXIT_ERROR
        }
        Decided::Denied(by) => {
            eprintln!("{}", tf("cli.baseline.denied", &[("by", &by.to_string())]));
            super::EXIT_REFUSED
        }
    })
}

/// Hosts of `targets`, with an executor over them.
async fn hosts_and_executor(ctx: &Context, targets: &str) -> Result<(Vec<Host>, Arc<Executor>)> {
    let inventory = ctx.inventory_for(targets).await?;
    let super::Asking { interactive, prompter, .. } = super::Asking::detect(false);
    let executor = Arc::new(ctx.executor(inventory.clone(), prompter, interactive)?);
    let hosts = ctx.resolve_targets(targets, &inventory, &executor.ssh_aliases()).await?;
    Ok((hosts, executor))
}

fn door<'a>(
    ctx: &'a Context,
    executor: &'a Arc<Executor>,
    cancel: &'a tokio_util::sync::CancellationToken,
) -> Door<'a> {
    let mut door = Door::of_context(ctx, executor, "cli", ctx.config.command_timeout(), cancel);
    door.parallel = ctx.config.policy.max_parallel.max(1);
    door
}

pub async fn run(ctx: &Context, command: BaselineCommand) -> Result<u8> {
    match command {
        BaselineCommand::Capture(args) => {
            let (hosts, executor) = hosts_and_executor(ctx, &args.targets).await?;
            let cancel = super::cancel_on_signals();
            let door = door(ctx, &executor, &cancel);
            let plan = plan_of(&ctx.config.drift);
            let (captured, _) = capture_and_record(&door, &hosts, &plan, true, &crate::exec::no_events()).await?;
            print_captured(&captured, args.format)?;
            Ok(if captured.failed.is_empty() { EXIT_OK } else { EXIT_HOST_FAILED })
        }
        BaselineCommand::Accept { targets: args, yes } => {
            let inventory = ctx.inventory_for(&args.targets).await?;
            let hosts = ctx.resolve_targets(&args.targets, &inventory, &[]).await?;
            let mut code = EXIT_OK;
            for host in &hosts {
                let decision = HostDecision::Accept { host: host.name.clone() };
                code = code.max(decided(ctx, yes, &decision).await?);
            }
            Ok(code)
        }
        BaselineCommand::Ignore { name, key, section, hosts, yes } => {
            let decision = HostDecision::Ignore(crate::config::drift::IgnoreRule { name, section, key, hosts });
            decided(ctx, yes, &decision).await
        }
        BaselineCommand::Show { host, format } => {
            let stored = ctx
                .store
                .baseline(&host)
                .await?
                .ok_or_else(|| eyre!("{}", tf("cli.baseline.none", &[("host", &host)])))?;
            let facts: Facts = serde_json::from_str(&stored.facts)?;
            match format {
                ListFormat::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &json!({"host": host, "captured_at": stored.captured_at, "facts": facts})
                    )?
                ),
                ListFormat::Table => {
                    println!("{}", tf("cli.baseline.of", &[("host", &host), ("at", &stored.captured_at)]));
                    let rows: Vec<Vec<String>> = facts
                        .sections
                        .iter()
                        .map(|(section, facts)| vec![section.to_string(), facts.len().to_string()])
                        .collect();
                    let headers = ["cli.h.section", "cli.h.facts"].map(t);
                    print!("{}", super::table::render(&headers.each_ref().map(String::as_str), &rows));
                }
            }
            Ok(EXIT_OK)
        }
    }
}

fn print_captured(captured: &Captured, format: ListFormat) -> Result<()> {
    match format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(captured)?),
        ListFormat::Table => {
            for (host, count) in &captured.hosts {
                println!("{}", tf("cli.baseline.recorded", &[("host", host), ("count", &count.to_string())]));
            }
        }
    }
    for (host, why) in &captured.failed {
        eprintln!("{}", tf("cli.baseline.not_captured", &[("host", host), ("why", &crate::term_safe::visible(why))]));
    }
    Ok(())
}

/// `merlya drift TARGETS [--against baseline|group]`.
pub async fn drift(ctx: &Context, args: DriftArgs) -> Result<u8> {
    let (hosts, executor) = hosts_and_executor(ctx, &args.targets).await?;
    let everyone = ctx.store.list_hosts().await?;
    let filter = filter_of(&ctx.store, &ctx.config.drift, &everyone).await?;
    let cancel = super::cancel_on_signals();
    let door = door(ctx, &executor, &cancel);
    let plan = plan_of(&ctx.config.drift);
    let checked = check(&door, &hosts, &plan, args.against, filter, &crate::exec::no_events()).await?;
    let hidden = &checked.report.filter.hidden;
    match args.format {
        ListFormat::Json => {
            let value = json!({
                "against": args.against,
                "targets": args.targets,
                "rows": checked.report.rows,
                "hidden": hidden,
                "captured": checked.captured,
                "without_baseline": checked.without_baseline,
            });
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        ListFormat::Table => {
            if checked.report.rows.is_empty() {
                let count = checked.captured.hosts.len() - checked.without_baseline.len();
                println!("{}", tf("cli.drift.none", &[("count", &count.to_string())]));
            } else {
                let rows: Vec<Vec<String>> = checked.report.rows.iter().map(|r| row_cells(r, &args.targets)).collect();
                let headers = ["", "cli.h.section", "cli.h.key", "cli.h.expected", "cli.h.found", "cli.h.hosts"]
                    .map(|key| if key.is_empty() { String::new() } else { t(key) });
                print!("{}", super::table::render(&headers.each_ref().map(String::as_str), &rows));
            }
            let total: usize = hidden.values().sum();
            if total > 0 {
                let by: Vec<String> = hidden
                    .iter()
                    .map(|(rule, n)| {
                        tf("cli.drift.ignored_by", &[("count", &n.to_string()), ("rule", &rule.to_string())])
                    })
                    .collect();
                println!("{}", tf("cli.drift.ignored", &[("count", &total.to_string()), ("by", &by.join(", "))]));
            }
        }
    }
    for host in &checked.without_baseline {
        eprintln!("{}", tf("cli.drift.no_baseline", &[("host", &host.to_string())]));
    }
    for (host, why) in &checked.captured.failed {
        eprintln!("{}", tf("cli.drift.not_checked", &[("host", host), ("why", &crate::term_safe::visible(why))]));
    }
    Ok(if !checked.captured.failed.is_empty() {
        EXIT_HOST_FAILED
    } else if args.exit_code && !checked.report.rows.is_empty() {
        EXIT_ERROR
    } else {
        EXIT_OK
    })
}

/// One table row; a group row says how many of the group agree (`11 of 12 @web`).
fn row_cells(row: &Row, targets: &str) -> Vec<String> {
    let shown = |v: &Option<String>| {
        let text = v.as_deref().map(crate::term_safe::visible).map(|t| t.into_owned()).unwrap_or_else(|| "-".into());
        if text.chars().count() > 40 { format!("{}…", text.chars().take(39).collect::<String>()) } else { text }
    };
    let mut hosts = row.hosts.join(", ");
    if let Some((agree, total)) = row.agree {
        let (agree, total) = (agree.to_string(), total.to_string());
        let args = [("agree", agree.as_str()), ("total", &total), ("targets", targets)];
        hosts.push_str(&format!(" ({})", tf("cli.drift.differs", &args)));
    }
    vec![
        row.kind.glyph().to_string(),
        row.section.to_string(),
        crate::term_safe::visible(&row.key).into_owned(),
        shown(&row.expected),
        shown(&row.found),
        hosts,
    ]
}
