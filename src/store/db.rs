//! One query API over both backends (ADR 0032): SQL written once with `$N` placeholders (SQLite
//! reads `$1` as the first argument too), arguments and values typed by merlya, run on a SQLite or
//! a PostgreSQL pool. Not sqlx's `Any` driver: it maps types by guesswork; here an integer stays an
//! `i64`, a null keeps the type of its column, and a value a column cannot hold is an error that
//! names the column.

use std::borrow::Cow;
use std::sync::Arc;

use sqlx::postgres::{PgPool, PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqlitePool, SqliteRow};
use sqlx::{Column as _, Row as _, TypeInfo as _, ValueRef as _};

/// Which database server holds the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The embedded file in MERLYA_HOME (the default).
    Sqlite,
    /// A team's PostgreSQL server.
    Postgres,
}

impl Backend {
    /// The name said in errors and `doctor`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }
}

/// The column that orders rows as they were recorded (pipeline runs, conversations): SQLite's
/// rowid, PostgreSQL's identity column `seq`.
pub(crate) fn recorded_order(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "rowid",
        Backend::Postgres => "seq",
    }
}

/// A connection pool on either backend; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// An open transaction on either backend.
pub(crate) enum Tx {
    Sqlite(sqlx::Transaction<'static, Sqlite>),
    Postgres(sqlx::Transaction<'static, Postgres>),
}

impl Pool {
    /// Which backend this pool talks to.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// Begins a transaction with the backend's own opening statement (`BEGIN IMMEDIATE` takes
    /// SQLite's write lock at once; PostgreSQL's `BEGIN` locks rows as statements touch them).
    pub(crate) async fn begin_write(&self) -> Result<Tx, sqlx::Error> {
        Ok(match self {
            Pool::Sqlite(p) => Tx::Sqlite(p.begin_with("BEGIN IMMEDIATE").await?),
            Pool::Postgres(p) => Tx::Postgres(p.begin().await?),
        })
    }

    /// Closes every connection.
    pub(crate) async fn close(&self) {
        match self {
            Pool::Sqlite(p) => p.close().await,
            Pool::Postgres(p) => p.close().await,
        }
    }
}

impl Tx {
    /// Makes the transaction's writes visible.
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(t) => t.commit().await,
            Tx::Postgres(t) => t.commit().await,
        }
    }

    /// Which backend this transaction runs on.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Tx::Sqlite(_) => Backend::Sqlite,
            Tx::Postgres(_) => Backend::Postgres,
        }
    }
}

/// An argument, typed even when null (PostgreSQL infers a parameter's type from what is sent).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    Int(Option<i64>),
    Real(Option<f64>),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
}

/// What can be bound to a `$N` placeholder.
pub(crate) trait IntoArg {
    fn into_arg(self) -> Arg;
    /// The null of this type (for `Option::None`).
    fn null() -> Arg
    where
        Self: Sized;
}

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl IntoArg for $t {
            fn into_arg(self) -> Arg {
                Arg::Int(Some(i64::try_from(self).unwrap_or(i64::MAX)))
            }
            fn null() -> Arg {
                Arg::Int(None)
            }
        }
    )*};
}
int_arg!(i64, i32, u32, u16, u8, u64, usize);

impl IntoArg for bool {
    fn into_arg(self) -> Arg {
        Arg::Int(Some(i64::from(self)))
    }
    fn null() -> Arg {
        Arg::Int(None)
    }
}

impl IntoArg for f64 {
    fn into_arg(self) -> Arg {
        Arg::Real(Some(self))
    }
    fn null() -> Arg {
        Arg::Real(None)
    }
}

impl IntoArg for String {
    fn into_arg(self) -> Arg {
        Arg::Text(Some(self))
    }
    fn null() -> Arg {
        Arg::Text(None)
    }
}

impl IntoArg for &str {
    fn into_arg(self) -> Arg {
        Arg::Text(Some(self.to_string()))
    }
    fn null() -> Arg {
        Arg::Text(None)
    }
}

impl IntoArg for &String {
    fn into_arg(self) -> Arg {
        Arg::Text(Some(self.clone()))
    }
    fn null() -> Arg {
        Arg::Text(None)
    }
}

