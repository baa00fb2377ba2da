//! `merlya store migrate --to postgres://…` (ADR 0032): one operator's store copied into a team's
//! new PostgreSQL database, every table with its rows and ids, in one transaction on the target (a
//! failure leaves it as it was). The audit chain is verified before (a broken chain is not copied)
//! and after (the copied rows are the same rows, so they verify with the same hashes, and the head
//! is the same), then the old head is pinned in the new chain by an entry appended the normal way.
//!
//! The copy is generic: the tables and columns are read from the target's schema (a new table or
//! column needs nothing here), values are converted to the target column's type, tables are copied
//! parents first (foreign keys), and identity sequences are set past the copied ids.

use std::collections::{BTreeMap, HashSet};

use super::audit::{AuditOutcome, AuditRequest, ChainReport};
use super::db::{Arg, Backend, Row, Tx, Val, query};
use super::{Store, StoreError};

/// The rows a new database holds before anyone used it, by table: what a row must satisfy to be
/// one. Anything else in the target means it is somebody's store, and nothing is copied into it.
const SEEDS: &[(&str, &str)] = &[
    ("hosts", "name = 'localhost'"),
    ("inventory_version", "id = 1"),
    ("audit_head", "id = 1 AND last_id = 0 AND count = 0"),
];

/// Rows read and written per statement (a few thousand parameters at most).
const BATCH_ROWS: i64 = 200;

/// An audit chain's head: its newest entry, that entry's hash, and how many entries there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub last_id: i64,
    pub hash: String,
    pub count: i64,
}

/// What a migration did, for the operator.
#[derive(Debug, Clone)]
pub struct Migrated {
    /// Rows copied, by table (parents first).
    pub tables: Vec<(String, u64)>,
    /// The copied chain's head (none when nothing was ever audited).
    pub old_head: Option<Head>,
    /// The entry that pins it in the new chain (the finish of the migration's own entry).
    pub pinned_at: i64,
    /// The target's chain verified after the pin.
    pub report: ChainReport,
}

/// Why a migration did not happen, or did not end as it should.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// `--to` names the store this home already uses.
    #[error("{target} is the store this home already uses")]
    SameStore { target: String },
    /// The source chain does not verify: copying it would hand a broken chain to the team.
    #[error("the audit chain of {from} does not verify, so nothing was copied: {}", report.describe())]
    BrokenChain { from: String, report: Box<ChainReport> },
    /// The source chain is unkeyed (an old merlya's); PostgreSQL takes keyed chains only.
    #[error(
        "the audit log of {from} holds only unkeyed entries from an older merlya ({count}); record one command (it re-bases them under the key), then migrate"
    )]
    Unkeyed { from: String, count: usize },
    /// The target already holds something.
    #[error(
        "{target} is not empty ({}); migrate copies into a new database only, and it was left unchanged",
        found.iter().map(|(t, n)| format!("{t}: {n} rows")).collect::<Vec<_>>().join(", ")
    )]
    NotEmpty { target: String, found: Vec<(String, i64)> },
    /// The source was written to between its verification and the copy.
    #[error("{from} was written to while its audit chain was being verified; nothing was copied, run it again")]
    SourceChanged { from: String },
    /// A table or column of the source has no place in the target's schema.
    #[error("{target} has no place for {what} of {from}; nothing was copied (is this merlya older than the source's?)")]
    Schema { from: String, target: String, what: String },
    /// A value the target's column cannot hold.
    #[error("{table}.{column}: {detail}; nothing was copied")]
    Value { table: String, column: String, detail: String },
    /// The committed copy does not verify as the source did (it should never happen).
    #[error("the copy in {target} does not match its source: {detail}")]
    NotIdentical { target: String, detail: String },
    /// The database said no.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a target column takes.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Int,
    Real,
    Text,
    Bytes,
    Other(String),
}

impl Kind {
    fn of(data_type: &str) -> Self {
        match data_type {
            "bigint" | "integer" | "smallint" => Kind::Int,
            "double precision" | "real" | "numeric" => Kind::Real,
            "text" | "character varying" | "character" | "name" => Kind::Text,
            "bytea" => Kind::Bytes,
            other => Kind::Other(other.to_string()),
        }
    }
}

