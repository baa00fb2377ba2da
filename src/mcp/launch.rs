//! From a server's configuration to what starts it: `${VAR}` and
//! `${VAR:-default}` expanded in `env` and `headers`, `@service:host:field`
//! references read from the secret store — only now, when the server starts.

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
        let expanded = expand_value(value, lookup).map_err(|e| match e {
            ExpandError::Unset { var, .. } => McpError::UnsetVar { server: name.into(), var },
            ExpandError::Malformed { detail, .. } => {
                McpError::Config { server: name.into(), detail: format!("{field}.{key}: {detail}") }
            }
        })?;
        let resolved = reference::resolve(&expanded, secrets)
            .map_err(|missing| McpError::MissingSecret { server: name.into(), secrets: missing.join(", ") })?;
        used.extend(resolved.values);
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
        assert_eq!(launch.secrets, ["ghp-secret"]);
    }

    #[test]
    fn a_missing_variable_or_secret_names_the_server_and_what_is_missing() {
        let err = resolve("gh", &server(&[("T", "${GH_TOKEN}")], &[]), &vars, &Vault).unwrap_err();
        assert_eq!(err.to_string(), "MCP server gh: environment variable GH_TOKEN is not set");
        let err = resolve("gh", &server(&[], &[("X", "@api:gh:other")]), &vars, &Vault).unwrap_err();
        assert!(err.to_string().contains("api:gh:other"), "{err}");
    }
}
