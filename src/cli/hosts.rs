//! `merlya hosts ...`: the inventory from the command line.

use std::path::PathBuf;

use clap::Subcommand;
use color_eyre::eyre::{Result, bail, eyre};

use super::lang::{t, tf};
use super::{EXIT_OK, ListFormat, table};
use crate::context::Context;
use crate::inventory::export::{ExportFormat, export};
use crate::inventory::host::{validate_name, validate_tag};
use crate::inventory::import::{self, ImportFormat};
use crate::inventory::{Elevation, Host};

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum HostsCommand {
    /// Add a host.
    Add {
        /// Name used in targets.
        name: String,
        /// Address or DNS name.
        #[arg(long)]
        hostname: String,
        #[arg(long, default_value_t = 22)]
        port: u16,
        /// Login name.
        #[arg(long)]
        user: Option<String>,
        /// Tag (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Bastion (inventory name or user@host:port; comma list for a chain).
        #[arg(long)]
        jump: Option<String>,
        #[arg(long, value_enum, default_value_t = Elevation::None)]
        elevation: Elevation,
        /// Private key to try first.
        #[arg(long)]
        identity_file: Option<String>,
    },
    /// List hosts.
    List {
        /// Only hosts with this tag.
        #[arg(long)]
        tag: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
        /// Only the names, then the tags as `@tag`, one per line (what shell completion offers).
        #[arg(long)]
        names: bool,
    },
    /// Show one host, with the pipeline tools it can run (probed once per policy.capability_ttl_hours).
    Show {
        name: String,
        /// Probe the host's tools again instead of using the cached answer.
        #[arg(long)]
        refresh: bool,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Remove a host.
    Rm { name: String },
    /// Add tags to a host.
    Tag {
        name: String,
        #[arg(required = true)]
        tags: Vec<String>,
    },
    /// Remove tags from a host.
    Untag {
        name: String,
        #[arg(required = true)]
        tags: Vec<String>,
    },
    /// Import hosts from a file (format from the extension, the name or the content).
    Import {
        file: PathBuf,
        #[arg(long, value_enum)]
        format: Option<ImportFormat>,
        /// Show what would be imported without saving.
        #[arg(long)]
        dry_run: bool,
    },
    /// Detect how each target gets root (sudo, sudo with a password, doas, su) and remember it.
    DetectElevation {
        /// Host names, @tags, globs, comma lists or `all`.
        targets: String,
    },
    /// Export hosts.
    Export {
        #[arg(long, value_enum)]
        format: ExportFormat,
    },
}

pub async fn run(ctx: &Context, cmd: HostsCommand) -> Result<u8> {
    let store = &ctx.store;
    match cmd {
        HostsCommand::Add { name, hostname, port, user, tags, jump, elevation, identity_file } => {
            validate_name(&name).map_err(|e| eyre!(e))?;
            let mut host = Host::new(&name, hostname);
            host.port = port;
            host.username = user;
            for tag in &tags {
                validate_tag(tag).map_err(|e| eyre!(e))?;
                host.add_tag(tag);
            }
            host.jump = jump;
            host.elevation = elevation;
            host.identity_file = identity_file;
            store.add_host(&host).await?;
            println!("{}", tf("cli.hosts.added", &[("name", &name)]));
        }
        HostsCommand::List { tag, format, names } => {
            let hosts: Vec<Host> = store
                .list_hosts()
                .await?
                .into_iter()
                .filter(|h| tag.as_ref().is_none_or(|t| h.tags.contains(t)))
                .collect();
            if names {
                let tags: std::collections::BTreeSet<&String> = hosts.iter().flat_map(|h| &h.tags).collect();
                hosts.iter().for_each(|h| println!("{}", h.name));
                tags.iter().for_each(|t| println!("@{t}"));
            } else {
                print_hosts(&hosts, format, &store.host_errors().await?)?;
            }
        }
        HostsCommand::Show { name, refresh, format } => {
            let host = store.get_host(&name).await?;
            let capabilities = host_capabilities(ctx, &host, refresh).await;
            match format {
                ListFormat::Json => {
                    let mut value = serde_json::to_value(&host)?;
                    value["capabilities"] = match &capabilities {
                        Ok(c) => serde_json::to_value(c)?,
                        Err(e) => serde_json::json!({ "error": e }),
                    };
                    println!("{}", serde_json::to_string_pretty(&value)?);
                }
                ListFormat::Table => {
                    print!("{}", yaml_serde::to_string(&host)?);
                    match &capabilities {
                        Ok(c) => {
                            let tools = if c.tools.is_empty() { t("cli.hosts.no_tools") } else { c.tools.join(", ") };
                            let args = [("tools", tools.as_str()), ("at", &c.checked_at)];
                            println!("pipeline_tools: {}", tf("cli.hosts.tools_checked", &args));
                            if let Some(context) = &c.kube_context {
                                println!("kube_context: {context}");
                            }
                            let sandbox = t(match c.readonly_sandbox {
                                Some(true) => "cli.hosts.sandbox_yes",
                                Some(false) => "cli.hosts.sandbox_no",
                                None => "cli.hosts.sandbox_unknown",
                            });
                            println!("readonly_sandbox: {sandbox}");
                        }
                        Err(e) => {
                            let why = crate::term_safe::visible_line(e);
                            println!("pipeline_tools: {}", tf("cli.hosts.tools_unknown", &[("why", &why)]));
                        }
                    }
                }
            }
        }
        HostsCommand::Rm { name } => {
            store.remove_host(&name).await?;
            println!("{}", tf("cli.hosts.removed", &[("name", &name)]));
        }
        HostsCommand::Tag { name, tags } | HostsCommand::Untag { name, tags } if tags.is_empty() => {
            bail!("{}", tf("cli.hosts.no_tags", &[("name", &name)]))
        }
        HostsCommand::Tag { name, tags } => {
            for tag in &tags {
                validate_tag(tag).map_err(|e| eyre!(e))?;
                store.set_tag(&name, tag, true).await?;
            }
            println!("{}", tf("cli.hosts.tagged", &[("name", &name), ("tags", &tags.join(", "))]));
        }
        HostsCommand::Untag { name, tags } => {
            for tag in &tags {
                store.set_tag(&name, tag, false).await?;
            }
            println!("{}", tf("cli.hosts.untagged", &[("name", &name), ("tags", &tags.join(", "))]));
        }
        HostsCommand::Import { file, format, dry_run } => return import_file(ctx, &file, format, dry_run).await,
        HostsCommand::DetectElevation { targets } => return detect_elevation(ctx, &targets).await,
        HostsCommand::Export { format } => {
            print!("{}", export(&store.list_hosts().await?, format).map_err(|e| eyre!(e))?);
        }
    }
    Ok(EXIT_OK)
}

/// The table (or JSON) of `hosts`, with each one's last error when `errors` has it.
fn print_hosts(
    hosts: &[Host],
    format: ListFormat,
    errors: &[crate::store::host_errors::StoredHostError],
) -> Result<()> {
    let last_error = |name: &str| {
        errors
            .iter()
            .find(|e| e.host == name)
            .map(|e| format!("{} {}", e.kind.replace('_', " "), e.at.get(..16).unwrap_or(&e.at).replace('T', " ")))
            .unwrap_or_default()
    };
    match format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(hosts)?),
        ListFormat::Table => {
            let rows: Vec<Vec<String>> = hosts
                .iter()
                .map(|h| {
                    vec![
                        h.name.clone(),
                        if h.is_local() { "local".into() } else { format!("{}:{}", h.hostname, h.port) },
                        h.username.clone().unwrap_or_default(),
                        h.tags.join(","),
                        h.jump.clone().unwrap_or_default(),
                        h.elevation.as_str().into(),
                        match h.reachable {
                            Some(true) => t("cli.yes"),
                            Some(false) => t("cli.no"),
                            None => "?".into(),
                        },
                        last_error(&h.name),
                    ]
                })
                .collect();
            let headers = [
                "cli.h.name",
                "cli.h.address",
                "cli.h.user",
                "cli.h.tags",
                "cli.h.jump",
                "cli.h.elevation",
                "cli.h.reachable",
                "cli.h.last_error",
            ]
            .map(t);
            let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
            print!("{}", table::render(&headers, &rows));
        }
    }
    Ok(())
}