#[derive(Debug, Clone)]
struct Column {
    name: String,
    kind: Kind,
    identity: bool,
}

/// `name` as an SQL identifier (`user`, `check` and `key` are reserved words).
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `value` as the target column takes it.
fn convert(value: &Val, kind: &Kind) -> Result<Arg, String> {
    let wrong = || format!("{value:?} cannot be stored as {kind:?}");
    Ok(match (kind, value) {
        (Kind::Int, Val::Null) => Arg::Int(None),
        (Kind::Int, Val::Int(i)) => Arg::Int(Some(*i)),
        (Kind::Int, Val::Bool(b)) => Arg::Int(Some(i64::from(*b))),
        #[allow(clippy::cast_possible_truncation)]
        (Kind::Int, Val::Real(r)) if r.fract() == 0.0 && r.abs() < 9.0e15 => Arg::Int(Some(*r as i64)),
        (Kind::Int, Val::Text(s)) => Arg::Int(Some(s.trim().parse().map_err(|_| wrong())?)),
        (Kind::Real, Val::Null) => Arg::Real(None),
        (Kind::Real, Val::Real(r)) => Arg::Real(Some(*r)),
        #[allow(clippy::cast_precision_loss)]
        (Kind::Real, Val::Int(i)) => Arg::Real(Some(*i as f64)),
        (Kind::Real, Val::Text(s)) => Arg::Real(Some(s.trim().parse().map_err(|_| wrong())?)),
        (Kind::Text, Val::Null) => Arg::Text(None),
        (Kind::Text, Val::Text(s)) => Arg::Text(Some(s.clone())),
        (Kind::Text, Val::Int(i)) => Arg::Text(Some(i.to_string())),
        (Kind::Text, Val::Real(r)) => Arg::Text(Some(r.to_string())),
        (Kind::Text, Val::Bytes(b)) => Arg::Text(Some(String::from_utf8(b.clone()).map_err(|_| wrong())?)),
        (Kind::Bytes, Val::Null) => Arg::Bytes(None),
        (Kind::Bytes, Val::Bytes(b)) => Arg::Bytes(Some(b.clone())),
        (Kind::Bytes, Val::Text(s)) => Arg::Bytes(Some(s.as_bytes().to_vec())),
        (Kind::Other(name), _) => return Err(format!("the column's type {name} is not copied by merlya")),
        _ => return Err(wrong()),
    })
}

/// The same value as either backend reads it (PostgreSQL's booleans, SQLite's integers).
fn normalized(value: &Val) -> Val {
    match value {
        Val::Bool(b) => Val::Int(i64::from(*b)),
        other => other.clone(),
    }
}

/// The tables of the target's schema and their columns (sqlx's own bookkeeping left out).
async fn target_tables(tx: &mut Tx) -> Result<BTreeMap<String, Vec<Column>>, sqlx::Error> {
    let rows: Vec<(String, String, String, String)> = query(
        "SELECT c.table_name::text, c.column_name::text, c.data_type::text, c.is_identity::text
         FROM information_schema.columns c JOIN information_schema.tables t
           ON t.table_schema = c.table_schema AND t.table_name = c.table_name
         WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
           AND c.table_name <> '_sqlx_migrations'
         ORDER BY c.table_name, c.ordinal_position",
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut tables: BTreeMap<String, Vec<Column>> = BTreeMap::new();
    for (table, name, data_type, identity) in rows {
        tables.entry(table).or_default().push(Column { name, kind: Kind::of(&data_type), identity: identity == "YES" });
    }
    Ok(tables)
}

/// The source's tables and their column names, on either backend.
async fn source_tables(tx: &mut Tx) -> Result<BTreeMap<String, Vec<String>>, sqlx::Error> {
    if tx.backend() == Backend::Postgres {
        let tables = target_tables(tx).await?;
        return Ok(tables.into_iter().map(|(t, cols)| (t, cols.into_iter().map(|c| c.name).collect())).collect());
    }
    let names: Vec<String> = query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
           AND name <> '_sqlx_migrations' ORDER BY name",
    )
    .scalars(&mut *tx)
    .await?;
    let mut tables = BTreeMap::new();
    for name in names {
        let columns: Vec<String> =
            query("SELECT name FROM pragma_table_info($1) ORDER BY cid").bind(&name).scalars(&mut *tx).await?;
        tables.insert(name, columns);
    }
    Ok(tables)
}

