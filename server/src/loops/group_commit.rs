//! Group commit of rounds on SQLite.
//!
//! SQLite lets one connection write at a time. When every round opened its
//! own `BEGIN IMMEDIATE`, concurrent senders queued on the database lock,
//! and SQLite's busy handler makes a waiting connection sleep (1 ms, then
//! 2, 5, 10...) rather than wake when the lock is free: sixteen clients
//! stored hardly more than one. Here the rounds that arrive while a
//! transaction is being written wait in a queue, and the next writer takes
//! all of them (up to [`MAX_BATCH`]) into one transaction.
//!
//! Each round keeps its own outcome. The batch is written round by round
//! in arrival order, each round seeing the ones before it, exactly as if
//! they had come one after the other. When any round of a batch is refused
//! (a conflict, an ended run) or the database fails, the whole transaction
//! is rolled back and every round of the batch is stored again on its own,
//! so a refused round never takes another client's round down with it and
//! nothing is half-stored. Refusals are rare (they are client bugs), so the
//! second pass costs nothing in the common case.
//!
//! Leadership: a sender queues its round, then waits for the writer's gate.
//! Whoever holds the gate finds its round either answered (an earlier
//! writer took it) or still queued, and then writes the next batch itself.
//! The batch runs in a task of its own, holding the gate, so a client that
//! hangs up mid-batch cancels nobody else's round. A client that hangs up
//! while its round is still queued leaves the round to the next writer: it
//! is stored as if the client had hung up a moment later, and its answer
//! goes nowhere.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::ingest::{begin_write, store_round, Ingested};
use super::wire::RoundReport;
use super::LoopsError;
use crate::store::{Store, StoreError};

/// At most this many rounds share a transaction, so one batch holds the
/// write lock for a few milliseconds at most.
pub(super) const MAX_BATCH: usize = 64;

/// A round waiting for the writer.
pub(crate) struct PendingRound {
    pub team_id: i64,
    pub loop_name: String,
    pub report: RoundReport,
    pub now: i64,
}

struct Queued {
    round: PendingRound,
    answer: oneshot::Sender<Result<Ingested, LoopsError>>,
}

/// The queue of rounds and the gate that makes one batch run at a time.
/// One per store (shared by its clones).
#[derive(Default)]
pub(crate) struct RoundQueue {
    waiting: Mutex<Vec<Queued>>,
    gate: Arc<tokio::sync::Mutex<()>>,
}

/// Stores `round` in the next batch and answers for it alone.
pub(super) async fn ingest(store: &Store, round: PendingRound) -> Result<Ingested, LoopsError> {
    let queue = &store.ingest_state().queue;
    let (answer, mut answered) = oneshot::channel();
    lock(&queue.waiting).push(Queued { round, answer });
    loop {
        let gate = queue.gate.clone().lock_owned().await;
        match answered.try_recv() {
            Ok(result) => return result,
            Err(oneshot::error::TryRecvError::Closed) => return Err(abandoned()),
            Err(oneshot::error::TryRecvError::Empty) => {}
        }
        // This round is still queued and nobody else is writing: take the
        // oldest rounds, this one among them unless the queue is long (then
        // the loop comes round again).
        let batch: Vec<Queued> = {
            let mut waiting = lock(&queue.waiting);
            let take = waiting.len().min(MAX_BATCH);
            waiting.drain(..take).collect()
        };
        let writer = store.clone();
        let task = tokio::spawn(async move {
            let _gate = gate;
            write_batch(&writer, batch).await;
        });
        if task.await.is_err() {
            // The batch task panicked: its rounds' senders are gone, which
            // `try_recv` reports as `Closed` on the next turn.
            tracing::error!("loops: a batch of rounds failed to finish");
        }
    }
}

fn lock(waiting: &Mutex<Vec<Queued>>) -> std::sync::MutexGuard<'_, Vec<Queued>> {
    // The queue holds plain data; a panic elsewhere while it was locked
    // cannot have left it half-changed.
    waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn abandoned() -> LoopsError {
    LoopsError::Store(StoreError::Database(sqlx::Error::Protocol(
        "the batch holding this round ended without an answer".to_string(),
    )))
}

/// Writes `batch` in one transaction, or, when any of it fails, each round
/// in a transaction of its own; answers every round.
async fn write_batch(store: &Store, batch: Vec<Queued>) {
    if batch.len() > 1 {
        if let Ok(results) = write_together(store, &batch).await {
            for (queued, result) in batch.into_iter().zip(results) {
                // A sender that hung up no longer wants its answer; its
                // round is stored all the same, as it would have been had
                // it hung up a moment later.
                let _ = queued.answer.send(Ok(result));
            }
            return;
        }
    }
    for queued in batch {
        let PendingRound { team_id, loop_name, report, now } = &queued.round;
        let result = store.ingest_round_alone(*team_id, loop_name, report, *now).await;
        let _ = queued.answer.send(result);
    }
}