async fn import_file(ctx: &Context, file: &std::path::Path, format: Option<ImportFormat>, dry_run: bool) -> Result<u8> {
    let report = import::read_import_file(file, format).map_err(|e| eyre!("{e}"))?;
    for skipped in &report.skipped {
        eprintln!("{}", tf("cli.hosts.skipped", &[("what", &skipped.to_string())]));
    }
    // A host in many groups is normal in Ansible: say so, without a wall of text.
    const MERGED_SHOWN: usize = 20;
    for merged in report.merged.iter().take(MERGED_SHOWN) {
        eprintln!("{}", tf("cli.hosts.merged", &[("what", &merged.to_string())]));
    }
    if report.merged.len() > MERGED_SHOWN {
        let more = (report.merged.len() - MERGED_SHOWN).to_string();
        eprintln!("{}", tf("cli.hosts.merged_more", &[("count", &more)]));
    }
    if dry_run {
        print_hosts(&report.hosts, ListFormat::Table, &[])?;
        let (count, path) = (report.hosts.len().to_string(), file.display().to_string());
        println!("{}", tf("cli.hosts.dry_run", &[("count", &count), ("path", &path)]));
        return Ok(EXIT_OK);
    }
    let (added, updated) = ctx.store.upsert_hosts(&report.hosts).await?;
    let (count, path) = (report.hosts.len().to_string(), file.display().to_string());
    let (added, updated) = (added.to_string(), updated.to_string());
    let args = [("count", count.as_str()), ("path", &path), ("added", &added), ("updated", &updated)];
    println!("{}", tf("cli.hosts.imported", &args));
    Ok(EXIT_OK)
}

