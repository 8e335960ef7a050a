//! `GET /healthz`: 200 when the database answers, 503 when it does not.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::AppState;
use crate::store::Store;

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz))
}

async fn healthz(State(store): State<Store>) -> (StatusCode, Json<Value>) {
    match store.ping(Duration::from_secs(2)).await {
        Ok(()) => (StatusCode::OK, Json(json!({"status": "ok", "database": store.backend().name()}))),
        Err(error) => {
            tracing::warn!(%error, "health check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "unavailable", "database": store.backend().name()})),
            )
        }
    }
}
