//! The state tracker's readings of a Terraform resource group (issue 26).
//!
//! Drift comes from two readings, never from an exit code (a plan exits 2
//! with nothing changed outside): the `resource_drift` messages of a
//! refresh-only plan (objects changed outside Terraform, with real providers)
//! and the planned changes of a normal plan against the configuration merlya
//! applied (the state edited or removed outside merlya: what `terraform_data`
//! shows offline, as it has no remote object to refresh). The state file's
//! serial and lineage say whether another writer touched it. Sensitive values
//! are masked from what is kept.

use std::path::Path;

use serde_json::Value;

use crate::store::resources::Drift;

/// What the state file says: its serial, lineage, the resources' attributes
/// (sensitive ones masked) and the outputs (sensitive ones masked).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateReading {
    /// Terraform's state serial (each write adds one).
    pub serial: Option<i64>,
    /// The state's lineage (a new state has a new one).
    pub lineage: Option<String>,
    /// `address → attributes`.
    pub resources: Value,
    /// `name → value`.
    pub outputs: Value,
}

/// Reads `dir/terraform.tfstate` (an absent file is an empty state).
pub fn read_state(dir: &Path) -> Result<StateReading, String> {
    let path = dir.join("terraform.tfstate");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StateReading::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    // Terraform makes the file empty before its first write (a crash there leaves it so), and reads
    // an empty file as no state.
    if text.trim().is_empty() {
        return Ok(StateReading::default());
    }
    let state: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not a Terraform state: {e}", path.display()))?;
    let mut resources = serde_json::Map::new();
    for resource in state["resources"].as_array().into_iter().flatten() {
        if resource["mode"] != "managed" {
            continue;
        }
        let address =
            format!("{}.{}", resource["type"].as_str().unwrap_or("?"), resource["name"].as_str().unwrap_or("?"));
        for (i, instance) in resource["instances"].as_array().into_iter().flatten().enumerate() {
            let key = if i == 0 { address.clone() } else { format!("{address}[{i}]") };
            resources.insert(key, masked(&instance["attributes"], &instance["sensitive_attributes"]));
        }
    }
    let mut secrets = std::collections::BTreeSet::new();
    for resource in state["resources"].as_array().into_iter().flatten() {
        for instance in resource["instances"].as_array().into_iter().flatten() {
            secrets.extend(sensitive_values(&instance["attributes"], &instance["sensitive_attributes"]));
        }
    }
    let mut outputs = serde_json::Map::new();
    for (name, output) in state["outputs"].as_object().into_iter().flatten() {
        let mut value = if output["sensitive"] == true { Value::String("***".into()) } else { output["value"].clone() };
        mask_values(&mut value, &secrets);
        outputs.insert(name.clone(), value);
    }
    Ok(StateReading {
        serial: state["serial"].as_i64(),
        lineage: state["lineage"].as_str().map(str::to_string),
        resources: Value::Object(resources),
        outputs: Value::Object(outputs),
    })
}

/// `attributes` with every path `sensitive_attributes` names replaced by `***` (a top-level
/// attribute path is masked whole), and every other place holding one of those values too:
/// `terraform_data`'s `output` repeats its sensitive `input` without being marked.
fn masked(attributes: &Value, sensitive: &Value) -> Value {
    let mut out = attributes.clone();
    for path in sensitive.as_array().into_iter().flatten() {
        let first = path.as_array().and_then(|steps| steps.first()).map_or(path, |step| &step["value"]);
        if let Some(name) = first.as_str()
            && let Some(slot) = out.get_mut(name)
        {
            *slot = Value::String("***".into());
        }
    }
    let secrets = sensitive_values(attributes, sensitive);
    if !secrets.is_empty() {
        mask_values(&mut out, &secrets);
    }
    out
}

/// Every string a path of `sensitive_attributes` holds in `attributes` (Terraform ≥ 1.x writes a
/// path as `[{"type":"get_attr","value":"password"}, …]`; older versions the name alone).
fn sensitive_values(attributes: &Value, sensitive: &Value) -> std::collections::BTreeSet<String> {
    let mut secrets = std::collections::BTreeSet::new();
    for path in sensitive.as_array().into_iter().flatten() {
        let steps: Vec<&Value> = match path.as_array() {
            Some(steps) => steps.iter().map(|step| &step["value"]).collect(),
            None => vec![path],
        };
        let mut at = attributes;
        for step in steps {
            at = match (step.as_str(), step.as_u64()) {
                (Some(name), _) => &unwrapped(at)[name],
                (None, Some(i)) => &unwrapped(at)[i as usize],
                _ => &Value::Null,
            };
        }
        leaves(unwrapped(at), &mut secrets);
    }
    secrets
}

