//! `merlya provision create|update|delete` and `merlya state list|show|check|import` (issue 26):
//! templates rendered into a resource's own folder under MERLYA_HOME/resources, applied through the
//! one change path (plan → diff → summary → approval → apply → post-check → rollback), and the state
//! tracker's record of each resource: its lifecycle and, apart from it, its drift.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::json;

use super::lang::{t, tf};
use super::pipeline::{ChangeOpts, drive_change, key_value};
use super::{EXIT_ERROR, EXIT_OK, ListFormat};
use crate::context::Context;
use crate::pipeline::Env;
use crate::pipeline::terraform::TerraformChange;
use crate::provision::credentials::Credentials;
use crate::provision::ops;
use crate::provision::template::value::parse_text;
use crate::provision::template::{Answers, Registry, TemplateRef};
use crate::provision::tracker::read_state;
use crate::store::resources::{Applied, Lifecycle, NewResource, Resource};

#[derive(Debug, Subcommand)]
pub enum ProvisionCommand {
    /// Render TEMPLATE into a new resource and apply it (through approval).
    Create {
        /// `name` or `name:version`.
        template: TemplateRef,
        /// The provider (the template's only one when omitted).
        #[arg(long)]
        provider: Option<String>,
        /// A variable, `name=value` (repeatable; `@service:host:field` for a secret).
        #[arg(long = "var", value_parser = key_value)]
        vars: Vec<(String, String)>,
        /// The resource's name (default: TEMPLATE-N).
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// Re-render a resource from its stored answers with these changed, and apply (through approval).
    Update {
        /// The resource (name or id).
        resource: String,
        #[arg(long = "var", value_parser = key_value)]
        vars: Vec<(String, String)>,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// Destroy a resource (through approval): its configuration emptied, its state kept.
    Delete {
        /// The resource (name or id).
        resource: String,
        #[command(flatten)]
        opts: ChangeOpts,
    },
}

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Every resource: lifecycle, drift, last check.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// One resource, in full (secrets are references, sensitive values masked).
    Show {
        resource: String,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Check for drift: every resource, or one.
    Check(CheckArgs),
    /// Keep a snapshot of a resource: its answers, what is expected and found, its outputs.
    Snapshot {
        resource: String,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Apply a resource's configuration again from its stored answers, undoing drift (through approval).
    Reconcile {
        resource: String,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// Record what a resource is now as what merlya expects (a refresh-only apply, through approval):
    /// the drift shown is accepted and no longer reported while the state stays as it is.
    Accept {
        resource: String,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// Go back to a snapshot's answers (the newest before the last apply when none is named), through approval.
    Rollback {
        resource: String,
        /// The snapshot id (`merlya state show RESOURCE --format json`).
        #[arg(long)]
        to: Option<i64>,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// Observe an existing Terraform folder (drift only; merlya never changes it).
    Import {
        /// The folder (its configuration and terraform.tfstate).
        dir: PathBuf,
        /// The name to list it under.
        #[arg(long)]
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// One resource (name or id); every resource when omitted.
    pub resource: Option<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}

/// Applies a resource's folder through the change path (Terraform, or the MCP backend's calls);
/// the operation is recorded before it starts and how it ended after.
async fn apply(ctx: &Context, resource: &Resource, operation: Lifecycle, opts: &ChangeOpts) -> Result<u8> {
    let dir = PathBuf::from(&resource.workdir);
    let mcp = (resource.backend == "mcp").then(|| {
        std::sync::Arc::new(crate::mcp::client::McpClients::new(ctx.config.mcp.servers.clone(), ctx.secrets()))
    });
    let change: Box<dyn crate::pipeline::Change> = match &mcp {
        Some(clients) => {
            use crate::provision::mcp_backend::{McpCaller, McpChange, McpSpec};
            let caller = McpCaller {
                clients: clients.clone(),
                session_id: ctx.session_id.clone(),
                requested_by: crate::ssh::target::local_user(),
            };
            Box::new(McpChange::new(McpSpec { dir, delete: operation == Lifecycle::Deleting }, caller))
        }
        None => Box::new(TerraformChange::new(ops::terraform_spec(resource, &Credentials::of(ctx))?)),
    };
    ops::begin(&ctx.store, resource, operation).await?;
    let driven = drive_change(ctx, change, opts).await;
    if let Some(clients) = mcp {
        clients.shutdown().await;
    }
    let (code, run) = driven?;
    let status = ops::end(&ctx.store, resource, operation, &run).await?;
    eprintln!("{}", tf("cli.provision.resource_status", &[("name", &resource.name), ("status", &status.as_str())]));
    Ok(code)
}

/// The MCP calls a check reads resources of the MCP backend with (read-only, approving nothing).
fn mcp_reads(ctx: &Context, clients: &std::sync::Arc<crate::mcp::client::McpClients>) -> crate::mcp::call::CallEnv {
    let deny = std::sync::Arc::new(crate::approval::DenyAll);
    let gate = crate::approval::ApprovalGate::with_policy(deny, ctx.store.clone(), &ctx.config);
    let (user, cancel) = (crate::ssh::target::local_user(), super::cancel_on_signals());
    crate::mcp::call::CallEnv::of_context(ctx, clients.clone(), gate, user, true, cancel)
}

fn renderer(ctx: &Context) -> ops::Renderer {
    ops::Renderer { templates: ctx.home.templates_dir(), secrets: ctx.config.secrets.backend }
}

pub async fn provision(ctx: &Context, command: ProvisionCommand) -> Result<u8> {
    match command {
        ProvisionCommand::Create { template, provider, vars, name, opts } => {
            let registry = Registry::load(&ctx.home.templates_dir());
            let entry = registry.get(&template)?;
            let answers = Answers::resolve(&entry.template.spec, provider.as_deref(), None, &vars)?;
            let existing = ctx.store.list_resources().await?;
            let name = name.unwrap_or_else(|| format!("{}-{}", entry.template.spec.name, existing.len() + 1));
            crate::inventory::host::validate_name(&name).map_err(|e| eyre!("--name: {e}"))?;
            if ctx.store.resource(&name).await?.is_some() {
                bail!("{}", tf("cli.provision.name_taken", &[("name", &name)]));
            }
            let dir = ctx.home.root().join("resources").join(&name);
            if dir.exists() && std::fs::read_dir(&dir).map(|mut d| d.next().is_some()).unwrap_or(false) {
                bail!("{}", tf("cli.provision.dir_not_empty", &[("path", &dir.display().to_string())]));
            }
            let reference =
                TemplateRef { name: answers.template.clone(), version: Some(entry.template.spec.version.clone()) };
            renderer(ctx).render_into(&answers, &reference, &dir)?;
            let new = NewResource {
                name,
                template: reference.to_string(),
                provider: answers.provider.to_string(),
                backend: answers.backend.to_string(),
                answers: serde_json::to_value(&answers)?,
                tags: answers_tags(&answers),
                workdir: dir.to_string_lossy().into_owned(),
                observe_only: false,
            };
            let resource = ctx.store.add_resource(&new).await?;
            apply(ctx, &resource, Lifecycle::Creating, &opts).await
        }
        ProvisionCommand::Update { resource, vars, opts } => {
            let resource = changeable(ctx, &resource).await?;
            let mut answers: Answers = serde_json::from_value(resource.answers.clone()).map_err(|e| {
                eyre!("{}", tf("cli.provision.bad_answers", &[("name", &resource.name), ("error", &e.to_string())]))
            })?;
            let reference: TemplateRef = resource.template.parse().map_err(|e: String| eyre!(e))?;
            let registry = Registry::load(&ctx.home.templates_dir());
            let spec = &registry.get(&reference)?.template.spec;
            for (name, text) in &vars {
                let variable = spec.variable(name).ok_or_else(|| {
                    eyre!("{}", tf("cli.provision.no_variable", &[("template", &spec.name), ("name", name)]))
                })?;
                let value = parse_text(variable.kind, text).map_err(|e| {
                    eyre!("{}", tf("cli.provision.bad_variable", &[("name", name), ("error", &e.to_string())]))
                })?;
                answers.values.insert(variable.name.clone(), value);
            }
            renderer(ctx).render_into(&answers, &reference, std::path::Path::new(&resource.workdir))?;
            ctx.store.update_answers(&resource.id, &serde_json::to_value(&answers)?).await?;
            apply(ctx, &resource, Lifecycle::Updating, &opts).await
        }
        ProvisionCommand::Delete { resource, opts } => {
            let resource = changeable(ctx, &resource).await?;
            let dir = std::path::Path::new(&resource.workdir);
            // A Terraform configuration with nothing in it: its plan destroys everything the state
            // holds. An MCP resource keeps its request: its delete tool is named there.
            if resource.backend != "mcp" {
                ops::clear_configuration(dir)?;
                let empty = "# Emptied by `merlya provision delete`: applying it destroys what the state holds.\n";
                crate::home::write_private(&dir.join("main.tf"), empty.as_bytes())
                    .map_err(|e| eyre!("{}: {e}", tf("cli.cannot_write", &[("path", &dir.display().to_string())])))?;
            }
            apply(ctx, &resource, Lifecycle::Deleting, &opts).await
        }
    }
}

fn answers_tags(answers: &Answers) -> serde_json::Value {
    serde_json::to_value(answers).ok().and_then(|a| a["values"].get("tags").cloned()).unwrap_or(json!({}))
}

async fn changeable(ctx: &Context, id: &str) -> Result<Resource> {
    let resource = ctx
        .store
        .resource(id)
        .await?
        .ok_or_else(|| eyre!("{}", tf("cli.provision.no_resource_list", &[("id", id)])))?;
    if resource.observe_only {
        bail!("{}", tf("cli.provision.observe_only", &[("name", &resource.name)]));
    }
    if resource.status == Lifecycle::Deleted {
        bail!("{}", tf("cli.provision.deleted", &[("name", &resource.name)]));
    }
    Ok(resource)
}

pub async fn state(ctx: &Context, command: StateCommand) -> Result<u8> {
    match command {
        StateCommand::List { format } => {
            let resources = ctx.store.list_resources().await?;
            if format == ListFormat::Json {
                println!("{}", serde_json::to_string_pretty(&resources)?);
                return Ok(EXIT_OK);
            }
            let rows: Vec<Vec<String>> = resources
                .iter()
                .map(|r| {
                    vec![
                        r.name.clone(),
                        if r.template.is_empty() {
                            format!("({})", t("cli.provision.imported"))
                        } else {
                            r.template.clone()
                        },
                        r.status.as_str(),
                        r.drift.as_str(),
                        r.last_checked_at.clone().unwrap_or_else(|| t("cli.provision.never")),
                    ]
                })
                .collect();
            let headers = ["cli.h.name", "cli.h.template", "cli.h.status", "cli.h.drift", "cli.h.checked"].map(t);
            print!("{}", super::table::render(&headers.each_ref().map(String::as_str), &rows));
            Ok(EXIT_OK)
        }
        StateCommand::Show { resource, format } => {
            let r = ctx
                .store
                .resource(&resource)
                .await?
                .ok_or_else(|| eyre!("{}", tf("cli.provision.no_resource", &[("id", &resource)])))?;
            let snapshots = ctx.store.snapshots(&r.id).await?;
            let value = json!({"resource": r, "snapshots": snapshots.len()});
            match format {
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&value)?),
                ListFormat::Table => {
                    let (status, drift) = (r.status.as_str(), r.drift.as_str());
                    let args = [("name", r.name.as_str()), ("id", &r.id), ("status", &status), ("drift", &drift)];
                    println!("{}", tf("cli.provision.show_title", &args));
                    let args = [("template", r.template.as_str()), ("provider", &r.provider), ("backend", &r.backend)];
                    println!("{}", tf("cli.provision.show_template", &args));
                    println!("{}", tf("cli.provision.show_folder", &[("path", &r.workdir)]));
                    if !r.drift_detail.is_empty() {
                        let detail = r.drift_detail.replace('\n', "\n  ");
                        println!("{}", tf("cli.provision.show_drift", &[("detail", &detail)]));
                    }
                    println!("{}", tf("cli.provision.show_outputs", &[("outputs", &r.outputs.to_string())]));
                    println!("{}", tf("cli.provision.show_snapshots", &[("count", &snapshots.len().to_string())]));
                }
            }
            Ok(EXIT_OK)
        }
        StateCommand::Check(args) => check(ctx, args).await,
        StateCommand::Snapshot { resource, format } => {
            let r = ctx
                .store
                .resource(&resource)
                .await?
                .ok_or_else(|| eyre!("{}", tf("cli.provision.no_resource", &[("id", &resource)])))?;
            let id = ctx.store.add_snapshot(&r.id, &ops::snapshot_of(&r)).await?;
            match format {
                ListFormat::Json => println!("{}", json!({"resource": r.name, "snapshot": id})),
                ListFormat::Table => {
                    println!("{}", tf("cli.provision.snapshot", &[("name", &r.name), ("id", &id.to_string())]))
                }
            }
            Ok(EXIT_OK)
        }
        StateCommand::Reconcile { resource, opts } => {
            let r = changeable(ctx, &resource).await?;
            renderer(ctx).rerender(&r, &r.answers)?;
            apply(ctx, &r, Lifecycle::Updating, &opts).await
        }
        StateCommand::Accept { resource, opts } => {
            let r = changeable(ctx, &resource).await?;
            let env = read_env(ctx).await?;
            let credentials = Credentials::of(ctx);
            let accept = ops::prepare_accept(&env, &credentials, &r).await?;
            ops::begin(&ctx.store, &r, Lifecycle::Updating).await?;
            let (code, run) = drive_change(ctx, Box::new(accept.change), &opts).await?;
            let status = ops::finish_accept(&env, &credentials, &ctx.store, &r, &run, &accept.planned).await?;
            let now = ctx.store.resource(&r.id).await?.map_or(status.as_str(), |r| r.drift.as_str());
            let status = status.as_str();
            let args = [("name", r.name.as_str()), ("status", &status), ("drift", &now)];
            eprintln!("{}", tf("cli.provision.accepted", &args));
            Ok(code)
        }
        StateCommand::Rollback { resource, to, opts } => {
            let r = changeable(ctx, &resource).await?;
            let snapshots = ctx.store.snapshots(&r.id).await?;
            // The newest snapshot whose answers differ from the current ones, unless one is named.
            let chosen = match to {
                Some(id) => snapshots.iter().find(|(i, _, _)| *i == id),
                None => {
                    snapshots.iter().find(|(_, _, data)| data["answers"] != r.answers && !data["answers"].is_null())
                }
            };
            let Some((id, _, data)) = chosen else {
                bail!("{}", tf("cli.provision.no_snapshot", &[("name", &r.name)]));
            };
            eprintln!("{}", tf("cli.provision.going_back", &[("name", &r.name), ("id", &id.to_string())]));
            renderer(ctx).rerender(&r, &data["answers"])?;
            ctx.store.update_answers(&r.id, &data["answers"]).await?;
            apply(ctx, &r, Lifecycle::Updating, &opts).await
        }
        StateCommand::Import { dir, name } => {
            let dir = std::path::absolute(&dir).map_err(|e| eyre!("{}: {e}", dir.display()))?;
            if !dir.join("terraform.tfstate").is_file() {
                bail!("{}", tf("cli.provision.no_tfstate", &[("path", &dir.display().to_string())]));
            }
            let state = read_state(&dir).map_err(|e| eyre!(e))?;
            let new = NewResource {
                name: name.clone(),
                provider: "terraform".into(),
                backend: "terraform".into(),
                workdir: dir.to_string_lossy().into_owned(),
                observe_only: true,
                ..Default::default()
            };
            let resource = ctx.store.add_resource(&new).await?;
            let observed = Applied {
                status: Lifecycle::Active,
                expected: Some(state.resources),
                outputs: Some(state.outputs),
                tf_serial: state.serial,
                tf_lineage: state.lineage,
                config_digest: None,
            };
            ctx.store.finish_operation(&resource.id, &observed).await?;
            println!("{}", tf("cli.provision.observed", &[("name", &name)]));
            Ok(EXIT_OK)
        }
    }
}

/// The environment of a check: plans only, a gate that approves nothing.
async fn read_env(ctx: &Context) -> Result<Env> {
    let inventory = ctx.inventory_for(crate::inventory::LOCALHOST).await?;
    let executor =
        std::sync::Arc::new(ctx.executor(inventory, std::sync::Arc::new(crate::prompt::NoPrompter), false)?);
    let gate = crate::approval::ApprovalGate::with_policy(
        std::sync::Arc::new(crate::approval::DenyAll),
        ctx.store.clone(),
        &ctx.config,
    );
    Ok(Env::from_context(ctx, executor, gate, super::cancel_on_signals(), crate::exec::no_events()))
}

/// Two plans per resource (refresh-only, then normal), never an apply: the verdict and what was found.
async fn check(ctx: &Context, args: CheckArgs) -> Result<u8> {
    let resources = match &args.resource {
        Some(id) => vec![
            ctx.store.resource(id).await?.ok_or_else(|| eyre!("{}", tf("cli.provision.no_resource", &[("id", id)])))?,
        ],
        None => ctx.store.list_resources().await?,
    };
    let env = read_env(ctx).await?;
    let clients =
        std::sync::Arc::new(crate::mcp::client::McpClients::new(ctx.config.mcp.servers.clone(), ctx.secrets()));
    let mcp = mcp_reads(ctx, &clients);
    let credentials = Credentials::of(ctx);
    let checks = crate::provision::check::check_resources(&env, Some(&mcp), &credentials, &ctx.store, &resources).await;
    clients.shutdown().await;
    let checks = checks?;
    let failed = checks.iter().any(|c| c.failed);
    let results: Vec<serde_json::Value> = checks.iter().map(|c| serde_json::to_value(c).unwrap_or_default()).collect();
    match args.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&results)?),
        ListFormat::Table => {
            for r in &results {
                println!("{}: {}", r["resource"].as_str().unwrap_or("?"), r["drift"].as_str().unwrap_or("?"));
                for line in r["detail"].as_array().into_iter().flatten() {
                    println!("  {}", crate::term_safe::visible(line.as_str().unwrap_or_default()));
                }
                if r["crashed"] == true {
                    println!("  {}", t("cli.provision.crashed"));
                }
            }
        }
    }
    Ok(if failed { EXIT_ERROR } else { EXIT_OK })
}