/// The target's tables, each after the tables its foreign keys name.
async fn copy_order(tx: &mut Tx, tables: &BTreeMap<String, Vec<Column>>) -> Result<Vec<String>, sqlx::Error> {
    let edges: Vec<(String, String)> = query(
        "SELECT c.relname::text, f.relname::text FROM pg_constraint k
           JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class f ON f.oid = k.confrelid
         WHERE k.contype = 'f' AND k.connamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
    )
    .fetch_all(&mut *tx)
    .await?;
    Ok(parents_first(tables.keys().cloned().collect(), &edges))
}

/// `tables` ordered so each comes after the tables it references (`(child, parent)` edges); a cycle
/// (none in merlya's schema) keeps the rest in name order.
fn parents_first(tables: Vec<String>, edges: &[(String, String)]) -> Vec<String> {
    let mut done: Vec<String> = Vec::new();
    let mut left = tables;
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|t| {
                edges.iter().filter(|(c, p)| c == *t && p != *t).all(|(_, p)| done.contains(p) || !left.contains(p))
            })
            .cloned()
            .collect();
        if ready.is_empty() {
            done.append(&mut left);
            break;
        }
        left.retain(|t| !ready.contains(t));
        done.extend(ready);
    }
    done
}

/// Reads the chain's head (`None`: nothing was ever appended).
async fn head_on(tx: &mut Tx) -> Result<Option<Head>, sqlx::Error> {
    let head: Option<(i64, String, i64)> =
        query("SELECT last_id, hash, count FROM audit_head WHERE id = 1").fetch_optional(&mut *tx).await?;
    Ok(head.filter(|(_, _, count)| *count > 0).map(|(last_id, hash, count)| Head { last_id, hash, count }))
}

/// What the target holds beyond a new database's seed rows, by table.
async fn contents(tx: &mut Tx, tables: &BTreeMap<String, Vec<Column>>) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let mut found = Vec::new();
    for table in tables.keys() {
        let seed = SEEDS.iter().find(|(t, _)| t == table).map_or("FALSE", |(_, predicate)| predicate);
        let rows: i64 =
            query(format!("SELECT COUNT(*) FROM {} WHERE NOT ({seed})", ident(table))).scalar(&mut *tx).await?;
        if rows > 0 {
            found.push((table.clone(), rows));
        }
    }
    Ok(found)
}

/// Inserts `rows` (values in `columns` order) into `table`.
async fn insert_rows(
    tx: &mut Tx,
    table: &str,
    columns: &[&Column],
    rows: &[Vec<Val>],
    on_conflict: &str,
) -> Result<(), MigrateError> {
    if rows.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = columns.iter().map(|c| ident(&c.name)).collect();
    let mut sql = format!("INSERT INTO {} ({}) OVERRIDING SYSTEM VALUE VALUES ", ident(table), names.join(", "));
    let mut args = Vec::with_capacity(rows.len() * columns.len());
    for (r, row) in rows.iter().enumerate() {
        let marks: Vec<String> = (0..columns.len()).map(|c| format!("${}", r * columns.len() + c + 1)).collect();
        sql.push_str(&format!("{}({})", if r == 0 { "" } else { ", " }, marks.join(", ")));
        for (column, value) in columns.iter().zip(row) {
            args.push(convert(value, &column.kind).map_err(|detail| MigrateError::Value {
                table: table.to_string(),
                column: column.name.clone(),
                detail,
            })?);
        }
    }
    sql.push_str(on_conflict);
    let mut statement = query(sql);
    for arg in args {
        statement = statement.bind_arg(arg);
    }
    statement.execute(&mut *tx).await.map_err(|e| sql_error(&format!("cannot copy into {table}"), e))?;
    Ok(())
}

fn sql_error(context: &str, source: sqlx::Error) -> MigrateError {
    MigrateError::Store(StoreError::Sql { context: context.to_string(), source })
}