/// A dynamic value as the state keeps it (`{"value": …, "type": …}`, as `terraform_data` does), unwrapped.
fn unwrapped(value: &Value) -> &Value {
    match value.as_object() {
        Some(map) if map.len() == 2 && map.contains_key("value") && map.contains_key("type") => &map["value"],
        _ => value,
    }
}

/// Every string leaf of `value` (what a sensitive path holds).
fn leaves(value: &Value, into: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::String(s) if !s.is_empty() => {
            into.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| leaves(v, into)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, into)),
        _ => {}
    }
}

/// Replaces every string leaf equal to one of `secrets` by `***`.
fn mask_values(value: &mut Value, secrets: &std::collections::BTreeSet<String>) {
    match value {
        Value::String(s) if secrets.contains(s.as_str()) => *value = Value::String("***".into()),
        Value::Array(items) => items.iter_mut().for_each(|v| mask_values(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| mask_values(v, secrets)),
        _ => {}
    }
}

/// A digest of `dir`'s configuration files (`*.tf`, `*.tf.json`, `*.tfvars`, by name): what a check
/// compares with the one recorded at the last apply. `None` when the folder cannot be read.
pub fn config_digest(dir: &Path) -> Option<String> {
    use sha2::Digest;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let config = [".tf", ".tf.json", ".tfvars", ".tfvars.json"].iter().any(|s| name.ends_with(s));
        if config && entry.path().is_file() {
            files.push((name, std::fs::read(entry.path()).ok()?));
        }
    }
    files.sort();
    let mut hash = sha2::Sha256::new();
    for (name, content) in &files {
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        hash.update((content.len() as u64).to_le_bytes());
        hash.update(content);
    }
    Some(hex::encode(hash.finalize()))
}

/// How an operation is recorded before it starts: its verb and the merlya process running it, so
/// that a check can tell a run in flight from one a crash left behind.
pub fn operation_by(verb: &str) -> String {
    format!("{verb} by merlya pid {}", std::process::id())
}

/// Whether the operation recorded as `operation` (see [`operation_by`]) is still being run: the merlya
/// process that started it is alive. A crash (or a kill) leaves one that is not.
pub fn in_flight(operation: &str) -> bool {
    let Some(pid) = operation.rsplit_once("merlya pid ").and_then(|(_, pid)| pid.trim().parse::<u32>().ok()) else {
        return false;
    };
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim().starts_with("merlya"))
}

/// What the two plans found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftReading {
    /// The verdict.
    pub drift: Drift,
    /// One line per finding (`terraform_data.marker: changed outside Terraform`).
    pub detail: Vec<String>,
    /// The normal plan's changes not accepted yet, as `address action` (what an accept records).
    pub planned: Vec<String>,
}

/// A change of the normal plan as an accept records it: `address action`.
pub fn accept_key(address: &str, action: &str) -> String {
    format!("{address} {action}")
}

/// Reads the JSON lines of a refresh-only plan and of a normal plan into a verdict.
/// `expected` holds the addresses merlya applied (a planned `create` of one of them: missing);
/// `accepted` the normal plan's changes an operator accepted (`merlya state accept`) whose objects
/// are still as they were then: reported, not drift.
pub fn judge(
    refresh_only: &str,
    normal: &str,
    expected: &[String],
    accepted: &std::collections::BTreeSet<String>,
) -> DriftReading {
    let mut detail = Vec::new();
    let mut planned = Vec::new();
    let (mut drifted, mut missing) = (false, false);
    let changes = |text: &str, kind: &str| -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["type"] == kind)
            .map(|m| {
                let change = &m["change"];
                (
                    change["resource"]["addr"].as_str().unwrap_or("?").to_string(),
                    change["action"].as_str().unwrap_or("?").to_string(),
                )
            })
            .collect()
    };
    for (address, action) in changes(refresh_only, "resource_drift") {
        if action == "delete" {
            missing = true;
            detail.push(format!("{address}: deleted outside Terraform"));
        } else {
            drifted = true;
            detail.push(format!("{address}: changed outside Terraform ({action})"));
        }
    }
    for (address, action) in changes(normal, "planned_change") {
        if matches!(action.as_str(), "noop" | "read") {
            continue;
        }
        let key = accept_key(&address, &action);
        if accepted.contains(&key) {
            detail.push(format!("{address}: accepted as it is (the template would {action} it)"));
            continue;
        }
        planned.push(key);
        if action == "create" && expected.contains(&address) {
            missing = true;
            detail.push(format!("{address}: missing from the state (Terraform would create it again)"));
        } else {
            drifted = true;
            detail.push(format!("{address}: differs from what merlya applied (Terraform would {action} it)"));
        }
    }
    let drift = if missing {
        Drift::Missing
    } else if drifted {
        Drift::Drifted
    } else {
        Drift::NoDrift
    };
    DriftReading { drift, detail, planned }
}

