//! The loops dashboard's server side: the data of `/loops` and
//! `/loops/{loop}` (read before the page renders, for a signed-in member
//! of the loop's team), their JSON for the live pages (`/loops.json`,
//! `/loops/{loop}/view.json`), their live streams (`/loops.stream`,
//! `/loops/{loop}/events`) and the loop page's STOP and STEER form. The
//! pages themselves are the app's (`app::pages::loops`).
//!
//! # Invariants
//!
//! - A reader sees only the loops of their own teams: every lookup starts
//!   from the reader's memberships, and a loop of another team answers as
//!   one that does not exist (404).
//! - A page and its stream never miss a round between them: the page's
//!   data carries the newest round id read before anything else
//!   (`last_event_id`), and the stream resumes after it (see `stream`).
//!
//! The dashboard sits above `accounts` (who is asking), `loops` (what was
//! stored) and `web` (the request state); nothing below imports it.

mod control;
mod stream;
mod views;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use thiserror::Error;

use crate::accounts::{Account, AccountsError};
use crate::loops::LoopsError;
use crate::web::AppState;

/// Why the dashboard could not read what a page shows. Never shown to a
/// reader: handlers log it and answer with a generic message.
#[derive(Debug, Error)]
pub enum DashboardError {
    #[error("reading the loops: {0}")]
    Loops(#[from] LoopsError),
    #[error("reading the reader's teams: {0}")]
    Accounts(#[from] AccountsError),
}

/// The dashboard's routes: the loop page's form, the JSON of both pages
/// and their streams (the pages are Leptos routes of the app).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/loops/{loop}", post(control::loop_control))
        .route("/loops/{loop}/events", get(stream::loop_events))
        .route("/loops/{loop}/view.json", get(stream::loop_view_json))
        .route("/loops.json", get(stream::list_view_json))
        .route("/loops.stream", get(stream::list_events))
}

/// Loads the data of `/loops` and `/loops/{loop}` into the request's
/// extensions for a GET by a signed-in reader (after `accounts` resolved
/// who is asking), so the page renders and hydrates from it. A loop that
/// is not the reader's loads nothing, and the page answers 404.
pub async fn page_data(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let wanted = path == "/loops" || path.strip_prefix("/loops/").is_some_and(|name| !name.contains('/'));
    let reader = request.extensions().get::<Account>().cloned();
    if let (true, true, Some(account)) =
        (wanted, matches!(*request.method(), Method::GET | Method::HEAD), reader)
    {
        let (path, query) = (path.to_string(), request.uri().query().map(str::to_string));
        if let Err(error) = load(&state, &path, query.as_deref(), &account, request.extensions_mut()).await {
            tracing::error!(%error, %path, "could not load a loops page");
        }
    }
    next.run(request).await
}

async fn load(
    state: &AppState,
    path: &str,
    query: Option<&str>,
    account: &Account,
    extensions: &mut axum::http::Extensions,
) -> Result<(), DashboardError> {
    if path == "/loops" {
        extensions.insert(views::loops_view(state, account).await?);
    } else if let Some(name) = path.strip_prefix("/loops/") {
        // Loop names may hold any printable character but `/`: the page's
        // links percent-encode them.
        let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
        let pairs = query
            .and_then(|query| serde_urlencoded::from_str::<Vec<(String, String)>>(query).ok())
            .unwrap_or_default();
        let param = |name: &str| pairs.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
        let number = |name: &str| param(name).and_then(|value| value.parse().ok());
        let picks = views::LoopPicks {
            run: param("run"),
            diff: (number("a"), number("b")),
            before: number("before"),
            round: number("round"),
        };
        if let Some(view) = views::loop_view(state, account, param("team").as_deref(), &name, &picks).await? {
            extensions.insert(view);
        }
    }
    Ok(())
}
