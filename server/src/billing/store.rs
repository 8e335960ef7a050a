//! Billing's tables: founder seat holds behind one guarded counter, Stripe
//! customers, subscriptions as Stripe last described them, handled event
//! ids and the founder waitlist.
//!
//! The seat rule: `founder_seat_counter.used` counts holds in progress plus
//! paid seats, and only `UPDATE ... SET used = used + 1 WHERE used < limit`
//! takes a seat. PostgreSQL serialises concurrent updates of the row (the
//! loser re-checks the condition after the winner commits); SQLite has one
//! writer at a time. Every change of a hold's state and the counter happen
//! in one transaction, so the counter never drifts from the holds.

use sqlx::Row;

use super::BillingError;
use crate::live::FounderCount;
use crate::newsletter::Tier;
use crate::store::{now_millis, Store};

/// A founder seat held for one checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatHold {
    pub id: i64,
    pub account_id: i64,
    pub state: String,
    pub checkout_session_id: Option<String>,
    pub checkout_url: Option<String>,
    pub created_at: i64,
}

/// What a completed founder checkout did to its hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaidOutcome {
    /// The hold became a paid seat.
    Paid,
    /// It already was (a repeated or late event).
    AlreadyPaid,
    /// The hold had been released, and a free seat was taken again.
    Reclaimed,
    /// The hold had been released and no seat is left: the subscription
    /// must not stand.
    NoSeat,
    /// No hold has this checkout session.
    Unknown,
}

/// A subscription as Stripe's latest object describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeSubscription {
    pub id: String,
    pub customer_id: String,
    pub account_id: i64,
    pub tier: Tier,
    pub status: String,
    pub price_id: Option<String>,
    pub current_period_end: Option<i64>,
    pub cancel_at_period_end: bool,
    pub created: i64,
}

fn hold(row: &sqlx::any::AnyRow) -> Result<SeatHold, sqlx::Error> {
    Ok(SeatHold {
        id: row.try_get("id")?,
        account_id: row.try_get("account_id")?,
        state: row.try_get("state")?,
        checkout_session_id: row.try_get("checkout_session_id")?,
        checkout_url: row.try_get("checkout_url")?,
        created_at: row.try_get("created_at")?,
    })
}

const HOLD_COLUMNS: &str = "id, account_id, state, checkout_session_id, checkout_url, created_at";

/// Takes one seat inside `tx` if fewer than `limit` are used: the only way a
/// seat is ever taken. The guarded update is atomic on both databases (a row
/// lock on PostgreSQL, the single writer on SQLite).
async fn take_seat(tx: &mut sqlx::Transaction<'static, sqlx::Any>, limit: u32) -> Result<bool, sqlx::Error> {
    let taken = sqlx::query("UPDATE founder_seat_counter SET used = used + 1 WHERE id = 1 AND used < $1")
        .bind(i64::from(limit))
        .execute(&mut **tx)
        .await?;
    Ok(taken.rows_affected() == 1)
}

/// Announces a seat change to every instance on PostgreSQL (inside the
/// transaction: only a committed change is heard). SQLite has one instance.
async fn notify_seats(
    store: &Store,
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
) -> Result<(), sqlx::Error> {
    if store.backend() == crate::store::Backend::Postgres {
        sqlx::query("SELECT pg_notify($1, '')").bind(super::live::NOTIFY_CHANNEL).execute(&mut **tx).await?;
    }
    Ok(())
}

impl Store {
    pub async fn founder_count(&self, limit: u32) -> Result<FounderCount, BillingError> {
        let row = sqlx::query(
            "SELECT (SELECT used FROM founder_seat_counter WHERE id = 1) AS used, \
             (SELECT COUNT(*) FROM seat_holds WHERE state = 'paid') AS taken, \
             (SELECT COUNT(*) FROM seat_holds WHERE state = 'held') AS held",
        )
        .fetch_one(self.pool())
        .await?;
        let used: i64 = row.try_get("used")?;
        Ok(FounderCount {
            taken: row.try_get("taken")?,
            held: row.try_get("held")?,
            total: i64::from(limit),
            open: used < i64::from(limit),
        })
    }

