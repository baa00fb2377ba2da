//! The execution specialist's pipeline tools: one per kind, with typed
//! arguments, offered only when the tool can run (ansible-playbook here and
//! python on the target, terraform here, kubectl here with a usable context).
//! Every proposal goes through the one runner; its dry run is asked about
//! first, since a dry run can run code.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Agent, AgentEvent};
use crate::inventory::Host;
use crate::llm::ToolSpec;
use crate::pipeline::ansible::{AnsibleChange, AnsibleSpec};
use crate::pipeline::kubernetes::{KubernetesChange, KubernetesSpec};
use crate::pipeline::terraform::{TerraformChange, TerraformSpec};
use crate::pipeline::vars::Vars;
use crate::pipeline::{Change, PipelineRun, PipelineStatus, StageName, runner};

/// Who the pipelines are asked by, in records and the audit log.
const ASKER: &str = "agent@execution";

/// Which pipeline kinds a target can use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offer {
    /// ansible-playbook here, python3 on the target.
    pub ansible: bool,
    /// terraform here.
    pub terraform: bool,
    /// kubectl here, and its current context.
    pub kubernetes: Option<String>,
}

/// What `host` can be changed with, from the cached (or freshly probed) capabilities of this machine
/// and of the host.
pub async fn offer(agent: &Agent, host: &Host) -> Offer {
    let env = agent.pipeline_env(ASKER, crate::exec::no_events());
    let ttl = agent.limits.capability_ttl;
    let local = crate::pipeline::capabilities::detect_local(&env, ttl, false).await;
    // The host is probed only when its answer matters (ansible needs python on it).
    let ansible = local.has("ansible-playbook")
        && (host.is_local() && local.has("python3")
            || crate::pipeline::capabilities::detect(&env, host, ttl, false).await.is_ok_and(|c| c.has("python3")));
    Offer {
        ansible,
        terraform: local.has("terraform"),
        kubernetes: local.kube_context.clone().filter(|_| local.has("kubectl")),
    }
}

fn vars_schema(what: &str) -> Value {
    json!({"type": "object", "description": what, "additionalProperties": {"type": "string"}})
}

