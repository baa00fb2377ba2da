//! Reading `terraform show -json PLAN`: a resource-level summary ("2 to add,
//! 1 to change, 1 to destroy", destroys named), a per-resource diff with
//! sensitive values masked, and drift (changes made outside Terraform) kept
//! apart. Only these fields are read; the plan's `variables` (which hold
//! sensitive values in clear) are never kept.

use serde::Deserialize;
use serde_json::Value;

/// What replaces a sensitive value everywhere it would be shown.
pub const SENSITIVE: &str = "(sensitive value)";
/// What stands for a value known only after apply.
pub const UNKNOWN: &str = "(known after apply)";

/// One resource's planned change, values masked.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceChange {
    /// `module.x.aws_instance.web[0]`.
    pub address: String,
    /// `create`, `update`, `delete`, `read`, `no-op` (two for a replacement).
    pub actions: Vec<String>,
    /// Before, masked (`null` for a create).
    pub before: Value,
    /// After, masked, unknown values shown as such (`null` for a delete).
    pub after: Value,
    /// Whether a sensitive value changes where the masked before and after look alike.
    pub hidden_change: bool,
}

impl ResourceChange {
    /// Whether this change destroys the resource (a delete or a replacement).
    pub fn destroys(&self) -> bool {
        self.actions.iter().any(|a| a == "delete")
    }

    /// Terraform's words for it.
    pub fn verb(&self) -> &'static str {
        match self.actions.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["create"] => "will be created",
            ["delete"] => "will be destroyed",
            ["update"] => "will be updated in-place",
            ["delete", "create"] | ["create", "delete"] => "must be replaced",
            ["read"] => "will be read during apply",
            _ => "is unchanged",
        }
    }
}

/// The plan, summarised.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanSummary {
    /// Resources created (replacements count here and in `destroy`).
    pub add: usize,
    /// Resources updated in place.
    pub change: usize,
    /// Resources destroyed.
    pub destroy: usize,
    /// Every resource change but no-ops, in plan order.
    pub resources: Vec<ResourceChange>,
    /// Changes Terraform found made outside it since the last apply.
    pub drift: Vec<ResourceChange>,
}

#[derive(Deserialize)]
struct Plan {
    format_version: String,
    #[serde(default)]
    resource_changes: Vec<RawChange>,
    #[serde(default)]
    resource_drift: Vec<RawChange>,
}

#[derive(Deserialize)]
struct RawChange {
    address: String,
    change: RawDelta,
}

#[derive(Deserialize)]
struct RawDelta {
    actions: Vec<String>,
    #[serde(default)]
    before: Value,
    #[serde(default)]
    after: Value,
    #[serde(default)]
    after_unknown: Value,
    #[serde(default)]
    before_sensitive: Value,
    #[serde(default)]
    after_sensitive: Value,
}

impl RawChange {
    fn into_change(self) -> ResourceChange {
        let d = self.change;
        let raw_differs = d.before != d.after;
        let after = unknown(mask(d.after, &d.after_sensitive), &d.after_unknown);
        let before = mask(d.before, &d.before_sensitive);
        let hidden_change = raw_differs && before == after;
        ResourceChange { address: self.address, actions: d.actions, before, after, hidden_change }
    }
}

/// Replaces every value the `sensitive` tree marks `true` by [`SENSITIVE`].
fn mask(value: Value, sensitive: &Value) -> Value {
    match (value, sensitive) {
        (_, Value::Bool(true)) => Value::String(SENSITIVE.into()),
        (Value::Object(map), Value::Object(marks)) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let masked = match marks.get(&k) {
                        Some(mark) => mask(v, mark),
                        None => v,
                    };
                    (k, masked)
                })
                .collect(),
        ),
        (Value::Array(items), Value::Array(marks)) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match marks.get(i) {
                    Some(mark) => mask(v, mark),
                    None => v,
                })
                .collect(),
        ),
        (value, _) => value,
    }
}

/// Fills in [`UNKNOWN`] where `after_unknown` marks a value known only after apply.
fn unknown(value: Value, marks: &Value) -> Value {
    match (value, marks) {
        (_, Value::Bool(true)) => Value::String(UNKNOWN.into()),
        (Value::Object(mut map), Value::Object(marks)) => {
            for (k, mark) in marks {
                let v = map.remove(k).unwrap_or(Value::Null);
                map.insert(k.clone(), unknown(v, mark));
            }
            Value::Object(map)
        }
        (value, _) => value,
    }
}

/// Reads the plan JSON; a format other than 1.x is refused (its fields may mean something else).
pub fn parse(json: &str) -> Result<PlanSummary, String> {
    let plan: Plan =
        serde_json::from_str(json).map_err(|e| format!("`terraform show -json` printed something unexpected: {e}"))?;
    if plan.format_version.split('.').next() != Some("1") {
        return Err(format!(
            "`terraform show -json` uses format_version {}; merlya reads 1.x (upgrade merlya)",
            plan.format_version
        ));
    }
    let mut summary = PlanSummary::default();
    for change in plan.resource_changes.into_iter().map(RawChange::into_change) {
        match change.actions.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["create"] => summary.add += 1,
            ["update"] => summary.change += 1,
            ["delete"] => summary.destroy += 1,
            ["delete", "create"] | ["create", "delete"] => {
                summary.add += 1;
                summary.destroy += 1;
            }
            _ => continue,
        }
        summary.resources.push(change);
    }
    summary.drift = plan
        .resource_drift
        .into_iter()
        .map(RawChange::into_change)
        .filter(|c| c.actions.iter().any(|a| a != "no-op"))
        .collect();
    Ok(summary)
}

