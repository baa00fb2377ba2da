//! Is the file what merlya expects? Checks made before anything is written:
//! the SQLite header, integrity (`PRAGMA quick_check`) and the schema version.
//!
//! `quick_check` reads the whole file, so its cost grows with the history kept.
//! A clean close records the file's size, modification time and inode beside it
//! (`merlya.db.clean`); an open that finds them unchanged skips the full check,
//! since only merlya has written the file since it was last known good. Any other
//! writer (a copy, a restore, damage through the filesystem) changes them, and the
//! full check runs on a read-only connection before merlya writes anything.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, Row};

use super::{MIGRATOR, StoreError};

/// Beside the database: how the file looked when merlya last closed it cleanly.
fn stamp_path(path: &Path) -> PathBuf {
    path.with_extension("db.clean")
}

/// Size, modification time (ns) and inode of the file.
fn fingerprint(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some(format!("{} {} {} {}", meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()))
}

/// Whether the file is exactly as merlya left it at its last clean close.
pub(super) fn closed_cleanly(path: &Path) -> bool {
    match (std::fs::read_to_string(stamp_path(path)), fingerprint(path)) {
        (Ok(stamp), Some(now)) => stamp == now,
        _ => false,
    }
}

/// Records the file as merlya leaves it (after the pool closed and the WAL was checkpointed). The
/// stamp is overwritten in place and trimmed, not truncated first: a file truncated and written
/// again is flushed by the filesystem when it is closed, on the way out of every command.
pub(super) fn mark_closed_cleanly(path: &Path) {
    let Some(now) = fingerprint(path) else { return };
    let written =
        crate::home::private_file_options().write(true).create(true).truncate(false).open(stamp_path(path)).and_then(
            |mut file| {
                std::io::Write::write_all(&mut file, now.as_bytes())?;
                file.set_len(now.len() as u64)
            },
        );
    if let Err(e) = written {
        tracing::debug!(error = %e, "cannot record the clean close of the database");
    }
}

/// The first bytes say SQLite.
pub(super) fn check_header(path: &Path) -> Result<(), StoreError> {
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header));
    if read.is_err() || &header != b"SQLite format 3\0" {
        return Err(StoreError::NotSqlite(path.to_path_buf()));
    }
    Ok(())
}

/// An empty database file is only a new one when no audit key or checkpoint is beside it: with them,
/// it is a database that held an audit log and lost it (merlya creates the file, then SQLite writes
/// its header, long before the first append creates the key).
pub(super) fn check_not_emptied(path: &Path) -> Result<(), StoreError> {
    let evidence: Vec<String> = [crate::home::audit_key_beside(path), crate::home::audit_checkpoint_beside(path)]
        .into_iter()
        .filter(|file| std::fs::symlink_metadata(file).is_ok())
        .map(|file| file.display().to_string())
        .collect();
    if evidence.is_empty() {
        return Ok(());
    }
    Err(StoreError::Emptied { path: path.to_path_buf(), evidence: evidence.join(" and ") })
}

/// Header, integrity and schema version, on a read-only connection of its own.
pub(super) async fn check_fully(path: &Path) -> Result<(), StoreError> {
    check_header(path)?;
    let corrupt = |e: sqlx::Error| StoreError::Corrupt { path: path.to_path_buf(), detail: e.to_string() };
    let options = SqliteConnectOptions::from_str("sqlite://")
        .map_err(corrupt)?
        .filename(path)
        .read_only(true)
        .busy_timeout(Duration::from_secs(10));
    let mut conn = SqliteConnection::connect_with(&options).await.map_err(corrupt)?;
    let check: String = sqlx::query_scalar("PRAGMA quick_check").fetch_one(&mut conn).await.map_err(corrupt)?;
    if check != "ok" {
        return Err(StoreError::Corrupt { path: path.to_path_buf(), detail: check });
    }
    let _current = check_version(&mut conn, path).await?;
    conn.close().await.map_err(corrupt)?;
    Ok(())
}

