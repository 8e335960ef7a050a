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
    let result = sqlx::query(
        "UPDATE runs SET state = $1, ended_at = $2 \
         WHERE state IN ($3, $4) \
         AND last_seen_at < $2 - (SELECT heartbeat_window_ms FROM loops WHERE loops.id = runs.loop_id)",
    )
    .bind(LOST)
    .bind(now)
    .bind(RUNNING)
    .bind(BLOCKED)
    .execute(store.pool())
    .await?;
    Ok(result.rows_affected())
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
