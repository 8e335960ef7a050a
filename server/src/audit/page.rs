//! `POST /audit`: the audit page without JavaScript. The form posts the
//! source here; the same page is rendered with the report computed by the
//! same engine. The source is audited and dropped: never stored, never
//! logged. With JavaScript the page never posts (it audits in the browser).

use std::time::Instant;

use app::pages::audit::PostedAudit;
use auditor::Language;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use leptos::prelude::provide_context;
use serde::Deserialize;

use super::AUDIT_MAX_BYTES;
use crate::web::rate_limit::{client_ip, retry_after_seconds};
use crate::web::{audit_named, audit_slots, render_page, AppState};

#[derive(Debug, Deserialize)]
struct AuditForm {
    source: Option<String>,
    language: Option<String>,
}

pub async fn audit_form(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let posted = match read_form(&state, &parts, body).await {
        Ok(posted) => posted,
        Err((status, posted)) => return render(state, parts, posted, status).await,
    };
    // As many audits at once as cores, shared with the API (see `crate::web::audit_slots`).
    let Ok(slot) = state.audit_slots.acquire().await else {
        let busy = PostedAudit {
            error: Some(
                "The server is auditing as many sources as it can; try again in a few seconds.".into(),
            ),
            ..posted
        };
        let mut response = render(state, parts, busy, StatusCode::SERVICE_UNAVAILABLE).await;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(audit_slots::RETRY_AFTER_SECONDS));
        return response;
    };
    // Up to 1 MiB of source is a CPU-bound tenth of a second or more: it is
    // audited on the blocking pool, not on a thread that serves requests.
    let audited = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let report = audit_named(&posted.source, Some(&posted.language));
        PostedAudit { report: Some(Box::new(report)), ..posted }
    })
    .await;
    match audited {
        Ok(posted) => render(state, parts, posted, StatusCode::OK).await,
        Err(_) => {
            let failed = PostedAudit {
                source: String::new(),
                language: "auto".into(),
                error: Some("The audit failed on the server; try the command line.".into()),
                report: None,
            };
            render(state, parts, failed, StatusCode::INTERNAL_SERVER_ERROR).await
        }
    }
}

/// Reads and checks the form. An error still carries what can be shown
/// again (the source, when it could be read) with the message.
async fn read_form(
    state: &AppState,
    parts: &axum::http::request::Parts,
    body: Body,
) -> Result<PostedAudit, (StatusCode, PostedAudit)> {
    let refused = |status, message: String, source: String, language: String| {
        Err((status, PostedAudit { source, language, error: Some(message), report: None }))
    };
    if let Err(wait) = state.audit_limiter.check(client_ip(&parts.extensions), Instant::now()) {
        return refused(
            StatusCode::TOO_MANY_REQUESTS,
            format!("Too many audits from your address: try again in {} seconds.", retry_after_seconds(wait)),
            String::new(),
            "auto".into(),
        );
    }
    let is_form = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "The form must be sent as application/x-www-form-urlencoded.".into(),
            String::new(),
            "auto".into(),
        );
    }
    // Percent-encoding can triple the size of a source; the limit that
    // matters is on the decoded source, checked below.
    let bytes = match axum::body::to_bytes(body, AUDIT_MAX_BYTES * 3).await {
        Ok(bytes) => bytes,
        Err(_) => return refused(StatusCode::PAYLOAD_TOO_LARGE, too_large(), String::new(), "auto".into()),
    };
    let form: AuditForm = match serde_urlencoded::from_bytes(&bytes) {
        Ok(form) => form,
        Err(error) => {
            return refused(
                StatusCode::BAD_REQUEST,
                format!("The form could not be read: {error}."),
                String::new(),
                "auto".into(),
            )
        }
    };
    let language = form.language.unwrap_or_else(|| "auto".into());
    let Some(source) = form.source else {
        return refused(StatusCode::BAD_REQUEST, "source: missing".into(), String::new(), language);
    };
    if source.len() > AUDIT_MAX_BYTES {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, too_large(), String::new(), language);
    }
    if language != "auto" && Language::from_name(&language).is_none() {
        return refused(
            StatusCode::BAD_REQUEST,
            format!("language: {language:?} is not one the auditor reads"),
            source,
            "auto".into(),
        );
    }
    Ok(PostedAudit { source, language, error: None, report: None })
}

fn too_large() -> String {
    format!("source: larger than {} KiB; audit it on the command line instead", AUDIT_MAX_BYTES / 1024)
}

async fn render(
    state: AppState,
    parts: axum::http::request::Parts,
    posted: PostedAudit,
    status: StatusCode,
) -> Response {
    render_page(&state, parts, status, move || provide_context(posted.clone())).await
}
