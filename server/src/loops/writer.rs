//! Rounds on SQLite's writer (`crate::store::sqlite_writer`): the store
//! owns the thread, its connection and group commit; this is what a round
//! is to it. Each round runs the same logic as on PostgreSQL,
//! `super::ingest::store_round`, over [`SqliteDb`]; it stays only if it
//! was newly stored (a refused round or a replay is rolled back to its
//! savepoint), and its answer waits for the batch's commit.

use tokio::sync::oneshot;

use super::db::{run_now, SqliteDb};
use super::ingest::{store_round, Ingested, RoundTeam};
use super::wire::RoundReport;
use super::LoopsError;
use crate::store::sqlite_writer::{self, BatchedWrite, SqliteWriter};
use crate::store::StoreError;

/// A round waiting for the writer.
pub(crate) struct PendingRound {
    pub team: RoundTeam,
    pub loop_name: String,
    pub report: RoundReport,
    pub now: i64,
}

/// A round in a batch: what it is, its outcome once written, and where the
/// outcome goes.
struct Job {
    round: PendingRound,
    result: Option<Result<Ingested, LoopsError>>,
    answer: oneshot::Sender<Result<Ingested, LoopsError>>,
}

impl BatchedWrite for Job {
    fn write(&mut self, connection: &rusqlite::Connection) -> bool {
        let PendingRound { team, loop_name, report, now } = &self.round;
        let mut db = SqliteDb { conn: connection };
        let result = run_now(store_round(&mut db, team, loop_name, report, *now));
        // A refused round, or a replay (which wrote nothing worth keeping):
        // nothing of it stays.
        let stays = matches!(&result, Ok(ingested) if ingested.event.is_some());
        self.result = Some(result);
        stays
    }

    fn answer(self: Box<Self>, batch_failed: Option<&str>) {
        let result = match (batch_failed, self.result) {
            (None, Some(result)) => result,
            (Some(message), _) => Err(LoopsError::Store(StoreError::Database(sqlx::Error::Protocol(
                format!("the batch holding this round failed: {message}"),
            )))),
            (None, None) => Err(gone()),
        };
        // A sender that hung up no longer wants its answer.
        let _ = self.answer.send(result);
    }
}

/// Stores `round` in the writer's next batch and answers for it alone.
pub(crate) async fn ingest(writer: &SqliteWriter, round: PendingRound) -> Result<Ingested, LoopsError> {
    let (answer, answered) = oneshot::channel();
    writer.batch(Box::new(Job { round, result: None, answer }))?;
    answered.await.map_err(|_| gone())?
}

/// Runs `write` in one write transaction on the writer's connection:
/// committed when it returns `Ok`, rolled back otherwise.
pub(crate) fn in_transaction<T, E: From<StoreError>>(
    connection: &rusqlite::Connection,
    write: impl FnOnce(&mut SqliteDb<'_>) -> Result<T, E>,
) -> Result<T, E> {
    sqlite_writer::run(connection, "BEGIN IMMEDIATE")?;
    let mut db = SqliteDb { conn: connection };
    let written = write(&mut db);
    let finished = match &written {
        Ok(_) => sqlite_writer::run(connection, "COMMIT"),
        Err(_) => Ok(()),
    };
    if (written.is_err() || finished.is_err()) && !connection.is_autocommit() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    finished?;
    written
}

fn gone() -> LoopsError {
    LoopsError::Store(sqlite_writer::gone())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::sqlite_writer::{open, write_batch};
    use crate::store::Store;

    fn report(round: u32, state: &str, blocking: usize) -> RoundReport {
        let findings: Vec<_> = (0..blocking)
            .map(|index| json!({"target": {"id": format!("check-{index}")}, "severity": "blocking", "criterion": "c"}))
            .collect();
        let body = json!({"round": round, "run": "r1", "state": state, "findings": findings});
        RoundReport::from_json(body.to_string().as_bytes()).expect("a valid round")
    }

    /// Where a round's answer arrives.
    type Answered = oneshot::Receiver<Result<Ingested, LoopsError>>;

    /// A batch as concurrent senders make one, and where each answer will
    /// arrive.
    fn batch_of(
        team_id: i64,
        rounds: Vec<(&str, RoundReport)>,
    ) -> (Vec<Box<dyn BatchedWrite>>, Vec<Answered>) {
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
                (Box::new(Job { round, result: None, answer }) as Box<dyn BatchedWrite>, answered)
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