    /// Takes a founder seat for `account_id`'s checkout, or answers
    /// [`BillingError::SoldOut`]. Never more than `limit` at once.
    pub async fn hold_founder_seat(
        &self,
        account_id: i64,
        limit: u32,
        ttl_ms: i64,
    ) -> Result<SeatHold, BillingError> {
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        if !take_seat(&mut tx, limit).await? {
            tx.rollback().await?;
            return Err(BillingError::SoldOut);
        }
        let inserted = sqlx::query(&format!(
            "INSERT INTO seat_holds (account_id, state, created_at, expires_at, updated_at) \
             VALUES ($1, 'held', $2, $3, $2) RETURNING {HOLD_COLUMNS}"
        ))
        .bind(account_id)
        .bind(now)
        .bind(now + ttl_ms)
        .fetch_one(&mut *tx)
        .await;
        let row = match inserted {
            Ok(row) => row,
            // The reader already has a checkout in progress (one held seat
            // per account): the seat taken above goes back with the rollback.
            Err(error) if error.as_database_error().is_some_and(|e| e.is_unique_violation()) => {
                tx.rollback().await?;
                return Err(BillingError::CheckoutInProgress);
            }
            Err(error) => return Err(error.into()),
        };
        notify_seats(self, &mut tx).await?;
        tx.commit().await?;
        Ok(hold(&row)?)
    }

    /// The account's hold of a checkout still in progress, if any.
    pub async fn open_hold(&self, account_id: i64) -> Result<Option<SeatHold>, BillingError> {
        let row = sqlx::query(&format!(
            "SELECT {HOLD_COLUMNS} FROM seat_holds WHERE account_id = $1 AND state = 'held' \
             AND checkout_url IS NOT NULL ORDER BY id DESC LIMIT 1"
        ))
        .bind(account_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.as_ref().map(hold).transpose()?)
    }

