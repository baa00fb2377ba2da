//! The drift worker: the Drift pane's data from the store (resources, and each
//! host's last findings), and a check of everything on demand (`c`) or every
//! `drift.interval_secs` — resources through two Terraform plans, hosts with a
//! baseline through an audited capture — reported back as one message.

use std::collections::BTreeSet;

use super::msg::Msg;
use super::workers::Services;
use crate::baseline::check::{Against, check, filter_of, plan_of};
use crate::baseline::decide::{Decided, HostDecision, Who, decide};
use crate::pipeline::Change;
use crate::pipeline::Env;
use crate::pipeline::terraform::TerraformChange;
use crate::provision::credentials::Credentials;
use crate::store::resources::{Drift, Lifecycle, Resource};

/// Checks every resource and every host with a baseline, then says what it found.
pub(super) fn check_all(services: &Services) {
    let (ctx, executor, sender, gate) =
        (services.ctx.clone(), services.executor.clone(), services.sender.clone(), services.gate.clone());
    let cancel = services.control.shutdown_token();
    let clients = services.mcp.clone();
    services.control.spawn(async move {
        // Resources of the MCP backend are read back with read-only calls only.
        let mcp = crate::mcp::call::CallEnv::of_context(
            &ctx,
            clients,
            gate.clone(),
            "drift-worker".into(),
            true,
            cancel.clone(),
        );
        let env = Env::from_context(&ctx, executor, gate, cancel, crate::exec::no_events());
        let credentials = Credentials::of(&ctx);
        let mut failed = Vec::new();
        let resources = match ctx.store.list_resources().await {
            Ok(resources) => resources,
            Err(e) => return sender.send(Msg::Error(format!("drift check: {e}"))),
        };
        let drifted = match crate::provision::check::check_resources(
            &env,
            Some(&mcp),
            &credentials,
            &ctx.store,
            &resources,
        )
        .await
        {
            Ok(checks) => {
                failed.extend(
                    checks.iter().filter(|c| c.failed).map(|c| format!("{}: {}", c.resource, c.detail.join("; "))),
                );
                checks.iter().filter(|c| matches!(c.drift, Drift::Drifted | Drift::Missing)).count()
            }
            Err(e) => {
                failed.push(format!("drift check of resources: {e}"));
                0
            }
        };
        let findings = match host_findings(&ctx, &env).await {
            Ok((findings, host_failures)) => {
                failed.extend(host_failures);
                findings
            }
            Err(e) => {
                failed.push(format!("drift check of hosts: {e:#}"));
                0
            }
        };
        sender.send(Msg::DriftChecked { resources: drifted, findings, failed });
    });
}

/// Captures every host with a baseline and compares it with it (the findings are stored per host).
async fn host_findings(ctx: &crate::context::Context, env: &Env) -> color_eyre::Result<(usize, Vec<String>)> {
    let names: BTreeSet<String> = ctx.store.hosts_with_baselines().await?.into_iter().collect();
    if names.is_empty() {
        return Ok((0, Vec::new()));
    }
    let everyone = ctx.store.list_hosts().await?;
    let hosts: Vec<_> = everyone.iter().filter(|h| names.contains(&h.name)).cloned().collect();
    let filter = filter_of(&ctx.store, &ctx.config.drift, &everyone).await?;
    let checked =
        check(&env.door(), &hosts, &plan_of(&ctx.config.drift), Against::Baseline, filter, &crate::exec::no_events())
            .await?;
    let failures = checked.captured.failed.iter().map(|(h, why)| format!("{h}: not checked: {why}")).collect();
    let findings = checked.report.rows.iter().map(|r| r.hosts.len()).sum();
    Ok((findings, failures))
}

/// Reconciles a resource from the Drift pane: its folder rendered again from its stored answers and
/// applied through the change path, whose approval is the console's modal.
pub(super) fn reconcile(services: &Services, name: String) {
    let clients = services.mcp.clone();
    change_resource(services, name, Operation::Reconcile, move |ctx, _env, resource| {
        Box::pin(async move {
            let renderer = crate::provision::ops::Renderer {
                templates: ctx.home.templates_dir(),
                secrets: ctx.config.secrets.backend,
            };
            renderer.rerender(&resource, &resource.answers)?;
            let dir = std::path::PathBuf::from(&resource.workdir);
            let change: Box<dyn Change> = if resource.backend == "mcp" {
                use crate::provision::mcp_backend::{McpCaller, McpChange, McpSpec};
                let caller = McpCaller {
                    clients,
                    session_id: ctx.session_id.clone(),
                    requested_by: crate::ssh::target::local_user(),
                };
                Box::new(McpChange::new(McpSpec { dir, delete: false }, caller))
            } else {
                Box::new(TerraformChange::new(crate::provision::ops::terraform_spec(
                    &resource,
                    &Credentials::of(&ctx),
                )?))
            };
            Ok((change, Vec::new()))
        })
    });
}