impl IntoArg for Vec<u8> {
    fn into_arg(self) -> Arg {
        Arg::Bytes(Some(self))
    }
    fn null() -> Arg {
        Arg::Bytes(None)
    }
}

impl IntoArg for &[u8] {
    fn into_arg(self) -> Arg {
        Arg::Bytes(Some(self.to_vec()))
    }
    fn null() -> Arg {
        Arg::Bytes(None)
    }
}

impl<T: IntoArg> IntoArg for Option<T> {
    fn into_arg(self) -> Arg {
        match self {
            Some(v) => v.into_arg(),
            None => T::null(),
        }
    }
    fn null() -> Arg {
        T::null()
    }
}

impl<T: IntoArg + Clone> IntoArg for &Option<T> {
    fn into_arg(self) -> Arg {
        self.clone().into_arg()
    }
    fn null() -> Arg {
        T::null()
    }
}

/// A value read back.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
    Bool(bool),
}

/// One result row: its column names (shared by the rows of a result) and values.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    columns: Arc<[String]>,
    values: Vec<Val>,
}

/// A column by name or by position.
pub(crate) trait ColumnRef {
    fn position(&self, columns: &[String]) -> Result<usize, sqlx::Error>;
}

impl ColumnRef for &str {
    fn position(&self, columns: &[String]) -> Result<usize, sqlx::Error> {
        columns.iter().position(|c| c == self).ok_or_else(|| sqlx::Error::ColumnNotFound(self.to_string()))
    }
}

impl ColumnRef for usize {
    fn position(&self, columns: &[String]) -> Result<usize, sqlx::Error> {
        (*self < columns.len())
            .then_some(*self)
            .ok_or(sqlx::Error::ColumnIndexOutOfBounds { index: *self, len: columns.len() })
    }
}

impl Row {
    /// The column names, in the order the statement selected them.
    pub(crate) fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The values, in column order (a copy between stores converts them by the target's types).
    pub(crate) fn values(&self) -> &[Val] {
        &self.values
    }

    /// The value of column `column` as a `T`; a value of another type is an error naming the column.
    pub(crate) fn try_get<T: FromVal>(&self, column: impl ColumnRef) -> Result<T, sqlx::Error> {
        let at = column.position(&self.columns)?;
        T::from_val(&self.values[at]).ok_or_else(|| sqlx::Error::ColumnDecode {
            index: self.columns[at].clone(),
            source: format!("{:?} is not a {}", self.values[at], std::any::type_name::<T>()).into(),
        })
    }
}

/// A Rust type a value converts to.
pub(crate) trait FromVal: Sized {
    fn from_val(v: &Val) -> Option<Self>;
}

macro_rules! int_val {
    ($($t:ty),*) => {$(
        impl FromVal for $t {
            fn from_val(v: &Val) -> Option<Self> {
                match v {
                    Val::Int(i) => <$t>::try_from(*i).ok(),
                    Val::Bool(b) => Some(<$t>::from(*b)),
                    _ => None,
                }
            }
        }
    )*};
}
int_val!(i64, i32, u32, u16, u64, usize, u8);

impl FromVal for bool {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Int(i) => Some(*i != 0),
            Val::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl FromVal for f64 {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Real(r) => Some(*r),
            #[allow(clippy::cast_precision_loss)]
            Val::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl FromVal for String {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl FromVal for Vec<u8> {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Bytes(b) => Some(b.clone()),
            Val::Text(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        }
    }
}

impl<T: FromVal> FromVal for Option<T> {
    fn from_val(v: &Val) -> Option<Self> {
        match v {
            Val::Null => Some(None),
            other => T::from_val(other).map(Some),
        }
    }
}

/// What a row converts to: the row itself, or a tuple of its first columns.
pub(crate) trait FromRow: Sized {
    fn from_row(row: Row) -> Result<Self, sqlx::Error>;
}

impl FromRow for Row {
    fn from_row(row: Row) -> Result<Self, sqlx::Error> {
        Ok(row)
    }
}

macro_rules! tuple_row {
    ($(($($t:ident $i:tt),+)),*) => {$(
        impl<$($t: FromVal),+> FromRow for ($($t,)+) {
            fn from_row(row: Row) -> Result<Self, sqlx::Error> {
                Ok(($(row.try_get::<$t>($i)?,)+))
            }
        }
    )*};
}
tuple_row!(
    (A 0),
    (A 0, B 1),
    (A 0, B 1, C 2),
    (A 0, B 1, C 2, D 3),
    (A 0, B 1, C 2, D 3, E 4),
    (A 0, B 1, C 2, D 3, E 4, F 5),
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6),
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7),
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8),
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9)
);