/// Refuses a schema migrated by a newer merlya (before the migrator could touch it). Returns whether
/// every migration this merlya knows is applied, and nothing failed half-way: then the migrator has
/// nothing to do and need not run.
pub(super) async fn check_version(conn: &mut SqliteConnection, path: &Path) -> Result<bool, StoreError> {
    let corrupt = |e: sqlx::Error| StoreError::Corrupt { path: path.to_path_buf(), detail: e.to_string() };
    let has_table: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
            .fetch_one(&mut *conn)
            .await
            .map_err(corrupt)?;
    if has_table == 0 {
        return Ok(false);
    }
    let row = sqlx::query(
        "SELECT MAX(version) AS v, COUNT(*) AS n, COALESCE(SUM(success = 0), 0) AS failed FROM _sqlx_migrations",
    )
    .fetch_one(&mut *conn)
    .await
    .map_err(corrupt)?;
    let found: Option<i64> = row.try_get("v").map_err(corrupt)?;
    let applied: i64 = row.try_get("n").map_err(corrupt)?;
    let failed: i64 = row.try_get("failed").map_err(corrupt)?;
    let known = known_version();
    match found.filter(|f| *f > known) {
        Some(found) => Err(StoreError::TooNew { path: path.to_path_buf(), found, known }),
        None => {
            Ok(found == Some(known) && failed == 0 && usize::try_from(applied).ok() == Some(MIGRATOR.iter().count()))
        }
    }
}

/// `merlya doctor`: the full integrity read, the schema at this merlya's version with every table,
/// column, index and trigger its migrations create, and a write that is rolled back (the file is
/// writable and not locked). Returns the schema version.
pub(super) async fn check_live(pool: &sqlx::SqlitePool, path: &Path) -> Result<i64, StoreError> {
    let corrupt = |e: sqlx::Error| StoreError::Corrupt { path: path.to_path_buf(), detail: e.to_string() };
    let mut conn = pool.acquire().await.map_err(corrupt)?;
    let check: String = sqlx::query_scalar("PRAGMA quick_check").fetch_one(&mut *conn).await.map_err(corrupt)?;
    if check != "ok" {
        return Err(StoreError::Corrupt { path: path.to_path_buf(), detail: check });
    }
    let version: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations")
        .fetch_one(&mut *conn)
        .await
        .map_err(corrupt)?;
    let missing = missing_schema(&mut conn).await.map_err(corrupt)?;
    if !missing.is_empty() {
        return Err(StoreError::Schema { path: path.to_path_buf(), version, missing });
    }
    let write = |e: sqlx::Error| StoreError::Sql { context: format!("cannot write {}", path.display()), source: e };
    sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await.map_err(write)?;
    sqlx::query("ROLLBACK").execute(&mut *conn).await.map_err(write)?;
    Ok(version)
}

/// Every table, column, index, trigger and view the schema should have, as `table hosts`,
/// `column hosts.port`...: what a query of `conn` finds in its `sqlite_master`.
async fn schema_of(conn: &mut SqliteConnection) -> Result<BTreeSet<String>, sqlx::Error> {
    let objects: Vec<(String, String)> =
        sqlx::query_as("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND sql IS NOT NULL")
            .fetch_all(&mut *conn)
            .await?;
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT m.name, c.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS c \
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'",
    )
    .fetch_all(&mut *conn)
    .await?;
    let objects = objects.into_iter().map(|(kind, name)| format!("{kind} {name}"));
    Ok(objects.chain(columns.into_iter().map(|(table, column)| format!("column {table}.{column}"))).collect())
}

