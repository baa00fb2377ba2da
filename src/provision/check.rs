//! A drift check of provisioned resources, shared by `merlya state check` and the
//! console's drift worker: two plans per resource (refresh-only, then normal), never an apply.

use std::path::PathBuf;

use serde::Serialize;

use super::credentials::Credentials;
use super::tracker::{DriftReading, accepted_in_force, judge, read_state};
use crate::pipeline::Env;
use crate::store::Store;
use crate::store::resources::{Drift, Lifecycle, Resource};

/// Resources checked at once.
const PARALLEL: usize = 4;

/// What a check of one resource found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceCheck {
    /// The resource's name.
    pub resource: String,
    /// The verdict.
    pub drift: Drift,
    /// What was found, one line each.
    pub detail: Vec<String>,
    /// An operation started and its end was never recorded: the resource is now `unknown`.
    pub crashed: bool,
    /// The check could not run (its reason is the detail).
    pub failed: bool,
}

/// Checks each resource that is not deleted and records what it found.
/// `mcp`: how resources of the MCP backend are read back (a read-only call environment).
pub async fn check_resources(
    env: &Env,
    mcp: Option<&crate::mcp::call::CallEnv>,
    credentials: &Credentials,
    store: &Store,
    resources: &[Resource],
) -> Result<Vec<ResourceCheck>, crate::store::StoreError> {
    // A few resources at once: each check is two Terraform processes, mostly waiting on providers.
    // A resource whose operation is still being run (here or by another merlya) is not checked:
    // its plans would race the apply, and its verdict would be the apply's half-way state.
    let (busy, live): (Vec<&Resource>, Vec<&Resource>) = resources
        .iter()
        .filter(|r| r.status != Lifecycle::Deleted)
        .partition(|r| r.status.in_progress() && super::tracker::in_flight(&r.operation));
    let mut readings = Vec::new();
    for chunk in live.chunks(PARALLEL) {
        let batch = futures::future::join_all(chunk.iter().map(|r| read_any(env, mcp, credentials, r))).await;
        readings.extend(chunk.iter().copied().zip(batch));
    }
    let mut checks: Vec<ResourceCheck> = busy
        .iter()
        .map(|r| ResourceCheck {
            resource: r.name.clone(),
            drift: r.drift,
            detail: vec![format!("not checked: an operation is under way ({})", r.operation)],
            crashed: false,
            failed: false,
        })
        .collect();
    for (r, reading) in readings {
        let crashed = r.status.in_progress();
        let check = match reading {
            Ok((drift, detail, actual)) => {
                store.record_check(&r.id, drift, &detail.join("\n"), &actual, crashed).await?;
                if drift != Drift::NoDrift {
                    crate::metrics::drift(1);
                }
                ResourceCheck { resource: r.name.clone(), drift, detail, crashed, failed: false }
            }
            Err(e) => {
                store.record_check(&r.id, Drift::Unknown, &e, &serde_json::json!({}), crashed).await?;
                ResourceCheck {
                    resource: r.name.clone(),
                    drift: Drift::Unknown,
                    detail: vec![e],
                    crashed,
                    failed: true,
                }
            }
        };
        checks.push(check);
    }
    Ok(checks)
}

/// Whether `r`'s state and configuration are exactly as merlya's last apply left them (and nothing
/// was accepted apart from the configuration): a normal plan then has nothing to add to a refresh.
fn settled(r: &Resource, state: &super::tracker::StateReading, dir: &std::path::Path) -> bool {
    r.status == Lifecycle::Active
        && r.accepted.is_empty()
        && r.tf_serial.is_some()
        && state.serial == r.tf_serial
        && state.lineage == r.tf_lineage
        && state.resources == r.expected
        && r.config_digest.is_some()
        && super::tracker::config_digest(dir) == r.config_digest
}

/// A resource's drift by its backend.
async fn read_any(
    env: &Env,
    mcp: Option<&crate::mcp::call::CallEnv>,
    credentials: &Credentials,
    r: &Resource,
) -> Result<(Drift, Vec<String>, serde_json::Value), String> {
    if r.backend != "mcp" {
        return read_drift(env, credentials, r).await.map(|(reading, actual)| (reading.drift, reading.detail, actual));
    }
    let Some(mcp) = mcp else { return Err("no MCP servers to read it back with".into()) };
    let request = super::mcp_backend::load(std::path::Path::new(&r.workdir))?;
    super::mcp_backend::check(mcp, &request).await
}

/// A Terraform resource's drift (two plans, the state's serial and lineage) and its state's
/// resources; nothing is recorded.
pub async fn read_drift(
    env: &Env,
    credentials: &Credentials,
    r: &Resource,
) -> Result<(DriftReading, serde_json::Value), String> {
    use crate::pipeline::tool::{ToolCall, run};
    let dir = PathBuf::from(&r.workdir);
    let provider = credentials.for_provider(&r.provider)?;
    let call = |args: &[&str]| {
        let mut call = ToolCall::new("terraform", args, &dir);
        call.env.insert("TF_IN_AUTOMATION".into(), "1".into());
        for (name, value) in provider.iter() {
            call.env.insert(name.to_string(), value.to_string());
            call.secrets.push(value.to_string());
        }
        call.live_stdout = false;
        call
    };
    let plan_args = ["plan", "-input=false", "-lock=false", "-no-color", "-json"];
    let refresh_call = call(&[&plan_args[..], &["-refresh-only"]].concat());
    let normal_call = call(&plan_args);
    // The normal plan reads what a refresh cannot: the state or the configuration changed since
    // merlya's apply. When both are exactly as merlya left them (serial, lineage, attributes,
    // configuration digest), it can only repeat that apply's post-check, so it is not run.
    let state = read_state(&dir)?;
    let settled = settled(r, &state, &dir);
    let readings = || async {
        if settled {
            (run(env, &refresh_call).await, crate::pipeline::tool::ToolOutput { code: Some(0), ..Default::default() })
        } else {
            tokio::join!(run(env, &refresh_call), run(env, &normal_call))
        }
    };
    // `init` only when a plan says it is needed (the folder was applied from a private copy, or its
    // providers changed).
    let (mut refresh, mut normal) = readings().await;
    let needs_init = |o: &crate::pipeline::tool::ToolOutput| o.code == Some(1) && o.text().contains("terraform init");
    if needs_init(&refresh) || needs_init(&normal) {
        let init = run(env, &call(&["init", "-input=false", "-no-color"])).await;
        if init.code != Some(0) {
            return Err(format!("terraform init failed: {}", init.text().trim()));
        }
        (refresh, normal) = readings().await;
    }
    for out in [&refresh, &normal] {
        if !matches!(out.code, Some(0 | 2)) {
            return Err(format!("terraform plan failed: {}", out.text().trim()));
        }
    }
    let expected: Vec<String> = r.expected.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    let accepted = accepted_in_force(&r.accepted, &r.expected, &state.resources);
    let mut reading = judge(&refresh.stdout, &normal.stdout, &expected, &accepted);
    // A state written outside merlya: another serial or lineage than merlya's last write.
    if (r.tf_serial.is_some() && state.serial != r.tf_serial)
        || (r.tf_lineage.is_some() && state.lineage != r.tf_lineage)
    {
        reading
            .detail
            .push(format!("the state was written outside merlya (serial {:?} → {:?})", r.tf_serial, state.serial));
        if reading.drift == Drift::NoDrift {
            reading.drift = Drift::Drifted;
        }
    }
    Ok((reading, state.resources))
}
