//! The team store on PostgreSQL (ADR 0032): where `store.url` points, how merlya connects (the
//! password from the keyring, a file, PGPASSWORD or ~/.pgpass, never from the URL), and the
//! migrations of `migrations/postgres`, run under PostgreSQL's advisory lock so two consoles
//! starting at once on a new database both succeed.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::StoreError;

/// The PostgreSQL migrations this merlya knows.
pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// How long opening waits for the server before saying it cannot be reached.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the store lives, as `store.url` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    /// `sqlite://PATH`: another file than MERLYA_HOME's merlya.db.
    Sqlite(std::path::PathBuf),
    /// `postgres://…` (or `postgresql://…`), as written (it holds no password).
    Postgres(String),
}

impl StoreUrl {
    /// Reads `store.url`; a password written in it is refused (it would sit in the config file and
    /// show in `config show`, process listings and logs).
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err("sqlite:// needs a path".into());
            }
            return Ok(StoreUrl::Sqlite(path.into()));
        }
        if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
            return Err(format!("{}: expected sqlite://PATH or postgres://…", redact(text)));
        }
        if has_password(text) {
            return Err(format!(
                "{} holds a password; give it with store.password (@service:host:field), PGPASSWORD or ~/.pgpass",
                redact(text)
            ));
        }
        PgConnectOptions::from_str(text).map_err(|e| format!("{}: {e}", redact(text)))?;
        Ok(StoreUrl::Postgres(text.to_string()))
    }

    /// The URL as errors and `doctor` say it.
    pub fn shown(&self) -> String {
        match self {
            StoreUrl::Sqlite(path) => format!("sqlite://{}", path.display()),
            StoreUrl::Postgres(url) => redact(url),
        }
    }
}

/// Whether the URL's user-info part carries a password (`user:secret@`), or a `password=` parameter.
fn has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let in_userinfo = authority.rsplit_once('@').is_some_and(|(userinfo, _)| userinfo.contains(':'));
    let in_query = rest.split_once('?').is_some_and(|(_, q)| {
        q.split('&').any(|kv| kv.split('=').next().is_some_and(|k| k.eq_ignore_ascii_case("password")))
    });
    in_userinfo || in_query
}

/// The URL with any password replaced by `***`: what may be shown or logged.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// Connects to `url` (with `password` when one was resolved) and migrates the database.
pub(super) async fn open(url: &str, password: Option<&str>) -> Result<PgPool, StoreError> {
    let shown = redact(url);
    let mut options = PgConnectOptions::from_str(url)
        .map_err(|e| StoreError::Invalid(format!("store.url {shown}: {e}")))?
        .application_name("merlya");
    if let Some(password) = password {
        options = options.password(password);
    }
    let pool = super::db::without_reaper(PgPoolOptions::new())
        .max_connections(4)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Unreachable { location: shown.clone(), source })?;
    // One connection for the check and the migrations: each new one is a server process to start.
    let mut conn =
        pool.acquire().await.map_err(|source| StoreError::Unreachable { location: shown.clone(), source })?;
    // A database already at this schema needs no migration run (its lock and reads cost ~6 round
    // trips on every start), as SQLite's clean close skips it.
    if !check_not_newer(&mut conn, &shown).await? {
        MIGRATOR.run(&mut *conn).await.map_err(|e| migration_error(&shown, &e))?;
    }
    drop(conn);
    Ok(pool)
}

/// A database migrated by a newer merlya is refused before anything is written; whether it is at
/// exactly this merlya's schema, every migration applied.
async fn check_not_newer(conn: &mut sqlx::PgConnection, shown: &str) -> Result<bool, StoreError> {
    let (found, applied): (Option<i64>, i64) = sqlx::query_as(
        // A database with no migration table yet fails here, which reads as "not newer, not current".
        "SELECT MAX(version), COUNT(*) FILTER (WHERE success) FROM _sqlx_migrations",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap_or((None, 0));
    let known = known_version();
    match found {
        Some(found) if found > known => Err(StoreError::TooNew { path: shown.into(), found, known }),
        found => Ok(found == Some(known) && usize::try_from(applied).ok() == Some(MIGRATOR.iter().count())),
    }
}

/// The newest PostgreSQL migration this merlya knows.
pub(super) fn known_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// A failed migration, naming the backend, the URL without its password and the migration.
fn migration_error(shown: &str, error: &sqlx::migrate::MigrateError) -> StoreError {
    use sqlx::migrate::MigrateError;
    let migration = match error {
        MigrateError::ExecuteMigration(_, version) => MIGRATOR
            .iter()
            .find(|m| m.version == *version)
            .map_or_else(|| version.to_string(), |m| format!("{} ({})", m.version, m.description)),
        _ => "the migration table".into(),
    };
    StoreError::Migration { backend: "PostgreSQL", location: shown.to_string(), migration, detail: error.to_string() }
}

/// The health check of `merlya doctor`: the server answers, the schema version found, and a write
/// that is rolled back.
pub(super) async fn check_live(pool: &PgPool, shown: &str) -> Result<(i64, i64), StoreError> {
    let unreachable = |source| StoreError::Unreachable { location: shown.to_string(), source };
    let version: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await
        .map_err(unreachable)?;
    let mut tx = pool.begin().await.map_err(unreachable)?;
    sqlx::query("UPDATE inventory_version SET version = version WHERE id = 1")
        .execute(&mut *tx)
        .await
        .map_err(|source| StoreError::Sql { context: format!("cannot write to {shown}"), source })?;
    tx.rollback().await.map_err(unreachable)?;
    Ok((version, known_version()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown_and_never_accepted_in_the_url() {
        assert_eq!(redact("postgres://ops:s3cret@db.example:5432/merlya"), "postgres://ops:***@db.example:5432/merlya");
        assert_eq!(
            redact("postgres://db/merlya?sslmode=require&password=x"),
            "postgres://db/merlya?sslmode=require&password=***"
        );
        assert_eq!(redact("postgres://ops@db/merlya"), "postgres://ops@db/merlya");
        let err = StoreUrl::parse("postgres://ops:s3cret@db/merlya").unwrap_err();
        assert!(err.contains("store.password") && !err.contains("s3cret"), "{err}");
        assert!(StoreUrl::parse("postgres://db/m?password=s3cret").unwrap_err().contains("***"));
        assert_eq!(
            StoreUrl::parse("postgres://ops@db:5433/merlya?sslmode=verify-full").unwrap(),
            StoreUrl::Postgres("postgres://ops@db:5433/merlya?sslmode=verify-full".into())
        );
        assert_eq!(StoreUrl::parse("sqlite:///srv/m.db").unwrap(), StoreUrl::Sqlite("/srv/m.db".into()));
        assert!(StoreUrl::parse("mysql://db").is_err());
        assert!(StoreUrl::parse("postgres://db/m?sslmode=sometimes").is_err());
    }
}
