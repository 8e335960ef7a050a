//! The loop page's live channel: `GET /loops/{loop}/events?team=SLUG`
//! streams the loop's new rounds as server-sent events (`event: round`,
//! `id:` the round's row id), and `GET /loops/{loop}/view.json` answers the
//! page's data, which the browser reloads when a round arrives.
//!
//! Only members of the loop's team get either (404 otherwise, as the page).
//! A client that reconnects with `Last-Event-ID` first gets the rounds
//! stored since that id from the database, then the live ones; the
//! subscription is taken before the backlog is read and events are deduped
//! by id, so nothing falls between the two. On PostgreSQL the live channel
//! carries every instance's rounds (see [`crate::live`]); each stream keeps
//! only its loop's.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use tokio::sync::broadcast::error::RecvError;

use super::views::{loop_team, loop_view, loops_view, LoopPicks};
use crate::accounts::web::signed_in;
use crate::loops::RoundEvent;
use crate::web::AppState;

/// How many stored rounds a resuming client is sent at most; beyond that it
/// is told to reload.
const BACKLOG: i64 = 500;

#[derive(Debug, Deserialize)]
pub struct LoopQuery {
    team: Option<String>,
    a: Option<u32>,
    b: Option<u32>,
    /// A run of the loop other than the current one.
    run: Option<String>,
    /// For clients that cannot set the header (the first connection of an
    /// EventSource never can).
    last_event_id: Option<i64>,
    /// The page of rounds before this one (`view.json`).
    before: Option<u32>,
    /// A round opened on the page (`view.json`).
    round: Option<u32>,
}

/// What each `round` event carries.
#[derive(Debug, Clone, Serialize)]
pub struct LiveRound {
    pub id: i64,
    #[serde(rename = "loop")]
    pub loop_name: String,
    pub run: String,
    pub run_state: String,
    pub round: i64,
    pub state: String,
    pub class: String,
    pub advice: String,
    pub created_at: i64,
}

impl From<&RoundEvent> for LiveRound {
    fn from(event: &RoundEvent) -> Self {
        LiveRound {
            id: event.id,
            loop_name: event.loop_name.clone(),
            run: event.run.clone(),
            run_state: event.run_state.clone(),
            round: i64::from(event.round),
            state: event.state.clone(),
            class: event.class.as_str().to_string(),
            advice: event.advice.as_str().to_string(),
            created_at: event.created_at,
        }
    }
}

/// How long one stream lives: the browser reconnects at once with
/// `Last-Event-ID`, and that reconnection checks membership again, so a
/// member removed from the team stops hearing the loop within this time.
const STREAM_LIFETIME: Duration = Duration::from_secs(300);

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "No such loop.").into_response()
}

