//! Provisioned resources and their snapshots (issue 26): the lifecycle of each
//! and, apart from it, the drift its last check found. A later apply never
//! clears a drift that was found: only a check does.

use super::db::{Row, query};
use serde::{Deserialize, Serialize};

use super::{SqlContext, Store, StoreError, now_rfc3339};

/// Where a resource is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// Recorded, nothing applied yet.
    Pending,
    /// Being created.
    Creating,
    /// Created, as expected when last applied.
    Active,
    /// Being changed.
    Updating,
    /// Being destroyed.
    Deleting,
    /// Destroyed.
    Deleted,
    /// The last operation failed.
    Failed,
    /// An operation started and its end was never recorded (a crash): the next check says.
    Unknown,
}

/// What the last check found, apart from the lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Drift {
    /// The real objects and the state match what merlya expects.
    NoDrift,
    /// Something was changed outside merlya.
    Drifted,
    /// Something merlya made is gone.
    Missing,
    /// Not checked yet, or the check could not run.
    Unknown,
}

/// The snake_case name serde gives a unit variant (how the enums are stored).
fn name_of<T: Serialize>(value: T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn parse_name<T: for<'de> Deserialize<'de>>(text: &str, fallback: T) -> T {
    serde_json::from_value(serde_json::Value::String(text.to_string())).unwrap_or(fallback)
}

impl Lifecycle {
    /// As stored and shown.
    pub fn as_str(self) -> String {
        name_of(self)
    }

    /// Whether an operation is under way (its end not recorded yet).
    pub fn in_progress(self) -> bool {
        matches!(self, Lifecycle::Creating | Lifecycle::Updating | Lifecycle::Deleting)
    }
}

impl Drift {
    /// As stored and shown.
    pub fn as_str(self) -> String {
        name_of(self)
    }
}

/// A resource merlya provisioned, or imported to observe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resource {
    /// Its id.
    pub id: String,
    /// Its name (unique): also its working folder's name.
    pub name: String,
    /// `name:version` of the template it was rendered from (empty when imported).
    pub template: String,
    /// The provider (`aws`, `proxmox`, `terraform_data`…).
    pub provider: String,
    /// The backend (`terraform`, `mcp`).
    pub backend: String,
    /// The answers it was rendered with (JSON; secrets as references, never values).
    pub answers: serde_json::Value,
    /// What merlya expects (JSON: the resources' attributes after the last apply).
    pub expected: serde_json::Value,
    /// What the last check found (JSON).
    pub actual: serde_json::Value,
    /// What was expected before the last apply (JSON), for a rollback.
    pub previous: serde_json::Value,
    /// The outputs after the last apply.
    pub outputs: serde_json::Value,
    /// Tags.
    pub tags: serde_json::Value,
    /// Lifecycle.
    pub status: Lifecycle,
    /// Drift, apart from the lifecycle.
    pub drift: Drift,
    /// What the drift is (addresses and actions), as the last check said.
    pub drift_detail: String,
    /// When it was last checked (RFC 3339).
    pub last_checked_at: Option<String>,
    /// Terraform's state serial and lineage after merlya's last write (another writer changes them).
    pub tf_serial: Option<i64>,
    /// See `tf_serial`.
    pub tf_lineage: Option<String>,
    /// Its working folder (configuration and state).
    pub workdir: String,
    /// The operation under way (`create`, `update`, `delete`, with the pipeline run id), if any.
    pub operation: String,
    /// Imported: checked for drift, never changed by merlya.
    pub observe_only: bool,
    /// The normal plan's changes an operator accepted (`address action`), in force while the state
    /// still holds what `expected` recorded then.
    pub accepted: Vec<String>,
    /// A digest of the configuration files merlya last applied (Terraform backend).
    pub config_digest: Option<String>,
    /// When it last changed.
    pub updated_at: String,
}