/// The tools `offer` allows.
pub fn specs(offer: &Offer) -> Vec<ToolSpec> {
    let mut specs = Vec::new();
    let summary = json!({"type": "string", "description": "one line: what and why"});
    if offer.ansible {
        specs.push(ToolSpec {
            name: "propose_ansible".into(),
            description: "Propose running an Ansible playbook on this host. Its --check --diff dry run is asked about first, then shown per task; a person approves or denies applying it; a --check post-check follows and a failure runs the rollback playbook.".into(),
            parameters: json!({"type": "object", "additionalProperties": false, "required": ["summary", "playbook"], "properties": {
                "summary": summary,
                "playbook": {"type": "string", "description": "absolute path of the playbook on this machine"},
                "rollback_playbook": {"type": "string", "description": "absolute path of a playbook that undoes it"},
                "extra_vars": vars_schema("extra variables, name to value")
            }}),
        });
    }
    if offer.terraform {
        specs.push(ToolSpec {
            name: "propose_terraform".into(),
            description: "Propose applying a Terraform configuration folder on this machine. The plan is asked about first, then shown resource by resource; a person approves the saved plan, which is applied exactly; a plan expecting no change follows.".into(),
            parameters: json!({"type": "object", "additionalProperties": false, "required": ["summary", "dir"], "properties": {
                "summary": summary,
                "dir": {"type": "string", "description": "absolute path of the configuration folder"},
                "vars": vars_schema("Terraform variables, name to value")
            }}),
        });
    }
    if let Some(context) = &offer.kubernetes {
        specs.push(ToolSpec {
            name: "propose_kubernetes".into(),
            description: format!("Propose applying Kubernetes manifests (a file, a folder or a kustomize folder) with kubectl (current context: {context}). kubectl diff is asked about first and shown; a person approves apply --server-side; rollout status follows, rollout undo on failure."),
            parameters: json!({"type": "object", "additionalProperties": false, "required": ["summary", "path"], "properties": {
                "summary": summary,
                "path": {"type": "string", "description": "absolute path of the manifest file or folder"},
                "context": {"type": "string", "description": "kubeconfig context (default: the current one)"},
                "namespace": {"type": "string", "description": "namespace for objects that name none"}
            }}),
        });
    }
    specs
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnsibleArgs {
    #[allow(dead_code)]
    summary: String,
    playbook: String,
    rollback_playbook: Option<String>,
    #[serde(default)]
    extra_vars: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TerraformArgs {
    #[allow(dead_code)]
    summary: String,
    dir: String,
    #[serde(default)]
    vars: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KubernetesArgs {
    #[allow(dead_code)]
    summary: String,
    path: String,
    context: Option<String>,
    namespace: Option<String>,
}

fn absolute(path: &str) -> Result<std::path::PathBuf, String> {
    let path = std::path::PathBuf::from(path);
    if path.is_absolute() { Ok(path) } else { Err(format!("`{}` must be an absolute path", path.display())) }
}

/// Runs a pipeline tool, or `None` when `name` is not one `offer` allows.
pub async fn call(
    agent: &Agent,
    host: &Host,
    offer: &Offer,
    name: &str,
    value: Value,
) -> Option<Result<String, String>> {
    let allowed = match name {
        "propose_ansible" => offer.ansible,
        "propose_terraform" => offer.terraform,
        "propose_kubernetes" => offer.kubernetes.is_some(),
        _ => false,
    };
    if !allowed {
        return None;
    }
    let mut change = match build(host, name, value) {
        Ok(change) => change,
        Err(e) => return Some(Err(e)),
    };
    let done = run(agent, change.as_mut(), true).await;
    Some(Ok(report(&done)))
}

/// The change a pipeline tool's arguments describe, on `host` for Ansible.
fn build(host: &Host, name: &str, value: Value) -> Result<Box<dyn Change>, String> {
    use super::tools::args;
    Ok(match name {
        "propose_ansible" => {
            let a: AnsibleArgs = args(name, value)?;
            let spec = AnsibleSpec {
                playbook: absolute(&a.playbook)?,
                hosts: vec![host.name.clone()],
                rollback: a.rollback_playbook.as_deref().map(absolute).transpose()?,
                extra_vars: Vars::new(a.extra_vars.into_iter().collect()),
            };
            Box::new(AnsibleChange::new(spec, vec![host.clone()]))
        }
        "propose_terraform" => {
            let a: TerraformArgs = args(name, value)?;
            Box::new(TerraformChange::new(TerraformSpec {
                dir: absolute(&a.dir)?,
                vars: Vars::new(a.vars.into_iter().collect()),
                ..Default::default()
            }))
        }
        _ => {
            let a: KubernetesArgs = args(name, value)?;
            let spec = KubernetesSpec { path: absolute(&a.path)?, context: a.context, namespace: a.namespace };
            Box::new(KubernetesChange::new(spec))
        }
    })
}

/// Runs `change` through the one runner as the execution specialist, its live output forwarded to
/// the agent's observer; `ask_before_dry_run` for kinds whose dry run can run code.
pub async fn run(agent: &Agent, change: &mut dyn Change, ask_before_dry_run: bool) -> Result<PipelineRun, String> {
    let (tx, forward) = agent.exec_forwarder();
    let mut env = agent.pipeline_env(ASKER, tx);
    env.ask_before_dry_run = ask_before_dry_run;
    let record = runner::record_of(&env, change);
    let observer = agent.observer.clone();
    let progress = move |r: &PipelineRun| observer(AgentEvent::Pipeline(Box::new(r.clone())));
    let outcome = runner::run(&env, change, record, &progress).await;
    drop(env);
    let _ = forward.await;
    outcome.map_err(|e| e.to_string())
}

/// What the model is told: the end state, the summary and each stage's line.
pub fn report(done: &Result<PipelineRun, String>) -> String {
    let run = match done {
        Ok(run) => run,
        Err(e) => return format!("NOT RUN: {e}"),
    };
    let head = match run.status {
        PipelineStatus::Denied | PipelineStatus::Stopped | PipelineStatus::Planned => {
            "DENIED: nothing was changed. Do not propose it again; report to the operator.".to_string()
        }
        PipelineStatus::Succeeded if run.stage(StageName::Apply).is_none() => "NOTHING TO CHANGE.".to_string(),
        status => format!("{} (change {})", status.as_str().to_uppercase(), run.id),
    };
    let mut out = format!("{head}\nsummary: {}\n", run.summary);
    for stage in &run.stages {
        out.push_str(&format!("- {} {}: {}\n", stage.name.as_str(), stage.status.as_str(), stage.detail));
    }
    out
}
