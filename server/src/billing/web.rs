//! Billing's HTTP surface: the pricing page's data, `POST /api/v1/checkout`
//! (JSON) and `POST /checkout` (the pricing page's forms), `GET
//! /api/v1/founders` and its live stream, the waitlist and the webhook.
//! (The account page's portal and cancel buttons are the account page's,
//! `crate::account_page`.)

use std::convert::Infallible;
use std::time::Duration;

use app::pages::pricing::{FounderSeats, PricingView};
use app::return_to::{same_site_path, with_next};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::stream::Stream;
use leptos::prelude::provide_context;
use serde::Deserialize;
use serde_json::json;
use tokio_stream::wrappers::WatchStream;
use tokio_stream::StreamExt;

use super::{checkout, BillingError, FounderCount, Plan};
use crate::accounts::web::signed_in;
use crate::accounts::Account;
use crate::newsletter::ReaderAccess;
use crate::web::{render_page, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/checkout", post(checkout_api))
        .route("/checkout", post(checkout_form))
        .route("/api/v1/founders", get(founders))
        .route("/api/v1/founders/live", get(founders_live))
        .route("/pricing/waitlist", post(waitlist))
        .route("/stripe/webhook", post(super::webhook::receive))
}

fn seats(count: FounderCount) -> FounderSeats {
    FounderSeats { taken: count.taken, total: count.total, open: count.open }
}

/// Loads the pricing page's data into the request's extensions for a GET
/// (after `accounts` resolved who is asking: signed out, the reader is a
/// free one).
pub async fn page_data(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if request.uri().path() == "/pricing" && matches!(*request.method(), Method::GET | Method::HEAD) {
        let account = request.extensions().get::<Account>().cloned();
        let access = request.extensions().get::<ReaderAccess>().cloned().unwrap_or_else(ReaderAccess::free);
        match pricing_view(&state, account.as_ref(), &access, None).await {
            Ok(view) => {
                request.extensions_mut().insert(view);
            }
            Err(error) => tracing::error!(%error, path = "/pricing", "could not load the pricing page"),
        }
    }
    next.run(request).await
}

/// The pricing page's data.
pub async fn pricing_view(
    state: &AppState,
    account: Option<&Account>,
    access: &ReaderAccess,
    notice: Option<String>,
) -> Result<PricingView, BillingError> {
    let count = state.store.founder_count(state.config.founder_seats).await?;
    let has_subscription = match account {
        Some(account) => state.store.live_stripe_subscription(account.id).await?.is_some(),
        None => false,
    };
    Ok(PricingView {
        founders: seats(count),
        payments_configured: state.config.stripe.is_some(),
        signed_in: account.is_some(),
        reader_tier: access.tier.as_str().to_string(),
        has_subscription,
        notice,
        mcp_switch: mcp_switch_name(state.config.mcp).to_string(),
    })
}

/// The switch as the pages spell it.
pub fn mcp_switch_name(switch: crate::config::McpSwitch) -> &'static str {
    match switch {
        crate::config::McpSwitch::Auto => "auto",
        crate::config::McpSwitch::On => "on",
        crate::config::McpSwitch::Off => "off",
    }
}

/// A checkout request: the plan, and optionally `next`, the page of this
/// site to offer after paying (the issue the reader was reading).
#[derive(Debug, Deserialize)]
struct CheckoutBody {
    plan: Option<String>,
    next: Option<String>,
}

