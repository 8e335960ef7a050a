//! The statements of storing a round, over either driver.
//!
//! Storing a round is a dozen statements with decisions between them. On
//! PostgreSQL they go through sqlx, in the request's own task. On SQLite
//! they run on the writer's thread (see `super::writer`) through rusqlite,
//! one synchronous call each: sqlx's SQLite driver hands every statement
//! to the connection's thread and back, and those hand-offs, not SQLite,
//! were most of the time of a round. [`RoundDb`] is what the round's logic
//! (`super::ingest::store_round`) needs from either, so it is written once.
//!
//! Statements use PostgreSQL's `$N` placeholders on both: SQLite reads
//! `$N` as a named parameter, and the rusqlite side binds each by its
//! number.

use sqlx::{Any, Row as _, Transaction};

use crate::store::{Backend, StoreError};

/// A bound value. Every column the round's statements bind is an integer
/// or text (amounts travel as text and are cast by the database; they are
/// read back as numbers). A NULL
/// keeps its type: PostgreSQL refuses a text NULL for an integer column.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Int(i64),
    Text(String),
    NullInt,
    NullText,
}

/// The NULL of a bound type.
pub(crate) trait NullOf {
    const NULL: Arg;
}

impl NullOf for i64 {
    const NULL: Arg = Arg::NullInt;
}

impl NullOf for String {
    const NULL: Arg = Arg::NullText;
}

impl NullOf for &str {
    const NULL: Arg = Arg::NullText;
}

impl NullOf for &String {
    const NULL: Arg = Arg::NullText;
}

impl From<i64> for Arg {
    fn from(value: i64) -> Arg {
        Arg::Int(value)
    }
}

impl From<&str> for Arg {
    fn from(value: &str) -> Arg {
        Arg::Text(value.to_string())
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Arg {
        Arg::Text(value)
    }
}

impl From<&String> for Arg {
    fn from(value: &String) -> Arg {
        Arg::Text(value.clone())
    }
}

impl<T: Into<Arg> + NullOf> From<Option<T>> for Arg {
    fn from(value: Option<T>) -> Arg {
        value.map_or(T::NULL, Into::into)
    }
}

/// The arguments of a statement, in `$N` order.
macro_rules! args {
    ($($value:expr),* $(,)?) => { vec![$($crate::loops::db::Arg::from($value)),*] };
}
pub(crate) use args;

/// A row being read, by column index.
pub(crate) trait DbRow {
    fn int(&self, index: usize) -> Result<Option<i64>, StoreError>;
    fn text(&self, index: usize) -> Result<Option<String>, StoreError>;
    fn real(&self, index: usize) -> Result<Option<f64>, StoreError>;

    fn req_int(&self, index: usize) -> Result<i64, StoreError> {
        self.int(index)?.ok_or_else(|| null_column(index))
    }

    fn req_text(&self, index: usize) -> Result<String, StoreError> {
        self.text(index)?.ok_or_else(|| null_column(index))
    }
}

fn null_column(index: usize) -> StoreError {
    StoreError::Database(sqlx::Error::Protocol(format!("column {index} is unexpectedly NULL")))
}

/// The transaction a round is stored in.
pub(crate) trait RoundDb {
    fn backend(&self) -> Backend;

    /// Every row of `sql`, each read by `decode`.
    async fn rows<T, F>(&mut self, sql: &str, args: Vec<Arg>, decode: F) -> Result<Vec<T>, StoreError>
    where
        F: Fn(&dyn DbRow) -> Result<T, StoreError> + Send;

    /// Runs `sql`; the number of rows it changed.
    async fn execute(&mut self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError>;

    /// The first row of `sql`, if any.
    async fn optional<T, F>(&mut self, sql: &str, args: Vec<Arg>, decode: F) -> Result<Option<T>, StoreError>
    where
        F: Fn(&dyn DbRow) -> Result<T, StoreError> + Send,
    {
        Ok(self.rows(sql, args, decode).await?.into_iter().next())
    }

    /// The one row of `sql`; an error when there is none.
    async fn one<T, F>(&mut self, sql: &str, args: Vec<Arg>, decode: F) -> Result<T, StoreError>
    where
        F: Fn(&dyn DbRow) -> Result<T, StoreError> + Send,
    {
        self.optional(sql, args, decode).await?.ok_or(StoreError::Database(sqlx::Error::RowNotFound))
    }
}

/// A sqlx transaction on PostgreSQL (SQLite's rounds go through
/// [`SqliteDb`] on the writer's thread).
pub(crate) struct SqlxDb<'a> {
    pub tx: &'a mut Transaction<'static, Any>,
}

fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    args: Vec<Arg>,
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    for arg in args {
        query = match arg {
            Arg::Int(value) => query.bind(value),
            Arg::Text(value) => query.bind(value),
            Arg::NullInt => query.bind(None::<i64>),
            Arg::NullText => query.bind(None::<String>),
        };
    }
    query
}

