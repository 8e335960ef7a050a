//! Live events: every stored round is published on an in-process channel
//! that the dashboard's server-sent event streams subscribe to.
//!
//! The channel is a tokio broadcast: publishing never waits, and a
//! subscriber that falls behind loses the oldest events (it is told how many
//! and can reload the history) rather than slowing the ingest path down.

use tokio::sync::broadcast;

use crate::loops::RoundEvent;

/// How many events a slow subscriber may fall behind before it loses some.
pub const LIVE_BUFFER: usize = 1024;

/// The publishing side of the live channel; cheap to clone.
#[derive(Debug, Clone)]
pub struct LiveEvents {
    sender: broadcast::Sender<RoundEvent>,
}

impl Default for LiveEvents {
    fn default() -> Self {
        LiveEvents::new()
    }
}

impl LiveEvents {
    pub fn new() -> LiveEvents {
        let (sender, _) = broadcast::channel(LIVE_BUFFER);
        LiveEvents { sender }
    }

    /// Publishes a stored round to everyone listening in this process. With
    /// nobody listening the event is simply dropped.
    pub fn publish(&self, event: RoundEvent) {
        let _ = self.sender.send(event);
    }

    /// A new subscription that receives every event published after now.
    pub fn subscribe(&self) -> broadcast::Receiver<RoundEvent> {
        self.sender.subscribe()
    }
}
