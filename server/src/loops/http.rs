//! The HTTP surface of connected loops: `/api/v1/loops/{loop}/...`, all
//! authenticated with a team's loop token.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::queries::MAX_HISTORY_ROUNDS;

/// The largest `limit` the rounds API accepts (the page size of version 1's
/// first answers); larger pages are cut to [`MAX_HISTORY_ROUNDS`].
const ACCEPTED_LIMIT: u32 = 1000;
use super::wire::{validate_loop_name, Heartbeat, RoundReport, RoundSource, MAX_RUN_CHARS, MAX_STATE_CHARS};
use super::{LoopHistory, LoopsError, RoundAnswer, RoundWindow};
use crate::accounts::TokenIdentity;
use crate::config::Config;
use crate::live::LiveEvents;
use crate::store::Store;
use crate::web::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/loops/{loop}/rounds", post(post_round).get(get_rounds))
        .route("/api/v1/loops/{loop}/states/{digest}", get(get_state))
        .route("/api/v1/loops/{loop}/heartbeat", post(post_heartbeat))
}

/// The request's bearer token, or 401 when it has none.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Result<&str, LoopsError> {
    let value = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok()).unwrap_or_default();
    let mut parts = value.splitn(2, ' ');
    let scheme = parts.next().unwrap_or_default();
    let token = parts.next().unwrap_or_default().trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(LoopsError::Unauthorized);
    }
    Ok(token)
}

/// The team behind the request's bearer token, or 401.
async fn authenticate(store: &Store, headers: &HeaderMap) -> Result<TokenIdentity, LoopsError> {
    let token = bearer_token(headers)?;
    store.authenticate_loop_token(token).await?.ok_or(LoopsError::Unauthorized)
}

/// Reads the body up to `limit` bytes; a longer one is refused with 413
/// before it is read in full when it announces its length.
pub(crate) async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, LoopsError> {
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if announced.is_some_and(|length| length > limit as u64) {
        return Err(LoopsError::TooLarge { limit });
    }
    // The only way reading a body can fail here, other than the client
    // going away (which nobody will see an answer to), is the limit.
    axum::body::to_bytes(body, limit).await.map_err(|_| LoopsError::TooLarge { limit })
}

