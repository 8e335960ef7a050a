//! The lost-run sweeper: a run that has said nothing (no round, no
//! heartbeat) for longer than its loop's heartbeat window is `lost`. Lost is
//! a failure kept apart from `failed`: a failed run said why, a lost one said
//! nothing.

use std::time::Duration;

use tokio::task::JoinHandle;

use super::run_state::{BLOCKED, LOST, RUNNING};
use crate::store::{now_millis, Store, StoreError};

/// How often `serve` sweeps. The shortest window a loop can set is one
/// second, but the default is ten minutes; a half-minute lag on noticing a
/// silent run is well inside that.
pub const LOST_SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Marks as `lost`, at the time `now` (Unix milliseconds), every running or
/// blocked run whose last sign of life is older than its loop's window.
/// Returns how many runs it marked. Taking the time as an argument lets
/// tests sweep "an hour later" without waiting an hour.
pub async fn sweep_lost_runs(store: &Store, now: i64) -> Result<u64, StoreError> {
    let mut tx = store.begin_write().await?;
    let lost: Vec<(i64, String, i64, String, String)> = sqlx::query_as(
        "UPDATE runs SET state = $1, ended_at = $2 \
         WHERE state IN ($3, $4) \
         AND last_seen_at < $2 - (SELECT heartbeat_window_ms FROM loops WHERE loops.id = runs.loop_id) \
         RETURNING id, run_key, loop_id, \
         (SELECT name FROM loops WHERE loops.id = runs.loop_id), \
         (SELECT t.slug FROM teams t JOIN loops l ON l.team_id = t.id WHERE l.id = runs.loop_id)",
    )
    .bind(LOST)
    .bind(now)
    .bind(RUNNING)
    .bind(BLOCKED)
    .fetch_all(&mut *tx)
    .await?;
    // A lost run alerts its team, in the same transaction as the sweep.
    for (_, run_key, loop_id, loop_name, team) in &lost {
        let team_id: i64 = sqlx::query_scalar("SELECT team_id FROM loops WHERE id = $1")
            .bind(loop_id)
            .fetch_one(&mut *tx)
            .await?;
        let payload = serde_json::json!({
            "type": "loop.lost",
            "team": team,
            "loop": loop_name,
            "run": run_key,
            "reason": "no round or heartbeat within the loop's window",
            "at": now,
        });
        crate::alerts::enqueue(&mut tx, team_id, loop_name, crate::alerts::AlertKind::Lost, &payload, now)
            .await?;
    }
    tx.commit().await?;
    Ok(lost.len() as u64)
}

/// Sweeps every `every` until the returned task is aborted. A failed sweep
/// is logged and retried at the next tick: a database that is briefly away
/// must not end the sweeping for good.
pub fn spawn_lost_run_sweeper(store: Store, every: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            match sweep_lost_runs(&store, now_millis()).await {
                Ok(0) => {}
                Ok(lost) => tracing::info!(lost, "marked silent runs as lost"),
                Err(error) => tracing::warn!(%error, "the lost-run sweep failed"),
            }
        }
    })
}
