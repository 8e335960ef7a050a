//! `POST /stripe/webhook`: Stripe's signed events.
//!
//! The raw body is verified before it is parsed. An event id handled before
//! changes nothing. Events may arrive late, twice or out of order, so none
//! is applied as a delta: a subscription event makes us fetch the
//! subscription's current object from Stripe and store that, and seat
//! holds only move along guarded transitions (held to paid, held to
//! released), which a stale event cannot undo. A failure to process
//! answers 500 without recording the id, so Stripe delivers it again; an
//! event about a subscription Stripe answers 404 for is no failure (no
//! retry would change the answer): it is logged and acknowledged.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{status_entitles, tier_of_price, BillingError, PaidOutcome, StripeSubscription};
use crate::newsletter::Tier;
use crate::signature;
use crate::stored_text::{self, limits};
use crate::stripe_api::StripeApi;
use crate::web::AppState;

/// Stripe's events are a few kilobytes; anything past this is not one.
pub const MAX_EVENT_BYTES: usize = 256 * 1024;

/// What the handlers read of an event's object, as JSON pointers.
const READ_FIELDS: [&str; 6] = [
    "/data/object/id",
    "/data/object/customer",
    "/data/object/subscription",
    "/data/object/client_reference_id",
    "/data/object/metadata",
    "/data/object/parent/subscription_details/subscription",
];

pub async fn receive(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (Some(config), Some(api)) = (state.config.stripe.as_ref(), state.stripe.as_ref()) else {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": "payments are not configured"})))
            .into_response();
    };
    if body.len() > MAX_EVENT_BYTES {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, "the body is larger than any Stripe event");
    }
    let header = headers.get("stripe-signature").and_then(|value| value.to_str().ok());
    let now = crate::store::now_millis() / 1000;
    if let Err(problem) = signature::verify(header, &body, &config.webhook_secret, now) {
        tracing::warn!(%problem, "refused a webhook");
        return refuse(StatusCode::BAD_REQUEST, &problem.to_string());
    }
    let event = match crate::web::json::strict_json(&body) {
        Ok(event) => event,
        Err(error) if error.is_data() => return refuse(StatusCode::BAD_REQUEST, &error.to_string()),
        Err(_) => return refuse(StatusCode::BAD_REQUEST, "the body is not JSON"),
    };
    let (Some(id), Some(kind)) = (event["id"].as_str(), event["type"].as_str()) else {
        return refuse(StatusCode::BAD_REQUEST, "id and type: required");
    };
    // The stored-text rule, before any of it reaches the database: the id
    // and type are one line, and what the handlers read of the object (its
    // ids and metadata) holds no NUL (PostgreSQL answered 500 to one, and
    // Stripe retried it for three days). Text nobody reads is not checked.
    let checked = stored_text::check("id", id, limits::STRIPE_ID)
        .and_then(|()| stored_text::check("type", kind, limits::STRIPE_ID))
        .and_then(|()| {
            READ_FIELDS.iter().try_for_each(|pointer| match event.pointer(pointer) {
                Some(value) => {
                    stored_text::check_json(&pointer[1..].replace('/', "."), value, limits::STRIPE_TEXT)
                }
                None => Ok(()),
            })
        });
    if let Err(problem) = checked {
        tracing::warn!(%problem, "refused a signed webhook");
        return refuse(StatusCode::BAD_REQUEST, &problem.to_string());
    }
    match state.store.stripe_event_seen(id).await {
        Ok(true) => {
            return (StatusCode::OK, Json(json!({"received": true, "duplicate": true}))).into_response()
        }
        Ok(false) => {}
        Err(error) => return failed(id, kind, &error),
    }
    let object = &event["data"]["object"];
    if let Err(error) = handle(&state, api, kind, object).await {
        return failed(id, kind, &error);
    }
    if let Err(error) = state.store.record_stripe_event(id, kind).await {
        return failed(id, kind, &error);
    }
    state.founders.refresh(&state.store, state.config.founder_seats).await;
    (StatusCode::OK, Json(json!({"received": true}))).into_response()
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

