//! The errors of the loops area and how each becomes a response: a JSON
//! `{"error": ..., "field": ...}` whose text never includes a database
//! error's.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use thiserror::Error;

use crate::accounts::AccountsError;
use crate::store::StoreError;

#[derive(Debug, Error)]
pub enum LoopsError {
    #[error("a valid loop token is required: send Authorization: Bearer <token>")]
    Unauthorized,
    #[error("no loop named {0:?} in this team")]
    NoSuchLoop(String),
    #[error("no run {0:?} in this loop")]
    NoSuchRun(String),
    #[error("{message}")]
    Invalid { field: Option<String>, message: String },
    #[error("{message}")]
    Conflict { field: Option<String>, message: String },
    #[error("the body exceeds the limit of {limit} bytes")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl LoopsError {
    pub fn invalid(field: Option<&str>, message: impl Into<String>) -> LoopsError {
        LoopsError::Invalid { field: field.map(str::to_string), message: message.into() }
    }

    pub fn conflict(field: Option<&str>, message: impl Into<String>) -> LoopsError {
        LoopsError::Conflict { field: field.map(str::to_string), message: message.into() }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            LoopsError::Unauthorized => StatusCode::UNAUTHORIZED,
            LoopsError::NoSuchLoop(_) | LoopsError::NoSuchRun(_) => StatusCode::NOT_FOUND,
            LoopsError::Invalid { .. } => StatusCode::BAD_REQUEST,
            LoopsError::Conflict { .. } => StatusCode::CONFLICT,
            LoopsError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            LoopsError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn field(&self) -> Option<&str> {
        match self {
            LoopsError::Invalid { field, .. } | LoopsError::Conflict { field, .. } => field.as_deref(),
            LoopsError::NoSuchLoop(_) => Some("loop"),
            LoopsError::NoSuchRun(_) => Some("run"),
            _ => None,
        }
    }
}

impl From<sqlx::Error> for LoopsError {
    fn from(error: sqlx::Error) -> Self {
        LoopsError::Store(StoreError::Database(error))
    }
}

impl From<crate::stored_text::TextError> for LoopsError {
    fn from(error: crate::stored_text::TextError) -> Self {
        LoopsError::Invalid { message: error.to_string(), field: Some(error.field) }
    }
}

impl From<AccountsError> for LoopsError {
    fn from(error: AccountsError) -> Self {
        match error {
            AccountsError::Store(error) => LoopsError::Store(error),
            // The other accounts errors concern creating teams and tokens,
            // which the loops area never does; should one appear, it is a
            // bug here, not the caller's mistake.
            other => LoopsError::Store(StoreError::Database(sqlx::Error::Protocol(other.to_string()))),
        }
    }
}

impl IntoResponse for LoopsError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            LoopsError::Store(error) => {
                tracing::error!(%error, "loops: store error");
                "internal error; the round was not stored".to_string()
            }
            other => other.to_string(),
        };
        let body = match self.field() {
            Some(field) => json!({"error": message, "field": field}),
            None => json!({"error": message}),
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        }
        response
    }
}
