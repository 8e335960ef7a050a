//! The SQLite writer of rounds: one thread with a connection of its own,
//! and group commit.
//!
//! SQLite lets one connection write at a time. Two things made storing
//! rounds through sqlx's pool slow:
//! - every statement of a round was a hand-off to the connection's thread
//!   and back (sqlx's SQLite driver runs each call there), and a round is
//!   six or more of them: most of a round's time was threads waking up;
//! - concurrent senders queued on SQLite's lock, whose busy handler sleeps
//!   (1 ms, 2, 5, 10...) instead of waking when the lock is free.
//!
//! So rounds go to this thread, which owns a rusqlite connection on the
//! same database file and runs each round's statements as plain calls
//! (the same logic as PostgreSQL's, `super::ingest::store_round`, over
//! [`SqliteDb`]). Rounds that arrive while a batch is being written wait
//! in the channel, and the next batch takes all of them (up to
//! [`MAX_BATCH`]) into one transaction: one commit for many rounds.
//!
//! Each round keeps its own outcome. A batch is written round by round in
//! arrival order, each round inside a savepoint and seeing the rounds
//! before it, exactly as if they had come one after the other. A refused
//! round (a conflict, an ended run) is rolled back to its savepoint and
//! takes no other round with it; nothing of it is stored. If the commit
//! itself fails, no round of the batch is stored and every one gets the
//! error.
//!
//! A client that hangs up does not cancel its round: it is stored as if
//! the client had hung up a moment later, and its answer goes nowhere.

use std::path::Path;
use std::sync::mpsc;

use tokio::sync::oneshot;

use super::db::{run_now, SqliteDb};
use super::ingest::{store_round, Ingested, RoundTeam};
use super::wire::RoundReport;
use super::LoopsError;
use crate::store::StoreError;

/// At most this many rounds share a transaction, so one batch holds the
/// write lock for a few milliseconds at most.
pub(super) const MAX_BATCH: usize = 64;

/// A round waiting for the writer.
pub(crate) struct PendingRound {
    pub team: RoundTeam,
    pub loop_name: String,
    pub report: RoundReport,
    pub now: i64,
}

struct Job {
    round: PendingRound,
    answer: oneshot::Sender<Result<Ingested, LoopsError>>,
}

/// Work of another area that must write on this connection (the spans of
/// an OpenTelemetry export and the rounds they complete): it runs alone,
/// between batches of rounds, and opens its own transaction.
type Work = Box<dyn FnOnce(&rusqlite::Connection) + Send>;

/// What the writer's thread is handed.
enum Task {
    Round(Box<Job>),
    Work(Work),
}

/// The handle of a store's writer thread. The thread ends, closing its
/// connection, when the last handle is dropped.
pub(crate) struct SqliteWriter {
    jobs: mpsc::Sender<Task>,
}