const COLUMNS: &str = "id, name, template, provider, backend, answers, expected, actual, previous, outputs, tags, \
     status, drift_status, drift_detail, last_checked_at, tf_serial, tf_lineage, workdir, operation, observe_only, accepted, config_digest, updated_at";

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
}

fn resource_of(row: &Row) -> Resource {
    let text = |c: &str| row.try_get::<String>(c).unwrap_or_default();
    Resource {
        id: text("id"),
        name: text("name"),
        template: text("template"),
        provider: text("provider"),
        backend: text("backend"),
        answers: json(&text("answers")),
        expected: json(&text("expected")),
        actual: json(&text("actual")),
        previous: json(&text("previous")),
        outputs: json(&text("outputs")),
        tags: json(&text("tags")),
        status: parse_name(&text("status"), Lifecycle::Unknown),
        drift: parse_name(&text("drift_status"), Drift::Unknown),
        drift_detail: text("drift_detail"),
        last_checked_at: row.try_get("last_checked_at").ok().flatten(),
        tf_serial: row.try_get("tf_serial").ok().flatten(),
        tf_lineage: row.try_get("tf_lineage").ok().flatten(),
        workdir: text("workdir"),
        operation: text("operation"),
        observe_only: row.try_get("observe_only").unwrap_or(false),
        accepted: serde_json::from_str(&text("accepted")).unwrap_or_default(),
        config_digest: row.try_get("config_digest").ok().flatten(),
        updated_at: text("updated_at"),
    }
}

/// What a new resource is.
#[derive(Debug, Clone, Default)]
pub struct NewResource {
    /// Its name.
    pub name: String,
    /// `name:version` of its template, or empty.
    pub template: String,
    /// Its provider.
    pub provider: String,
    /// Its backend.
    pub backend: String,
    /// The answers (JSON; secrets as references).
    pub answers: serde_json::Value,
    /// Tags.
    pub tags: serde_json::Value,
    /// Its working folder.
    pub workdir: String,
    /// Imported to be observed only.
    pub observe_only: bool,
}

/// What an operation that ended left.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The lifecycle now (`active`, `deleted`, `failed`).
    pub status: Lifecycle,
    /// What is expected now (unchanged when the operation failed).
    pub expected: Option<serde_json::Value>,
    /// Outputs now.
    pub outputs: Option<serde_json::Value>,
    /// Terraform's state serial and lineage after the write.
    pub tf_serial: Option<i64>,
    /// See `tf_serial`.
    pub tf_lineage: Option<String>,
    /// The digest of the configuration applied (unchanged when `None`).
    pub config_digest: Option<String>,
}

