//! `provision:` in the config: where the provider credentials of a provisioned resource come from
//! (issue 26). Only sources are written here — a keyring reference, an environment variable of
//! merlya's own, a file — never a value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Provisioning settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ProvisionConfig {
    /// `provider → variable → source`: each variable is set in the environment of the tool that
    /// provisions for that provider (Terraform), from `@service:host:field` (the keyring),
    /// `env:NAME` (merlya's environment) or `file:PATH` (a file's contents, its last new line
    /// removed). `TF_VAR_name` sets a Terraform variable.
    pub credentials: BTreeMap<String, BTreeMap<String, String>>,
}

/// Where a credential comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// The keyring: `service:host:field`.
    Keyring(String),
    /// An environment variable of merlya's own.
    Env(String),
    /// A file's contents.
    File(std::path::PathBuf),
}

impl CredentialSource {
    /// Reads a source as written in the config.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.starts_with('@') {
            match crate::secrets::reference::references(text).as_slice() {
                [name] if text.len() == name.len() + 1 => Ok(CredentialSource::Keyring(name.clone())),
                _ => Err(format!("`{text}`: expected @service:host:field")),
            }
        } else if let Some(name) = text.strip_prefix("env:") {
            let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if ok { Ok(CredentialSource::Env(name.to_string())) } else { Err(format!("`{text}`: not a variable name")) }
        } else if let Some(path) = text.strip_prefix("file:") {
            match (path.strip_prefix("~/"), dirs::home_dir()) {
                (Some(rest), Some(home)) => Ok(CredentialSource::File(home.join(rest))),
                _ if path.starts_with('/') => Ok(CredentialSource::File(path.into())),
                _ => Err(format!("`{text}`: expected an absolute path (or ~/…)")),
            }
        } else {
            Err(format!("`{text}`: expected @service:host:field, env:NAME or file:PATH"))
        }
    }
}

/// Whether `name` can be set in a process's environment.
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Longest credential file read (a service-account JSON is a few KiB).
const FILE_LIMIT: u64 = 1 << 20;

/// The value a credential source written in the config (`@service:host:field`, `env:NAME`,
/// `file:/PATH`) names, read now; an error names `field` and what is missing.
pub fn read_credential(text: &str, field: &str, secrets: &dyn crate::secrets::SecretSource) -> Result<String, String> {
    match CredentialSource::parse(text).map_err(|e| format!("{field}: {e}"))? {
        CredentialSource::Keyring(key) => secrets
            .lookup(&key)
            .ok_or_else(|| format!("{field}: the keyring has no {key} (store it with `merlya secret set {key}`)")),
        CredentialSource::Env(var) => {
            std::env::var(&var).map_err(|_| format!("{field}: the environment variable {var} is not set for merlya"))
        }
        CredentialSource::File(path) => read_file(&path).map_err(|e| format!("{field}: {e}")),
    }
}

/// A credential file's contents, its last new line removed.
fn read_file(path: &std::path::Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() || meta.len() > FILE_LIMIT {
        return Err(format!("{} is not a file of at most 1 MiB", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
}