/// A statement and its arguments.
#[derive(Clone, Debug)]
#[must_use = "a statement does nothing until it is run"]
pub(crate) struct Sql {
    text: Cow<'static, str>,
    args: Vec<Arg>,
}

/// A statement with `$N` placeholders (SQLite and PostgreSQL read them alike).
pub(crate) fn query(text: impl Into<Cow<'static, str>>) -> Sql {
    Sql { text: text.into(), args: Vec::new() }
}

/// Where a statement runs: the pool or an open transaction.
pub(crate) enum On<'a> {
    Pool(&'a Pool),
    Tx(&'a mut Tx),
}

impl<'a> From<&'a Pool> for On<'a> {
    fn from(pool: &'a Pool) -> Self {
        On::Pool(pool)
    }
}

impl<'a> From<&'a mut Tx> for On<'a> {
    fn from(tx: &'a mut Tx) -> Self {
        On::Tx(tx)
    }
}

/// A pool without sqlx's maintenance task. In sqlx 0.9.0 that task walks `0..num_idle()`, and the
/// idle count is decremented by a `try_acquire` that pops a connection a `release` has pushed but
/// not yet counted: the count wraps to `usize::MAX` and the task spins on a runtime worker forever,
/// starving whatever task sat in that worker's slot (seen as `merlya exec` hanging under load). The
/// task only runs when an idle timeout or a lifetime is set; merlya's pools are small and need
/// neither (SQLite: one connection to a local file; PostgreSQL: four, which the server keeps).
pub(crate) fn without_reaper<DB: sqlx::Database>(options: sqlx::pool::PoolOptions<DB>) -> sqlx::pool::PoolOptions<DB> {
    options.idle_timeout(None).max_lifetime(None).min_connections(0)
}

/// The text and its arguments bound for one backend: the one place `Arg` becomes sqlx values.
fn bound<DB>(q: Sql) -> sqlx::query::Query<'static, DB, <DB as sqlx::Database>::Arguments>
where
    DB: sqlx::Database,
    Option<i64>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<f64>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<String>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<Vec<u8>>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let mut query = sqlx::query(sqlx::AssertSqlSafe(q.text));
    for arg in q.args {
        query = match arg {
            Arg::Int(v) => query.bind(v),
            Arg::Real(v) => query.bind(v),
            Arg::Text(v) => query.bind(v),
            Arg::Bytes(v) => query.bind(v),
        };
    }
    query
}

/// `q` bound for SQLite (tests insert forged rows through it).
pub(crate) fn sqlite_query(q: Sql) -> sqlx::query::Query<'static, Sqlite, sqlx::sqlite::SqliteArguments> {
    bound(q)
}

fn pg_query(q: Sql) -> sqlx::query::Query<'static, Postgres, sqlx::postgres::PgArguments> {
    bound(q)
}

fn columns_of<R: sqlx::Row>(row: &R) -> Arc<[String]> {
    row.columns().iter().map(|c| c.name().to_string()).collect()
}

fn sqlite_row(row: &SqliteRow, columns: &Arc<[String]>) -> Result<Row, sqlx::Error> {
    let mut values = Vec::with_capacity(columns.len());
    for i in 0..columns.len() {
        let raw = row.try_get_raw(i)?;
        let value = if raw.is_null() {
            Val::Null
        } else {
            match raw.type_info().name() {
                "INTEGER" | "BOOLEAN" | "INT8" | "BIGINT" => Val::Int(row.try_get_unchecked(i)?),
                "REAL" | "NUMERIC" => Val::Real(row.try_get_unchecked(i)?),
                "BLOB" => Val::Bytes(row.try_get_unchecked(i)?),
                _ => Val::Text(row.try_get_unchecked(i)?),
            }
        };
        values.push(value);
    }
    Ok(Row { columns: Arc::clone(columns), values })
}

