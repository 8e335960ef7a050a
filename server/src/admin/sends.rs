//! The operator's sends on `/admin`: the button that queues an issue
//! (`POST /admin/send`, the same as `fixedpoint issues send`) and the live
//! counts (`GET /admin/sends.json`). Operators only.

use app::pages::admin::AdminSend;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use leptos::prelude::provide_context;
use serde::Deserialize;

use super::admin_view;
use crate::newsletter::DeliveryError;
use crate::web::{render_page, AppState};

pub fn router() -> Router<AppState> {
    Router::new().route("/admin/send", post(send)).route("/admin/sends.json", get(sends_json))
}

/// Every send's counts, newest first.
pub async fn admin_sends(state: &AppState) -> Result<Vec<AdminSend>, DeliveryError> {
    Ok(state
        .store
        .send_progress(50)
        .await?
        .into_iter()
        .map(|send| AdminSend {
            slug: send.slug,
            title: send.title,
            queued: send.counts.queued,
            sent: send.counts.sent,
            failed: send.counts.failed,
            bounced: send.counts.bounced,
            rate_per_second: send.rate_per_second,
            queued_at: send.queued_at,
        })
        .collect())
}

/// Refuses anyone but an operator: 401 signed out, 403 for other readers.
fn operator(request: &Request) -> Result<(), Box<Response>> {
    match crate::accounts::web::signed_in(request.extensions()) {
        None => Err(Box::new((StatusCode::UNAUTHORIZED, "Sign in as an operator.").into_response())),
        Some(account) if !account.is_operator => {
            Err(Box::new((StatusCode::FORBIDDEN, "This is for the site's operators.").into_response()))
        }
        Some(_) => Ok(()),
    }
}

async fn sends_json(State(state): State<AppState>, request: Request) -> Response {
    if let Err(refused) = operator(&request) {
        return *refused;
    }
    match admin_sends(&state).await {
        Ok(sends) => ([(header::CACHE_CONTROL, "private, no-store")], Json(sends)).into_response(),
        Err(error) => {
            tracing::error!(%error, "could not read the sends");
            (StatusCode::INTERNAL_SERVER_ERROR, "The sends could not be read.").into_response()
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct SendForm {
    slug: Option<String>,
    dry_run: Option<String>,
}

async fn send(State(state): State<AppState>, request: Request) -> Response {
    if let Err(refused) = operator(&request) {
        return *refused;
    }
    let (parts, body) = request.into_parts();
    let form: SendForm = match axum::body::to_bytes(body, 4096).await {
        Ok(bytes) => serde_urlencoded::from_bytes(&bytes).unwrap_or_default(),
        Err(_) => SendForm::default(),
    };
    let slug = form.slug.unwrap_or_default();
    let dry_run = form.dry_run.is_some();
    let (status, notice) = match state.store.queue_send(slug.trim(), dry_run).await {
        Ok(queued) => (
            StatusCode::OK,
            format!(
                "{} {} for {} recipients: {} free, {} Pro, {} Founder.",
                if dry_run { "Would queue" } else { "Queued" },
                queued.title,
                queued.total(),
                queued.free,
                queued.pro,
                queued.founder
            ),
        ),
        Err(DeliveryError::Store(error)) => {
            tracing::error!(%error, "could not queue a send");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong; nothing was queued. Try again.".to_string(),
            )
        }
        Err(refused) => (StatusCode::BAD_REQUEST, refused.to_string()),
    };
    let mut view = match admin_view(&state).await {
        Ok(view) => view,
        Err(error) => {
            tracing::error!(%error, "could not load the admin page");
            return (StatusCode::INTERNAL_SERVER_ERROR, notice).into_response();
        }
    };
    view.send_notice = Some(notice);
    let mut parts = parts;
    // The answer is the admin page itself, with the notice.
    parts.uri = axum::http::Uri::from_static("/admin");
    parts.extensions.insert(view.clone());
    render_page(&state, parts, status, move || provide_context(view.clone())).await
}
