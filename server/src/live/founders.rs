//! The live founder seat count: a watch channel every pricing page's event
//! stream reads. Billing reads the count from its tables and publishes it
//! here (`crate::billing::live`); the request state holds the channel.

use tokio::sync::watch;

/// Seats as the pricing page and `GET /api/v1/founders` show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FounderCount {
    /// Paid founder seats.
    pub taken: i64,
    pub total: i64,
    /// Whether a seat can be held right now.
    pub open: bool,
    /// Seats held by checkouts in progress.
    #[serde(skip)]
    pub held: i64,
}

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

    /// Publishes `count` if it changed.
    pub fn publish(&self, count: FounderCount) {
        self.sender.send_if_modified(|current| {
            let changed = *current != Some(count);
            *current = Some(count);
            changed
        });
    }
}