    pub async fn attach_checkout(
        &self,
        hold_id: i64,
        session_id: &str,
        url: &str,
    ) -> Result<(), BillingError> {
        sqlx::query(
            "UPDATE seat_holds SET checkout_session_id = $2, checkout_url = $3, updated_at = $4 WHERE id = $1",
        )
        .bind(hold_id)
        .bind(session_id)
        .bind(url)
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Gives a held seat back (the checkout is dead). Answers whether a
    /// seat was freed (false when the hold was not held any more).
    pub async fn release_hold(&self, hold_id: i64) -> Result<bool, BillingError> {
        self.move_hold(hold_id, "held", "released", -1).await
    }

    /// The hold of a checkout session.
    pub async fn hold_by_session(&self, session_id: &str) -> Result<Option<SeatHold>, BillingError> {
        let row =
            sqlx::query(&format!("SELECT {HOLD_COLUMNS} FROM seat_holds WHERE checkout_session_id = $1"))
                .bind(session_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(row.as_ref().map(hold).transpose()?)
    }

    pub async fn hold_by_id(&self, hold_id: i64) -> Result<Option<SeatHold>, BillingError> {
        let row = sqlx::query(&format!("SELECT {HOLD_COLUMNS} FROM seat_holds WHERE id = $1"))
            .bind(hold_id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(hold).transpose()?)
    }

    /// Moves a hold from `from` to `to` and the counter by `delta`, in one
    /// transaction; false when the hold was not in `from`.
    async fn move_hold(&self, hold_id: i64, from: &str, to: &str, delta: i64) -> Result<bool, BillingError> {
        let mut tx = self.begin_write().await?;
        // The counter row first: it is the lock every seat change takes.
        sqlx::query("UPDATE founder_seat_counter SET used = used + $1 WHERE id = 1")
            .bind(delta)
            .execute(&mut *tx)
            .await?;
        let moved =
            sqlx::query("UPDATE seat_holds SET state = $3, updated_at = $4 WHERE id = $1 AND state = $2")
                .bind(hold_id)
                .bind(from)
                .bind(to)
                .bind(now_millis())
                .execute(&mut *tx)
                .await?;
        if moved.rows_affected() == 1 {
            notify_seats(self, &mut tx).await?;
            tx.commit().await?;
            Ok(true)
        } else {
            tx.rollback().await?;
            Ok(false)
        }
    }

    /// Records that the founder checkout of `hold_id` was paid.
    pub async fn mark_hold_paid(
        &self,
        hold_id: i64,
        subscription_id: Option<&str>,
        limit: u32,
    ) -> Result<PaidOutcome, BillingError> {
        let mut tx = self.begin_write().await?;
        // Lock the counter row before reading the hold, so a concurrent
        // release or sweep cannot slip between the read and the write.
        sqlx::query("UPDATE founder_seat_counter SET used = used WHERE id = 1").execute(&mut *tx).await?;
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM seat_holds WHERE id = $1")
            .bind(hold_id)
            .fetch_optional(&mut *tx)
            .await?;
        let outcome = match state.as_deref() {
            None => PaidOutcome::Unknown,
            Some("paid") => PaidOutcome::AlreadyPaid,
            Some("held") => PaidOutcome::Paid,
            Some("released") | Some("ended") | Some("refused") => {
                if take_seat(&mut tx, limit).await? {
                    PaidOutcome::Reclaimed
                } else {
                    PaidOutcome::NoSeat
                }
            }
            Some(_) => PaidOutcome::Unknown,
        };
        let new_state = match outcome {
            PaidOutcome::Paid | PaidOutcome::Reclaimed | PaidOutcome::AlreadyPaid => Some("paid"),
            PaidOutcome::NoSeat => Some("refused"),
            PaidOutcome::Unknown => None,
        };
        if let Some(new_state) = new_state {
            sqlx::query(
                "UPDATE seat_holds SET state = $2, stripe_subscription_id = COALESCE($3, stripe_subscription_id), \
                 updated_at = $4 WHERE id = $1",
            )
            .bind(hold_id)
            .bind(new_state)
            .bind(subscription_id)
            .bind(now_millis())
            .execute(&mut *tx)
            .await?;
            notify_seats(self, &mut tx).await?;
        }
        tx.commit().await?;
        Ok(outcome)
    }

    /// A founder subscription ended: its seat is free again.
    pub async fn end_founder_seat(&self, subscription_id: &str) -> Result<bool, BillingError> {
        let hold_id: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM seat_holds WHERE stripe_subscription_id = $1 AND state = 'paid'",
        )
        .bind(subscription_id)
        .fetch_optional(self.pool())
        .await?;
        match hold_id {
            Some(id) => self.move_hold(id, "paid", "ended", -1).await,
            None => Ok(false),
        }
    }

    /// Holds older than `cutoff` (Unix ms) still waiting on their checkout.
    pub async fn stale_holds(&self, cutoff: i64) -> Result<Vec<SeatHold>, BillingError> {
        let rows = sqlx::query(&format!(
            "SELECT {HOLD_COLUMNS} FROM seat_holds WHERE state = 'held' AND created_at < $1 ORDER BY id LIMIT 200"
        ))
        .bind(cutoff)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.iter().map(hold).collect::<Result<_, _>>()?)
    }