fn error_response(error: &BillingError) -> Response {
    let (status, code) = match error {
        BillingError::NotConfigured => (StatusCode::SERVICE_UNAVAILABLE, "payments_not_configured"),
        BillingError::SoldOut => (StatusCode::CONFLICT, "sold_out"),
        BillingError::AlreadySubscribed => (StatusCode::CONFLICT, "already_subscribed"),
        BillingError::CheckoutInProgress => (StatusCode::CONFLICT, "checkout_in_progress"),
        BillingError::BadPlan => (StatusCode::BAD_REQUEST, "bad_plan"),
        BillingError::Stripe(_) => (StatusCode::BAD_GATEWAY, "stripe_unavailable"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    };
    if status.is_server_error() {
        tracing::error!(%error, "checkout failed");
    }
    let message = match error {
        BillingError::Stripe(_) => {
            "Stripe could not start the checkout; nothing was charged. Try again.".to_string()
        }
        BillingError::Store(_) | BillingError::Accounts(_) | BillingError::Invalid(_) => {
            "Something went wrong; nothing was charged. Try again.".to_string()
        }
        other => other.to_string(),
    };
    (status, Json(json!({"error": code, "message": message}))).into_response()
}

/// `POST /api/v1/checkout` `{"plan": ...}` → `{"url": ...}`.
async fn checkout_api(State(state): State<AppState>, request: Request) -> Response {
    let Some(account) = signed_in(request.extensions()) else {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "signed_out", "message": "Sign in first."})))
            .into_response();
    };
    if state.config.stripe.is_none() {
        return error_response(&BillingError::NotConfigured);
    }
    let body = match axum::body::to_bytes(request.into_body(), 4096).await {
        Ok(body) => body,
        Err(_) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                Json(json!({"error": "too_large", "message": "body: at most 4 KiB"})),
            )
                .into_response()
        }
    };
    let parsed = crate::web::json::strict_json(&body).and_then(serde_json::from_value::<CheckoutBody>);
    let (plan, next) = match parsed {
        Ok(CheckoutBody { plan: Some(plan), next }) => match Plan::from_name(&plan) {
            Some(plan) => (plan, next),
            None => return error_response(&BillingError::BadPlan),
        },
        Ok(CheckoutBody { plan: None, .. }) => {
            return (StatusCode::BAD_REQUEST, Json(json!({"error": "bad_plan", "message": "plan: required"})))
                .into_response()
        }
        Err(error) => {
            let message = format!("the body must be JSON: {{\"plan\": ...}} ({error})");
            return (StatusCode::BAD_REQUEST, Json(json!({"error": "bad_json", "message": message})))
                .into_response();
        }
    };
    let next = match next.as_deref().map(same_site_path) {
        None => None,
        Some(Some(next)) => Some(next),
        Some(None) => {
            let message = "next: a path of this site, such as /issues/SLUG";
            return (StatusCode::BAD_REQUEST, Json(json!({"error": "bad_next", "message": message})))
                .into_response();
        }
    };
    match checkout::start(&state, &account, plan, next.as_deref()).await {
        Ok(url) => Json(json!({"url": url})).into_response(),
        Err(error) => error_response(&error),
    }
}

/// `POST /checkout` (form fields `plan` and, optionally, `next`): 303 to
/// Stripe, or the pricing page with the reason. A `next` that is not a
/// path of this site is dropped (the checkout goes on without it).
async fn checkout_form(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let form = axum::body::to_bytes(body, 4096)
        .await
        .ok()
        .and_then(|bytes| serde_urlencoded::from_bytes::<CheckoutBody>(&bytes).ok());
    let next = form.as_ref().and_then(|form| form.next.as_deref()).and_then(same_site_path);
    let Some(account) = signed_in(&parts.extensions) else {
        let back = with_next("/pricing", next.as_deref());
        return Redirect::to(&with_next("/signin", Some(&back))).into_response();
    };
    let plan = form.and_then(|form| form.plan).and_then(|plan| Plan::from_name(&plan));
    let result = match plan {
        Some(plan) => checkout::start(&state, &account, plan, next.as_deref()).await,
        None => Err(BillingError::BadPlan),
    };
    let (status, notice) = match result {
        Ok(url) => return Redirect::to(&url).into_response(),
        Err(BillingError::SoldOut) => (
            StatusCode::CONFLICT,
            "The last founder seat was just taken: the founder tier is sold out.".to_string(),
        ),
        Err(BillingError::NotConfigured) => {
            (StatusCode::SERVICE_UNAVAILABLE, "Payments are not configured on this site.".to_string())
        }
        Err(BillingError::AlreadySubscribed) => (
            StatusCode::CONFLICT,
            "You already subscribe: change or cancel it from your account page.".to_string(),
        ),
        Err(BillingError::BadPlan) => {
            (StatusCode::BAD_REQUEST, "plan: choose one of the plans below.".to_string())
        }
        Err(error) => {
            tracing::error!(%error, "checkout failed");
            (
                StatusCode::BAD_GATEWAY,
                "Stripe could not start the checkout; nothing was charged. Try again.".to_string(),
            )
        }
    };
    pricing_answer(&state, parts, Some(&account), status, notice, next.as_deref()).await
}

