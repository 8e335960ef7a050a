//! The live founder seat count: a watch channel every pricing page's event
//! stream reads. A change made here is published at once; a poller reads
//! the database every few seconds so that changes made by other instances
//! (several servers on one PostgreSQL) reach this instance's readers too.

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::FounderCount;
use crate::store::Store;

/// How often the poller re-reads the count.
pub const POLL_EVERY: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct FounderFeed {
    sender: watch::Sender<Option<FounderCount>>,
}

impl Default for FounderFeed {
    fn default() -> Self {
        FounderFeed::new()
    }
}

impl FounderFeed {
    pub fn new() -> FounderFeed {
        FounderFeed { sender: watch::channel(None).0 }
    }

    pub fn subscribe(&self) -> watch::Receiver<Option<FounderCount>> {
        self.sender.subscribe()
    }

    /// Re-reads the count and publishes it if it changed; answers it.
    pub async fn refresh(&self, store: &Store, limit: u32) -> Option<FounderCount> {
        match store.founder_count(limit).await {
            Ok(count) => {
                self.sender.send_if_modified(|current| {
                    let changed = *current != Some(count);
                    *current = Some(count);
                    changed
                });
                Some(count)
            }
            Err(error) => {
                tracing::warn!(%error, "could not read the founder seat count");
                None
            }
        }
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