    pub async fn stripe_customer(&self, account_id: i64) -> Result<Option<String>, BillingError> {
        Ok(sqlx::query_scalar("SELECT customer_id FROM stripe_customers WHERE account_id = $1")
            .bind(account_id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Remembers the account's Stripe customer; the first one stored wins
    /// and is answered.
    ///
    /// The conflict clause names no column on purpose: parallel first
    /// checkouts of one reader store the same customer (one idempotency
    /// key), and on PostgreSQL an insert racing another one that is not yet
    /// committed trips over *every* unique index, not only the one named
    /// (`customer_id` is unique too): with `ON CONFLICT (account_id)` the
    /// loser failed with a unique violation instead of doing nothing.
    pub async fn save_stripe_customer(
        &self,
        account_id: i64,
        customer_id: &str,
    ) -> Result<String, BillingError> {
        sqlx::query(
            "INSERT INTO stripe_customers (account_id, customer_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(account_id)
        .bind(customer_id)
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        // Nothing stored for the account means the customer is another
        // account's: never hand it on.
        self.stripe_customer(account_id).await?.ok_or_else(|| {
            BillingError::Invalid(format!("Stripe customer {customer_id} already belongs to another account"))
        })
    }

    pub async fn account_for_customer(&self, customer_id: &str) -> Result<Option<i64>, BillingError> {
        Ok(sqlx::query_scalar("SELECT account_id FROM stripe_customers WHERE customer_id = $1")
            .bind(customer_id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Stores a subscription as Stripe's latest object has it.
    pub async fn upsert_stripe_subscription(&self, sub: &StripeSubscription) -> Result<(), BillingError> {
        let now = now_millis();
        sqlx::query(
            "INSERT INTO subscriptions (account_id, source, tier, status, stripe_subscription_id, stripe_customer_id, \
             price_id, current_period_end, cancel_at_period_end, stripe_created, created_at, updated_at) \
             VALUES ($1, 'stripe', $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) \
             ON CONFLICT (stripe_subscription_id) DO UPDATE SET tier = excluded.tier, status = excluded.status, \
             price_id = excluded.price_id, current_period_end = excluded.current_period_end, \
             cancel_at_period_end = excluded.cancel_at_period_end, updated_at = excluded.updated_at",
        )
        .bind(sub.account_id)
        .bind(sub.tier.as_str())
        .bind(&sub.status)
        .bind(&sub.id)
        .bind(&sub.customer_id)
        .bind(sub.price_id.as_deref())
        .bind(sub.current_period_end)
        .bind(i64::from(sub.cancel_at_period_end))
        .bind(sub.created)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The account's current Stripe subscription id (for cancelling).
    pub async fn live_stripe_subscription(&self, account_id: i64) -> Result<Option<String>, BillingError> {
        Ok(sqlx::query_scalar(
            "SELECT stripe_subscription_id FROM subscriptions WHERE account_id = $1 AND source = 'stripe' \
             AND status IN ('active', 'trialing', 'past_due') ORDER BY updated_at DESC LIMIT 1",
        )
        .bind(account_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Whether Stripe event `id` was handled before.
    pub async fn stripe_event_seen(&self, id: &str) -> Result<bool, BillingError> {
        let seen: Option<String> = sqlx::query_scalar("SELECT id FROM stripe_events WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(seen.is_some())
    }

    /// Records a handled event; false when another delivery recorded it first.
    pub async fn record_stripe_event(&self, id: &str, kind: &str) -> Result<bool, BillingError> {
        let done = sqlx::query(
            "INSERT INTO stripe_events (id, type, received_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(kind)
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Adds `email` to the founder waitlist; false when it was there.
    pub async fn join_waitlist(&self, email: &str) -> Result<bool, BillingError> {
        let email = crate::accounts::normalize_email(email)?;
        let done = sqlx::query(
            "INSERT INTO founder_waitlist (email, created_at) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING",
        )
        .bind(email)
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn waitlist_count(&self) -> Result<i64, BillingError> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM founder_waitlist").fetch_one(self.pool()).await?)
    }

    /// The paid seat of a founder subscription, if it has one.
    pub async fn paid_hold_of_subscription(
        &self,
        subscription_id: &str,
    ) -> Result<Option<SeatHold>, BillingError> {
        let row = sqlx::query(&format!(
            "SELECT {HOLD_COLUMNS} FROM seat_holds WHERE stripe_subscription_id = $1 AND state = 'paid'"
        ))
        .bind(subscription_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.as_ref().map(hold).transpose()?)
    }

    /// Takes a seat for a founder subscription that has none (one that
    /// became active again after its seat was freed, or that was not made
    /// by our checkout); false when no seat is left.
    pub async fn claim_seat_for_subscription(
        &self,
        account_id: i64,
        subscription_id: &str,
        limit: u32,
    ) -> Result<bool, BillingError> {
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        if !take_seat(&mut tx, limit).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO seat_holds (account_id, state, stripe_subscription_id, created_at, expires_at, updated_at) \
             VALUES ($1, 'paid', $2, $3, $3, $3)",
        )
        .bind(account_id)
        .bind(subscription_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        notify_seats(self, &mut tx).await?;
        tx.commit().await?;
        Ok(true)
    }
}