/// Copies `table`'s rows from the source, a batch at a time, in the order they were recorded (so
/// an identity column the source lacks, PostgreSQL's `seq`, numbers them in that order).
async fn copy_table(from: &mut Tx, to: &mut Tx, table: &str, columns: &[&Column]) -> Result<u64, MigrateError> {
    let names: Vec<String> = columns.iter().map(|c| ident(&c.name)).collect();
    let (mut after, mut offset, mut copied) = (i64::MIN, 0i64, 0u64);
    loop {
        // SQLite: by rowid, from the last one read; PostgreSQL (a team store copied to another): by
        // physical position within the transaction's snapshot.
        let batch: Vec<Row> = match from.backend() {
            Backend::Sqlite => query(format!(
                "SELECT rowid, {} FROM {} WHERE rowid > $1 ORDER BY rowid LIMIT $2",
                names.join(", "),
                ident(table)
            ))
            .bind(after)
            .bind(BATCH_ROWS),
            Backend::Postgres => query(format!(
                "SELECT 0::bigint, {} FROM {} ORDER BY ctid LIMIT $1 OFFSET $2",
                names.join(", "),
                ident(table)
            ))
            .bind(BATCH_ROWS)
            .bind(offset),
        }
        .fetch_all(&mut *from)
        .await
        .map_err(|e| sql_error(&format!("cannot read {table}"), e))?;
        let Some(last) = batch.last() else { return Ok(copied) };
        after = last.try_get::<i64>(0usize).unwrap_or(after);
        offset += i64::try_from(batch.len()).unwrap_or(BATCH_ROWS);
        let rows: Vec<Vec<Val>> = batch.iter().map(|r| r.values()[1..].to_vec()).collect();
        insert_rows(to, table, columns, &rows, "").await?;
        copied += rows.len() as u64;
        if i64::try_from(batch.len()).unwrap_or(0) < BATCH_ROWS {
            return Ok(copied);
        }
    }
}

/// Every row of `table` (the columns named), ordered by `order`, values as either backend reads them.
async fn all_rows(tx: &mut Tx, table: &str, columns: &[&str], order: &str) -> Result<Vec<Vec<Val>>, sqlx::Error> {
    let names: Vec<String> = columns.iter().map(|c| ident(c)).collect();
    let rows: Vec<Row> = query(format!("SELECT {} FROM {} ORDER BY {order}", names.join(", "), ident(table)))
        .fetch_all(&mut *tx)
        .await?;
    Ok(rows.iter().map(|r| r.values().iter().map(normalized).collect()).collect())
}

/// Copies `source` into the empty team store `target`, verifying the audit chain before and after,
/// and pins the old head with an entry made from `pin` (who, which session; the command says what).
pub async fn migrate(source: &Store, target: &Store, pin: AuditRequest) -> Result<Migrated, MigrateError> {
    let (from, to) = (source.location().to_string(), target.location().to_string());
    if from == to {
        return Err(MigrateError::SameStore { target: to });
    }
    // A target that holds something is said first (checked again under the lock, in the copy).
    let mut look = target.begin_write("read the team store").await?;
    let tables = target_tables(&mut look).await.map_err(|e| sql_error("cannot read the team store's schema", e))?;
    let found = contents(&mut look, &tables).await.map_err(|e| sql_error("cannot read the team store", e))?;
    drop(look);
    if !found.is_empty() {
        return Err(MigrateError::NotEmpty { target: to, found });
    }
    // Before: the whole chain, with the key, the checkpoint and the witness of this home.
    let before = source.verify_audit().await?;
    if before.broken.is_some() {
        return Err(MigrateError::BrokenChain { from, report: Box::new(before) });
    }
    if before.legacy > 0 && before.keyed == 0 {
        return Err(MigrateError::Unkeyed { from, count: before.legacy });
    }
    // The source is held for the copy: SQLite's write lock (writers wait), a PostgreSQL snapshot.
    let mut held = source.begin_write("hold the store for the migration").await?;
    if held.backend() == Backend::Postgres {
        query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut held)
            .await
            .map_err(|e| sql_error("cannot hold the store for the migration", e))?;
    }
    let old_head = head_on(&mut held).await.map_err(|e| sql_error("cannot read the audit head", e))?;
    if old_head.as_ref().map_or(0, |h| h.count) != i64::try_from(before.entries).unwrap_or(-1) {
        return Err(MigrateError::SourceChanged { from });
    }
    let mut tx = target.begin_write("copy into the team store").await?;
    copy_all(&mut held, &mut tx, &from, &to, old_head.as_ref()).await?;
    tx.commit().await.map_err(target.write_error("copy into the team store"))?;
    drop(held);

    // After: the committed copy verifies as its source did, with the same head.
    let after = target.verify_audit().await?;
    let head_after = target.audit_head().await?;
    if after.broken.is_some() || after.entries != before.entries || head_after != old_head {
        let detail = match after.broken {
            Some(_) => after.describe(),
            None => format!(
                "{} entries and head {head_after:?}, the source had {} and {old_head:?}",
                after.entries, before.entries
            ),
        };
        return Err(MigrateError::NotIdentical { target: to, detail });
    }
    let pinned = match &old_head {
        Some(h) => format!("entry {} of {}, hash {}", h.last_id, h.count, h.hash),
        None => "empty (no entry)".to_string(),
    };
    let reason = format!("store migrated from {from}; its audit chain's head was {pinned}");
    let ticket = target.audit_start(pin).await?;
    let finish = ticket.finish(AuditOutcome::Ok, Some(0), Some(reason)).await?;
    let report = target.verify_audit().await?;
    let tables = report_tables(target).await?;
    Ok(Migrated { tables, old_head, pinned_at: finish.id, report })
}

