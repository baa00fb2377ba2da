//! `MERLYA_<SECTION>_<KEY>=value` overrides, applied after the file is parsed.
//!
//! The value is read as a YAML scalar (so `20`, `true` and `accept-new` all
//! work); a variable for an unknown key or with a value of the wrong type is an
//! error naming the variable. Variables that do not start with a known section
//! (`MERLYA_HOME`, `MERLYA_LOG`, ...) are not configuration and are ignored.

use super::{Config, ConfigError};

const SECTIONS: [&str; 9] = ["model", "ssh", "policy", "ui", "logging", "secrets", "audit", "store", "operator"];

/// Returns `config` with every matching environment variable applied.
pub fn apply_env_overrides(config: Config, env: &[(String, String)]) -> Result<Config, ConfigError> {
    let mut overrides: Vec<(&str, &str, String, &str)> = Vec::new();
    for (var, value) in env {
        let Some(rest) = var.strip_prefix("MERLYA_") else { continue };
        let lower = rest.to_ascii_lowercase();
        let Some((section, key)) = lower.split_once('_') else { continue };
        let Some(section) = SECTIONS.iter().find(|s| **s == section) else { continue };
        overrides.push((var.as_str(), section, key.to_string(), value.as_str()));
    }
    if overrides.is_empty() {
        return Ok(config);
    }
    let env_err = |var: &str, message: String| ConfigError::Env { var: var.into(), message };
    let mut tree = yaml_serde::to_value(&config).map_err(|e| env_err("MERLYA_*", e.to_string()))?;
    for (var, section, key, raw) in &overrides {
        let value: yaml_serde::Value = crate::input::from_yaml(raw).unwrap_or(yaml_serde::Value::String((*raw).into()));
        let table = tree
            .get_mut(*section)
            .and_then(|s| s.as_mapping_mut())
            .ok_or_else(|| env_err(var, format!("section {section} is not a mapping")))?;
        if !table.contains_key(key.as_str()) {
            let known: Vec<String> = table.keys().filter_map(|k| k.as_str().map(str::to_uppercase)).collect();
            return Err(env_err(var, format!("{section} has no key {key}; known keys: {}", known.join(", "))));
        }
        table.insert(yaml_serde::Value::String(key.clone()), value);
        // Check each override on its own so the error names the right variable.
        yaml_serde::from_value::<Config>(tree.clone()).map_err(|e| env_err(var, e.to_string()))?;
    }
    yaml_serde::from_value(tree).map_err(|e| env_err("MERLYA_*", e.to_string()))
}