impl Store {
    /// Records a new resource as `pending`.
    pub async fn add_resource(&self, new: &NewResource) -> Result<Resource, StoreError> {
        let bytes = crate::home::random_bytes(6)
            .map_err(|e| StoreError::Io { context: "cannot make a resource id".into(), source: e })?;
        let id = format!("res-{}", hex::encode(bytes));
        let now = now_rfc3339();
        query(
            "INSERT INTO resources (id, name, template, provider, kind, backend, answers, tags, spec, status, drift_status,
             workdir, observe_only, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, '{}', 'pending', 'unknown', $9, $10, $11)",
        )
        .bind(&id)
        .bind(&new.name)
        .bind(&new.template)
        .bind(&new.provider)
        .bind(&new.backend)
        .bind(&new.backend)
        .bind(new.answers.to_string())
        .bind(new.tags.to_string())
        .bind(&new.workdir)
        .bind(new.observe_only)
        .bind(&now)
        .execute(self.pool())
        .await
        .map_err(self.write_error("record a resource"))?;
        self.resource(&id)
            .await?
            .ok_or_else(|| StoreError::Invalid(format!("the new resource {id} cannot be read back")))
    }

    /// The resource with this id or name.
    pub async fn resource(&self, id_or_name: &str) -> Result<Option<Resource>, StoreError> {
        let row = // COLUMNS is a constant list of column names.
        query(format!("SELECT {COLUMNS} FROM resources WHERE id = $1 OR name = $2"))
            .bind(id_or_name)
            .bind(id_or_name)
            .fetch_optional(self.pool())
            .await
            .ctx("cannot read resources")?;
        Ok(row.as_ref().map(resource_of))
    }

    /// Every resource, by name.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, StoreError> {
        let rows = query(format!("SELECT {COLUMNS} FROM resources ORDER BY name"))
            .fetch_all(self.pool())
            .await
            .ctx("cannot read resources")?;
        Ok(rows.iter().map(resource_of).collect())
    }

    /// Records an operation before it starts (`creating`, `updating`, `deleting`): a crash leaves it
    /// visible, and the next check makes the resource `unknown`.
    pub async fn begin_operation(&self, id: &str, status: Lifecycle, operation: &str) -> Result<(), StoreError> {
        query("UPDATE resources SET status = $1, operation = $2, updated_at = $3 WHERE id = $4")
            .bind(status.as_str())
            .bind(operation)
            .bind(now_rfc3339())
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(self.write_error("record a resource operation"))?;
        Ok(())
    }

    /// Records how an operation ended. The drift state is left as it is: a drift that was found
    /// stays until a check finds it gone.
    pub async fn finish_operation(&self, id: &str, applied: &Applied) -> Result<(), StoreError> {
        let current = self.resource(id).await?;
        let expected = applied.expected.as_ref().map(|v| v.to_string());
        let previous = match (&applied.expected, &current) {
            (Some(_), Some(r)) => Some(r.expected.to_string()),
            _ => None,
        };
        query(
            "UPDATE resources SET status = $1, operation = '',
                 expected = COALESCE($2, expected), previous = COALESCE($3, previous), outputs = COALESCE($4, outputs),
                 tf_serial = COALESCE($5, tf_serial), tf_lineage = COALESCE($6, tf_lineage),
                 config_digest = COALESCE($7, config_digest), updated_at = $8
             WHERE id = $9",
        )
        .bind(applied.status.as_str())
        .bind(expected)
        .bind(previous)
        .bind(applied.outputs.as_ref().map(|v| v.to_string()))
        .bind(applied.tf_serial)
        .bind(&applied.tf_lineage)
        .bind(&applied.config_digest)
        .bind(now_rfc3339())
        .bind(id)
        .execute(self.pool())
        .await
        .map_err(self.write_error("record the end of a resource operation"))?;
        Ok(())
    }

    /// Records a check: drift, what it is, what was found, when. An operation whose end was never
    /// recorded (a crash) leaves the lifecycle `unknown`.
    pub async fn record_check(
        &self,
        id: &str,
        drift: Drift,
        detail: &str,
        actual: &serde_json::Value,
        crashed: bool,
    ) -> Result<(), StoreError> {
        query(
            "UPDATE resources SET drift_status = $1, drift_detail = $2, actual = $3, last_checked_at = $4,
                 status = CASE WHEN $5 <> 0 THEN 'unknown' ELSE status END, operation = CASE WHEN $6 <> 0 THEN '' ELSE operation END
             WHERE id = $7",
        )
        .bind(drift.as_str())
        .bind(detail)
        .bind(actual.to_string())
        .bind(now_rfc3339())
        .bind(crashed)
        .bind(crashed)
        .bind(id)
        .execute(self.pool())
        .await
        .map_err(self.write_error("record a resource check"))?;
        Ok(())
    }

    /// Records the changes an operator accepted (replacing those accepted before).
    pub async fn set_accepted(&self, id: &str, accepted: &[String]) -> Result<(), StoreError> {
        query("UPDATE resources SET accepted = $1, updated_at = $2 WHERE id = $3")
            .bind(serde_json::to_string(accepted).unwrap_or_else(|_| "[]".into()))
            .bind(now_rfc3339())
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(self.write_error("record accepted changes"))?;
        Ok(())
    }

    /// Replaces a resource's stored answers (an update re-renders from them).
    pub async fn update_answers(&self, id: &str, answers: &serde_json::Value) -> Result<(), StoreError> {
        query("UPDATE resources SET answers = $1, updated_at = $2 WHERE id = $3")
            .bind(answers.to_string())
            .bind(now_rfc3339())
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(self.write_error("record a resource's answers"))?;
        Ok(())
    }

    /// Keeps a snapshot of a resource (its expected, actual and outputs, and the state file's text).
    pub async fn add_snapshot(&self, id: &str, data: &serde_json::Value) -> Result<i64, StoreError> {
        query("INSERT INTO snapshots (resource_id, data, created_at) VALUES ($1, $2, $3) RETURNING id")
            .bind(id)
            .bind(data.to_string())
            .bind(now_rfc3339())
            .scalar(self.pool())
            .await
            .map_err(self.write_error("keep a resource snapshot"))
    }

    /// A resource's snapshots, newest first: `(id, created_at, data)`.
    pub async fn snapshots(&self, id: &str) -> Result<Vec<(i64, String, serde_json::Value)>, StoreError> {
        let rows: Vec<(i64, String, String)> =
            query("SELECT id, created_at, data FROM snapshots WHERE resource_id = $1 ORDER BY id DESC")
                .bind(id)
                .fetch_all(self.pool())
                .await
                .ctx("cannot read resource snapshots")?;
        Ok(rows.into_iter().map(|(i, at, data)| (i, at, json(&data))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_apply_never_clears_a_found_drift_and_a_crash_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(dir.path()).await;
        let new = NewResource {
            name: "web".into(),
            provider: "terraform_data".into(),
            backend: "terraform".into(),
            ..Default::default()
        };
        let r = store.add_resource(&new).await.unwrap();
        assert_eq!((r.status, r.drift), (Lifecycle::Pending, Drift::Unknown));
        store.begin_operation(&r.id, Lifecycle::Creating, "create run-1").await.unwrap();
        let applied = Applied {
            status: Lifecycle::Active,
            expected: Some(serde_json::json!({"a": 1})),
            outputs: Some(serde_json::json!({"o": "x"})),
            tf_serial: Some(1),
            tf_lineage: Some("l".into()),
            config_digest: None,
        };
        store.finish_operation(&r.id, &applied).await.unwrap();
        store
            .record_check(&r.id, Drift::Drifted, "terraform_data.x: update", &serde_json::json!({}), false)
            .await
            .unwrap();
        // A later apply: the drift stays.
        store.begin_operation(&r.id, Lifecycle::Updating, "update run-2").await.unwrap();
        store
            .finish_operation(&r.id, &Applied { expected: Some(serde_json::json!({"a": 2})), ..applied.clone() })
            .await
            .unwrap();
        let r = store.resource("web").await.unwrap().unwrap();
        assert_eq!((r.status, r.drift), (Lifecycle::Active, Drift::Drifted));
        assert_eq!(r.previous, serde_json::json!({"a": 1}));
        // A crash mid-operation: the check makes it unknown.
        store.begin_operation(&r.id, Lifecycle::Deleting, "delete run-3").await.unwrap();
        store.record_check(&r.id, Drift::NoDrift, "", &serde_json::json!({}), true).await.unwrap();
        let r = store.resource(&r.id).await.unwrap().unwrap();
        assert_eq!((r.status, r.drift, r.operation.as_str()), (Lifecycle::Unknown, Drift::NoDrift, ""));
        assert_eq!(store.add_snapshot(&r.id, &serde_json::json!({"s": 1})).await.unwrap(), 1);
        assert_eq!(store.snapshots(&r.id).await.unwrap().len(), 1);
        assert_eq!(store.list_resources().await.unwrap().len(), 1);
        store.set_accepted(&r.id, &["terraform_data.x replace".to_string()]).await.unwrap();
        assert_eq!(store.resource(&r.id).await.unwrap().unwrap().accepted, ["terraform_data.x replace"]);
    }
}