/// What `host` can run for change pipelines (cached, or probed through the audited fan-out).
async fn host_capabilities(
    ctx: &Context,
    host: &crate::inventory::Host,
    refresh: bool,
) -> Result<crate::pipeline::capabilities::Capabilities, String> {
    use std::sync::Arc;
    let inventory = ctx.inventory_for(&host.name).await.map_err(|e| format!("{e:#}"))?;
    let super::Asking { interactive, prompter, approver } = super::Asking::detect(false);
    let executor = Arc::new(ctx.executor(inventory, prompter, interactive).map_err(|e| format!("{e:#}"))?);
    let gate = crate::approval::ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
    let cancel = super::cancel_on_signals();
    let env = crate::pipeline::Env::from_context(ctx, executor, gate, cancel, crate::exec::no_events());
    let ttl = std::time::Duration::from_secs(u64::from(ctx.config.policy.capability_ttl_hours) * 3600);
    crate::pipeline::capabilities::detect(&env, host, ttl, refresh).await
}

async fn detect_elevation(ctx: &Context, targets: &str) -> Result<u8> {
    use std::io::IsTerminal;
    use std::sync::Arc;

    use crate::exec::prepare::{ELEVATION_PROBE, SudoRights};
    use crate::prompt::{NoPrompter, Prompter, TerminalPrompter};

    let inventory = ctx.inventory_for(targets).await?;
    let interactive = std::io::stdin().is_terminal();
    let prompter: Arc<dyn Prompter> = if interactive {
        Arc::new(TerminalPrompter::in_locale(super::lang::locale().clone()))
    } else {
        Arc::new(NoPrompter)
    };
    let executor = ctx.executor(inventory.clone(), prompter, interactive)?;
    let hosts = ctx.resolve_targets(targets, &inventory, &executor.ssh_aliases()).await?;
    let tx = crate::exec::no_events();
    let timeout = ctx.config.command_timeout();
    let mut rows = Vec::new();
    let mut failed = false;
    let probe = crate::safety::clearance::Clearance::read_only(ELEVATION_PROBE)
        .ok_or_else(|| eyre!("{}", t("cli.hosts.probe_not_read")))?;
    let (executor, who, cancel) = (Arc::new(executor), crate::ssh::target::local_user(), Default::default());
    // The probe goes through the one door: its audit row shows the script that ran.
    let door = crate::door::Door::of_context(ctx, &executor, &who, timeout, &cancel);
    for mut host in hosts {
        let ran = door.run_one(&host, &probe, None, &tx).await;
        if ran.audit_id.is_none() {
            return Err(eyre!("{}", ran.result.error.unwrap_or_default()));
        }
        let result = ran.result;
        let found = result.stdout.trim().parse::<Elevation>().ok().filter(|_| result.success());
        match found {
            Some(probed) => {
                // `sudo -n` answers "a password is required" whether or not the user may use sudo:
                // with a password to give, `sudo true` tells them apart.
                let (elevation, note) = match probed {
                    Elevation::SudoPassword => {
                        let check = crate::safety::clearance::Clearance::read_only("sudo true")
                            .ok_or_else(|| eyre!("{}", t("cli.hosts.sudo_true_not_read")))?;
                        let mut asked = host.clone();
                        asked.elevation = Elevation::SudoPassword;
                        let checked = door.run_one(&asked, &check, None, &tx).await.result;
                        let said = format!("{}\n{}", checked.stderr, checked.error.clone().unwrap_or_default());
                        match crate::exec::prepare::sudo_rights(checked.success(), &said) {
                            SudoRights::Granted => (Elevation::SudoPassword, t("cli.hosts.sudo_checked")),
                            SudoRights::None => (Elevation::None, t("cli.hosts.sudo_none")),
                            SudoRights::WrongPassword => (Elevation::SudoPassword, t("cli.hosts.sudo_wrong")),
                            SudoRights::Unknown => {
                                let why = checked.error.unwrap_or_else(|| checked.stderr.trim().to_string());
                                let secret = crate::exec::prepare::sudo_secret_name(&host.name);
                                let args = [("why", why.as_str()), ("secret", &secret)];
                                (Elevation::SudoPassword, tf("cli.hosts.sudo_unknown", &args))
                            }
                        }
                    }
                    other => (other, String::new()),
                };
                host.elevation = elevation;
                ctx.store.upsert_hosts(std::slice::from_ref(&host)).await?;
                rows.push(vec![host.name.clone(), elevation.as_str().to_string(), note]);
            }
            None => {
                failed = true;
                rows.push(vec![
                    host.name.clone(),
                    "?".into(),
                    result.error.unwrap_or_else(|| result.stderr.trim().to_string()),
                ]);
            }
        }
    }
    let headers = ["cli.h.host", "cli.h.elevation", "cli.h.note"].map(t);
    print!("{}", table::render(&headers.each_ref().map(String::as_str), &rows));
    Ok(if failed { super::EXIT_HOST_FAILED } else { EXIT_OK })
}
