//! Every error answer has a body. Handlers and extractors that refuse with
//! a bare status (a form posted to a team page by someone who is not a
//! member, a path that is not UTF-8, a method a route does not take) would
//! otherwise answer 4xx with nothing to read. This layer gives such an
//! answer a body: `{"error": "..."}` on the APIs (`/api/`, `/v1/`, `/mcp`,
//! `/stripe/`, `/healthz`, a loop's `view.json` and `events`), a line of
//! text elsewhere. Answers that carry a body already pass untouched, and so
//! do their headers (`Retry-After`, `WWW-Authenticate`, `Allow`).

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;

/// Whether `path` is one of the machine-read surfaces, which answer JSON.
pub fn is_api_path(path: &str) -> bool {
    path.starts_with("/api/")
        || path.starts_with("/v1/")
        || path == "/mcp"
        || path.starts_with("/mcp/")
        || path.starts_with("/stripe/")
        || path == "/healthz"
        || matches!(path.split('/').collect::<Vec<_>>()[..], ["", "loops", _, "view.json" | "events"])
}

/// What an error of this status says when its handler said nothing.
fn sentence(status: axum::http::StatusCode) -> String {
    let reason = status.canonical_reason().unwrap_or("error");
    match status.as_u16() {
        401 => "sign in first: this needs an account or a token".to_string(),
        403 => "this is not yours to do".to_string(),
        404 => "nothing here: no such page, or not one you may see".to_string(),
        405 => "this address does not take that method".to_string(),
        _ => reason.to_lowercase(),
    }
}

pub async fn fill_error_bodies(request: Request, next: Next) -> Response {
    let api = is_api_path(request.uri().path());
    let head = request.method() == Method::HEAD;
    let mut response = next.run(request).await;
    let status = response.status();
    if head
        || !(status.is_client_error() || status.is_server_error())
        || response.body().size_hint().exact() != Some(0)
    {
        return response;
    }
    let message = sentence(status);
    let (body, content_type) = if api {
        (serde_json::json!({ "error": message }).to_string(), "application/json")
    } else {
        (
            format!("{} {}: {message}.\n", status.as_u16(), status.canonical_reason().unwrap_or("")),
            "text/plain; charset=utf-8",
        )
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.remove(header::CONTENT_LENGTH);
    *response.body_mut() = Body::from(body);
    response
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