/// Rows per table in the target now (what the operator is shown).
async fn report_tables(target: &Store) -> Result<Vec<(String, u64)>, StoreError> {
    let pool = target.pool();
    let names: Vec<String> = query(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()
           AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations' ORDER BY table_name",
    )
    .scalars(pool)
    .await
    .map_err(|source| StoreError::Sql { context: "cannot list the tables".into(), source })?;
    let mut out = Vec::new();
    for name in names {
        let rows: i64 = query(format!("SELECT COUNT(*) FROM {}", ident(&name)))
            .scalar(pool)
            .await
            .map_err(|source| StoreError::Sql { context: format!("cannot count {name}"), source })?;
        out.push((name, u64::try_from(rows).unwrap_or(0)));
    }
    Ok(out)
}

/// The copy itself, inside the target's transaction: lock, check it is new, copy, set sequences,
/// and compare the audit rows with the source's before anything is committed.
async fn copy_all(
    held: &mut Tx,
    tx: &mut Tx,
    from: &str,
    to: &str,
    old_head: Option<&Head>,
) -> Result<(), MigrateError> {
    let schema_error = |what: String| MigrateError::Schema { from: from.to_string(), target: to.to_string(), what };
    let tables = target_tables(tx).await.map_err(|e| sql_error("cannot read the team store's schema", e))?;
    let sources = source_tables(held).await.map_err(|e| sql_error("cannot read the store's schema", e))?;
    for (table, columns) in &sources {
        let Some(target_columns) = tables.get(table) else { return Err(schema_error(format!("table {table}"))) };
        if let Some(missing) = columns.iter().find(|c| !target_columns.iter().any(|t| &t.name == *c)) {
            return Err(schema_error(format!("column {table}.{missing}")));
        }
    }
    // Nobody writes to the target until this commits (reads go on); two migrations queue here.
    let all: Vec<String> = tables.keys().map(|t| ident(t)).collect();
    query(format!("LOCK TABLE {} IN EXCLUSIVE MODE", all.join(", ")))
        .execute(&mut *tx)
        .await
        .map_err(|e| sql_error("cannot lock the team store", e))?;
    let found = contents(tx, &tables).await.map_err(|e| sql_error("cannot read the team store", e))?;
    if !found.is_empty() {
        return Err(MigrateError::NotEmpty { target: to.to_string(), found });
    }
    // The seed rows make way for the source's (put back after, where the source had none).
    let mut seeds: Vec<(String, Vec<Row>)> = Vec::new();
    for (table, _) in SEEDS.iter().filter(|(t, _)| tables.contains_key(*t)) {
        let rows: Vec<Row> = query(format!("SELECT * FROM {}", ident(table)))
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| sql_error(&format!("cannot read {table}"), e))?;
        query(format!("DELETE FROM {}", ident(table)))
            .execute(&mut *tx)
            .await
            .map_err(|e| sql_error(&format!("cannot clear {table}"), e))?;
        seeds.push((table.to_string(), rows));
    }
    let order = copy_order(tx, &tables).await.map_err(|e| sql_error("cannot read the team store's schema", e))?;
    for table in &order {
        let Some(source_columns) = sources.get(table) else { continue };
        let columns: Vec<&Column> =
            tables[table].iter().filter(|c| source_columns.iter().any(|s| s == &c.name)).collect();
        copy_table(held, tx, table, &columns).await?;
    }
    for (table, rows) in &seeds {
        for row in rows {
            let columns: Vec<&Column> =
                row.columns().iter().filter_map(|name| tables[table].iter().find(|c| &c.name == name)).collect();
            insert_rows(tx, table, &columns, &[row.values().to_vec()], " ON CONFLICT DO NOTHING").await?;
        }
    }
    // Identity sequences past the copied ids, so the next row gets a new one.
    for (table, columns) in &tables {
        for column in columns.iter().filter(|c| c.identity) {
            query(format!(
                "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX({}), 0) + 1, false) FROM {}",
                ident(&column.name),
                ident(table)
            ))
            .bind(ident(table))
            .bind(&column.name)
            .execute(&mut *tx)
            .await
            .map_err(|e| sql_error(&format!("cannot set the sequence of {table}.{}", column.name), e))?;
        }
    }
    // Consoles already open on the team store re-read the inventory.
    if tables.contains_key("inventory_version") {
        query("UPDATE inventory_version SET version = version + 1")
            .execute(&mut *tx)
            .await
            .map_err(|e| sql_error("cannot bump the inventory version", e))?;
    }
    compare_audit(held, tx, &tables, &sources, to, old_head).await
}

