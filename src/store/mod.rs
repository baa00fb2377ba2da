//! The store: by default one SQLite file in MERLYA_HOME (WAL mode, embedded migrations); for a
//! team, a PostgreSQL database named by `store.url` (ADR 0032). Both behind one API ([`db`]).
//!
//! Opening is careful: a file that is not SQLite, is corrupt, or was migrated
//! by a newer merlya is reported and never written to. Concurrent first starts
//! are serialised with an exclusive lock on `merlya.db.lock`, so two processes
//! starting at once on a new `MERLYA_HOME` both succeed.

pub mod approvals;
pub mod audit;
#[cfg(test)]
mod backend_tests;
pub mod baselines;
pub mod capabilities;
pub mod change_requests;
pub mod conversations;
pub(crate) mod db;
pub mod doorbell;
pub mod history;
pub mod host_errors;
pub mod host_health;
pub mod hosts;
mod integrity;
pub mod lock;
pub mod metrics;
pub mod migrate;
pub mod pipelines;
pub mod postgres;
pub mod resources;
pub mod secret_names;
pub mod skill_runs;
pub mod space;
pub mod team_runs;
#[cfg(test)]
pub(crate) mod test_backend;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// Why the database cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file is not a SQLite database at all.
    #[error("{0} is not a SQLite database (bad header); it was left untouched. Move it away to start afresh.")]
    NotSqlite(PathBuf),
    /// SQLite reports damage.
    #[error("{path} is corrupt ({detail}); it was left untouched. Restore a backup or move it away.")]
    Corrupt { path: PathBuf, detail: String },
    /// An empty database file beside the audit chain's key or checkpoint: the history was lost
    /// (a truncation, a full disk, a bad restore), and a new database would start a new chain over it.
    #[error(
        "{path} is empty (0 bytes), but {evidence} beside it belongs to an audit log that was kept in it; it was left untouched, so no new inventory or audit chain starts over the old one. Restore merlya.db from a backup, or move it and {evidence} away to start afresh."
    )]
    Emptied { path: PathBuf, evidence: String },
    /// Migrated, but lacking part of the schema (a table, column, index or trigger dropped by hand):
    /// the commands that use it would fail.
    #[error(
        "{path} (schema version {version}) lacks {}: the commands that use it would fail. Restore a backup, or move the file away to start afresh.",
        first_of(missing)
    )]
    Schema { path: PathBuf, version: i64, missing: Vec<String> },
    /// Migrated by a newer merlya.
    #[error(
        "{path} was created by a newer merlya (schema version {found}, this merlya knows up to {known}); it was left untouched. Upgrade merlya."
    )]
    TooNew { path: PathBuf, found: i64, known: i64 },
    /// Another connection held the write lock for the whole busy timeout.
    #[error(
        "{path} stayed locked for writing by {} for {} s, so merlya could not {what}; try again once it has finished",
        holder.as_deref().map_or_else(|| "another merlya process".to_string(), |h| format!("another process ({h})")),
        lock::BUSY_TIMEOUT.as_secs()
    )]
    Locked { path: PathBuf, what: String, holder: Option<String> },
    /// The database server cannot be reached (down, refused, wrong credentials, TLS).
    #[error("the store at {location} cannot be reached: {source}")]
    Unreachable { location: String, source: sqlx::Error },
    /// A migration failed: which backend, where (no password) and which migration.
    #[error("cannot migrate the {backend} store at {location}: migration {migration} failed: {detail}")]
    Migration { backend: &'static str, location: String, migration: String, detail: String },
    /// Any other database error, with what was being done.
    #[error("{context}: {source}")]
    Sql { context: String, source: sqlx::Error },
    /// Filesystem trouble around the database.
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    /// A value refused before it is written (it names the field and what is allowed).
    #[error("{0}")]
    Invalid(String),
    /// The disk that holds MERLYA_HOME is full: `explained` says where and how much is free.
    #[error("{explained}; could not {what}")]
    NoSpace { explained: String, what: String },
}

impl StoreError {
    /// This error, said as a full disk when it is one (`path`: the database or a file beside it).
    pub fn or_no_space(self, path: &Path, what: &str) -> Self {
        let full = match &self {
            StoreError::Sql { source, .. } => space::out_of_space(source, path),
            StoreError::Io { source, .. } => space::io_out_of_space(source),
            _ => false,
        };
        if full { StoreError::NoSpace { explained: space::explain(path), what: what.to_string() } } else { self }
    }
}

/// The first few of `names`, and how many more there are: an error stays one readable line.
fn first_of(names: &[String]) -> String {
    const SHOWN: usize = 8;
    match names.len().checked_sub(SHOWN) {
        Some(more) if more > 0 => format!("{} and {more} more", names[..SHOWN].join(", ")),
        _ => names.join(", "),
    }
}

