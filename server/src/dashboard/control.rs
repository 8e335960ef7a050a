//! STOP and STEER from the loop page: a form that posts to the page's own
//! address, answered with the page and a notice.

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use leptos::prelude::provide_context;
use serde::Deserialize;

use super::views::{loop_team, loop_view_of, LoopPicks};
use super::DashboardError;
use crate::web::{render_page, AppState};

#[derive(Debug, Deserialize)]
struct ControlForm {
    action: Option<String>,
    note: Option<String>,
}

/// STOP and STEER from the loop page, for any member of the loop's team.
pub(super) async fn loop_control(
    State(state): State<AppState>,
    Path(name): Path<String>,
    axum::extract::Query(query): axum::extract::Query<Vec<(String, String)>>,
    request: Request,
) -> Response {
    let Some(account) = crate::accounts::web::signed_in(request.extensions()) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let team_param = query.into_iter().find(|(key, _)| key == "team").map(|(_, value)| value);
    let team = match loop_team(&state, &account, team_param.as_deref(), &name).await {
        Ok(Some(team)) => team,
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(error) => return internal(error),
    };
    let (parts, body) = request.into_parts();
    let form = match crate::web::read_form::<ControlForm>(body).await {
        Ok(form) => Some(form),
        Err((status, notice)) => {
            return match loop_view_of(&state, &team, &name, Some(notice), &LoopPicks::default()).await {
                Ok(view) => render_page(&state, parts, status, move || provide_context(view.clone())).await,
                Err(error) => internal(error),
            };
        }
    };
    let outcome = match form.as_ref().and_then(|form| form.action.as_deref()) {
        Some("stop") => state
            .store
            .request_loop_stop(team.id, &name)
            .await
            .map(|()| "STOP is pending: the loop gets it with the answer to its next round.".to_string()),
        Some("steer") => {
            let note = form.as_ref().and_then(|form| form.note.clone()).unwrap_or_default();
            state.store.set_loop_steer(team.id, &name, Some(note.trim())).await.map(|()| {
                "The note is pending: the loop gets it with the answer to its next round.".to_string()
            })
        }
        _ => Err(crate::loops::LoopsError::invalid(Some("action"), "action must be stop or steer")),
    };
    let (status, notice) = match outcome {
        Ok(notice) => (StatusCode::OK, notice),
        Err(error) if error.status() == StatusCode::BAD_REQUEST => {
            (StatusCode::BAD_REQUEST, error.to_string())
        }
        Err(error) => return internal(error.into()),
    };
    match loop_view_of(&state, &team, &name, Some(notice), &LoopPicks::default()).await {
        Ok(view) => render_page(&state, parts, status, move || provide_context(view.clone())).await,
        Err(error) => internal(error),
    }
}

fn internal(error: DashboardError) -> Response {
    tracing::error!(%error, "loop page");
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}
