//! Subscribing and unsubscribing over HTTP: `POST /subscribe` mails a
//! confirmation link (the same answer whether or not the address is known),
//! `POST /subscribe/confirm` redeems it, and `POST /unsubscribe/{token}`
//! takes the address off the list without sign-in or cookie (RFC 8058's
//! one-click POST). The GET of each link is a page with a button, so a mail
//! scanner that opens links changes nothing.

use std::time::Instant;

use app::pages::subscribe::{ConfirmNotice, SubscribeNotice, UnsubscribeView};
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::Router;
use leptos::prelude::provide_context;
use serde::Deserialize;

use super::SubscribeOutcome;
use crate::accounts::normalize_email;
use crate::web::rate_limit::{client_ip, retry_after_seconds};
use crate::web::{render_page, AppState};

/// The largest form read: an address and a token fit many times.
const FORM_MAX_BYTES: usize = 4 * 1024;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/subscribe", post(subscribe))
        .route("/subscribe/confirm", post(confirm))
        .route("/unsubscribe/{token}", post(unsubscribe))
}

#[derive(Debug, Default, Deserialize)]
struct SubscribeForm {
    email: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct TokenForm {
    token: Option<String>,
}

async fn read_form<T: serde::de::DeserializeOwned + Default>(body: Body) -> Result<T, String> {
    let bytes = axum::body::to_bytes(body, FORM_MAX_BYTES)
        .await
        .map_err(|_| "The form is larger than a subscribe form can be.".to_string())?;
    serde_urlencoded::from_bytes(&bytes).map_err(|error| format!("The form could not be read: {error}."))
}

async fn subscribe(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let refuse = |status: StatusCode, notice: SubscribeNotice, retry: Option<u64>| {
        let state = state.clone();
        let parts = parts.clone();
        async move {
            let mut response =
                render_page(&state, parts, status, move || provide_context(notice.clone())).await;
            if let Some(seconds) = retry.and_then(|seconds| HeaderValue::from_str(&seconds.to_string()).ok())
            {
                response.headers_mut().insert(header::RETRY_AFTER, seconds);
            }
            response
        }
    };
    let notice = |email: String, error: &str| SubscribeNotice { email, error: Some(error.to_string()) };
    if let Err(wait) = state.subscribe_limiter.check(client_ip(&parts.extensions), Instant::now()) {
        let error = "Too many subscribe requests from your address: wait a minute and try again.";
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            notice(String::new(), error),
            Some(retry_after_seconds(wait)),
        )
        .await;
    }
    let form: SubscribeForm = match read_form(body).await {
        Ok(form) => form,
        Err(error) => return refuse(StatusCode::BAD_REQUEST, notice(String::new(), &error), None).await,
    };
    let typed = form.email.unwrap_or_default();
    let Ok(email) = normalize_email(&typed) else {
        let error = "email: enter an address such as ada@example.com";
        return refuse(StatusCode::BAD_REQUEST, notice(typed.chars().take(254).collect(), error), None).await;
    };
    if let Err(wait) = state.subscribe_email_limiter.check(email.clone(), Instant::now()) {
        let error = "Several confirmation links were sent to this address just now: use the latest, or wait and try again.";
        return refuse(StatusCode::TOO_MANY_REQUESTS, notice(email, error), Some(retry_after_seconds(wait)))
            .await;
    }
    match state.store.request_subscription(&email, "form").await {
        Ok(outcome) => mail_outcome(&state, outcome).await,
        Err(error) => tracing::error!(%error, "could not store a subscribe request"),
    }
    // The same answer whatever happened: nobody learns whether an address
    // is on the list.
    Redirect::to("/subscribe?sent=1").into_response()
}

/// Mails what a subscribe request needs: the confirmation link, or a note
/// that the address is already on the list.
pub async fn mail_outcome(state: &AppState, outcome: SubscribeOutcome) {
    let (email, subject, body) = match outcome {
        SubscribeOutcome::Confirm { email, token } => {
            let link = format!("{}/subscribe/confirm?token={token}", state.config.public_url);
            let body = format!(
                "Someone (hopefully you) asked for the Fixed Point newsletter at this address.\n\n\
                 Open this link and press the button to confirm; it works for 7 days:\n{link}\n\n\
                 If it was not you, ignore this message: without confirmation nothing is sent.\n"
            );
            (email, "Confirm your Fixed Point subscription", body)
        }
        SubscribeOutcome::AlreadyConfirmed { email } => {
            let body = format!(
                "Someone (hopefully you) asked for the Fixed Point newsletter at this address.\n\n\
                 It is already subscribed: nothing to do. Every issue carries a link to unsubscribe.\n\
                 {}/issues\n",
                state.config.public_url
            );
            (email, "You already receive Fixed Point", body)
        }
        SubscribeOutcome::Bounced => return,
    };
    if let Err(error) = state.mailer.send(&state.store, &email, subject, &body).await {
        tracing::error!(%error, "could not queue a subscription mail");
    }
}

async fn confirm(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let form: TokenForm = read_form(body).await.unwrap_or_default();
    let token = form.token.unwrap_or_default();
    let (status, notice) = match state.store.confirm_subscription(token.trim()).await {
        Ok(Some(email)) => {
            tracing::info!("a subscription was confirmed");
            (StatusCode::OK, ConfirmNotice { confirmed: Some(email), error: None })
        }
        Ok(None) => (
            StatusCode::BAD_REQUEST,
            ConfirmNotice {
                confirmed: None,
                error: Some(
                    "token: this confirmation link has been used, has expired or is not complete. Subscribe again for a new one."
                        .to_string(),
                ),
            },
        ),
        Err(error) => {
            tracing::error!(%error, "could not confirm a subscription");
            return (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong; nothing was changed. Try again.")
                .into_response();
        }
    };
    render_page(&state, parts, status, move || provide_context(notice.clone())).await
}

/// `POST /unsubscribe/{token}`: the token is the proof, so no session and
/// no cookie are needed (mail providers post here for the one-click button).
async fn unsubscribe(State(state): State<AppState>, Path(token): Path<String>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let (status, view) = match state.store.unsubscribe_by_token(&token).await {
        Ok(Some(email)) => {
            tracing::info!("a reader unsubscribed by their link");
            (StatusCode::OK, UnsubscribeView { email: Some(email), done: true })
        }
        Ok(None) => (StatusCode::NOT_FOUND, UnsubscribeView { email: None, done: false }),
        Err(error) => {
            tracing::error!(%error, "could not unsubscribe");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong; nothing was changed. Try again.",
            )
                .into_response();
        }
    };
    let mut parts = parts;
    parts.extensions.insert(view.clone());
    render_page(&state, parts, status, move || provide_context(view.clone())).await
}
