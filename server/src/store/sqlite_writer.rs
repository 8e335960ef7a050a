//! SQLite's writer: one thread with a connection of its own, and group
//! commit.
//!
//! SQLite lets one connection write at a time. Two things made storing
//! rounds through sqlx's pool slow:
//! - every statement of a round was a hand-off to the connection's thread
//!   and back (sqlx's SQLite driver runs each call there), and a round is
//!   six or more of them: most of a round's time was threads waking up;
//! - concurrent senders queued on SQLite's lock, whose busy handler sleeps
//!   (1 ms, 2, 5, 10...) instead of waking when the lock is free.
//!
//! So writes go to this thread, which owns a rusqlite connection on the
//! same database file and runs their statements as plain calls. Writes
//! that can share a transaction ([`BatchedWrite`]: the rounds of
//! `crate::loops`, whose logic is written there) and arrive while a batch
//! is being written wait in the channel, and the next batch takes all of
//! them (up to [`MAX_BATCH`]) into one transaction: one commit for many.
//!
//! Each write keeps its own outcome. A batch is written one by one in
//! arrival order, each inside a savepoint and seeing the writes before it,
//! exactly as if they had come one after the other. A refused write is
//! rolled back to its savepoint and takes no other with it; nothing of it
//! is stored. If the commit itself fails, nothing of the batch is stored
//! and every write is told why.
//!
//! A client that hangs up does not cancel its write: it is stored as if
//! the client had hung up a moment later, and its answer goes nowhere.
//!
//! The store holds the writer and knows nothing of what it writes: the
//! areas hand it their writes, so the store imports none of them.

use std::path::Path;
use std::sync::mpsc;

use tokio::sync::oneshot;

use super::StoreError;

/// At most this many writes share a transaction, so one batch holds the
/// write lock for a few milliseconds at most.
pub const MAX_BATCH: usize = 64;

/// A write that may share a transaction with others of its kind.
pub trait BatchedWrite: Send {
    /// Writes on `connection`, inside the batch's transaction, and answers
    /// whether what it wrote stays (else it is rolled back). Its own
    /// outcome is kept until the batch is committed.
    fn write(&mut self, connection: &rusqlite::Connection) -> bool;

    /// Gives the outcome to whoever waits for it, once the batch is
    /// committed; or, when the batch failed, why (`batch_failed`).
    fn answer(self: Box<Self>, batch_failed: Option<&str>);
}

/// Work that must write on this connection alone (the spans of an
/// OpenTelemetry export and the rounds they complete): it runs between
/// batches and opens its own transaction.
type Work = Box<dyn FnOnce(&rusqlite::Connection) + Send>;

/// What the writer's thread is handed.
enum Task {
    Batched(Box<dyn BatchedWrite>),
    Work(Work),
}

/// The handle of a store's writer thread. The thread ends, closing its
/// connection, when the last handle is dropped.
pub struct SqliteWriter {
    jobs: mpsc::Sender<Task>,
}

impl std::fmt::Debug for SqliteWriter {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("SqliteWriter").finish_non_exhaustive()
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        StoreError::Database(sqlx::Error::Protocol(format!("sqlite: {error}")))
    }
}

impl SqliteWriter {
    /// The writer of the SQLite database file `path`; an in-memory
    /// database is refused (another connection cannot reach it).
    pub(crate) fn for_file(path: &Path) -> Result<SqliteWriter, StoreError> {
        let name = path.to_string_lossy();
        if name.is_empty() || name == ":memory:" || name.starts_with("file:") {
            return Err(StoreError::Invalid {
                field: "DATABASE_URL",
                problem: "an in-memory SQLite database is not supported: name a database file",
            });
        }
        SqliteWriter::start(path)
    }

