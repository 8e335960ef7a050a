//! The traces sweeper: stores the rounds that waited for time alone (their
//! completing span settling, or their run falling silent for its heartbeat
//! window) and forgets spans stored more than a day ago.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::live::LiveEvents;
use crate::store::{now_millis, Store};

/// How long a stored span is remembered, so that a retry of it is known.
const REMEMBER_MS: i64 = 24 * 60 * 60 * 1000;

/// How often to sweep for a settle time of `settle_ms`: twice within it,
/// and at least every five seconds for the heartbeat windows.
pub fn sweep_every(settle_ms: i64) -> Duration {
    let half = u64::try_from(settle_ms / 2).unwrap_or(0);
    Duration::from_millis(half.clamp(100, 5_000))
}

/// Sweeps every `every` until the returned task is aborted. A failed sweep
/// is logged and tried again at the next tick.
pub fn spawn_traces_sweeper(
    store: Store,
    live: LiveEvents,
    settle_ms: i64,
    every: Duration,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_forget = 0_i64;
        loop {
            ticker.tick().await;
            let now = now_millis();
            match store.sweep_traces(now, settle_ms).await {
                Ok(events) => {
                    if !events.is_empty() {
                        tracing::debug!(rounds = events.len(), "traces: stored rounds that had settled");
                    }
                    for event in events {
                        live.publish(event);
                    }
                }
                Err(error) => tracing::warn!(%error, "traces: the sweep failed"),
            }
            if now - last_forget >= 60 * 60 * 1000 {
                last_forget = now;
                match store.forget_stored_spans(now - REMEMBER_MS).await {
                    Ok(0) => {}
                    Ok(forgotten) => tracing::info!(forgotten, "traces: forgot spans stored a day ago"),
                    Err(error) => tracing::warn!(%error, "traces: forgetting old spans failed"),
                }
            }
        }
    })
}
