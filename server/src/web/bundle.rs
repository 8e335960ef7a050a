//! The browser bundle, served under its build id: `/pkg/<id>/...`.
//!
//! `.ci/build-site.sh` puts every file of a build (the main module, the
//! route modules and chunks, the auditor's worker and wasm, the stylesheet)
//! in `pkg/<id>/`, where `<id>` is a hash of those files, and writes the id
//! to `pkg/build-id`. The server reads that file once, at startup: its pages
//! name only that build's files, and only that build's directory is served.
//! A file's address therefore never changes its content, so it is served
//! `immutable` for a year; a page is `no-cache`, so a browser asks again for
//! the page and learns of the next build. Any other `/pkg/` address (an
//! earlier build's file asked for by a page opened before this server
//! started) is a 404, never a file of another build: the page's loader then
//! loads the page it was going to afresh (`app::components::stale_build`).

use std::path::Path;

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use tower_http::services::ServeDir;

use super::AppState;

/// The file under `pkg/` that names the current build.
pub const BUILD_ID_FILE: &str = "build-id";

/// How a build's files are kept: their address names the build, so they
/// never change.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// How pages are kept: always asked again, so the next build is seen.
pub const PAGE: &str = "no-cache";

/// The build a server serves, read from the site root at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    id: Option<String>,
}

impl Bundle {
    /// The build named by `<site_root>/pkg/build-id`; none when the site
    /// was not built (or the file holds anything but an id), in which case
    /// nothing is served under `/pkg` and pages render without hydration.
    pub fn read(site_root: &Path) -> Bundle {
        let id = std::fs::read_to_string(site_root.join("pkg").join(BUILD_ID_FILE))
            .ok()
            .map(|text| text.trim().to_string())
            .filter(|id| is_build_id(id));
        Bundle { id }
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The bundle's directory under the site root, which is also its path
    /// on the site: `pkg/<id>` (Leptos' `site_pkg_dir`).
    pub fn pkg_dir(&self) -> String {
        match &self.id {
            Some(id) => format!("pkg/{id}"),
            None => "pkg".to_string(),
        }
    }

    /// The site's stylesheet, as pages link it.
    pub fn stylesheet(&self) -> String {
        format!("/{}/{}.css", self.pkg_dir(), app::OUTPUT_NAME)
    }
}

/// What build-site writes: lowercase hex, short enough for a path segment.
fn is_build_id(id: &str) -> bool {
    (8..=64).contains(&id.len())
        && id.bytes().all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase())
}

/// `/pkg/<id>/*` from the build's directory (the brotli or gzip copies
/// build-site made, when the browser takes them), immutable; every other
/// address under `/pkg` a 404 that no cache keeps.
pub fn router(site_root: &Path, bundle: &Bundle) -> Router<AppState> {
    let mut router = Router::new()
        .route("/pkg", any(not_this_build))
        .route("/pkg/", any(not_this_build))
        .route("/pkg/{*path}", any(not_this_build));
    if let Some(id) = bundle.id() {
        let files = tower::ServiceBuilder::new()
            .layer(axum::middleware::from_fn(immutable_when_found))
            .service(ServeDir::new(site_root.join("pkg").join(id)).precompressed_br().precompressed_gzip());
        router = router.nest_service(&format!("/pkg/{id}"), files);
    }
    router
}

async fn not_this_build() -> Response {
    (StatusCode::NOT_FOUND, [(header::CACHE_CONTROL, "no-store")]).into_response()
}

/// A build's file is kept for a year; a file missing from it (a 404) is not
/// kept at all.
async fn immutable_when_found(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let value = if response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED {
        IMMUTABLE
    } else {
        "no-store"
    };
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(value));
    response
}

/// Every page (an HTML answer that did not say otherwise, such as the
/// `private, no-store` of a signed-in reader's page) is `no-cache`: the
/// browser revalidates it, so it never keeps a page that names a build the
/// server no longer serves.
pub async fn pages_no_cache(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/html"));
    if html && !response.headers().contains_key(header::CACHE_CONTROL) {
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(PAGE));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_id_file_names_the_bundle_directory() {
        let site = tempfile::tempdir().unwrap();
        assert_eq!(
            Bundle::read(site.path()).pkg_dir(),
            "pkg",
            "no build: the bare directory, nothing served"
        );
        std::fs::create_dir_all(site.path().join("pkg")).unwrap();
        let write = |text: &str| std::fs::write(site.path().join("pkg").join(BUILD_ID_FILE), text).unwrap();
        write("0123456789abcdef\n");
        let bundle = Bundle::read(site.path());
        assert_eq!(bundle.id(), Some("0123456789abcdef"));
        assert_eq!(bundle.pkg_dir(), "pkg/0123456789abcdef");
        assert_eq!(bundle.stylesheet(), "/pkg/0123456789abcdef/fixedpoint.css");
        for refused in ["../../etc", "0123456789ABCDEF", "abc", "0123456789abcdef/x", ""] {
            write(refused);
            assert_eq!(Bundle::read(site.path()).id(), None, "{refused:?} is not a build id");
        }
    }
}
