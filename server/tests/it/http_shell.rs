//! The site shell over HTTP: health, pages, 404, static files, on both
//! backends, through the real router (no network needed).

use crate::support::TestDb;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use server::config::Config;
use server::web::{self, AppState};
use tower::ServiceExt;

fn app(db: &TestDb) -> axum::Router {
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(db.url.clone()),
        "LEPTOS_SITE_ROOT" => Some(env!("CARGO_MANIFEST_DIR").to_string() + "/../public"),
        _ => None,
    })
    .unwrap();
    web::router(AppState::new(config, db.store.clone()))
}

async fn get(app: &axum::Router, path: &str) -> (StatusCode, String) {
    let response = app.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

both_backends! {
    async fn healthz_is_200_while_the_database_answers_and_503_after(db: TestDb) {
        let app = app(&db);
        let (status, body) = get(&app, "/healthz").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body.contains("\"status\":\"ok\""), "{body}");
        db.store.close().await;
        let (status, body) = get(&app, "/healthz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(!body.contains("error"), "no internal error text leaks: {body}");
    }
}

both_backends! {
    async fn home_page_is_server_rendered_with_the_header(db: TestDb) {
        let (status, body) = get(&app(&db), "/").await;
        assert_eq!(status, StatusCode::OK);
        for link in ["href=\"/audit\"", "href=\"/loops\"", "href=\"/issues\"", "href=\"/pricing\"", "href=\"/signin\""] {
            assert!(body.contains(link), "missing {link}");
        }
        assert!(body.contains("know when it is done"));
        assert!(body.contains("/pkg/fixedpoint.js"), "the hydration script is linked");
    }
}

both_backends! {
    async fn unknown_paths_get_the_404_page(db: TestDb) {
        let (status, body) = get(&app(&db), "/definitely/not/here").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(body.contains("no fixed point here"), "{body}");
    }
}

both_backends! {
    async fn static_files_are_served_from_the_site_root(db: TestDb) {
        let (status, body) = get(&app(&db), "/robots.txt").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("User-agent"));
    }
}

/// The bundle is served from the precompressed copies build-site writes:
/// brotli when the browser takes it, else gzip, else the file as it is; a
/// missing file is a 404, never the HTML of a page.
#[tokio::test]
async fn the_bundle_is_served_precompressed() {
    let db = crate::support::sqlite().await;
    let site = tempfile::tempdir().unwrap();
    let pkg = site.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("app.js"), "plain").unwrap();
    std::fs::write(pkg.join("app.js.br"), "brotli bytes").unwrap();
    std::fs::write(pkg.join("app.js.gz"), "gzip bytes").unwrap();
    let root = site.path().to_string_lossy().into_owned();
    let url = db.url.clone();
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "LEPTOS_SITE_ROOT" => Some(root.clone()),
        _ => None,
    })
    .unwrap();
    let app = web::router(AppState::new(config, db.store.clone()));
    let fetch = |encoding: &'static str, path: &'static str| {
        let app = app.clone();
        async move {
            let request = Request::get(path).header("accept-encoding", encoding).body(Body::empty()).unwrap();
            let response = app.oneshot(request).await.unwrap();
            let status = response.status();
            let encoding =
                response.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_string());
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, encoding, String::from_utf8_lossy(&body).into_owned())
        }
    };
    assert_eq!(
        fetch("gzip, br", "/pkg/app.js").await,
        (StatusCode::OK, Some("br".into()), "brotli bytes".into())
    );
    assert_eq!(
        fetch("gzip", "/pkg/app.js").await,
        (StatusCode::OK, Some("gzip".into()), "gzip bytes".into())
    );
    assert_eq!(fetch("identity", "/pkg/app.js").await, (StatusCode::OK, None, "plain".into()));
    let (status, _, body) = fetch("gzip", "/pkg/missing.js").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!body.contains("<html"), "no page for a missing file");
}