/// The pricing page with `notice`, as if opened at `/pricing` (with the
/// page to return to, when there is one).
async fn pricing_answer(
    state: &AppState,
    mut parts: axum::http::request::Parts,
    account: Option<&Account>,
    status: StatusCode,
    notice: String,
    next: Option<&str>,
) -> Response {
    let access = match account {
        Some(account) => state.store.reader_access(account.id).await.unwrap_or_else(|_| ReaderAccess::free()),
        None => ReaderAccess::free(),
    };
    match pricing_view(state, account, &access, Some(notice)).await {
        Ok(view) => {
            parts.uri = with_next("/pricing", next)
                .parse()
                .unwrap_or_else(|_| axum::http::Uri::from_static("/pricing"));
            parts.extensions.insert(view.clone());
            render_page(state, parts, status, move || provide_context(view.clone())).await
        }
        Err(error) => error_response(&error),
    }
}

/// `GET /api/v1/founders`: `{"taken", "total", "open"}` from the database.
/// With `Accept: text/event-stream` it is the live stream instead.
async fn founders(State(state): State<AppState>, request: Request) -> Response {
    let wants_stream = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    if wants_stream {
        return founders_live(State(state)).await.into_response();
    }
    match state.store.founder_count(state.config.founder_seats).await {
        Ok(count) => (
            [(header::CACHE_CONTROL, "no-store")],
            Json(json!({"taken": count.taken, "total": count.total, "open": count.open})),
        )
            .into_response(),
        Err(error) => error_response(&error),
    }
}

/// `GET /api/v1/founders/live`: server-sent events named `founders`, one
/// at once and one on every change, each the same JSON as the plain GET.
async fn founders_live(State(state): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let receiver = state.founders.subscribe();
    state.founders.refresh(&state.store, state.config.founder_seats).await;
    let stream = WatchStream::new(receiver).filter_map(|count| {
        count.map(|count| {
            let data = json!({"taken": count.taken, "total": count.total, "open": count.open}).to_string();
            Ok(Event::default().event("founders").data(data))
        })
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(20)))
}

#[derive(Debug, Deserialize)]
struct WaitlistForm {
    email: Option<String>,
}

async fn waitlist(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let account = signed_in(&parts.extensions);
    // Anyone may join, so it shares the per-address budget of the other
    // anonymous form that writes (sign-in links).
    let address = crate::web::rate_limit::client_ip(&parts.extensions);
    if state.signin_limiter.check(address, std::time::Instant::now()).is_err() {
        let notice = "Too many requests from your address: wait a minute and try again.".to_string();
        return pricing_answer(&state, parts, account.as_ref(), StatusCode::TOO_MANY_REQUESTS, notice, None)
            .await;
    }
    let email = axum::body::to_bytes(body, 4096)
        .await
        .ok()
        .and_then(|bytes| serde_urlencoded::from_bytes::<WaitlistForm>(&bytes).ok())
        .and_then(|form| form.email)
        .unwrap_or_default();
    let (status, notice) = match state.store.join_waitlist(&email).await {
        Ok(true) => {
            (StatusCode::OK, "You are on the founder waitlist: we write when a seat opens.".to_string())
        }
        Ok(false) => (StatusCode::OK, "You were on the waitlist already.".to_string()),
        Err(BillingError::Accounts(error)) => (StatusCode::BAD_REQUEST, format!("email: {error}")),
        Err(error) => {
            tracing::error!(%error, "waitlist failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong; try again.".to_string())
        }
    };
    pricing_answer(&state, parts, account.as_ref(), status, notice, None).await
}
