//! What every operation on a provisioned resource does around its change,
//! whoever drives the change (the CLI's `provision`/`state`, the console's
//! Drift pane): render its folder from answers, record the operation before it
//! starts, and record how it ended (lifecycle, expected state, outputs, a
//! snapshot) — so a crash in between leaves it `unknown`, never "applied".

use std::path::{Path, PathBuf};

use color_eyre::eyre::{Result, eyre};
use serde_json::json;

use super::credentials::Credentials;
use super::template::{Answers, Registry, TemplateRef, render};
use super::tracker::read_state;
use crate::pipeline::terraform::{TerraformChange, TerraformSpec};
use crate::pipeline::{Env, PipelineRun, PipelineStatus};
use crate::store::Store;
use crate::store::resources::{Applied, Lifecycle, Resource};

/// Renders templates into resource folders.
pub struct Renderer {
    /// MERLYA_HOME/templates (the user's templates beside the built-in ones).
    pub templates: PathBuf,
    /// Where `@service:host:field` secrets are read at render time.
    pub secrets: crate::config::SecretsBackend,
}

impl Renderer {
    /// Renders `answers` into `dir` (its configuration replaced: the folder holds only what merlya
    /// rendered, and Terraform's own files).
    pub fn render_into(&self, answers: &Answers, template: &TemplateRef, dir: &Path) -> Result<()> {
        let registry = Registry::load(&self.templates);
        let entry = registry.get(template)?;
        answers.check(&entry.template.spec)?;
        let keyring: Box<dyn crate::secrets::SecretSource> = if answers.needs_keyring() {
            Box::new(crate::secrets::Secrets::open(self.secrets))
        } else {
            Box::new(crate::secrets::Secrets::memory())
        };
        let rendered = render(&entry.template, answers, keyring.as_ref())?;
        clear_configuration(dir)?;
        rendered.write(dir, true)?;
        Ok(())
    }

    /// Renders a resource's folder again from `answers` (stored: secrets as references).
    pub fn rerender(&self, resource: &Resource, answers: &serde_json::Value) -> Result<()> {
        let answers: Answers = serde_json::from_value(answers.clone())
            .map_err(|e| eyre!("the stored answers of {} are unreadable: {e}", resource.name))?;
        let reference: TemplateRef = resource.template.parse().map_err(|e: String| eyre!(e))?;
        self.render_into(&answers, &reference, Path::new(&resource.workdir))
    }
}

