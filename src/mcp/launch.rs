//! From a server's configuration to what starts it: `${VAR}` and
//! `${VAR:-default}` expanded in `env` and `headers`, `@service:host:field`
//! references read from the secret store — only now, when the server starts.
//! What came from a secret reference, a variable with a secret-like name, or
//! went into a field with one (`Authorization`, `GITHUB_TOKEN`) is remembered
//! as a secret, masked wherever the server's words are shown or logged.

use std::collections::BTreeMap;

use crate::config::mcp::McpServerConfig;
use crate::config::{ExpandError, expand_value};
use crate::secrets::SecretSource;
use crate::secrets::reference;

use super::McpError;

/// A server's settings with every reference resolved.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The environment added for a stdio server.
    pub env: BTreeMap<String, String>,
    /// The headers sent to an HTTP server.
    pub headers: BTreeMap<String, String>,
    /// Secret values used, to mask wherever the server's words are shown or logged.
    pub secrets: Vec<String>,
}

/// Resolves `server`'s `env` and `headers` with `lookup` for variables and `secrets` for references.
pub fn resolve(
    name: &str,
    server: &McpServerConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
    secrets: &dyn SecretSource,
) -> Result<Launch, McpError> {
    let mut used = Vec::new();
    let mut one = |field: &str, key: &str, value: &str| -> Result<String, McpError> {
        let substituted = std::cell::RefCell::new(Vec::new());
        let recording = |var: &str| {
            let found = lookup(var);
            if let Some(v) = &found {
                substituted.borrow_mut().push((var.to_string(), v.clone()));
            }
            found
        };
        let expanded = expand_value(value, &recording).map_err(|e| match e {
            ExpandError::Unset { var, .. } => McpError::UnsetVar { server: name.into(), var },
            ExpandError::Malformed { detail, .. } => {
                McpError::Config { server: name.into(), detail: format!("{field}.{key}: {detail}") }
            }
        })?;
        let resolved = reference::resolve(&expanded, secrets)
            .map_err(|missing| McpError::MissingSecret { server: name.into(), secrets: missing.join(", ") })?;
        used.extend(resolved.values);
        let secret_field = crate::redact::is_secret_name(key);
        for (var, v) in substituted.into_inner() {
            if secret_field || crate::redact::is_secret_name(&var) {
                used.push(v);
            }
        }
        if secret_field && resolved.text != value {
            used.push(resolved.text.clone());
        }
        Ok(resolved.text)
    };
    let mut env = BTreeMap::new();
    for (key, value) in &server.env {
        env.insert(key.clone(), one("env", key, value)?);
    }
    let mut headers = BTreeMap::new();
    for (key, value) in &server.headers {
        headers.insert(key.clone(), one("headers", key, value)?);
    }
    Ok(Launch { env, headers, secrets: used })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Vault;
    impl SecretSource for Vault {
        fn lookup(&self, name: &str) -> Option<String> {
            (name == "api:gh:token").then(|| "ghp-secret".to_string())
        }
    }

    fn server(env: &[(&str, &str)], headers: &[(&str, &str)]) -> McpServerConfig {
        McpServerConfig {
            url: Some("http://127.0.0.1:1/mcp".into()),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..McpServerConfig::default()
        }
    }

    fn vars(name: &str) -> Option<String> {
        (name == "REGION").then(|| "eu-west-1".to_string())
    }

    #[test]
    fn variables_defaults_and_secret_references_resolve_at_start() {
        let s = server(
            &[("REGION", "${REGION}"), ("LEVEL", "${LEVEL:-info}")],
            &[("Authorization", "Bearer @api:gh:token")],
        );
        let launch = resolve("gh", &s, &vars, &Vault).unwrap();
        assert_eq!(launch.env["REGION"], "eu-west-1");
        assert_eq!(launch.env["LEVEL"], "info");
        assert_eq!(launch.headers["Authorization"], "Bearer ghp-secret");
        assert_eq!(launch.secrets, ["ghp-secret", "Bearer ghp-secret"]);
    }

    #[test]
    fn variables_that_carry_secrets_are_masked_and_ordinary_ones_are_not() {
        let lookup = |name: &str| match name {
            "REGION" => Some("eu-west-1".to_string()),
            "GH_TOKEN" => Some("ghp-from-env".to_string()),
            "PLAIN" => Some("plain-but-sent-as-auth".to_string()),
            _ => None,
        };
        let s = server(
            &[("REGION", "${REGION}"), ("TOKEN_FOR_TOOL", "${GH_TOKEN}")],
            &[("Authorization", "Bearer ${PLAIN}"), ("Accept", "application/json")],
        );
        let launch = resolve("gh", &s, &lookup, &Vault).unwrap();
        for secret in ["ghp-from-env", "plain-but-sent-as-auth", "Bearer plain-but-sent-as-auth"] {
            assert!(launch.secrets.iter().any(|v| v == secret), "{secret} is masked: {:?}", launch.secrets);
        }
        assert!(!launch.secrets.iter().any(|v| v.contains("eu-west-1") || v.contains("application/json")));
    }

    #[test]
    fn a_missing_variable_or_secret_names_the_server_and_what_is_missing() {
        let err = resolve("gh", &server(&[("T", "${GH_TOKEN}")], &[]), &vars, &Vault).unwrap_err();
        assert_eq!(err.to_string(), "MCP server gh: environment variable GH_TOKEN is not set");
        let err = resolve("gh", &server(&[], &[("X", "@api:gh:other")]), &vars, &Vault).unwrap_err();
        assert!(err.to_string().contains("api:gh:other"), "{err}");
    }
}