/// Accepts a resource as it is now from the Drift pane: a refresh-only change whose approval (the
/// console's modal) names each finding it accepts; once applied, they are recorded as accepted.
pub(super) fn accept(services: &Services, name: String) {
    change_resource(services, name, Operation::Accept, |ctx, env, resource| {
        Box::pin(async move {
            let accept = crate::provision::ops::prepare_accept(&env, &Credentials::of(&ctx), &resource).await?;
            Ok((Box::new(accept.change) as Box<dyn Change>, accept.planned))
        })
    });
}

/// What the pane does to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    /// Apply its expected configuration again.
    Reconcile,
    /// Record what it is now as expected.
    Accept,
}

impl Operation {
    /// As the toast says it.
    fn verb(self) -> &'static str {
        match self {
            Operation::Reconcile => "reconcile",
            Operation::Accept => "accept",
        }
    }
}

/// What a resource change from the pane is built from: the change, and for an accept the changes
/// its approval shows.
type Prepared = color_eyre::Result<(Box<dyn Change>, Vec<String>)>;

/// Changes a resource from the Drift pane through the change path (the Pipeline pane follows the
/// record): the operation recorded before it starts and how it ended after, then a toast.
fn change_resource(
    services: &Services,
    name: String,
    operation: Operation,
    prepare: impl FnOnce(
        std::sync::Arc<crate::context::Context>,
        Env,
        Resource,
    ) -> futures::future::BoxFuture<'static, Prepared>
    + Send
    + 'static,
) {
    use crate::pipeline::runner;
    let (ctx, executor, sender, gate) =
        (services.ctx.clone(), services.executor.clone(), services.sender.clone(), services.gate.clone());
    let cancel = services.control.shutdown_token();
    services.control.spawn(async move {
        let resource = match ctx.store.resource(&name).await {
            Ok(Some(r)) if !r.observe_only && r.status != Lifecycle::Deleted => r,
            Ok(Some(r)) => {
                return sender.send(Msg::Error(format!("{}: observed only or deleted; not changed", r.name)));
            }
            Ok(None) => return sender.send(Msg::Error(format!("no resource {name}"))),
            Err(e) => return sender.send(Msg::Error(e.to_string())),
        };
        let env = Env::from_context(&ctx, executor, gate, cancel, crate::exec::no_events());
        let done = async {
            let (mut change, planned) = prepare(ctx.clone(), env.clone(), resource.clone()).await?;
            crate::provision::ops::begin(&ctx.store, &resource, Lifecycle::Updating).await?;
            let record = runner::record_of(&env, change.as_ref());
            let progress = |r: &crate::pipeline::PipelineRun| sender.send(Msg::Pipeline(Box::new(r.clone())));
            let run = runner::run(&env, change.as_mut(), record, &progress).await?;
            if operation == Operation::Accept {
                let credentials = Credentials::of(&ctx);
                crate::provision::ops::finish_accept(&env, &credentials, &ctx.store, &resource, &run, &planned).await
            } else {
                crate::provision::ops::end(&ctx.store, &resource, Lifecycle::Updating, &run).await
            }
        };
        match done.await {
            Ok(status) => {
                sender.send(Msg::Toast {
                    level: super::model::ToastLevel::Info,
                    text: format!("{}: {} ended, {}", resource.name, operation.verb(), status.as_str()),
                });
                sender.send(Msg::DriftChanged);
            }
            Err(e) => sender.send(Msg::Error(format!("{}: {}: {e:#}", resource.name, operation.verb()))),
        }
    });
}

/// A decision about a host's drift from the Drift pane, asked through the console's modal.
pub(super) fn decide_host(services: &Services, decision: HostDecision) {
    let (ctx, sender, gate) = (services.ctx.clone(), services.sender.clone(), services.gate.clone());
    services.control.spawn(async move {
        let who = Who { session_id: ctx.session_id.clone(), requested_by: crate::ssh::target::local_user() };
        let (level, text) = match decide(&ctx.store, &gate, &who, &decision).await {
            Ok(Decided::Done(what)) => (super::model::ToastLevel::Success, what),
            Ok(Decided::Nothing(why)) => (super::model::ToastLevel::Error, why),
            Ok(Decided::Denied(by)) => (super::model::ToastLevel::Info, format!("not done: denied by {by}")),
            Err(e) => (super::model::ToastLevel::Error, format!("{e:#}")),
        };
        sender.send(Msg::Toast { level, text });
        sender.send(Msg::DriftChanged);
    });
}

/// Sends a tick every `drift.interval_secs` (when set) for as long as the console runs.
pub(super) fn start_interval(services: &Services) {
    let Some(seconds) = services.ctx.config.drift.interval_secs else { return };
    let sender = services.sender.clone();
    let stop = services.control.shutdown_token();
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(std::time::Duration::from_secs(seconds.max(10)));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        loop {
            tokio::select! {
                _ = interval.tick() => sender.send(Msg::DriftTick),
                () = stop.cancelled() => return,
            }
        }
    });
}
