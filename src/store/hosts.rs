//! Hosts and tags in the database.

use super::Backend;
use super::db::{Row, Tx, query};
use super::{SqlContext, Store, StoreError, now_rfc3339};
use crate::inventory::host::validate_host;
use crate::inventory::{Host, LOCALHOST};

/// What went wrong with a host operation that the user can fix.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// No host of that name.
    #[error("no host named {0}")]
    NotFound(String),
    /// `hosts add` of a name that exists.
    #[error("host {0} already exists (use `merlya hosts rm {0}` first, or import to update)")]
    Exists(String),
    /// localhost cannot be removed.
    #[error("localhost is built in and cannot be removed")]
    Builtin,
    /// A field that cannot be stored (too long, a character a listing or a command would misread).
    #[error("{0}")]
    Invalid(String),
    /// Database failure.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn host_from_row(row: &Row) -> Result<Host, sqlx::Error> {
    let tags: Option<String> = row.try_get("tags")?;
    let elevation: String = row.try_get("elevation")?;
    let port: i64 = row.try_get("port")?;
    let reachable: Option<i64> = row.try_get("reachable")?;
    Ok(Host {
        name: row.try_get("name")?,
        hostname: row.try_get("hostname")?,
        port: u16::try_from(port).unwrap_or(22),
        username: row.try_get("username")?,
        tags: tags.map(|t| t.split('\u{1f}').map(String::from).collect()).unwrap_or_default(),
        jump: row.try_get("jump")?,
        identity_file: row.try_get("identity_file")?,
        elevation: elevation.parse().unwrap_or_default(),
        reachable: reachable.map(|r| r != 0),
        last_check: row.try_get("last_check")?,
    })
}

/// Every column of a host and its tags joined by U+001F, in each backend's words.
fn select_hosts(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "SELECT h.*, (SELECT group_concat(tag, char(31)) FROM (SELECT tag FROM host_tags t WHERE t.host_id = h.id ORDER BY tag)) AS tags FROM hosts h"
        }
        Backend::Postgres => {
            "SELECT h.*, (SELECT string_agg(tag, chr(31) ORDER BY tag) FROM host_tags t WHERE t.host_id = h.id) AS tags FROM hosts h"
        }
    }
}

/// The values of a JSON array bound to `$N`, as a subquery.
fn json_values(backend: Backend, n: usize) -> String {
    match backend {
        Backend::Sqlite => format!("SELECT value FROM json_each(${n})"),
        Backend::Postgres => format!("SELECT json_array_elements_text(${n}::json)"),
    }
}

impl Store {
    /// Every host, localhost first, then by name.
    pub async fn list_hosts(&self) -> Result<Vec<Host>, StoreError> {
        let sql = format!("{} ORDER BY h.name != '{LOCALHOST}', h.name", select_hosts(self.backend()));
        let rows = query(sql).fetch_all(self.pool()).await.ctx("cannot list hosts")?;
        rows.iter().map(host_from_row).collect::<Result<_, _>>().ctx("cannot read a host row")
    }

    /// The hosts named in `names` or carrying a tag in `tags`, in [`Store::list_hosts`] order:
    /// what a command naming a few hosts reads of a large inventory.
    pub async fn hosts_matching(&self, names: &[String], tags: &[String]) -> Result<Vec<Host>, StoreError> {
        if names.is_empty() && tags.is_empty() {
            return Ok(Vec::new());
        }
        let backend = self.backend();
        let sql = format!(
            "{} WHERE h.name IN ({})
               OR h.id IN (SELECT host_id FROM host_tags WHERE tag IN ({}))
             ORDER BY h.name != '{LOCALHOST}', h.name",
            select_hosts(backend),
            json_values(backend, 1),
            json_values(backend, 2),
        );
        let as_json = |list: &[String]| serde_json::to_string(list).unwrap_or_else(|_| "[]".into());
        let rows = query(sql)
            .bind(as_json(names))
            .bind(as_json(tags))
            .fetch_all(self.pool())
            .await
            .ctx("cannot read hosts")?;
        rows.iter().map(host_from_row).collect::<Result<_, _>>().ctx("cannot read a host row")
    }