/// The accepted changes still in force: each of `accepted` whose object holds in `state` what it
/// held when accepted (`expected`, recorded then). A later write to it makes it drift again.
pub fn accepted_in_force(accepted: &[String], expected: &Value, state: &Value) -> std::collections::BTreeSet<String> {
    accepted
        .iter()
        .filter(|key| {
            let address = key.rsplit_once(' ').map_or(key.as_str(), |(address, _)| address);
            expected.get(address) == state.get(address)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_readings_make_the_verdict_never_the_exit_code() {
        let none = r#"{"type":"version","terraform":"1.9.0"}"#;
        let expected = vec!["terraform_data.marker".to_string()];
        let judge = |a: &str, b: &str, e: &[String]| judge(a, b, e, &Default::default());
        assert_eq!(judge(none, none, &expected).drift, Drift::NoDrift);
        let outside =
            r#"{"type":"resource_drift","change":{"resource":{"addr":"aws_instance.web"},"action":"update"}}"#;
        assert_eq!(judge(outside, none, &expected).drift, Drift::Drifted);
        let recreate =
            r#"{"type":"planned_change","change":{"resource":{"addr":"terraform_data.marker"},"action":"create"}}"#;
        let reading = judge(none, recreate, &expected);
        assert_eq!(reading.drift, Drift::Missing);
        assert!(reading.detail[0].contains("missing from the state"));
        let edited =
            r#"{"type":"planned_change","change":{"resource":{"addr":"terraform_data.marker"},"action":"replace"}}"#;
        assert_eq!(judge(none, edited, &expected).drift, Drift::Drifted);
    }

    #[test]
    fn an_accepted_change_is_reported_not_drift_until_its_object_changes_again() {
        let none = r#"{"type":"version","terraform":"1.9.0"}"#;
        let edited =
            r#"{"type":"planned_change","change":{"resource":{"addr":"terraform_data.marker"},"action":"replace"}}"#;
        let expected = vec!["terraform_data.marker".to_string()];
        let open = judge(none, edited, &expected, &Default::default());
        assert_eq!(open.planned, ["terraform_data.marker replace"]);
        let recorded = serde_json::json!({"terraform_data.marker": {"input": "b"}});
        let in_force = accepted_in_force(&open.planned, &recorded, &recorded);
        let reading = judge(none, edited, &expected, &in_force);
        assert_eq!(reading.drift, Drift::NoDrift);
        assert!(reading.detail[0].contains("accepted as it is"), "{:?}", reading.detail);
        assert!(reading.planned.is_empty());
        // Written again since: the acceptance no longer holds.
        let now = serde_json::json!({"terraform_data.marker": {"input": "c"}});
        let lapsed = accepted_in_force(&open.planned, &recorded, &now);
        assert!(lapsed.is_empty());
        assert_eq!(judge(none, edited, &expected, &lapsed).drift, Drift::Drifted);
        // Another change of the same object is not covered either.
        let deleted =
            r#"{"type":"planned_change","change":{"resource":{"addr":"terraform_data.marker"},"action":"delete"}}"#;
        assert_eq!(judge(none, deleted, &expected, &in_force).drift, Drift::Drifted);
    }

    #[test]
    fn sensitive_attributes_and_outputs_are_masked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("terraform.tfstate"),
            r#"{"version":4,"serial":7,"lineage":"abc","outputs":{"pw":{"value":"hunter2","sensitive":true},"id":{"value":"x","sensitive":false}},
            "resources":[{"mode":"managed","type":"terraform_data","name":"m","instances":[{"attributes":{"id":"x","input":{"value":{"password":"hunter2"},"type":["object",{"password":"string"}]},"output":{"value":{"password":"hunter2"},"type":["object",{"password":"string"}]}},
            "sensitive_attributes":[[{"type":"get_attr","value":"input"},{"type":"get_attr","value":"password"}]]}]}]}"#,
        )
        .unwrap();
        let state = read_state(dir.path()).unwrap();
        assert_eq!((state.serial, state.lineage.as_deref()), (Some(7), Some("abc")));
        assert_eq!(state.resources["terraform_data.m"]["input"], "***");
        assert_eq!(state.resources["terraform_data.m"]["output"]["value"]["password"], "***", "the unmarked copy too");
        assert_eq!(state.outputs["pw"], "***");
        assert_eq!(state.outputs["id"], "x");
        assert!(!format!("{state:?}").contains("hunter2"));
        assert_eq!(read_state(&dir.path().join("none")).unwrap(), StateReading::default());
        std::fs::write(dir.path().join("terraform.tfstate"), "").unwrap();
        assert_eq!(read_state(dir.path()).unwrap(), StateReading::default(), "an empty file is no state");
    }
}
