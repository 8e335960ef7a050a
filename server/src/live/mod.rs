//! Live events: every stored round is published on an in-process channel
//! that the dashboard's server-sent event streams subscribe to; the
//! founder seat count has a channel of its own ([`FounderFeed`]).
//!
//! The channel is a tokio broadcast: publishing never waits, and a
//! subscriber that falls behind loses the oldest events (it is told how many
//! and can reload the history) rather than slowing the ingest path down.
//!
//! # Several instances on one PostgreSQL
//!
//! On PostgreSQL the ingest transaction also sends the event with
//! `pg_notify` on [`NOTIFY_CHANNEL`], which PostgreSQL delivers only if the
//! round is committed. [`LiveEvents::start_postgres_relay`] listens on that
//! channel and feeds every notification, this instance's own included, into
//! the local broadcast; once it runs, [`LiveEvents::publish`] leaves the
//! delivery to it, so each subscriber hears each round exactly once whichever
//! instance stored it. Notifications sent while the listener is
//! reconnecting are lost (PostgreSQL keeps none for absent listeners): a
//! dashboard that reconnects reloads the history anyway.

mod founders;

pub use founders::{FounderCount, FounderFeed};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::PgListener;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::convergence::{Advice, Class, Outcome};

/// What the live channel carries for each stored round: enough for a
/// dashboard to update its list and chart without asking again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundEvent {
    /// The stored round's row id: increasing, so a live stream can resume
    /// after it (`Last-Event-ID`).
    #[serde(default)]
    pub id: i64,
    pub team_id: i64,
    pub loop_id: i64,
    #[serde(rename = "loop")]
    pub loop_name: String,
    pub run: String,
    pub run_state: String,
    pub round: u32,
    pub state: String,
    pub class: Class,
    pub outcome: Outcome,
    pub advice: Advice,
    pub blocking: u32,
    pub findings: u32,
    pub created_at: i64,
}

/// How many events a slow subscriber may fall behind before it loses some.
pub const LIVE_BUFFER: usize = 1024;

/// The PostgreSQL notification channel stored rounds are announced on.
pub const NOTIFY_CHANNEL: &str = "fixedpoint_rounds";

/// The publishing side of the live channel; cheap to clone.
#[derive(Debug, Clone)]
pub struct LiveEvents {
    sender: broadcast::Sender<RoundEvent>,
    /// Set once a PostgreSQL relay delivers the events instead.
    relayed: Arc<AtomicBool>,
}

impl Default for LiveEvents {
    fn default() -> Self {
        LiveEvents::new()
    }
}

impl LiveEvents {
    pub fn new() -> LiveEvents {
        let (sender, _) = broadcast::channel(LIVE_BUFFER);
        LiveEvents { sender, relayed: Arc::new(AtomicBool::new(false)) }
    }

    /// Publishes a stored round to everyone listening in this process, or
    /// leaves it to the PostgreSQL relay when one runs (it will deliver the
    /// same event from the database's notification). With nobody listening
    /// the event is simply dropped.
    pub fn publish(&self, event: RoundEvent) {
        if !self.relayed.load(Ordering::Acquire) {
            let _ = self.sender.send(event);
        }
    }

    /// A new subscription that receives every event published after now.
    pub fn subscribe(&self) -> broadcast::Receiver<RoundEvent> {
        self.sender.subscribe()
    }

    /// Listens for the rounds every instance stores in the PostgreSQL
    /// database at `url` and relays them to this process's subscribers,
    /// until the returned task is aborted. Fails if the first connection
    /// cannot be made; later disconnections are retried.
    pub async fn start_postgres_relay(&self, url: &str) -> Result<JoinHandle<()>, sqlx::Error> {
        let mut listener = PgListener::connect(url).await?;
        listener.listen(NOTIFY_CHANNEL).await?;
        self.relayed.store(true, Ordering::Release);
        let sender = self.sender.clone();
        Ok(tokio::spawn(async move {
            loop {
                match listener.recv().await {
                    Ok(notification) => match serde_json::from_str::<RoundEvent>(notification.payload()) {
                        Ok(event) => {
                            let _ = sender.send(event);
                        }
                        Err(error) => tracing::warn!(%error, "ignoring an unreadable live event"),
                    },
                    Err(error) => {
                        // `recv` reconnects on its next call; pausing keeps a
                        // database that is down from being hammered.
                        tracing::warn!(%error, "live events: lost the PostgreSQL listener, reconnecting");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        }))
    }
}