    /// Opens a connection on the database file `path` and starts the
    /// thread that writes through it.
    fn start(path: &Path) -> Result<SqliteWriter, StoreError> {
        let connection = open(path)?;
        let (jobs, queue) = mpsc::channel::<Task>();
        std::thread::Builder::new()
            .name("sqlite-rounds".to_string())
            .spawn(move || {
                // Work that arrived while a batch was being gathered runs
                // right after that batch.
                let mut held: Option<Work> = None;
                loop {
                    let task = match held.take() {
                        Some(work) => Task::Work(work),
                        None => match queue.recv() {
                            Ok(task) => task,
                            Err(_) => break,
                        },
                    };
                    let mut batch = match task {
                        Task::Work(work) => {
                            run_guarded(&connection, "a write of another area", || work(&connection));
                            continue;
                        }
                        Task::Batched(write) => vec![write],
                    };
                    while batch.len() < MAX_BATCH {
                        match queue.try_recv() {
                            Ok(Task::Batched(write)) => batch.push(write),
                            Ok(Task::Work(work)) => {
                                held = Some(work);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    run_guarded(&connection, "the batch of rounds", || write_batch(&connection, batch));
                }
            })
            .map_err(|error| StoreError::Connect(sqlx::Error::Io(error)))?;
        Ok(SqliteWriter { jobs })
    }

    /// Writes `write` in the next batch; it answers for itself. An error
    /// means the writer has stopped (and `write` was dropped unanswered).
    pub fn batch(&self, write: Box<dyn BatchedWrite>) -> Result<(), StoreError> {
        self.jobs.send(Task::Batched(write)).map_err(|_| gone())
    }

    /// Runs `work` on the writer's connection, between batches, and gives
    /// back what it returned. `work` opens and ends its own transaction
    /// (see `crate::loops::writer::in_transaction`).
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&rusqlite::Connection) -> T + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        let task = Task::Work(Box::new(move |connection: &rusqlite::Connection| {
            // A caller that hung up no longer wants the result.
            let _ = answer.send(work(connection));
        }));
        self.jobs.send(task).map_err(|_| gone())?;
        answered.await.map_err(|_| gone())
    }
}

/// Runs `write` and survives its panic: a bug, not bad input. The senders
/// of what it was writing were dropped in the unwinding and answer 500;
/// nothing of it stays, and the thread goes on with the next task.
fn run_guarded(connection: &rusqlite::Connection, what: &str, write: impl FnOnce()) {
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(write));
    if written.is_err() {
        tracing::error!(what, "loops: the writer of rounds panicked; nothing of it was stored");
        if !connection.is_autocommit() {
            let _ = connection.execute_batch("ROLLBACK");
        }
    }
}

/// The writer is gone: its thread ended.
pub fn gone() -> StoreError {
    StoreError::Database(sqlx::Error::Protocol("the writer of rounds has stopped".to_string()))
}

/// A connection set up as the pool's are (see `Store::connect`).
pub fn open(path: &Path) -> Result<rusqlite::Connection, StoreError> {
    use rusqlite::OpenFlags;
    let connection = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON; \
         PRAGMA synchronous = NORMAL;",
    )?;
    // The round's statements, with one findings statement per count of
    // findings that rounds commonly have, and the traces' batches of spans.
    connection.set_prepared_statement_cache_capacity(128);
    Ok(connection)
}

/// Runs a statement without arguments, prepared once per connection.
pub fn run(connection: &rusqlite::Connection, sql: &str) -> Result<(), StoreError> {
    connection.prepare_cached(sql)?.raw_execute()?;
    Ok(())
}

/// Writes `batch` in one transaction, each write in a savepoint of its
/// own, and answers every write.
pub fn write_batch(connection: &rusqlite::Connection, mut batch: Vec<Box<dyn BatchedWrite>>) {
    let failed = match write_together(connection, &mut batch) {
        Ok(()) => None,
        Err(error) => {
            let message = error.to_string();
            tracing::error!(%message, rounds = batch.len(), "loops: a batch of rounds was not stored");
            Some(message)
        }
    };
    for write in batch {
        write.answer(failed.as_deref());
    }
}

/// Writes the batch, or answers the error that lost all of it.
fn write_together(
    connection: &rusqlite::Connection,
    batch: &mut [Box<dyn BatchedWrite>],
) -> Result<(), StoreError> {
    run(connection, "BEGIN IMMEDIATE")?;
    // A write alone needs no savepoint: the transaction is its own.
    let savepoints = batch.len() > 1;
    let written = (|| {
        for write in batch.iter_mut() {
            if savepoints {
                run(connection, "SAVEPOINT round")?;
            }
            if write.write(connection) {
                if savepoints {
                    run(connection, "RELEASE round")?;
                }
            } else if savepoints {
                // A refused write, or one that wrote nothing worth
                // keeping: nothing of it stays.
                run(connection, "ROLLBACK TO round")?;
                run(connection, "RELEASE round")?;
            } else {
                run(connection, "ROLLBACK")?;
            }
        }
        if !connection.is_autocommit() {
            run(connection, "COMMIT")?;
        }
        Ok(())
    })();
    if written.is_err() {
        // The transaction may still be open (a failed statement) or gone
        // (a failed commit); either way nothing of the batch stays.
        if !connection.is_autocommit() {
            let _ = connection.execute_batch("ROLLBACK");
        }
    }
    written
}