async fn write_together(store: &Store, batch: &[Queued]) -> Result<Vec<Ingested>, LoopsError> {
    let mut tx = begin_write(store).await?;
    let mut results = Vec::with_capacity(batch.len());
    for queued in batch {
        let PendingRound { team_id, loop_name, report, now } = &queued.round;
        // An error drops `tx`, which rolls the whole batch back.
        results.push(store_round(store, &mut tx, *team_id, loop_name, report, *now).await?);
    }
    tx.commit().await?;
    for result in &mut results {
        if let Some(kept) = result.kept.take() {
            store.ingest_state().recent.keep(kept);
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn report(round: u32, state: &str, blocking: usize) -> RoundReport {
        let findings: Vec<_> = (0..blocking)
            .map(|index| json!({"target": {"id": format!("check-{index}")}, "severity": "blocking", "criterion": "c"}))
            .collect();
        let body = json!({"round": round, "run": "r1", "state": state, "findings": findings});
        RoundReport::from_json(body.to_string().as_bytes()).expect("a valid round")
    }

    /// Queues rounds the way concurrent senders do, without leading a
    /// batch, and gives back where each answer will arrive.
    fn queue_up(
        store: &Store,
        team_id: i64,
        rounds: Vec<(&str, RoundReport)>,
    ) -> Vec<oneshot::Receiver<Result<Ingested, LoopsError>>> {
        let mut waiting = lock(&store.ingest_state().queue.waiting);
        rounds
            .into_iter()
            .map(|(loop_name, report)| {
                let (answer, answered) = oneshot::channel();
                let round = PendingRound { team_id, loop_name: loop_name.to_string(), report, now: 1_000 };
                waiting.push(Queued { round, answer });
                answered
            })
            .collect()
    }

    async fn sqlite_store() -> (tempfile::TempDir, Store, i64) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("group.db").display());
        let store = Store::open(&url).await.expect("the store opens");
        let team = store.create_team("group").await.expect("a team");
        (dir, store, team.id)
    }

    async fn count(store: &Store, table: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(store.pool())
            .await
            .expect("a count")
    }

    #[tokio::test]
    async fn queued_rounds_are_written_by_one_leader_in_order() {
        let (_dir, store, team) = sqlite_store().await;
        let answers = queue_up(
            &store,
            team,
            vec![
                ("alpha", report(1, "a1", 2)),
                ("beta", report(1, "b1", 1)),
                ("alpha", report(2, "a2", 2)),
                ("beta", report(2, "b1", 1)),
            ],
        );
        // The fifth sender leads: its batch holds the four queued rounds
        // and its own.
        let led = ingest(
            &store,
            PendingRound { team_id: team, loop_name: "gamma".into(), report: report(1, "g", 0), now: 1_000 },
        )
        .await
        .expect("stored");
        assert_eq!(led.answer.class.as_str(), "done");
        let mut classes = Vec::new();
        for answered in answers {
            let ingested = answered.await.expect("answered").expect("stored");
            assert!(ingested.event.is_some(), "each round is newly stored");
            classes.push(ingested.answer.class.as_str().to_string());
        }
        // Later rounds of a batch see the earlier ones: alpha's second
        // round has the same blocking set (stalled), beta's second round
        // judged the same state again (fixed point).
        assert_eq!(classes, ["first", "first", "stalled", "fixed_point"]);
        assert_eq!(count(&store, "rounds").await, 5);
        assert_eq!(count(&store, "findings").await, 6);
        assert!(lock(&store.ingest_state().queue.waiting).is_empty());
    }

    #[tokio::test]
    async fn a_refused_round_in_a_batch_takes_no_other_round_with_it() {
        let (_dir, store, team) = sqlite_store().await;
        store.ingest_round_at(team, "alpha", &report(1, "a1", 2), 500).await.expect("stored");
        let answers = queue_up(
            &store,
            team,
            vec![
                ("beta", report(1, "b1", 1)),
                // Round 1 of alpha again with another body: a conflict.
                ("alpha", report(1, "other", 3)),
                ("alpha", report(2, "a2", 1)),
            ],
        );
        let led = ingest(
            &store,
            PendingRound { team_id: team, loop_name: "beta".into(), report: report(2, "b2", 0), now: 1_000 },
        )
        .await
        .expect("stored");
        assert_eq!(led.answer.class.as_str(), "done");
        let results: Vec<_> = {
            let mut results = Vec::new();
            for answered in answers {
                results.push(answered.await.expect("answered"));
            }
            results
        };
        assert!(results[0].as_ref().is_ok_and(|ingested| ingested.event.is_some()));
        match &results[1] {
            Err(LoopsError::Conflict { field, .. }) => assert_eq!(field.as_deref(), Some("round")),
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert!(results[2].as_ref().is_ok_and(|ingested| ingested.answer.class.as_str() == "converging"));
        // Four rounds stored: alpha 1 and 2, beta 1 and 2; the refused one
        // left no row and no finding.
        assert_eq!(count(&store, "rounds").await, 4);
        assert_eq!(count(&store, "findings").await, 2 + 1 + 1);
    }

    #[tokio::test]
    async fn rounds_stored_before_finding_keys_existed_are_read_from_their_findings() {
        let (_dir, store, team) = sqlite_store().await;
        store.ingest_round_at(team, "old", &report(1, "a", 2), 500).await.expect("stored");
        // What a round stored by an earlier version looks like.
        sqlx::query("UPDATE rounds SET finding_keys = NULL").execute(store.pool()).await.expect("updated");
        let next = store.ingest_round_at(team, "old", &report(2, "b", 2), 600).await.expect("stored");
        // Same two blocking findings under a new state: stalled, which the
        // engine can only say if it read round 1's findings.
        assert_eq!(next.answer.class.as_str(), "stalled");
    }
}
