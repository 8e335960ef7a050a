//! `POST /api/v1/audit`: `{"source": "...", "language": "python", "path": "x.py"}`
//! (language and path optional) in, the JSON report out.
//!
//! Statuses: 200 with the report; 400 naming the field for malformed JSON or
//! a field of the wrong type; 413 over [`AUDIT_MAX_BYTES`]; 415 without a
//! JSON content type; 422 for a language that is unknown or cannot be
//! detected; 429 with `Retry-After` past the per-client rate; 503 with
//! `Retry-After` when every audit slot stayed taken for the wait. The source is
//! audited and dropped: it is never stored or logged.

use std::time::Instant;

use auditor::{audit_with, Language, Report};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::web::rate_limit::{client_ip, retry_after_seconds};
use crate::web::{audit_slots, AppState};

/// The largest request body the audit API reads: 1 MiB.
pub const AUDIT_MAX_BYTES: usize = 1024 * 1024;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/audit", post(audit_endpoint))
}

/// A refusal as the API spells it: `{"error": "...", "field": "..."}`.
fn refuse(status: StatusCode, error: impl Into<String>, field: Option<&str>) -> Response {
    let mut body = json!({ "error": error.into() });
    if let Some(field) = field {
        body["field"] = json!(field);
    }
    (status, Json(body)).into_response()
}

async fn audit_endpoint(State(state): State<AppState>, request: Request) -> Response {
    let client = client_ip(request.extensions());
    if let Err(wait) = state.audit_limiter.check(client, Instant::now()) {
        let mut response = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too many audit requests from this address; retry later",
            None,
        );
        if let Ok(value) = HeaderValue::from_str(&retry_after_seconds(wait).to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }

    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("application/json"));
    if !is_json {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the request as JSON (Content-Type: application/json)",
            None,
        );
    }

    let bytes = match axum::body::to_bytes(request.into_body(), AUDIT_MAX_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than {AUDIT_MAX_BYTES} bytes"),
                Some("source"),
            )
        }
    };

    let input = match AuditInput::parse(&bytes) {
        Ok(input) => input,
        Err((message, field)) => return refuse(StatusCode::BAD_REQUEST, message, field),
    };
    let language = match input.language.as_deref() {
        None => None,
        Some(name) => match Language::from_name(name) {
            Some(language) => Some(language),
            None => {
                return refuse(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!(
                        "unknown language {name:?}; use python, javascript, typescript, tsx, bash, go or rust"
                    ),
                    Some("language"),
                )
            }
        },
    };

    // At most as many audits at once as cores (see `crate::web::audit_slots`).
    let Ok(slot) = state.audit_slots.acquire().await else {
        let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, audit_slots::BUSY_MESSAGE, None);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(audit_slots::RETRY_AFTER_SECONDS));
        return response;
    };
    // Parsing a large file takes milliseconds of CPU: off the async workers.
    let audited = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        audit_with(&input.source, input.path.as_deref(), language).map(|file| Report::from_files(vec![file]))
    })
    .await;
    match audited {
        Ok(Ok(report)) => (StatusCode::OK, Json(report)).into_response(),
        Ok(Err(_)) => refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the language could not be detected; name it in `language`",
            Some("language"),
        ),
        Err(error) => {
            tracing::error!(%error, "the audit task failed");
            refuse(StatusCode::INTERNAL_SERVER_ERROR, "the audit failed", None)
        }
    }
}

#[derive(Debug)]
struct AuditInput {
    source: String,
    language: Option<String>,
    path: Option<String>,
}

impl AuditInput {
    /// Reads the body field by field so every refusal names its field.
    fn parse(bytes: &[u8]) -> Result<AuditInput, (String, Option<&'static str>)> {
        // A key given twice is refused, as the ingest API refuses it.
        let value: Value = crate::web::json::strict_json(bytes)
            .map_err(|error| (format!("the body is not valid JSON: {error}"), None))?;
        let Value::Object(mut object) = value else {
            return Err(("the body must be a JSON object".into(), None));
        };
        let source = match object.remove("source") {
            Some(Value::String(source)) => source,
            Some(_) => return Err(("source must be a string".into(), Some("source"))),
            None => return Err(("source is required".into(), Some("source"))),
        };
        let optional = |value: Option<Value>, field: &'static str| match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.len() <= 256 => Ok(Some(text)),
            Some(Value::String(_)) => Err((format!("{field} must be at most 256 bytes"), Some(field))),
            Some(_) => Err((format!("{field} must be a string"), Some(field))),
        };
        let language = optional(object.remove("language"), "language")?;
        let path = optional(object.remove("path"), "path")?;
        Ok(AuditInput { source, language, path })
    }
}