/// What the migrations this merlya knows create, read from a private in-memory database migrated
/// from scratch, and what `conn` lacks of it: a dropped table, column, index or trigger is found
/// here instead of by the first command that needs it.
async fn missing_schema(conn: &mut SqliteConnection) -> Result<Vec<String>, sqlx::Error> {
    let memory = SqliteConnectOptions::from_str("sqlite::memory:")?;
    let reference = super::db::without_reaper(sqlx::sqlite::SqlitePoolOptions::new())
        .max_connections(1)
        .connect_with(memory)
        .await?;
    MIGRATOR.run(&reference).await.map_err(|e| sqlx::Error::Migrate(Box::new(e)))?;
    let expected = schema_of(&mut *reference.acquire().await?).await?;
    reference.close().await;
    let found = schema_of(conn).await?;
    let missing: Vec<&String> = expected.difference(&found).collect();
    // Tables first; the columns of a missing table go without saying.
    let rank = |item: &str| ["table ", "column ", "index ", "trigger "].iter().position(|k| item.starts_with(k));
    let mut named: Vec<String> = missing
        .iter()
        .filter(|item| {
            item.strip_prefix("column ")
                .and_then(|c| c.split_once('.'))
                .is_none_or(|(table, _)| !missing.iter().any(|m| m.strip_prefix("table ") == Some(table)))
        })
        .map(|item| item.to_string())
        .collect();
    named.sort_by_key(|item| rank(item).unwrap_or(usize::MAX));
    Ok(named)
}

/// The newest schema version this merlya knows.
pub(super) fn known_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_health_check_names_a_dropped_table_column_or_trigger() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("merlya.db");
        let store = super::super::Store::open(&path).await.unwrap();
        let (found, known) = store.check_health().await.unwrap();
        assert_eq!(found, known, "a migrated database is whole");
        for sql in
            ["DROP TABLE host_tags", "DROP TRIGGER audit_log_no_update", "ALTER TABLE hosts DROP COLUMN identity_file"]
        {
            crate::store::db::query(sql).execute(store.pool()).await.unwrap();
        }
        let err = store.check_health().await.unwrap_err();
        let said = err.to_string();
        for name in
            ["table host_tags", "index host_tags_tag", "trigger audit_log_no_update", "column hosts.identity_file"]
        {
            assert!(said.contains(name), "names {name}: {said}");
        }
        assert!(said.contains(&path.display().to_string()), "{said}");
        store.close().await;
    }

    #[tokio::test]
    async fn an_empty_database_beside_an_audit_key_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("merlya.db");
        // A fresh home, and an empty file with nothing beside it, start normally.
        super::super::Store::open(&path).await.unwrap().close().await;
        let other = dir.path().join("other").join("merlya.db");
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        std::fs::write(&other, b"").unwrap();
        super::super::Store::open(&other).await.unwrap().close().await;

        // The key alone, then the checkpoint alone: each marks a database that held an audit log.
        for beside in ["audit.key", "audit.checkpoint"] {
            let home = dir.path().join(beside.replace('.', "-"));
            std::fs::create_dir_all(&home).unwrap();
            let db = home.join("merlya.db");
            std::fs::write(home.join(beside), b"kept").unwrap();
            std::fs::write(&db, b"").unwrap();
            let err = super::super::Store::open(&db).await.unwrap_err();
            assert!(matches!(err, StoreError::Emptied { .. }), "{beside}: {err}");
            let said = err.to_string();
            assert!(said.contains("is empty (0 bytes)") && said.contains(beside), "{said}");
            assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "{beside}: left untouched");
            assert!(!home.join("merlya.db-wal").exists(), "{beside}: SQLite never opened it");
        }
    }

    #[tokio::test]
    async fn a_clean_close_is_trusted_until_anything_else_writes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("merlya.db");
        let store = super::super::Store::open(&path).await.unwrap();
        assert!(!closed_cleanly(&path), "open, not yet closed");
        store.close().await;
        assert!(closed_cleanly(&path));
        // Another writer (a restore, damage) changes the file: the full check runs again.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[100] ^= 1;
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&path, &bytes).unwrap();
        assert!(!closed_cleanly(&path));
    }
}
