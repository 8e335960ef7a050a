//! Keeping the live founder seat count (`crate::live::FounderFeed`) fresh.
//! A change made by this instance is published at once. On PostgreSQL
//! every seat change also sends a notification on [`NOTIFY_CHANNEL`] in its
//! transaction (delivered only if it commits), and each instance listens
//! and re-reads the count, so several servers on one database show the
//! same bar live. A slow poll re-reads it anyway, which
//! covers notifications lost while a listener reconnects.

use std::time::Duration;

use tokio::task::JoinHandle;

use crate::live::{FounderCount, FounderFeed};
use crate::store::Store;

/// How often the poller re-reads the count (the fallback: changes arrive
/// at once through the instance itself or PostgreSQL's notifications).
pub const POLL_EVERY: Duration = Duration::from_secs(30);

/// The PostgreSQL channel seat changes are announced on.
pub const NOTIFY_CHANNEL: &str = "fixedpoint_founders";

// The feed is live's channel; how billing keeps it fresh is written here,
// beside the tables it reads.
impl FounderFeed {
    /// Re-reads the count and publishes it if it changed; answers it.
    pub async fn refresh(&self, store: &Store, limit: u32) -> Option<FounderCount> {
        match store.founder_count(limit).await {
            Ok(count) => {
                self.publish(count);
                Some(count)
            }
            Err(error) => {
                tracing::warn!(%error, "could not read the founder seat count");
                None
            }
        }
    }

    /// Listens for seat changes committed by any instance on the PostgreSQL
    /// database at `url` and re-reads the count on each, until aborted.
    pub async fn start_postgres_listener(
        &self,
        url: &str,
        store: Store,
        limit: u32,
    ) -> Result<JoinHandle<()>, sqlx::Error> {
        let mut listener = sqlx::postgres::PgListener::connect(url).await?;
        listener.listen(NOTIFY_CHANNEL).await?;
        let feed = self.clone();
        Ok(tokio::spawn(async move {
            loop {
                match listener.recv().await {
                    Ok(_) => {
                        feed.refresh(&store, limit).await;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "founder seats: lost the PostgreSQL listener, reconnecting");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        }))
    }

    /// Keeps the count fresh from the database until aborted.
    pub fn spawn_poller(&self, store: Store, limit: u32, every: Duration) -> JoinHandle<()> {
        let feed = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                feed.refresh(&store, limit).await;
            }
        })
    }
}
