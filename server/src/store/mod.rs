//! The store: one data layer over SQLite (the embedded default) and
//! PostgreSQL (for deployments that outgrow one machine).
//!
//! Both backends run through sqlx's `Any` driver with the same SQL text
//! wherever the two dialects agree (`$1` placeholders, `ON CONFLICT`,
//! `RETURNING`); where they differ, a method branches on [`Backend`].
//! Timestamps are stored as integer Unix milliseconds, which both databases
//! compare and index the same way. Each backend has its own migrations in
//! `migrations/sqlite` and `migrations/postgres`, embedded in the binary and
//! applied at start; an applied migration is never edited.

mod settings;
pub mod sqlite_writer;

use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};
use thiserror::Error;

pub use settings::Setting;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// Which database engine a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    fn of_url(url: &str) -> Backend {
        if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            Backend::Postgres
        }
    }
}

/// Errors of the store. Their text is for logs and operators, never for a
/// response body: the web layer maps them to a generic message.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("could not open the database: {0}")]
    Connect(#[source] sqlx::Error),
    #[error("could not migrate the database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("{field}: {problem}")]
    Invalid { field: &'static str, problem: &'static str },
    #[error("the database did not answer within {0:?}")]
    Timeout(Duration),
}

/// A pooled PostgreSQL connection idle longer than this is pinged before use.
const STALE_AFTER_IDLE: Duration = Duration::from_secs(10);

/// A handle on the database: cheap to clone (it holds the pool).
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// SQLite's writer (one connection that writes, with group commit),
    /// shared by the store's clones; none on PostgreSQL.
    sqlite_writer: Option<std::sync::Arc<sqlite_writer::SqliteWriter>>,
}

impl Store {
    /// Opens the database at `url`, creating a SQLite file if needed, and
    /// applies every pending migration.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let store = Store::connect(url).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Opens the pool without migrating (for tools that must not change the
    /// schema).
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = Backend::of_url(url);
        let options: AnyConnectOptions = url.parse().map_err(StoreError::Connect)?;
        let pool_options = AnyPoolOptions::new()
            .acquire_timeout(Duration::from_secs(10))
            // sqlx pings every connection it hands out, which costs a round
            // trip per checkout (two per ingested round: the token, then the
            // transaction). Only a PostgreSQL connection that sat idle for a
            // while can have gone stale (a restarted server, a dropped TCP
            // connection), so only those are pinged; a SQLite connection
            // lives in this process and never is.
            .test_before_acquire(false)
            .before_acquire(move |connection, meta| {
                Box::pin(async move {
                    if backend == Backend::Postgres && meta.idle_for > STALE_AFTER_IDLE {
                        sqlx::Connection::ping(connection).await?;
                    }
                    Ok(true)
                })
            })
            .max_connections(match backend {
                // SQLite serialises writers anyway; a few connections let
                // readers proceed beside the one writer under WAL.
                Backend::Sqlite => 8,
                Backend::Postgres => 16,
            })
            .after_connect(move |connection, _meta| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // WAL lets readers run beside a writer; the busy
                        // timeout makes concurrent writers wait instead of
                        // failing; foreign keys are off by default in SQLite.
                        connection
                            .execute(
                                "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; \
                                 PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;",
                            )
                            .await?;
                    }
                    Ok(())
                })
            });
        let pool = pool_options.connect_with(options).await.map_err(StoreError::Connect)?;
        let sqlite_writer = match backend {
            Backend::Sqlite => {
                // The pool created the file; the writer opens its own
                // connection on it.
                let sqlite: sqlx::sqlite::SqliteConnectOptions = url.parse().map_err(StoreError::Connect)?;
                Some(std::sync::Arc::new(sqlite_writer::SqliteWriter::for_file(sqlite.get_filename())?))
            }
            Backend::Postgres => None,
        };
        Ok(Store { pool, backend, sqlite_writer })
    }

    /// Applies the migrations of this backend that have not run yet.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let migrator = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator.run(&self.pool).await?;
        Ok(())
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// SQLite's writer, which stores rounds and traces (none on
    /// PostgreSQL).
    pub(crate) fn sqlite_writer(&self) -> Option<&sqlite_writer::SqliteWriter> {
        self.sqlite_writer.as_deref()
    }

    /// The pool, for modules of this crate that keep their own queries.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Opens a transaction that writes. On SQLite `BEGIN IMMEDIATE` takes
    /// the write lock at once: a deferred transaction that reads first and
    /// writes later fails with "database is locked" when another writer got
    /// in between, and waiting does not help it.
    pub(crate) async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            // The one place a plain BEGIN is right (clippy.toml).
            #[allow(clippy::disallowed_methods)]
            Backend::Postgres => self.pool.begin().await,
        }
    }

    /// Answers whether the database responds within `limit`.
    pub async fn ping(&self, limit: Duration) -> Result<(), StoreError> {
        match tokio::time::timeout(limit, sqlx::query("SELECT 1").execute(&self.pool)).await {
            Ok(result) => result.map(|_| ()).map_err(StoreError::from),
            Err(_) => Err(StoreError::Timeout(limit)),
        }
    }

    /// The newest applied migration's version: the schema version.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        let version: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations WHERE success = $1")
                .bind(true)
                .fetch_one(&self.pool)
                .await?;
        Ok(version.unwrap_or(0))
    }

    /// Closes the pool, waiting for connections in use to be returned.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The current time as Unix milliseconds, the store's timestamp unit.
pub fn now_millis() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}