fn failed(id: &str, kind: &str, error: &BillingError) -> Response {
    tracing::error!(%error, event = id, kind, "could not process a Stripe event; Stripe will retry");
    (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": "not processed; retry"}))).into_response()
}

/// A string field, or the `id` of an expanded object in that field.
fn id_of(value: &Value) -> Option<&str> {
    value.as_str().or_else(|| value["id"].as_str())
}

async fn handle(state: &AppState, api: &StripeApi, kind: &str, object: &Value) -> Result<(), BillingError> {
    match kind {
        "checkout.session.completed" => checkout_completed(state, api, object).await,
        "checkout.session.expired" => {
            let Some(session) = object["id"].as_str() else { return Ok(()) };
            if let Some(hold) = state.store.hold_by_session(session).await? {
                if state.store.release_hold(hold.id).await? {
                    tracing::info!(hold = hold.id, session, "founder seat released: the checkout expired");
                }
            }
            Ok(())
        }
        "customer.subscription.created"
        | "customer.subscription.updated"
        | "customer.subscription.deleted" => match object["id"].as_str() {
            Some(subscription) => sync_subscription(state, api, subscription).await,
            None => Ok(()),
        },
        "invoice.paid" | "invoice.payment_succeeded" | "invoice.payment_failed" => {
            // The subscription of an invoice sits at the top level in older
            // API versions and under parent.subscription_details in newer.
            let subscription = id_of(&object["subscription"])
                .or_else(|| id_of(&object["parent"]["subscription_details"]["subscription"]));
            match subscription {
                Some(subscription) => sync_subscription(state, api, subscription).await,
                None => Ok(()),
            }
        }
        // Everything else is acknowledged and ignored.
        _ => Ok(()),
    }
}

async fn checkout_completed(state: &AppState, api: &StripeApi, session: &Value) -> Result<(), BillingError> {
    let Some(session_id) = session["id"].as_str() else { return Ok(()) };
    let account_id = session["metadata"]["account_id"]
        .as_str()
        .or_else(|| session["client_reference_id"].as_str())
        .and_then(|id| id.parse::<i64>().ok());
    if let (Some(account_id), Some(customer)) = (account_id, id_of(&session["customer"])) {
        state.store.save_stripe_customer(account_id, customer).await?;
    }
    let subscription = id_of(&session["subscription"]);
    let hold = match state.store.hold_by_session(session_id).await? {
        Some(hold) => Some(hold),
        None => match session["metadata"]["hold_id"].as_str().and_then(|id| id.parse::<i64>().ok()) {
            Some(id) => state.store.hold_by_id(id).await?,
            None => None,
        },
    };
    if let Some(hold) = hold {
        match state.store.mark_hold_paid(hold.id, subscription, state.config.founder_seats).await? {
            PaidOutcome::NoSeat => {
                // Paid after its hold was given back, with every seat taken
                // since: the 101st seat is never sold. Cancel at once (the
                // operator refunds; the log says whom).
                tracing::error!(
                    hold = hold.id,
                    session = session_id,
                    account = hold.account_id,
                    "a founder checkout completed after its seat was released and none is left: cancelling its subscription; refund it"
                );
                if let Some(subscription) = subscription {
                    api.cancel_now(subscription).await?;
                }
            }
            outcome => tracing::info!(hold = hold.id, ?outcome, "founder checkout completed"),
        }
    }
    if let Some(subscription) = subscription {
        sync_subscription(state, api, subscription).await?;
    }
    Ok(())
}

/// Fetches the subscription's current object from Stripe and stores it:
/// whatever order events came in, the stored state is Stripe's latest.
pub async fn sync_subscription(
    state: &AppState,
    api: &StripeApi,
    subscription_id: &str,
) -> Result<(), BillingError> {
    let Some(config) = state.config.stripe.as_ref() else { return Err(BillingError::NotConfigured) };
    let Some(current) = api.subscription(subscription_id).await? else {
        // Acknowledged, not failed: Stripe would retry a 500 for three days,
        // and its answer would stay the same.
        tracing::warn!(
            subscription = subscription_id,
            "an event about a subscription Stripe does not know: ignored"
        );
        return Ok(());
    };
    let Some(tier) = current.price_id.as_deref().and_then(|price| tier_of_price(config, price)) else {
        tracing::warn!(subscription = subscription_id, price = ?current.price_id, "a subscription to a price that is not one of our plans: ignored");
        return Ok(());
    };
    let account_id = match current.metadata_account_id {
        Some(id) => Some(id),
        None => state.store.account_for_customer(&current.customer_id).await?,
    };
    let Some(account_id) = account_id else {
        tracing::warn!(subscription = subscription_id, customer = %current.customer_id, "a subscription of a customer we do not know: ignored");
        return Ok(());
    };
    let limit = state.config.founder_seats;
    let mut status = current.status.clone();
    if tier == Tier::Founder && status_entitles(&current.status) {
        // An entitled founder subscription must hold a seat. Ours carry
        // their hold (which may not be marked paid yet if this event came
        // before the checkout's); any other takes a free seat or is
        // cancelled: the seat limit is never passed.
        if state.store.paid_hold_of_subscription(&current.id).await?.is_none() {
            let seated = match current.metadata_hold_id {
                Some(hold) => !matches!(
                    state.store.mark_hold_paid(hold, Some(&current.id), limit).await?,
                    PaidOutcome::NoSeat | PaidOutcome::Unknown
                ),
                None => false,
            };
            if !seated && !state.store.claim_seat_for_subscription(account_id, &current.id, limit).await? {
                tracing::error!(
                    subscription = %current.id,
                    account = account_id,
                    "a founder subscription with no seat left: cancelling it; refund it"
                );
                api.cancel_now(&current.id).await?;
                status = "canceled".to_string();
            }
        }
    }
    state
        .store
        .upsert_stripe_subscription(&StripeSubscription {
            id: current.id.clone(),
            customer_id: current.customer_id.clone(),
            account_id,
            tier,
            status: status.clone(),
            price_id: current.price_id.clone(),
            current_period_end: current.current_period_end.map(|seconds| seconds * 1000),
            cancel_at_period_end: current.cancel_at_period_end,
            created: current.created,
        })
        .await?;
    // A seat is freed when its subscription stops being an entitled founder
    // subscription (ended, or switched to another plan).
    if (tier != Tier::Founder || !status_entitles(&status))
        && state.store.end_founder_seat(&current.id).await?
    {
        tracing::info!(subscription = %current.id, %status, "a founder subscription ended: its seat is free");
    }
    Ok(())
}