fn pg_row(row: &PgRow, columns: &Arc<[String]>) -> Result<Row, sqlx::Error> {
    let mut values = Vec::with_capacity(columns.len());
    for i in 0..columns.len() {
        let raw = row.try_get_raw(i)?;
        let value = if raw.is_null() {
            Val::Null
        } else {
            match raw.type_info().name() {
                "INT8" => Val::Int(row.try_get(i)?),
                "INT4" => Val::Int(i64::from(row.try_get::<i32, _>(i)?)),
                "INT2" => Val::Int(i64::from(row.try_get::<i16, _>(i)?)),
                "FLOAT8" => Val::Real(row.try_get(i)?),
                "FLOAT4" => Val::Real(f64::from(row.try_get::<f32, _>(i)?)),
                "BOOL" => Val::Bool(row.try_get(i)?),
                "BYTEA" => Val::Bytes(row.try_get(i)?),
                "TEXT" | "VARCHAR" | "NAME" | "BPCHAR" | "UNKNOWN" => Val::Text(row.try_get(i)?),
                other => {
                    return Err(sqlx::Error::ColumnDecode {
                        index: columns[i].clone(),
                        source: format!("PostgreSQL type {other} is not read by merlya (cast it in the query)").into(),
                    });
                }
            }
        };
        values.push(value);
    }
    Ok(Row { columns: Arc::clone(columns), values })
}

impl Sql {
    /// Binds the next `$N`.
    pub(crate) fn bind(mut self, value: impl IntoArg) -> Self {
        self.args.push(value.into_arg());
        self
    }

    /// Binds the next `$N` to an argument already typed (a copy between stores).
    pub(crate) fn bind_arg(mut self, arg: Arg) -> Self {
        self.args.push(arg);
        self
    }

    /// Runs a statement; the number of rows it changed.
    pub(crate) async fn execute<'a>(self, on: impl Into<On<'a>>) -> Result<u64, sqlx::Error> {
        Ok(match on.into() {
            On::Pool(Pool::Sqlite(p)) => sqlite_query(self).execute(p).await?.rows_affected(),
            On::Pool(Pool::Postgres(p)) => pg_query(self).execute(p).await?.rows_affected(),
            On::Tx(Tx::Sqlite(t)) => sqlite_query(self).execute(&mut **t).await?.rows_affected(),
            On::Tx(Tx::Postgres(t)) => pg_query(self).execute(&mut **t).await?.rows_affected(),
        })
    }

    /// Every row, as `T`.
    pub(crate) async fn fetch_all<'a, T: FromRow>(self, on: impl Into<On<'a>>) -> Result<Vec<T>, sqlx::Error> {
        let rows = match on.into() {
            On::Pool(Pool::Sqlite(p)) => sqlite_rows(sqlite_query(self).fetch_all(p).await?)?,
            On::Pool(Pool::Postgres(p)) => pg_rows(pg_query(self).fetch_all(p).await?)?,
            On::Tx(Tx::Sqlite(t)) => sqlite_rows(sqlite_query(self).fetch_all(&mut **t).await?)?,
            On::Tx(Tx::Postgres(t)) => pg_rows(pg_query(self).fetch_all(&mut **t).await?)?,
        };
        rows.into_iter().map(T::from_row).collect()
    }

    /// Every row converted by `convert` as it arrives: a large result is never held twice.
    pub(crate) async fn fetch_map<T>(
        self,
        pool: &Pool,
        mut convert: impl FnMut(Row) -> Result<T, sqlx::Error>,
    ) -> Result<Vec<T>, sqlx::Error> {
        use futures::TryStreamExt;
        let mut out = Vec::new();
        let mut columns: Option<Arc<[String]>> = None;
        match pool {
            Pool::Sqlite(p) => {
                let mut rows = sqlite_query(self).fetch(p);
                while let Some(row) = rows.try_next().await? {
                    let names = columns.get_or_insert_with(|| columns_of(&row));
                    out.push(convert(sqlite_row(&row, names)?)?);
                }
            }
            Pool::Postgres(p) => {
                let mut rows = pg_query(self).fetch(p);
                while let Some(row) = rows.try_next().await? {
                    let names = columns.get_or_insert_with(|| columns_of(&row));
                    out.push(convert(pg_row(&row, names)?)?);
                }
            }
        }
        Ok(out)
    }

    /// The first row, if any, as `T`.
    pub(crate) async fn fetch_optional<'a, T: FromRow>(self, on: impl Into<On<'a>>) -> Result<Option<T>, sqlx::Error> {
        let row = match on.into() {
            On::Pool(Pool::Sqlite(p)) => sqlite_query(self).fetch_optional(p).await?.map(|r| sqlite_one(&r)),
            On::Pool(Pool::Postgres(p)) => pg_query(self).fetch_optional(p).await?.map(|r| pg_one(&r)),
            On::Tx(Tx::Sqlite(t)) => sqlite_query(self).fetch_optional(&mut **t).await?.map(|r| sqlite_one(&r)),
            On::Tx(Tx::Postgres(t)) => pg_query(self).fetch_optional(&mut **t).await?.map(|r| pg_one(&r)),
        };
        row.transpose()?.map(T::from_row).transpose()
    }

    /// The first row as `T`; none is [`sqlx::Error::RowNotFound`].
    pub(crate) async fn fetch_one<'a, T: FromRow>(self, on: impl Into<On<'a>>) -> Result<T, sqlx::Error> {
        self.fetch_optional(on).await?.ok_or(sqlx::Error::RowNotFound)
    }

    /// The first column of the first row.
    pub(crate) async fn scalar<'a, T: FromVal>(self, on: impl Into<On<'a>>) -> Result<T, sqlx::Error> {
        let (value,): (T,) = self.fetch_one(on).await?;
        Ok(value)
    }

    /// The first column of the first row, if there is a row.
    pub(crate) async fn scalar_optional<'a, T: FromVal>(self, on: impl Into<On<'a>>) -> Result<Option<T>, sqlx::Error> {
        Ok(self.fetch_optional::<(T,)>(on).await?.map(|(v,)| v))
    }

    /// The first column of every row.
    pub(crate) async fn scalars<'a, T: FromVal>(self, on: impl Into<On<'a>>) -> Result<Vec<T>, sqlx::Error> {
        Ok(self.fetch_all::<(T,)>(on).await?.into_iter().map(|(v,)| v).collect())
    }
}

