//! Cached capability probes per host (see `pipeline::capabilities`).

use super::db::query;
use serde::{Deserialize, Serialize};

use super::{SqlContext, Store, StoreError, now_rfc3339};

/// What a host can run for change pipelines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Programs found on PATH (`ansible-playbook`, `terraform`, `kubectl`, `git`, `python3`).
    pub tools: Vec<String>,
    /// kubectl's current context, when kubectl has a usable one.
    pub kube_context: Option<String>,
    /// When it was probed (RFC 3339).
    pub checked_at: String,
    /// Whether its proven reads run in a read-only mount namespace (`None`: not known).
    #[serde(default)]
    pub readonly_sandbox: Option<bool>,
}

impl Capabilities {
    /// Whether `tool` was found.
    pub fn has(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }
}

impl Store {
    /// The cached capabilities of `host`, if any (fresh or not: the caller checks the age).
    pub async fn capabilities(&self, host: &str) -> Result<Option<Capabilities>, StoreError> {
        let row: Option<(String, Option<String>, String, Option<bool>)> =
            query("SELECT tools, kube_context, checked_at, readonly_sandbox FROM host_capabilities WHERE host = $1")
                .bind(host)
                .fetch_optional(self.pool())
                .await
                .ctx("cannot read host capabilities")?;
        Ok(row.map(|(tools, kube_context, checked_at, readonly_sandbox)| Capabilities {
            tools: serde_json::from_str(&tools).unwrap_or_default(),
            kube_context,
            checked_at,
            readonly_sandbox,
        }))
    }

    /// Caches what `host` can run, as probed now.
    pub async fn set_capabilities(
        &self,
        host: &str,
        tools: &[String],
        kube_context: Option<&str>,
        readonly_sandbox: Option<bool>,
    ) -> Result<Capabilities, StoreError> {
        let checked_at = now_rfc3339();
        query(
            "INSERT INTO host_capabilities (host, tools, kube_context, checked_at, readonly_sandbox) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT(host) DO UPDATE SET tools = excluded.tools, kube_context = excluded.kube_context,
             checked_at = excluded.checked_at, readonly_sandbox = excluded.readonly_sandbox",
        )
        .bind(host)
        .bind(serde_json::to_string(tools).unwrap_or_else(|_| "[]".into()))
        .bind(kube_context)
        .bind(&checked_at)
        .bind(readonly_sandbox)
        .execute(self.pool())
        .await
        .map_err(self.write_error("cache host capabilities"))?;
        Ok(Capabilities {
            tools: tools.to_vec(),
            kube_context: kube_context.map(str::to_string),
            checked_at,
            readonly_sandbox,
        })
    }
}
