//! How many audits the server runs at once: a limit every request that
//! audits shares, kept in the request state beside the rate limits.
//!
//! A worst-case source (1 MiB nested as deep as the parser goes) costs
//! seconds of CPU and some hundreds of MB while it is audited; sixteen of
//! them at once from one address took the resident memory from 62 MB to
//! 2.9 GB. The audit API, the audit page's form and the MCP tool therefore
//! share one semaphore with as many slots as the machine has cores (more
//! audits at once would only share the cores). A request waits up to
//! `FIXEDPOINT_AUDIT_WAIT_MS` for a slot, then is told to come back: 503
//! with `Retry-After`. The slot is held by the audit's blocking task, not by
//! the request, so a client that hangs up does not free its slot while its
//! audit still runs.
//!
//! When the slot is given back, the thread that audited hands the memory it
//! freed back to the system at once (`mi_collect`). mimalloc otherwise keeps
//! freed pages for a while and purges them on that thread's next
//! allocations; a blocking thread that sits idle after a storm never makes
//! one, and the storm's hundreds of MB stayed resident (+45% a minute later
//! in `end2end/bench/audit_storm.py`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The seconds a refused request is asked to wait before it tries again.
pub const RETRY_AFTER_SECONDS: u64 = 2;

#[derive(Clone)]
pub struct AuditSlots {
    slots: Arc<Semaphore>,
    wait: Duration,
}

/// Every slot stayed taken for the whole wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

impl AuditSlots {
    pub fn new(slots: u32, wait: Duration) -> AuditSlots {
        let slots = usize::try_from(slots.max(1)).unwrap_or(1);
        AuditSlots { slots: Arc::new(Semaphore::new(slots)), wait }
    }

    /// A slot, waiting for one as long as configured.
    pub async fn acquire(&self) -> Result<AuditSlot, Busy> {
        match tokio::time::timeout(self.wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(AuditSlot { _permit: permit }),
            // Timed out (or closed, which never happens: nothing closes it).
            _ => Err(Busy),
        }
    }

    /// Slots free right now.
    pub fn available(&self) -> usize {
        self.slots.available_permits()
    }
}

/// One audit's slot. Drop it on the thread that audited, once the audit is
/// done: it gives that thread's freed memory back to the system.
#[derive(Debug)]
pub struct AuditSlot {
    _permit: OwnedSemaphorePermit,
}

impl Drop for AuditSlot {
    fn drop(&mut self) {
        release_freed_memory();
    }
}

/// Returns the memory this thread's heap has freed to the system now.
#[allow(unsafe_code)]
fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointer and may be called at any time
    // from any thread; it only walks the calling thread's own heap (and, with
    // `force`, purges its free pages at once). The server's global allocator
    // is mimalloc (main.rs), so this is the heap Rust allocated from.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// The message of a 503 for an audit that found no free slot.
pub const BUSY_MESSAGE: &str =
    "the server is auditing as many sources as it has cores; retry in a few seconds";

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_waits_for_a_slot_then_gives_up() {
        let slots = AuditSlots::new(1, Duration::from_millis(50));
        let first = slots.acquire().await.expect("a free slot");
        assert_eq!(slots.available(), 0);
        assert_eq!(slots.acquire().await.unwrap_err(), Busy, "the only slot is taken");
        let waiting = tokio::spawn({
            let slots = slots.clone();
            async move { slots.acquire().await.is_ok() }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(first);
        assert!(waiting.await.unwrap(), "a slot freed within the wait is taken");
    }
}