/// The audit rows and head in the target, before the commit, are the source's exactly.
async fn compare_audit(
    held: &mut Tx,
    tx: &mut Tx,
    tables: &BTreeMap<String, Vec<Column>>,
    sources: &BTreeMap<String, Vec<String>>,
    to: &str,
    old_head: Option<&Head>,
) -> Result<(), MigrateError> {
    let not_identical = |detail: String| MigrateError::NotIdentical { target: to.to_string(), detail };
    let Some(source_columns) = sources.get("audit_log") else { return Ok(()) };
    let target_columns: HashSet<&str> =
        tables.get("audit_log").map(|c| c.iter().map(|c| c.name.as_str()).collect()).unwrap_or_default();
    let columns: Vec<&str> = source_columns.iter().map(String::as_str).filter(|c| target_columns.contains(c)).collect();
    let read = |e| sql_error("cannot read the audit log", e);
    let theirs = all_rows(held, "audit_log", &columns, "id").await.map_err(read)?;
    let ours = all_rows(tx, "audit_log", &columns, "id").await.map_err(read)?;
    if theirs.len() != ours.len() {
        return Err(not_identical(format!("{} audit entries copied of {}", ours.len(), theirs.len())));
    }
    if let Some(at) = theirs.iter().zip(&ours).position(|(a, b)| a != b) {
        return Err(not_identical(format!("audit entry #{} differs from its source", at + 1)));
    }
    let head = head_on(tx).await.map_err(read)?;
    if head.as_ref() != old_head {
        return Err(not_identical(format!("the audit head is {head:?}, the source's {old_head:?}")));
    }
    Ok(())
}

impl Store {
    /// The chain's head as stored (`None` before the first entry).
    pub async fn audit_head(&self) -> Result<Option<Head>, StoreError> {
        let head: Option<(i64, String, i64)> = query("SELECT last_id, hash, count FROM audit_head WHERE id = 1")
            .fetch_optional(self.pool())
            .await
            .map_err(|source| StoreError::Sql { context: "cannot read the audit head".into(), source })?;
        Ok(head.filter(|(_, _, count)| *count > 0).map(|(last_id, hash, count)| Head { last_id, hash, count }))
    }
}

#[cfg(test)]
#[path = "migrate_tests.rs"]
mod tests;
