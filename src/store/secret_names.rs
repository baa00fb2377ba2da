//! The index of secret names (values live only in the keyring).

use super::db::query;
use super::{SqlContext, Store, StoreError, now_rfc3339};

/// A stored secret's name and where it lives.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct SecretName {
    pub name: String,
    pub backend: String,
    pub updated_at: String,
}

impl Store {
    /// Records that `name` is stored in `backend`.
    pub async fn index_secret(&self, name: &str, backend: &str) -> Result<(), StoreError> {
        query(
            "INSERT INTO secret_names (name, backend, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT(name) DO UPDATE SET backend = excluded.backend, updated_at = excluded.updated_at",
        )
        .bind(name)
        .bind(backend)
        .bind(now_rfc3339())
        .execute(self.pool())
        .await
        .map_err(self.write_error("index the secret"))?;
        Ok(())
    }

    /// Forgets `name`.
    pub async fn unindex_secret(&self, name: &str) -> Result<(), StoreError> {
        query("DELETE FROM secret_names WHERE name = $1")
            .bind(name)
            .execute(self.pool())
            .await
            .map_err(self.write_error("unindex the secret"))?;
        Ok(())
    }

    /// Every indexed name.
    pub async fn secret_names(&self) -> Result<Vec<SecretName>, StoreError> {
        let rows: Vec<(String, String, String)> =
            query("SELECT name, backend, updated_at FROM secret_names ORDER BY name")
                .fetch_all(self.pool())
                .await
                .ctx("cannot list secrets")?;
        Ok(rows.into_iter().map(|(name, backend, updated_at)| SecretName { name, backend, updated_at }).collect())
    }
}