/// Removes the configuration files of `dir`, keeping Terraform's own (state, lock file, providers).
pub fn clear_configuration(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| eyre!("cannot create {}: {e}", dir.display()))?;
    for entry in std::fs::read_dir(dir).map_err(|e| eyre!("cannot read {}: {e}", dir.display()))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let keep = name.starts_with("terraform.tfstate") || name.starts_with(".terraform");
        if !keep && entry.path().is_file() {
            std::fs::remove_file(entry.path()).map_err(|e| eyre!("cannot remove {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// What a snapshot keeps (no secret values: answers hold references, the state's sensitive values
/// are masked).
pub fn snapshot_of(r: &Resource) -> serde_json::Value {
    json!({"answers": r.answers, "expected": r.expected, "actual": r.actual, "outputs": r.outputs})
}

/// The Terraform change of a resource's folder, its provider's credentials read now.
pub fn terraform_spec(resource: &Resource, credentials: &Credentials) -> Result<TerraformSpec> {
    let env = credentials.for_provider(&resource.provider).map_err(|e| eyre!(e))?;
    Ok(TerraformSpec { dir: PathBuf::from(&resource.workdir), env, ..Default::default() })
}

/// Records `operation` before its change starts.
pub async fn begin(store: &Store, resource: &Resource, operation: Lifecycle) -> Result<()> {
    let verb = match operation {
        Lifecycle::Creating => "create",
        Lifecycle::Deleting => "delete",
        _ => "update",
    };
    // Who runs it, so that a check can tell a run in flight from one a crash left behind.
    let by = super::tracker::operation_by(verb);
    store.begin_operation(&resource.id, operation, &by).await?;
    Ok(())
}

/// An accept of what a Terraform resource is now: the refresh-only change to approve, and the
/// normal plan's changes its approval shows, recorded as accepted once it applied.
pub struct Accept {
    /// The refresh-only change, its approval naming each finding it accepts.
    pub change: TerraformChange,
    /// The normal plan's changes shown (`address action`).
    pub planned: Vec<String>,
}

/// Reads `resource` (two plans, nothing recorded) and builds its accept. Only a Terraform resource
/// has a state to record; an MCP resource is made as expected again with reconcile.
pub async fn prepare_accept(env: &Env, credentials: &Credentials, resource: &Resource) -> Result<Accept> {
    if resource.backend == "mcp" {
        return Err(eyre!(
            "{}: accept records a Terraform state; an MCP resource is put back with `merlya state reconcile` or changed with `merlya provision update`",
            resource.name
        ));
    }
    let (reading, _) =
        super::check::read_drift(env, credentials, resource).await.map_err(|e| eyre!("{}: {e}", resource.name))?;
    let mut reasons: Vec<String> = reading.detail.iter().map(|d| format!("accepts {d}")).collect();
    if reasons.is_empty() {
        reasons.push("nothing has drifted: the state as it is becomes what merlya expects".into());
    }
    reasons.push(format!("merlya records {} as it is now and stops reporting what it accepts", resource.name));
    let spec = TerraformSpec { refresh_only: true, ..terraform_spec(resource, credentials)? };
    Ok(Accept { change: TerraformChange::new(spec).with_reasons(reasons), planned: reading.planned })
}

/// Records how an accept ended: after an apply, the state as expected (by [`end`]), the changes
/// shown as accepted, and a check's verdict.
pub async fn finish_accept(
    env: &Env,
    credentials: &Credentials,
    store: &Store,
    resource: &Resource,
    run: &PipelineRun,
    planned: &[String],
) -> Result<Lifecycle> {
    if run.status != PipelineStatus::Succeeded {
        // Nothing outside changed, whatever stopped it: the resource is where it was.
        let kept = Applied {
            status: resource.status,
            expected: None,
            outputs: None,
            tf_serial: None,
            tf_lineage: None,
            config_digest: None,
        };
        store.finish_operation(&resource.id, &kept).await?;
        return Ok(resource.status);
    }
    let status = end(store, resource, Lifecycle::Updating, run).await?;
    store.set_accepted(&resource.id, planned).await?;
    let now = store.resource(&resource.id).await?.into_iter().collect::<Vec<_>>();
    super::check::check_resources(env, None, credentials, store, &now).await?;
    Ok(status)
}

/// Records how `operation` ended with `run`: the lifecycle, and after an apply what is expected, the
/// outputs and a snapshot. Returns the lifecycle.
pub async fn end(store: &Store, resource: &Resource, operation: Lifecycle, run: &PipelineRun) -> Result<Lifecycle> {
    let dir = Path::new(&resource.workdir);
    // What is expected after an apply: Terraform's state, or what the MCP request writes.
    let state = if resource.backend == "mcp" {
        let request = super::mcp_backend::load(dir).map_err(|e| eyre!(e))?;
        let written = operation != Lifecycle::Deleting;
        super::tracker::StateReading {
            resources: if written { json!({ "content": request.expected }) } else { serde_json::Value::Null },
            outputs: if written { request.outputs } else { serde_json::Value::Null },
            ..Default::default()
        }
    } else {
        read_state(dir).map_err(|e| eyre!(e))?
    };
    let status = match run.status {
        PipelineStatus::Succeeded if operation == Lifecycle::Deleting => Lifecycle::Deleted,
        PipelineStatus::Succeeded => Lifecycle::Active,
        // Nothing was applied: the resource is where it was.
        PipelineStatus::Denied | PipelineStatus::Stopped | PipelineStatus::Planned => resource.status,
        _ => Lifecycle::Failed,
    };
    let applied = run.status == PipelineStatus::Succeeded;
    let done = Applied {
        status,
        expected: applied.then(|| state.resources.clone()),
        outputs: applied.then(|| state.outputs.clone()),
        tf_serial: state.serial,
        tf_lineage: state.lineage.clone(),
        config_digest: applied.then(|| super::tracker::config_digest(dir)).flatten(),
    };
    store.finish_operation(&resource.id, &done).await?;
    if applied {
        let answers = store.resource(&resource.id).await?.map(|r| r.answers).unwrap_or_default();
        store
            .add_snapshot(
                &resource.id,
                &json!({"run": run.id, "answers": answers, "expected": state.resources, "outputs": state.outputs}),
            )
            .await?;
    }
    Ok(status)
}