    /// The hosts a target expression can select: all of them for `all` and globs, else only the
    /// rows it names or tags (jump hosts are the caller's: see `Context::inventory_for`).
    pub async fn hosts_in_scope(&self, targets: &str) -> Result<Vec<Host>, StoreError> {
        match crate::inventory::scope_of(targets) {
            crate::inventory::Scope::Only { names, tags } => self.hosts_matching(&names, &tags).await,
            crate::inventory::Scope::All => self.list_hosts().await,
        }
    }

    /// A number that changes whenever any host or tag is added, changed or
    /// removed (by this process or another): a console polls it to reload.
    pub async fn inventory_version(&self) -> Result<i64, StoreError> {
        query("SELECT version FROM inventory_version WHERE id = 1")
            .scalar(self.pool())
            .await
            .ctx("cannot read the inventory version")
    }

    /// One host by name.
    pub async fn get_host(&self, name: &str) -> Result<Host, HostError> {
        let sql = format!("{} WHERE h.name = $1", select_hosts(self.backend()));
        let row = query(sql)
            .bind(name)
            .fetch_optional(self.pool())
            .await
            .ctx("cannot read host")?
            .ok_or_else(|| HostError::NotFound(name.to_string()))?;
        Ok(host_from_row(&row).ctx("cannot read a host row")?)
    }

    /// Adds a new host; an existing name is an error.
    pub async fn add_host(&self, host: &Host) -> Result<(), HostError> {
        validate_host(host).map_err(HostError::Invalid)?;
        if self.get_host(&host.name).await.is_ok() {
            return Err(HostError::Exists(host.name.clone()));
        }
        self.upsert_hosts(std::slice::from_ref(host)).await?;
        Ok(())
    }

    /// Inserts or updates hosts by name in one transaction; tags are united
    /// with existing ones. Returns (added, updated).
    pub async fn upsert_hosts(&self, hosts: &[Host]) -> Result<(usize, usize), StoreError> {
        for host in hosts {
            validate_host(host).map_err(StoreError::Invalid)?;
        }
        let mut tx = self.begin_write("save hosts").await?;
        let (mut added, mut updated) = (0, 0);
        let now = now_rfc3339();
        for host in hosts {
            let existing: Option<i64> = query("SELECT id FROM hosts WHERE name = $1")
                .bind(&host.name)
                .scalar_optional(&mut tx)
                .await
                .ctx("cannot look up host")?;
            if existing.is_some() {
                updated += 1
            } else {
                added += 1
            }
            query(
                "INSERT INTO hosts (name, hostname, port, username, jump, identity_file, elevation, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT(name) DO UPDATE SET hostname = excluded.hostname, port = excluded.port,
                   username = excluded.username, jump = excluded.jump, identity_file = excluded.identity_file,
                   elevation = excluded.elevation, updated_at = excluded.updated_at",
            )
            .bind(&host.name)
            .bind(&host.hostname)
            .bind(i64::from(host.port))
            .bind(&host.username)
            .bind(&host.jump)
            .bind(&host.identity_file)
            .bind(host.elevation.as_str())
            .bind(&now)
            .bind(&now)
            .execute(&mut tx)
            .await
            .ctx(&format!("cannot save host {}", host.name))?;
            add_tags(&mut tx, host).await?;
        }
        tx.commit().await.map_err(self.write_error("save hosts"))?;
        Ok((added, updated))
    }

    /// Removes a host (not localhost).
    pub async fn remove_host(&self, name: &str) -> Result<(), HostError> {
        if name == LOCALHOST {
            return Err(HostError::Builtin);
        }
        let done = query("DELETE FROM hosts WHERE name = $1")
            .bind(name)
            .execute(self.pool())
            .await
            .map_err(self.write_error("remove the host"))?;
        if done == 0 {
            return Err(HostError::NotFound(name.to_string()));
        }
        Ok(())
    }

    /// Adds (`add = true`) or removes a tag.
    pub async fn set_tag(&self, name: &str, tag: &str, add: bool) -> Result<(), HostError> {
        let host = self.get_host(name).await?;
        if add {
            crate::inventory::host::validate_tag(tag).map_err(HostError::Invalid)?;
            if host.tags.len() >= crate::inventory::host::MAX_TAGS && !host.tags.iter().any(|t| t == tag) {
                return Err(HostError::Invalid(format!(
                    "host {name} has {} tags already; at most {} are allowed",
                    host.tags.len(),
                    crate::inventory::host::MAX_TAGS
                )));
            }
        }
        let sql = if add {
            "INSERT INTO host_tags (host_id, tag) SELECT id, $1 FROM hosts WHERE name = $2 ON CONFLICT DO NOTHING"
        } else {
            "DELETE FROM host_tags WHERE tag = $1 AND host_id = (SELECT id FROM hosts WHERE name = $2)"
        };
        query(sql).bind(tag).bind(name).execute(self.pool()).await.map_err(self.write_error("change the tag"))?;
        Ok(())
    }