fn sqlite_one(row: &SqliteRow) -> Result<Row, sqlx::Error> {
    sqlite_row(row, &columns_of(row))
}

fn pg_one(row: &PgRow) -> Result<Row, sqlx::Error> {
    pg_row(row, &columns_of(row))
}

fn sqlite_rows(rows: Vec<SqliteRow>) -> Result<Vec<Row>, sqlx::Error> {
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let columns = columns_of(first);
    rows.iter().map(|r| sqlite_row(r, &columns)).collect()
}

fn pg_rows(rows: Vec<PgRow>) -> Result<Vec<Row>, sqlx::Error> {
    let Some(first) = rows.first() else { return Ok(Vec::new()) };
    let columns = columns_of(first);
    rows.iter().map(|r| pg_row(r, &columns)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_of_another_type_names_its_column() {
        let row = Row { columns: Arc::from(vec!["port".to_string()]), values: vec![Val::Text("x".into())] };
        let err = row.try_get::<i64>("port").unwrap_err().to_string();
        assert!(err.contains("port"), "{err}");
        assert!(row.try_get::<i64>("nope").is_err());
        assert_eq!(row.try_get::<String>(0).unwrap(), "x");
        assert_eq!(row.try_get::<Option<String>>("port").unwrap().as_deref(), Some("x"));
    }

    #[test]
    fn booleans_read_from_either_backend() {
        assert_eq!(bool::from_val(&Val::Int(1)), Some(true));
        assert_eq!(bool::from_val(&Val::Bool(false)), Some(false));
        assert_eq!(i64::from_val(&Val::Bool(true)), Some(1));
        assert_eq!(Option::<i64>::from_val(&Val::Null), Some(None));
        assert_eq!(Some(3i64).into_arg(), Arg::Int(Some(3)));
        assert_eq!(None::<String>.into_arg(), Arg::Text(None));
    }

    #[tokio::test]
    async fn sqlite_reads_dollar_placeholders_by_number() {
        let pool = Pool::Sqlite(SqlitePool::connect("sqlite::memory:").await.unwrap());
        let (a, b): (String, i64) = query("SELECT $2, $1").bind(7i64).bind("x").fetch_one(&pool).await.unwrap();
        assert_eq!((a.as_str(), b), ("x", 7));
    }
}
