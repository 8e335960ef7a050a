//! Starting a Stripe Checkout Session for a signed-in reader.
//!
//! Founder: a seat is held in the database *before* the session is created
//! (one guarded update; see `store.rs`), the session carries the hold's id
//! and expires in 30 minutes, and a failure to create it gives the seat
//! back at once. After that only Stripe's word (an expired event, or the
//! sweeper expiring the session through the API) releases the hold.
//!
//! Stripe sends the reader back to `/checkout/thanks`, with the page they
//! were reading as `next` (a path of this site, checked by
//! [`app::return_to::same_site_path`] before it gets here). That page only
//! reads the reader's tier: the tier itself comes from Stripe's webhooks.

use app::return_to::with_next;
use sha2::{Digest, Sha256};

use super::{BillingError, Plan, CHECKOUT_TTL_SECONDS};
use crate::accounts::Account;
use crate::store::now_millis;
use crate::stripe_api::{CheckoutRequest, StripeApi};
use crate::web::AppState;

/// Creates (or, for a founder checkout already in progress, reuses) a
/// Checkout Session; answers its URL. `next` is the page to offer after
/// paying, already checked to be a path of this site.
pub async fn start(
    state: &AppState,
    account: &Account,
    plan: Plan,
    next: Option<&str>,
) -> Result<String, BillingError> {
    let (Some(config), Some(api)) = (state.config.stripe.as_ref(), state.stripe.as_ref()) else {
        return Err(BillingError::NotConfigured);
    };
    if state.store.live_stripe_subscription(account.id).await?.is_some() {
        return Err(BillingError::AlreadySubscribed);
    }
    let customer = customer_for(state, api, account).await?;
    let public = &state.config.public_url;
    // Everything that goes to Stripe under one idempotency key must be the
    // same on a repeat, so the expiry is counted from the key's minute.
    let minute = now_millis() / 60_000;
    let mut request = CheckoutRequest {
        customer,
        price: plan.price(config).to_string(),
        account_id: account.id,
        plan: plan.as_str(),
        hold_id: None,
        success_url: with_next(&format!("{public}/checkout/thanks"), next),
        cancel_url: with_next(&format!("{public}/pricing?checkout=cancelled"), next),
        // Stripe wants at least 30 minutes from now: from the start of this
        // minute, 31.5 minutes is always 30.5 to 31.5 from now.
        expires_at: minute * 60 + CHECKOUT_TTL_SECONDS + 90,
        // Double submits within the same minute get the same session; a
        // checkout started from another page is another request to Stripe.
        idempotency_key: format!(
            "checkout-{}-{}-{minute}-{}",
            account.id,
            plan.as_str(),
            &hex::encode(Sha256::digest(next.unwrap_or_default()))[..16]
        ),
    };
    if plan != Plan::FounderYearly {
        return Ok(api.create_checkout(&request).await?.url);
    }

    // One founder checkout per reader at a time: a second click reuses it.
    if let Some(hold) = state.store.open_hold(account.id).await? {
        if let Some(url) = hold.checkout_url {
            return Ok(url);
        }
    }
    let hold = match state
        .store
        .hold_founder_seat(account.id, state.config.founder_seats, (CHECKOUT_TTL_SECONDS + 120) * 1000)
        .await
    {
        Ok(hold) => hold,
        // A parallel click of the same reader is creating the session: wait
        // for it and answer the same checkout.
        Err(BillingError::CheckoutInProgress) => {
            for _ in 0..20 {
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                if let Some(url) = state.store.open_hold(account.id).await?.and_then(|hold| hold.checkout_url)
                {
                    return Ok(url);
                }
            }
            return Err(BillingError::CheckoutInProgress);
        }
        Err(error) => return Err(error),
    };
    request.hold_id = Some(hold.id);
    request.idempotency_key = format!("checkout-hold-{}", hold.id);
    match api.create_checkout(&request).await {
        Ok(session) => {
            state.store.attach_checkout(hold.id, &session.id, &session.url).await?;
            state.founders.refresh(&state.store, state.config.founder_seats).await;
            Ok(session.url)
        }
        Err(error) => {
            // No session exists: nothing can complete this hold.
            if let Err(release) = state.store.release_hold(hold.id).await {
                tracing::error!(%release, hold = hold.id, "could not release the seat of a failed checkout");
            }
            state.founders.refresh(&state.store, state.config.founder_seats).await;
            Err(error.into())
        }
    }
}

/// The account's Stripe customer, created once (the idempotency key makes
/// concurrent first checkouts share one customer).
async fn customer_for(state: &AppState, api: &StripeApi, account: &Account) -> Result<String, BillingError> {
    if let Some(customer) = state.store.stripe_customer(account.id).await? {
        return Ok(customer);
    }
    let customer = api.create_customer(account.id, &account.email).await?;
    state.store.save_stripe_customer(account.id, &customer).await
}