async fn post_round(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    State(live): State<LiveEvents>,
    Path(loop_name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<RoundAnswer>, LoopsError> {
    let token = bearer_token(&headers)?;
    let mut report = match read_round(&loop_name, &headers, body, config.ingest_max_bytes).await {
        Ok(report) => report,
        Err(error) => {
            // A stranger learns nothing about the request, not even what
            // is wrong with its body: the token is checked first.
            authenticate(&store, &headers).await?;
            return Err(error);
        }
    };
    // The connector speaks this API too; its user agent says which it was.
    if headers
        .get(header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|agent| agent.starts_with(crate::connector::USER_AGENT_PREFIX))
    {
        report.source = RoundSource::Connector;
    }
    // The token is checked by the round's first statement, in its
    // transaction.
    let ingested = store.ingest_round_with_token(token, &loop_name, &report).await?;
    if let Some(event) = ingested.event {
        live.publish(event);
    }
    Ok(Json(ingested.answer))
}

/// The round a request sends to the loop `loop_name`, validated.
async fn read_round(
    loop_name: &str,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<RoundReport, LoopsError> {
    validate_loop_name(loop_name)?;
    let bytes = read_body(headers, body, limit).await?;
    RoundReport::from_json(&bytes)
}

async fn get_rounds(
    State(store): State<Store>,
    Path(loop_name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Json<HistoryAnswer>, LoopsError> {
    let identity = authenticate(&store, &headers).await?;
    validate_loop_name(&loop_name)?;
    let run = params.get("run").map(String::as_str).filter(|run| !run.is_empty());
    if run.is_some_and(|run| run.chars().count() > MAX_RUN_CHARS) {
        return Err(LoopsError::invalid(
            Some("run"),
            format!("run must be at most {MAX_RUN_CHARS} characters"),
        ));
    }
    let number = |name: &'static str| -> Result<Option<u32>, LoopsError> {
        params
            .get(name)
            .map(|text| {
                text.parse::<u32>().map_err(|_| {
                    LoopsError::invalid(Some(name), format!("{name} must be a non-negative integer"))
                })
            })
            .transpose()
    };
    let window = match (number("after")?, number("before")?) {
        (Some(_), Some(_)) => {
            return Err(LoopsError::invalid(Some("before"), "give after or before, not both"));
        }
        (Some(after), None) => RoundWindow::After(after),
        (None, Some(before)) => RoundWindow::Before(before),
        (None, None) => RoundWindow::After(0),
    };
    // A page holds at most MAX_HISTORY_ROUNDS rounds. Clients written when
    // pages held 1,000 may still ask for up to 1,000: they get a full page
    // and the link to the next one, not an error.
    let limit = match params.get("limit") {
        None => MAX_HISTORY_ROUNDS,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|limit| (1..=ACCEPTED_LIMIT).contains(limit))
            .ok_or_else(|| {
                LoopsError::invalid(
                    Some("limit"),
                    format!("limit must be between 1 and {ACCEPTED_LIMIT} (a page holds at most {MAX_HISTORY_ROUNDS})"),
                )
            })?
            .min(MAX_HISTORY_ROUNDS),
    };
    let history = store.loop_history_window(identity.team_id, &loop_name, run, window, limit).await?;
    let links = page_links(&loop_name, &history, limit);
    Ok(Json(HistoryAnswer { history, links }))
}

/// A page of a run's rounds with the addresses of the pages around it.
#[derive(Debug, serde::Serialize)]
struct HistoryAnswer {
    #[serde(flatten)]
    history: LoopHistory,
    links: PageLinks,
}

#[derive(Debug, serde::Serialize)]
struct PageLinks {
    /// The page of rounds before this one, if any.
    older: Option<String>,
    /// The page of rounds after this one, if any.
    newer: Option<String>,
}

fn page_links(loop_name: &str, history: &LoopHistory, limit: u32) -> PageLinks {
    let (Some(run), Some(page)) = (history.run.as_ref(), history.page.as_ref()) else {
        return PageLinks { older: None, newer: None };
    };
    let base = format!(
        "/api/v1/loops/{}/rounds?run={}&limit={limit}",
        app::pages::loops::path_segment(loop_name),
        app::pages::loops::path_segment(&run.id)
    );
    PageLinks {
        older: page.first.filter(|_| page.has_older).map(|first| format!("{base}&before={first}")),
        newer: page.last.filter(|_| page.has_newer).map(|last| format!("{base}&after={last}")),
    }
}

async fn get_state(
    State(store): State<Store>,
    Path((loop_name, digest)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<Value>, LoopsError> {
    let identity = authenticate(&store, &headers).await?;
    validate_loop_name(&loop_name)?;
    if digest.is_empty() || digest.chars().count() > MAX_STATE_CHARS {
        return Err(LoopsError::invalid(
            Some("state"),
            format!("state must be 1 to {MAX_STATE_CHARS} characters"),
        ));
    }
    let rounds = store.state_sightings(identity.team_id, &loop_name, &digest).await?;
    Ok(Json(json!({"loop": loop_name, "state": digest, "seen": rounds.len(), "rounds": rounds})))
}

async fn post_heartbeat(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    Path(loop_name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, LoopsError> {
    let identity = authenticate(&store, &headers).await?;
    validate_loop_name(&loop_name)?;
    let bytes = read_body(&headers, body, config.ingest_max_bytes).await?;
    let heartbeat = Heartbeat::from_json(&bytes)?;
    let run = store.heartbeat(identity.team_id, &loop_name, &heartbeat).await?;
    Ok(Json(json!({"loop": loop_name, "run": run})))
}