/// `GET /loops/{loop}/view.json`: the loop page's data, for its member.
pub async fn loop_view_json(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<LoopQuery>,
    request: Request,
) -> Response {
    let Some(account) = signed_in(request.extensions()) else {
        return (StatusCode::UNAUTHORIZED, "Sign in first.").into_response();
    };
    let picks = LoopPicks {
        run: query.run.clone(),
        diff: (query.a, query.b),
        before: query.before,
        round: query.round,
    };
    // (axum's `Path` has already percent-decoded the name.)
    match loop_view(&state, &account, query.team.as_deref(), &name, &picks).await {
        Ok(Some(view)) => ([("cache-control", "no-store")], Json(view)).into_response(),
        Ok(None) => not_found(),
        Err(error) => {
            tracing::error!(%error, "loading a loop view failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "The loop could not be loaded.").into_response()
        }
    }
}

/// `GET /loops/{loop}/events`: the loop's rounds as they are stored.
pub async fn loop_events(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<LoopQuery>,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let Some(account) = signed_in(request.extensions()) else {
        return (StatusCode::UNAUTHORIZED, "Sign in first.").into_response();
    };
    let team = match loop_team(&state, &account, query.team.as_deref(), &name).await {
        Ok(Some(team)) => team,
        Ok(None) => return not_found(),
        Err(error) => {
            tracing::error!(%error, "opening a loop stream failed");
            return (StatusCode::INTERNAL_SERVER_ERROR, "The stream could not be opened.").into_response();
        }
    };
    let loop_id = match state.store.loop_id(team.id, &name).await {
        Ok(Some(id)) => id,
        Ok(None) => return not_found(),
        Err(error) => {
            tracing::error!(%error, "opening a loop stream failed");
            return (StatusCode::INTERNAL_SERVER_ERROR, "The stream could not be opened.").into_response();
        }
    };
    // Subscribe first: rounds stored while the backlog is read are in both,
    // and the id filter below drops the second copy.
    let receiver = state.live.subscribe();
    let resume = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<i64>().ok())
        .or(query.last_event_id);
    let mut backlog = Vec::new();
    let mut reload = false;
    if let Some(after) = resume {
        match missed_rounds(&state, loop_id, after).await {
            Ok(rounds) => {
                reload = rounds.len() as i64 >= BACKLOG;
                backlog = rounds;
            }
            Err(error) => {
                tracing::warn!(%error, "reading a stream's backlog failed; asking the client to reload");
                reload = true;
            }
        }
    }
    let last_sent = backlog.last().map(|round| round.id).or(resume).unwrap_or(0);
    let head = stream::iter(
        reload
            .then(|| Event::default().event("reload").data("{}"))
            .into_iter()
            .chain(backlog.iter().map(round_event))
            .map(Ok::<Event, Infallible>)
            .collect::<Vec<_>>(),
    );
    let team_id = team.id;
    let live = stream::unfold((receiver, last_sent), move |(mut receiver, mut last_sent)| async move {
        loop {
            match receiver.recv().await {
                Ok(event) if event.team_id == team_id && event.loop_id == loop_id && event.id > last_sent => {
                    last_sent = event.id;
                    return Some((Ok(round_event(&LiveRound::from(&event))), (receiver, last_sent)));
                }
                Ok(_) => continue,
                // Fell behind the channel: the page reloads its data.
                Err(RecvError::Lagged(_)) => {
                    return Some((Ok(Event::default().event("reload").data("{}")), (receiver, last_sent)))
                }
                Err(RecvError::Closed) => return None,
            }
        }
    });
    let ends = tokio::time::sleep(STREAM_LIFETIME);
    Sse::new(head.chain(live).take_until(ends))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn round_event(round: &LiveRound) -> Event {
    Event::default()
        .event("round")
        .id(round.id.to_string())
        .data(serde_json::to_string(round).unwrap_or_else(|_| "{}".to_string()))
}

async fn missed_rounds(state: &AppState, loop_id: i64, after: i64) -> Result<Vec<LiveRound>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT r.id, l.name, ru.run_key, ru.state AS run_state, r.round, r.state_digest, r.class, r.advice, \
         r.created_at FROM rounds r JOIN runs ru ON ru.id = r.run_id JOIN loops l ON l.id = r.loop_id \
         WHERE r.loop_id = $1 AND r.id > $2 ORDER BY r.id LIMIT $3",
    )
    .bind(loop_id)
    .bind(after)
    .bind(BACKLOG)
    .fetch_all(state.store.pool())
    .await?;
    rows.iter()
        .map(|row| {
            Ok(LiveRound {
                id: row.try_get("id")?,
                loop_name: row.try_get("name")?,
                run: row.try_get("run_key")?,
                run_state: row.try_get("run_state")?,
                round: row.try_get("round")?,
                state: row.try_get("state_digest")?,
                class: row.try_get("class")?,
                advice: row.try_get("advice")?,
                created_at: row.try_get("created_at")?,
            })
        })
        .collect()
}

/// `GET /loops.json`: the loops list's data, for the signed-in reader (the
/// list page reloads it when a round of one of its loops arrives).
pub async fn list_view_json(State(state): State<AppState>, request: Request) -> Response {
    let Some(account) = signed_in(request.extensions()) else {
        return (StatusCode::UNAUTHORIZED, "Sign in first.").into_response();
    };
    match loops_view(&state, &account).await {
        Ok(view) => ([("cache-control", "no-store")], Json(view)).into_response(),
        Err(error) => {
            tracing::error!(%error, "loading the loops list failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "The loops could not be loaded.").into_response()
        }
    }
}

/// `GET /loops.stream`: a `round` event (the same as a loop page's) for
/// every round of a loop of the reader's teams, as they are stored. No
/// backlog: the list page reloads its data when the stream opens and on
/// each event. The teams are read when the stream opens; it lives
/// [`STREAM_LIFETIME`], so a member removed from a team stops hearing it.
pub async fn list_events(State(state): State<AppState>, request: Request) -> Response {
    let Some(account) = signed_in(request.extensions()) else {
        return (StatusCode::UNAUTHORIZED, "Sign in first.").into_response();
    };
    let teams: Vec<i64> = match state.store.memberships(account.id).await {
        Ok(memberships) => memberships.into_iter().map(|membership| membership.team.id).collect(),
        Err(error) => {
            tracing::error!(%error, "opening the loops stream failed");
            return (StatusCode::INTERNAL_SERVER_ERROR, "The stream could not be opened.").into_response();
        }
    };
    let receiver = state.live.subscribe();
    // The teams travel with the receiver: nothing is copied per event.
    let live = stream::unfold((receiver, teams), |(mut receiver, teams)| async move {
        loop {
            match receiver.recv().await {
                Ok(event) if teams.contains(&event.team_id) => {
                    let round = round_event(&LiveRound::from(&event));
                    return Some((Ok::<Event, Infallible>(round), (receiver, teams)));
                }
                Ok(_) => continue,
                Err(RecvError::Lagged(_)) => {
                    return Some((Ok(Event::default().event("reload").data("{}")), (receiver, teams)));
                }
                Err(RecvError::Closed) => return None,
            }
        }
    });
    let ends = tokio::time::sleep(STREAM_LIFETIME);
    Sse::new(live.take_until(ends))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}