impl PlanSummary {
    /// "2 to add, 1 to change, 1 to destroy".
    pub fn line(&self) -> String {
        format!("{} to add, {} to change, {} to destroy", self.add, self.change, self.destroy)
    }

    /// The addresses this plan destroys.
    pub fn destroys(&self) -> Vec<&str> {
        self.resources.iter().filter(|r| r.destroys()).map(|r| r.address.as_str()).collect()
    }

    /// A unified diff per resource (before/after as JSON), then drift, each resource headed by what
    /// happens to it, so the console's diff viewer highlights and jumps between resources.
    pub fn render(&self) -> String {
        let mut out = format!("# Terraform plan: {}\n", self.line());
        for change in &self.resources {
            out.push_str(&resource_diff(change, ""));
        }
        if !self.drift.is_empty() {
            out.push_str(&format!(
                "# Drift: {} resource(s) changed outside Terraform since the last apply\n",
                self.drift.len()
            ));
            for change in &self.drift {
                out.push_str(&resource_diff(change, "drift: "));
            }
        }
        out
    }
}

fn pretty(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        v => serde_json::to_string_pretty(v).map(|s| s + "\n").unwrap_or_default(),
    }
}

fn resource_diff(change: &ResourceChange, prefix: &str) -> String {
    let (before, after) = (pretty(&change.before), pretty(&change.after));
    let diff = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{prefix}{}", change.address), &format!("b/{prefix}{}", change.address))
        .to_string();
    let hidden = if change.hidden_change { "# (a sensitive value changes; it is not shown)\n" } else { "" };
    format!("# {prefix}{} {}\n{hidden}{diff}", change.address, change.verb())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"{
      "format_version": "1.2",
      "variables": {"token": {"value": "s3cret"}},
      "resource_changes": [
        {"address": "terraform_data.a", "change": {"actions": ["create"], "before": null,
          "after": {"input": "hi", "triggers_replace": null}, "after_unknown": {"id": true, "output": true},
          "before_sensitive": false, "after_sensitive": {}}},
        {"address": "terraform_data.b", "change": {"actions": ["update"], "before": {"input": "old-secret", "id": "1"},
          "after": {"input": "s3cret", "id": "1"}, "after_unknown": {},
          "before_sensitive": {"input": true}, "after_sensitive": {"input": true}}},
        {"address": "terraform_data.c", "change": {"actions": ["delete", "create"], "before": {"input": [1, "pw"]},
          "after": {"input": [2, "pw2"]}, "after_unknown": {}, "before_sensitive": {"input": [false, true]},
          "after_sensitive": {"input": [false, true]}}},
        {"address": "terraform_data.d", "change": {"actions": ["no-op"], "before": {}, "after": {}}},
        {"address": "terraform_data.e", "change": {"actions": ["delete"], "before": {"input": "x"}, "after": null}}
      ],
      "resource_drift": [
        {"address": "terraform_data.f", "change": {"actions": ["update"], "before": {"input": "a"}, "after": {"input": "b"}}}
      ]
    }"#;

    #[test]
    fn counts_masks_and_separates_drift() {
        let plan = parse(PLAN).unwrap();
        assert_eq!(plan.line(), "2 to add, 1 to change, 2 to destroy");
        assert_eq!(plan.destroys(), ["terraform_data.c", "terraform_data.e"]);
        let text = plan.render();
        for secret in ["s3cret", "old-secret", "\"pw\"", "pw2"] {
            assert!(!text.contains(secret), "{secret} shown:\n{text}");
        }
        assert!(text.contains("updated in-place\n# (a sensitive value changes; it is not shown)"), "{text}");
        assert!(text.contains(&format!("    \"{SENSITIVE}\"\n")), "{text}");
        assert!(text.contains(&format!("+  \"id\": \"{UNKNOWN}\"")), "{text}");
        assert!(text.contains("# terraform_data.c must be replaced\n--- a/terraform_data.c"), "{text}");
        assert!(text.contains("# Drift: 1 resource(s)") && text.contains("+++ b/drift: terraform_data.f"), "{text}");
        assert!(!text.contains("terraform_data.d"), "no-ops are not listed:\n{text}");
    }

    #[test]
    fn another_format_version_is_refused_with_what_is_read() {
        let err = parse(r#"{"format_version": "2.0", "resource_changes": []}"#).unwrap_err();
        assert!(err.contains("format_version 2.0") && err.contains("1.x"), "{err}");
        let err = parse("Error: no plan").unwrap_err();
        assert!(err.contains("unexpected"), "{err}");
    }
}