impl DbRow for sqlx::any::AnyRow {
    fn int(&self, index: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.try_get::<Option<i64>, _>(index)?)
    }

    fn text(&self, index: usize) -> Result<Option<String>, StoreError> {
        Ok(self.try_get::<Option<String>, _>(index)?)
    }

    fn real(&self, index: usize) -> Result<Option<f64>, StoreError> {
        Ok(self.try_get::<Option<f64>, _>(index)?)
    }
}

impl RoundDb for SqlxDb<'_> {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    async fn rows<T, F>(&mut self, sql: &str, args: Vec<Arg>, decode: F) -> Result<Vec<T>, StoreError>
    where
        F: Fn(&dyn DbRow) -> Result<T, StoreError> + Send,
    {
        let rows = bind_all(sqlx::query(sql), args).fetch_all(&mut **self.tx).await?;
        rows.iter().map(|row| decode(row)).collect()
    }

    async fn execute(&mut self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        Ok(bind_all(sqlx::query(sql), args).execute(&mut **self.tx).await?.rows_affected())
    }
}

/// A rusqlite connection inside a transaction (SQLite, on the writer's
/// thread). Its futures never wait: every call completes synchronously.
pub(crate) struct SqliteDb<'a> {
    pub conn: &'a rusqlite::Connection,
}

impl DbRow for rusqlite::Row<'_> {
    fn int(&self, index: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.get::<_, Option<i64>>(index)?)
    }

    fn text(&self, index: usize) -> Result<Option<String>, StoreError> {
        Ok(self.get::<_, Option<String>>(index)?)
    }

    fn real(&self, index: usize) -> Result<Option<f64>, StoreError> {
        Ok(self.get::<_, Option<f64>>(index)?)
    }
}

impl rusqlite::ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            Arg::Int(value) => ToSqlOutput::Borrowed(ValueRef::Integer(*value)),
            Arg::Text(value) => ToSqlOutput::Borrowed(ValueRef::Text(value.as_bytes())),
            Arg::NullInt | Arg::NullText => ToSqlOutput::Borrowed(ValueRef::Null),
        })
    }
}

impl SqliteDb<'_> {
    /// `sql` prepared (from the connection's cache) with `args` bound by
    /// their `$N` numbers.
    fn prepare(&self, sql: &str, args: &[Arg]) -> Result<rusqlite::CachedStatement<'_>, StoreError> {
        let mut statement = self.conn.prepare_cached(sql)?;
        let numbers = parameter_numbers(sql, &statement)?;
        for (index, &number) in numbers.iter().enumerate() {
            let arg = number.checked_sub(1).and_then(|at| args.get(at)).ok_or_else(|| {
                StoreError::Database(sqlx::Error::Protocol(format!(
                    "parameter {} of a statement has no argument",
                    index + 1
                )))
            })?;
            statement.raw_bind_parameter(index + 1, arg)?;
        }
        Ok(statement)
    }
}

/// The `$N` number of each parameter of `statement`, by index, remembered
/// per statement text on this thread: SQLite finds a parameter's name by a
/// walk of its list, so naming every parameter of a statement of hundreds
/// (a batch of spans) took time proportional to their square.
fn parameter_numbers(
    sql: &str,
    statement: &rusqlite::Statement<'_>,
) -> Result<std::rc::Rc<[usize]>, StoreError> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::rc::Rc;
    thread_local! {
        static NUMBERS: RefCell<HashMap<String, Rc<[usize]>>> = RefCell::new(HashMap::new());
    }
    if let Some(numbers) = NUMBERS.with(|numbers| numbers.borrow().get(sql).cloned()) {
        return Ok(numbers);
    }
    let numbers: Rc<[usize]> = (1..=statement.parameter_count())
        .map(|index| {
            statement
                .parameter_name(index)
                .and_then(|name| name.strip_prefix('$'))
                .and_then(|number| number.parse::<usize>().ok())
                .ok_or_else(|| {
                    StoreError::Database(sqlx::Error::Protocol(format!(
                        "parameter {index} of a statement is not $N"
                    )))
                })
        })
        .collect::<Result<_, _>>()?;
    NUMBERS.with(|cache| {
        let mut cache = cache.borrow_mut();
        // Statement texts are few (the round's, and a batch's for each
        // size); a bound keeps a surprise from growing it without end.
        if cache.len() >= 1024 {
            cache.clear();
        }
        cache.insert(sql.to_string(), numbers.clone());
    });
    Ok(numbers)
}

impl RoundDb for SqliteDb<'_> {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }

    async fn rows<T, F>(&mut self, sql: &str, args: Vec<Arg>, decode: F) -> Result<Vec<T>, StoreError>
    where
        F: Fn(&dyn DbRow) -> Result<T, StoreError> + Send,
    {
        let mut statement = self.prepare(sql, &args)?;
        let mut rows = statement.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(decode(row)?);
        }
        Ok(out)
    }

    async fn execute(&mut self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        let mut statement = self.prepare(sql, &args)?;
        Ok(statement.raw_execute()? as u64)
    }
}

/// Runs a future that never waits (one over [`SqliteDb`]) to its end, on
/// this thread.
pub(crate) fn run_now<T>(future: impl std::future::Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => value,
        // Nothing under a SqliteDb awaits anything that can be pending.
        std::task::Poll::Pending => unreachable!("a SQLite round waited on something"),
    }
}