impl SqliteWriter {
    /// Opens a connection on the database file `path` and starts the
    /// thread that writes rounds through it.
    pub(crate) fn start(path: &Path) -> Result<SqliteWriter, StoreError> {
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
                        Task::Round(job) => vec![*job],
                    };
                    while batch.len() < MAX_BATCH {
                        match queue.try_recv() {
                            Ok(Task::Round(job)) => batch.push(*job),
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

    /// Stores `round` in the next batch and answers for it alone.
    pub(crate) async fn ingest(&self, round: PendingRound) -> Result<Ingested, LoopsError> {
        let (answer, answered) = oneshot::channel();
        self.jobs.send(Task::Round(Box::new(Job { round, answer }))).map_err(|_| gone())?;
        answered.await.map_err(|_| gone())?
    }

    /// Runs `work` on the writer's connection, between batches of rounds,
    /// and gives back what it returned. `work` opens and ends its own
    /// transaction (see [`in_transaction`]).
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&rusqlite::Connection) -> T + Send + 'static,
    ) -> Result<T, LoopsError> {
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

/// Runs `write` in one write transaction on the writer's connection:
/// committed when it returns `Ok`, rolled back otherwise.
pub(crate) fn in_transaction<T, E: From<StoreError>>(
    connection: &rusqlite::Connection,
    write: impl FnOnce(&mut SqliteDb<'_>) -> Result<T, E>,
) -> Result<T, E> {
    run(connection, "BEGIN IMMEDIATE")?;
    let mut db = SqliteDb { conn: connection };
    let written = write(&mut db);
    let finished = match &written {
        Ok(_) => run(connection, "COMMIT"),
        Err(_) => Ok(()),
    };
    if (written.is_err() || finished.is_err()) && !connection.is_autocommit() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    finished?;
    written
}

fn gone() -> LoopsError {
    LoopsError::Store(StoreError::Database(sqlx::Error::Protocol(
        "the writer of rounds has stopped".to_string(),
    )))
}

/// A connection set up as the pool's are (see `Store::connect`).
fn open(path: &Path) -> Result<rusqlite::Connection, StoreError> {
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
fn run(connection: &rusqlite::Connection, sql: &str) -> Result<(), StoreError> {
    connection.prepare_cached(sql)?.raw_execute()?;
    Ok(())
}

/// Writes `batch` in one transaction, each round in a savepoint of its
/// own, and answers every round.
fn write_batch(connection: &rusqlite::Connection, batch: Vec<Job>) {
    let results = match write_together(connection, &batch) {
        Ok(results) => results,
        Err(error) => {
            let message = error.to_string();
            tracing::error!(%message, rounds = batch.len(), "loops: a batch of rounds was not stored");
            batch
                .iter()
                .map(|_| {
                    Err(LoopsError::Store(StoreError::Database(sqlx::Error::Protocol(format!(
                        "the batch holding this round failed: {message}"
                    )))))
                })
                .collect()
        }
    };
    for (job, result) in batch.into_iter().zip(results) {
        // A sender that hung up no longer wants its answer.
        let _ = job.answer.send(result);
    }
}

/// The rounds' own results, or the error that lost the whole batch.
fn write_together(
    connection: &rusqlite::Connection,
    batch: &[Job],
) -> Result<Vec<Result<Ingested, LoopsError>>, StoreError> {
    run(connection, "BEGIN IMMEDIATE")?;
    // A round alone needs no savepoint: the transaction is its own.
    let savepoints = batch.len() > 1;
    let written = (|| {
        let mut results = Vec::with_capacity(batch.len());
        for job in batch {
            let PendingRound { team, loop_name, report, now } = &job.round;
            if savepoints {
                run(connection, "SAVEPOINT round")?;
            }
            let mut db = SqliteDb { conn: connection };
            let result = run_now(store_round(&mut db, team, loop_name, report, *now));
            match &result {
                Ok(ingested) if ingested.event.is_some() => {
                    if savepoints {
                        run(connection, "RELEASE round")?;
                    }
                }
                // A refused round, or a replay (which wrote nothing worth
                // keeping): nothing of it stays.
                _ if savepoints => {
                    run(connection, "ROLLBACK TO round")?;
                    run(connection, "RELEASE round")?;
                }
                _ => run(connection, "ROLLBACK")?,
            }
            results.push(result);
        }
        if !connection.is_autocommit() {
            run(connection, "COMMIT")?;
        }
        Ok(results)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::Store;

    fn report(round: u32, state: &str, blocking: usize) -> RoundReport {
        let findings: Vec<_> = (0..blocking)
            .map(|index| json!({"target": {"id": format!("check-{index}")}, "severity": "blocking", "criterion": "c"}))
            .collect();
        let body = json!({"round": round, "run": "r1", "state": state, "findings": findings});
        RoundReport::from_json(body.to_string().as_bytes()).expect("a valid round")
    }

    /// A batch as concurrent senders make one, and where each answer will
    /// arrive.
    fn batch_of(
        team_id: i64,
        rounds: Vec<(&str, RoundReport)>,
    ) -> (Vec<Job>, Vec<oneshot::Receiver<Result<Ingested, LoopsError>>>) {
        rounds
            .into_iter()
            .map(|(loop_name, report)| {
                let (answer, answered) = oneshot::channel();
                let round = PendingRound {
                    team: RoundTeam::Known(team_id),
                    loop_name: loop_name.to_string(),
                    report,
                    now: 1_000,
                };
                (Job { round, answer }, answered)
            })
            .unzip()
    }

    async fn sqlite_store() -> (tempfile::TempDir, Store, i64) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = Store::open(&url_of(&dir)).await.expect("the store opens");
        let team = store.create_team("group").await.expect("a team");
        (dir, store, team.id)
    }

    fn url_of(dir: &tempfile::TempDir) -> String {
        format!("sqlite://{}?mode=rwc", dir.path().join("group.db").display())
    }

    async fn count(store: &Store, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(store.pool())
            .await
            .expect("a count")
    }

    #[tokio::test]
    async fn a_batch_is_written_in_order_each_round_seeing_the_ones_before() {
        let (dir, store, team) = sqlite_store().await;
        let connection = open(&dir.path().join("group.db")).expect("a connection");
        let (batch, answers) = batch_of(
            team,
            vec![
                ("alpha", report(1, "a1", 2)),
                ("beta", report(1, "b1", 1)),
                ("alpha", report(2, "a2", 2)),
                ("beta", report(2, "b1", 1)),
                ("gamma", report(1, "g", 0)),
            ],
        );
        write_batch(&connection, batch);
        let mut classes = Vec::new();
        for answered in answers {
            let ingested = answered.await.expect("answered").expect("stored");
            assert!(ingested.event.is_some(), "each round is newly stored");
            classes.push(ingested.answer.class.as_str().to_string());
        }
        // Later rounds of a batch see the earlier ones: alpha's second
        // round has the same blocking set (stalled), beta's second round
        // judged the same state again (fixed point).
        assert_eq!(classes, ["first", "first", "stalled", "fixed_point", "done"]);
        assert_eq!(count(&store, "rounds").await, 5);
        assert_eq!(count(&store, "findings").await, 6);
    }

    #[tokio::test]
    async fn a_refused_round_in_a_batch_takes_no_other_round_with_it() {
        let (dir, store, team) = sqlite_store().await;
        store.ingest_round_at(team, "alpha", &report(1, "a1", 2), 500).await.expect("stored");
        let connection = open(&dir.path().join("group.db")).expect("a connection");
        let (batch, answers) = batch_of(
            team,
            vec![
                ("beta", report(1, "b1", 1)),
                // Round 1 of alpha again with another body: a conflict.
                ("alpha", report(1, "other", 3)),
                ("alpha", report(2, "a2", 1)),
                ("beta", report(2, "b2", 0)),
            ],
        );
        write_batch(&connection, batch);
        let mut results = Vec::new();
        for answered in answers {
            results.push(answered.await.expect("answered"));
        }
        assert!(results[0].as_ref().is_ok_and(|ingested| ingested.event.is_some()));
        match &results[1] {
            Err(LoopsError::Conflict { field, .. }) => assert_eq!(field.as_deref(), Some("round")),
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert!(results[2].as_ref().is_ok_and(|ingested| ingested.answer.class.as_str() == "converging"));
        assert!(results[3].as_ref().is_ok_and(|ingested| ingested.answer.class.as_str() == "done"));
        // Four rounds stored: alpha 1 and 2, beta 1 and 2; the refused one
        // left no row and no finding.
        assert_eq!(count(&store, "rounds").await, 4);
        assert_eq!(count(&store, "findings").await, 2 + 1 + 1);
    }

    #[tokio::test]
    async fn a_database_error_inside_a_round_stores_nothing_of_it() {
        let (dir, store, team) = sqlite_store().await;
        let connection = open(&dir.path().join("group.db")).expect("a connection");
        // A trigger of this connection only fails the run's insert, the
        // way a full disk or a broken index would.
        connection
            .execute_batch(
                "CREATE TEMP TRIGGER refuse AFTER INSERT ON main.runs WHEN NEW.run_key = 'r1' \
                 BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
            )
            .expect("a trigger");
        let (batch, answers) = batch_of(team, vec![("alpha", report(1, "a1", 2))]);
        write_batch(&connection, batch);
        for answered in answers {
            assert!(matches!(answered.await.expect("answered"), Err(LoopsError::Store(_))));
        }
        assert_eq!(count(&store, "rounds").await, 0);
        assert_eq!(count(&store, "runs").await, 0);
        assert!(connection.is_autocommit(), "no transaction is left open");
    }

    #[tokio::test]
    async fn rounds_stored_before_finding_keys_existed_are_read_from_their_findings() {
        let (dir, store, team) = sqlite_store().await;
        store.ingest_round_at(team, "old", &report(1, "a", 2), 500).await.expect("stored");
        // What a round stored by an earlier version looks like.
        sqlx::query("UPDATE rounds SET finding_keys = NULL").execute(store.pool()).await.expect("updated");
        // Another instance of the store on the same file.
        let other = Store::open(&url_of(&dir)).await.expect("the store opens");
        let next = other.ingest_round_at(team, "old", &report(2, "b", 2), 600).await.expect("stored");
        // Same two blocking findings under a new state: stalled, which the
        // engine can only say if it read round 1's findings.
        assert_eq!(next.answer.class.as_str(), "stalled");
    }
}
