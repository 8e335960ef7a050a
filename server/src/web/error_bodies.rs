//! Every error answer has a body. Handlers and extractors that refuse with
//! a bare status (a form posted to a team page by someone who is not a
//! member, a method a route does not take, a file missing under `/pkg`) or
//! with a line of plain text (axum's extractors: a form that does not
//! parse, a path segment that is not UTF-8) would otherwise answer 4xx with
//! nothing, or nothing styled, to read. This layer gives such an answer a
//! body: `{"error": "..."}` on the APIs (`/api/`, `/v1/`, `/mcp`,
//! `/stripe/`, `/healthz`, `/admin/sends.json`, a loop's `view.json` and
//! `events`), the site's
//! error page ([`app::pages::error_page`]) elsewhere, the plain text kept
//! as its sentence. Answers whose body is JSON, HTML, protobuf or anything
//! else but plain text pass untouched, and so do the headers of every
//! answer (`Retry-After`, `WWW-Authenticate`, `Allow`). HEAD answers are
//! filled too (the router sends their length, never their body), so no
//! answer of the application looks like the bodiless ones hyper writes for
//! a request it cannot read, which [`super::listener`] fills.

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The most of a plain-text error body kept as the page's sentence.
const MAX_TEXT_BYTES: usize = 16 * 1024;

/// Whether `path` is one of the machine-read surfaces, which answer JSON.
pub fn is_api_path(path: &str) -> bool {
    path.starts_with("/api/")
        || path.starts_with("/v1/")
        || path == "/mcp"
        || path.starts_with("/mcp/")
        || path.starts_with("/stripe/")
        || path == "/healthz"
        || path == "/admin/sends.json"
        || matches!(path.split('/').collect::<Vec<_>>()[..], ["", "loops", _, "view.json" | "events"])
}

/// What an error of this status says when its handler said nothing.
pub fn sentence(status: StatusCode) -> String {
    let reason = status.canonical_reason().unwrap_or("error");
    match status.as_u16() {
        400 => "the request could not be read".to_string(),
        401 => "sign in first: this needs an account or a token".to_string(),
        403 => "this is not yours to do".to_string(),
        404 => "nothing here: no such page, or not one you may see".to_string(),
        405 => "this address does not take that method".to_string(),
        413 => "the request is larger than this address reads".to_string(),
        414 => "the address is longer than this server reads".to_string(),
        431 => "the request's headers are larger than this server reads".to_string(),
        _ => reason.to_lowercase(),
    }
}

/// The body of an error answer: JSON for the APIs, the site's error page
/// (linking `stylesheet`, the current build's) for the rest; `said` is what
/// the handler said, if anything.
pub fn error_body(
    status: StatusCode,
    api: bool,
    said: Option<&str>,
    stylesheet: &str,
) -> (String, &'static str) {
    let message = said.map_or_else(|| sentence(status), str::to_string);
    if api {
        (serde_json::json!({ "error": message }).to_string(), "application/json")
    } else {
        let mut text = message;
        if let Some(first) = text.chars().next() {
            text = first.to_uppercase().chain(text.chars().skip(1)).collect();
        }
        if !text.ends_with(['.', '!', '?']) {
            text.push('.');
        }
        let page = app::pages::error_page::error_document(
            status.as_u16(),
            status.canonical_reason().unwrap_or("Error"),
            &text,
            stylesheet,
        );
        (page, "text/html; charset=utf-8")
    }
}

/// Whether an answer's body is plain text (or it names no type at all).
fn plain_text(response: &Response) -> bool {
    match response.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()) {
        None => true,
        Some(value) => value.split(';').next().unwrap_or_default().trim().eq_ignore_ascii_case("text/plain"),
    }
}

pub async fn fill_error_bodies(State(stylesheet): State<String>, request: Request, next: Next) -> Response {
    let api = is_api_path(request.uri().path());
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let empty = response.body().size_hint().exact() == Some(0);
    if !empty && !plain_text(&response) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let said = if empty {
        None
    } else {
        axum::body::to_bytes(body, MAX_TEXT_BYTES)
            .await
            .ok()
            .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok())
            .map(|text| text.trim().to_string())
            .filter(|text| !text.is_empty())
    };
    let (body, content_type) = error_body(status, api, said.as_deref(), &stylesheet);
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_surfaces_are_told_apart_from_pages() {
        for api in [
            "/api/v1/audit",
            "/v1/traces",
            "/mcp",
            "/stripe/webhook",
            "/healthz",
            "/loops/a/view.json",
            "/loops/a/events",
        ] {
            assert!(is_api_path(api), "{api}");
        }
        for page in
            ["/", "/loops/a", "/teams/acme", "/issues/x", "/apis", "/loops/view.json", "/loops/events"]
        {
            assert!(!is_api_path(page), "{page}");
        }
    }
}
