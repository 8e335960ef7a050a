//! The hold sweeper: founder seats held by checkouts that should have ended
//! are released only when Stripe says the session is dead. For each stale
//! hold it asks Stripe to expire the session and reads the session's final
//! state: `expired` releases the seat, `complete` makes it paid (the
//! completed event may still be on its way), `open` leaves it for the next
//! sweep. A session Stripe answers it has never heard of (404: made with
//! other keys, or the id was garbled) can never be paid, so its seat is
//! released too; a Stripe that does not answer releases nothing. A clock
//! alone never releases a seat.

use std::time::Duration;

use tokio::task::JoinHandle;

use super::{BillingError, CHECKOUT_TTL_SECONDS};
use crate::store::now_millis;
use crate::stripe_api::StripeApi;
use crate::web::AppState;

/// How often the sweeper looks.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    pub released: usize,
    pub paid: usize,
    pub still_open: usize,
    pub failed: usize,
}

/// Sweeps holds older than the checkout's lifetime plus `grace`.
pub async fn sweep(state: &AppState, grace: Duration) -> Result<SweepReport, BillingError> {
    let Some(api) = state.stripe.as_ref() else { return Ok(SweepReport::default()) };
    let cutoff = now_millis() - CHECKOUT_TTL_SECONDS * 1000 - grace.as_millis() as i64;
    let mut report = SweepReport::default();
    for hold in state.store.stale_holds(cutoff).await? {
        let Some(session) = hold.checkout_session_id.as_deref() else {
            // A hold whose session was never recorded (the server stopped
            // between the two steps). Any session made for it expired with
            // its 30 minutes; a late completion reclaims a seat if one is
            // free, or is refused (see the webhook).
            if state.store.release_hold(hold.id).await? {
                report.released += 1;
            }
            continue;
        };
        match final_state(api, session).await {
            Ok(SessionEnd::Expired) => {
                if state.store.release_hold(hold.id).await? {
                    report.released += 1;
                }
            }
            Ok(SessionEnd::Complete { subscription }) => {
                state
                    .store
                    .mark_hold_paid(hold.id, subscription.as_deref(), state.config.founder_seats)
                    .await?;
                report.paid += 1;
            }
            Ok(SessionEnd::Unknown) => {
                tracing::warn!(
                    hold = hold.id,
                    session,
                    "Stripe has no such checkout session; releasing its founder seat"
                );
                if state.store.release_hold(hold.id).await? {
                    report.released += 1;
                }
            }
            Ok(SessionEnd::Open) => report.still_open += 1,
            Err(error) => {
                tracing::warn!(%error, hold = hold.id, session, "could not settle a stale founder hold; will retry");
                report.failed += 1;
            }
        }
    }
    if report != SweepReport::default() {
        tracing::info!(?report, "founder hold sweep");
        state.founders.refresh(&state.store, state.config.founder_seats).await;
    }
    Ok(report)
}

enum SessionEnd {
    Expired,
    Complete {
        subscription: Option<String>,
    },
    Open,
    /// Stripe says there is no such session.
    Unknown,
}

async fn final_state(api: &StripeApi, session: &str) -> Result<SessionEnd, BillingError> {
    // Expiring an open session ends it; expiring one that already ended is
    // refused by Stripe, and reading it tells how it ended.
    let state = match api.expire_checkout(session).await {
        Ok(state) => state,
        Err(_) => match api.checkout_session(session).await? {
            Some(state) => state,
            None => return Ok(SessionEnd::Unknown),
        },
    };
    Ok(match state.status.as_str() {
        "expired" => SessionEnd::Expired,
        "complete" => SessionEnd::Complete { subscription: state.subscription },
        _ => SessionEnd::Open,
    })
}

/// Runs [`sweep`] every `every` until aborted.
pub fn spawn(state: AppState, every: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(error) = sweep(&state, Duration::from_secs(180)).await {
                tracing::warn!(%error, "the founder hold sweep failed");
            }
        }
    })
}