    /// Records the result of a reachability check.
    pub async fn set_reachable(&self, name: &str, reachable: bool) -> Result<(), StoreError> {
        query("UPDATE hosts SET reachable = $1, last_check = $2 WHERE name = $3")
            .bind(reachable)
            .bind(now_rfc3339())
            .bind(name)
            .execute(self.pool())
            .await
            .map_err(self.write_error("record reachability"))?;
        Ok(())
    }
}

/// Adds `host`'s tags to the row of that name (tags already there stay).
async fn add_tags(tx: &mut Tx, host: &Host) -> Result<(), StoreError> {
    for tag in &host.tags {
        query("INSERT INTO host_tags (host_id, tag) SELECT id, $1 FROM hosts WHERE name = $2 ON CONFLICT DO NOTHING")
            .bind(tag)
            .bind(&host.name)
            .execute(&mut *tx)
            .await
            .ctx("cannot save tag")?;
    }
    Ok(())
}

impl Store {
    /// Replaces host `original` with `host` (renamed or changed), tags included, in one transaction.
    pub async fn replace_host(&self, original: &str, host: &Host) -> Result<(), StoreError> {
        validate_host(host).map_err(StoreError::Invalid)?;
        let mut tx = self.begin_write("save the host").await?;
        query(
            "UPDATE hosts SET name = $1, hostname = $2, port = $3, username = $4, jump = $5, elevation = $6, updated_at = $7
             WHERE name = $8",
        )
        .bind(&host.name)
        .bind(&host.hostname)
        .bind(i64::from(host.port))
        .bind(&host.username)
        .bind(&host.jump)
        .bind(host.elevation.as_str())
        .bind(now_rfc3339())
        .bind(original)
        .execute(&mut tx)
        .await
        .ctx(&format!("cannot save host {}", host.name))?;
        query("DELETE FROM host_tags WHERE host_id = (SELECT id FROM hosts WHERE name = $1)")
            .bind(&host.name)
            .execute(&mut tx)
            .await
            .ctx("cannot save tags")?;
        add_tags(&mut tx, host).await?;
        tx.commit().await.map_err(self.write_error("save the host"))?;
        Ok(())
    }

    /// Every host, in [`Store::list_hosts`]'s order, read one row at a time: a console holding
    /// 200,000 hosts must not also hold all their database rows while it converts them.
    pub async fn list_hosts_streamed(&self) -> Result<Vec<Host>, StoreError> {
        let sql = format!("{} ORDER BY h.name != '{LOCALHOST}', h.name", select_hosts(self.backend()));
        query(sql).fetch_map(self.pool(), |row| host_from_row(&row)).await.ctx("cannot list hosts")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hosts_matching_reads_the_named_and_tagged_rows_in_inventory_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(dir.path()).await;
        let mut hosts = Vec::new();
        for i in 0..50 {
            let mut h = Host::new(format!("n{i:02}"), "10.0.0.1");
            if i % 10 == 3 {
                h.add_tag("three");
            }
            hosts.push(h);
        }
        store.upsert_hosts(&hosts).await.unwrap();
        let names = |v: Vec<Host>| v.into_iter().map(|h| h.name).collect::<Vec<_>>();
        let got = store
            .hosts_matching(&["n40".into(), "localhost".into(), "ghost".into(), "n05".into()], &["three".into()])
            .await
            .unwrap();
        assert_eq!(names(got), ["localhost", "n03", "n05", "n13", "n23", "n33", "n40", "n43"]);
        assert_eq!(store.hosts_matching(&[], &[]).await.unwrap(), []);
        // Names are data, not SQL: quotes and JSON-looking text select nothing and break nothing.
        let odd = ["n01' OR 1=1 --".to_string(), "\"]".to_string()];
        assert_eq!(store.hosts_matching(&odd, &odd).await.unwrap(), []);
    }
}