/// Adds context to sqlx errors.
pub(crate) trait SqlContext<T> {
    fn ctx(self, context: &str) -> Result<T, StoreError>;
}

impl<T> SqlContext<T> for Result<T, sqlx::Error> {
    fn ctx(self, context: &str) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Sql { context: context.to_string(), source })
    }
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

pub use db::Backend;

/// A handle on the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: db::Pool,
    /// The database file (SQLite), or MERLYA_HOME's `merlya.db` path beside which the audit key and
    /// pipelines folder live (PostgreSQL).
    path: Arc<Path>,
    /// What errors name: the file, or the URL without its password.
    location: Arc<str>,
    /// The audit key and checkpoint, outside the database (ADR 0015).
    audit: Arc<audit::keys::AuditFiles>,
    /// This home's operator: the name and key that sign a team's audit entries (ADR 0032).
    operator: Arc<audit::operator::Operator>,
    /// Writes started in the background (the session row), awaited by [`Store::close`].
    pending: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Store {
    /// Writes each audit checkpoint also to `witness` (outside MERLYA_HOME) and
    /// makes `verify_audit` check the chain against the heads it holds.
    pub fn set_audit_witness(&self, witness: audit::witness::Witness) {
        let database = std::path::absolute(&self.path).unwrap_or_else(|_| self.path.to_path_buf());
        self.audit.set_witness(witness, database.display().to_string());
    }

    /// Opens (creating if needed) the database at `path` and migrates it.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            crate::home::create_private_dir(parent)
                .map_err(|source| StoreError::Io { context: format!("cannot create {}", parent.display()), source })?;
        }
        let lock_path = path.with_extension("db.lock");
        let lock = crate::home::private_file_options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| StoreError::Io { context: format!("cannot open {}", lock_path.display()), source })?;
        // Free in the common case: taken at once; only a lock another start holds is waited for on a
        // blocking thread.
        let guard = match lock.try_lock() {
            Ok(()) => lock,
            Err(std::fs::TryLockError::WouldBlock) => {
                // Another merlya is opening or migrating this home: after a second, say who.
                let (db, held) = (path.to_path_buf(), lock_path.clone());
                let notice = tokio::spawn(async move {
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    let holder = lock::flock_holder(&held).unwrap_or_else(|| "another process".into());
                    eprintln!("waiting for {}, held by {holder}", db.display());
                });
                let locked = tokio::task::spawn_blocking(move || lock.lock().map(|_| lock)).await;
                notice.abort();
                locked
                    .map_err(|e| StoreError::Io { context: "lock task".into(), source: std::io::Error::other(e) })?
                    .map_err(|source| StoreError::Io {
                        context: format!("cannot lock {}", lock_path.display()),
                        source,
                    })?
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(StoreError::Io { context: format!("cannot lock {}", lock_path.display()), source });
            }
        };

        let found = std::fs::metadata(path).ok();
        let exists = found.as_ref().is_some_and(|m| m.len() > 0);
        if found.is_some() && !exists {
            integrity::check_not_emptied(path)?;
        }
        // A file as merlya left it needs no full read: only its header and schema version are checked.
        let trusted = exists && integrity::closed_cleanly(path);
        if trusted {
            integrity::check_header(path)?;
        } else if exists {
            integrity::check_fully(path).await?;
        }
        if exists {
            // Files an older merlya left readable by others are narrowed to their owner.
            for file in [path.to_path_buf(), wal_path(path), shm_path(path)] {
                if let Err(e) = crate::home::make_private(&file) {
                    tracing::warn!(file = %file.display(), error = %e, "cannot make the database private");
                }
            }
        } else {
            // Created here, private, before SQLite opens it: SQLite gives the
            // -wal and -shm files the mode of the database file.
            crate::home::private_file_options()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(|source| StoreError::Io { context: format!("cannot create {}", path.display()), source })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(lock::BUSY_TIMEOUT)
            .foreign_keys(true);
        // One connection: every write takes SQLite's one write lock anyway, reads are short, and a
        // second connection (opened whenever a query follows another before the first connection is
        // back in the pool) costs a file open, a schema read and a worker thread (ADR 0023).
        let pool = db::without_reaper(SqlitePoolOptions::new())
            .max_connections(1)
            // A local file: no ping before each query.
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .ctx(&format!("cannot open {}", path.display()))?;
        // A file merlya closed cleanly at this schema needs no migration run (its checks cost a
        // transaction on every start).
        let current = if trusted {
            let mut conn = pool.acquire().await.ctx(&format!("cannot open {}", path.display()))?;
            integrity::check_version(&mut conn, path).await?
        } else {
            false
        };
        if !current {
            MIGRATOR.run(&pool).await.map_err(|e| StoreError::Sql {
                context: format!("cannot migrate {}", path.display()),
                source: sqlx::Error::Migrate(Box::new(e)),
            })?;
        }
        drop(guard);
        Ok(Self {
            pool: db::Pool::Sqlite(pool),
            path: Arc::from(path),
            location: Arc::from(path.display().to_string()),
            audit: Arc::new(audit::keys::AuditFiles::beside(path)),
            operator: Arc::new(audit::operator::Operator::beside(path)),
            pending: Arc::default(),
        })
    }

    /// Opens a team's store on PostgreSQL at `url` (no password in it; `password` resolved by the
    /// caller from `store.password`, else libpq's PGPASSWORD / ~/.pgpass apply). `database` is
    /// MERLYA_HOME's merlya.db path: the audit key and pipelines folder stay beside it, per operator.
    pub async fn open_postgres(database: &Path, url: &str, password: Option<&str>) -> Result<Self, StoreError> {
        let pool = postgres::open(url, password).await?;
        Ok(Self {
            pool: db::Pool::Postgres(pool),
            path: Arc::from(database),
            location: Arc::from(postgres::redact(url)),
            audit: Arc::new(audit::keys::AuditFiles::beside(database)),
            operator: Arc::new(audit::operator::Operator::beside(database)),
            pending: Arc::default(),
        })
    }

    /// The full health check (`merlya doctor`): integrity, writability, and the schema version found
    /// with the one this merlya knows.
    pub async fn check_health(&self) -> Result<(i64, i64), StoreError> {
        match &self.pool {
            db::Pool::Sqlite(pool) => Ok((integrity::check_live(pool, &self.path).await?, integrity::known_version())),
            db::Pool::Postgres(pool) => postgres::check_live(pool, &self.location).await,
        }
    }

    /// Which backend holds the store.
    pub fn backend(&self) -> Backend {
        self.pool.backend()
    }

    /// What errors and `doctor` name: the file, or the URL without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Waits until the audit checkpoint names the newest entry this process appended (it is written
    /// beside the work that follows each append).
    pub async fn settle_audit(&self) {
        // Most often it was written long ago: no blocking thread to wake for nothing.
        if !self.audit.writing() {
            return;
        }
        let files = Arc::clone(&self.audit);
        if let Err(e) = tokio::task::spawn_blocking(move || files.settle()).await {
            tracing::warn!(error = %e, "cannot wait for the audit checkpoint");
        }
    }

    /// Copies what is committed so far from the write-ahead log into the database file (and syncs
    /// both). Run beside a long step (a change's post-check), it leaves the clean close that follows
    /// little to write; a failure only leaves that work to the close.
    pub async fn checkpoint(&self) {
        let db::Pool::Sqlite(pool) = &self.pool else { return };
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(pool).await {
            tracing::debug!(error = %e, "checkpoint left to the close");
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where change pipelines keep plan files and copies of configurations: beside the database.
    pub fn pipelines_dir(&self) -> PathBuf {
        self.path.parent().map_or_else(|| PathBuf::from("pipelines"), |dir| dir.join("pipelines"))
    }

    /// The connection pool, for repositories.
    pub(crate) fn pool(&self) -> &db::Pool {
        &self.pool
    }

    /// Records the start of a CLI or console session and returns its id at once: the row is written
    /// beside the command's first work (it is often the file's first write, which creates the WAL
    /// and syncs its header), and [`Store::close`] waits for it. A failure is logged; the command's
    /// own writes report the same cause.
    pub fn start_session(&self, kind: &str) -> String {
        let now = chrono::Utc::now();
        let id = format!("{}-{}", now.format("%Y%m%dT%H%M%S%.3f"), std::process::id());
        let (store, row, kind) = (self.clone(), id.clone(), kind.to_string());
        let write = tokio::spawn(async move {
            let written = db::query("INSERT INTO sessions (id, kind, started_at) VALUES ($1, $2, $3)")
                .bind(&row)
                .bind(&kind)
                .bind(now_rfc3339())
                .execute(&store.pool)
                .await;
            if let Err(e) = written.map_err(store.write_error("record the session")) {
                tracing::warn!(error = %e, "session not recorded");
            }
        });
        if let Ok(mut pending) = self.pending.lock() {
            pending.push(write);
        }
        id
    }

    /// Closes the pool cleanly (checkpoints the WAL) and records the file as merlya leaves it, so the
    /// next open can skip the full integrity check.
    pub async fn close(&self) {
        let pending: Vec<_> = self.pending.lock().map(|mut p| p.drain(..).collect()).unwrap_or_default();
        for write in pending {
            let _ = write.await;
        }
        self.settle_audit().await;
        self.pool.close().await;
        if self.backend() == Backend::Sqlite {
            integrity::mark_closed_cleanly(&self.path);
        }
    }
}

/// SQLite's write-ahead log beside `path`.
pub fn wal_path(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", path.display()))
}

/// SQLite's shared-memory index beside `path`.
pub fn shm_path(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}-shm", path.display()))
}

/// Current UTC time as stored in the database.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
