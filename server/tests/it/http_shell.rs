//! The site shell over HTTP: health, pages, 404, static files, on both
//! backends, through the real router (no network needed).

use crate::support::TestDb;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use server::config::Config;
use server::site;
use server::web::AppState;
use tower::ServiceExt;

fn app(db: &TestDb) -> axum::Router {
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(db.url.clone()),
        "LEPTOS_SITE_ROOT" => Some(env!("CARGO_MANIFEST_DIR").to_string() + "/../public"),
        _ => None,
    })
    .unwrap();
    site::router(AppState::new(config, db.store.clone()))
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

/// The bundle is served under its build id (`pkg/build-id` names it) from
/// the precompressed copies build-site writes: brotli when the browser
/// takes it, else gzip, else the file as it is, each immutable for a year.
/// A file missing from the build, any address outside it (an earlier
/// build's file still on disk, the unversioned layout) is a 404 no cache
/// keeps, never a file; pages name only this build and are `no-cache`.
#[tokio::test]
async fn the_bundle_is_served_by_build_id_immutable_and_pages_no_cache() {
    const ID: &str = "0123456789abcdef";
    const OLD: &str = "fedcba9876543210";
    let db = crate::support::sqlite().await;
    let site = tempfile::tempdir().unwrap();
    let pkg = site.path().join("pkg");
    for dir in [ID, OLD] {
        std::fs::create_dir_all(pkg.join(dir)).unwrap();
    }
    std::fs::write(pkg.join("build-id"), format!("{ID}\n")).unwrap();
    std::fs::write(pkg.join(ID).join("app.js"), "plain").unwrap();
    std::fs::write(pkg.join(ID).join("app.js.br"), "brotli bytes").unwrap();
    std::fs::write(pkg.join(ID).join("app.js.gz"), "gzip bytes").unwrap();
    std::fs::write(pkg.join(OLD).join("app.js"), "the old build").unwrap();
    std::fs::write(pkg.join("app.js"), "the layout before build ids").unwrap();
    let root = site.path().to_string_lossy().into_owned();
    let url = db.url.clone();
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "LEPTOS_SITE_ROOT" => Some(root.clone()),
        _ => None,
    })
    .unwrap();
    let app = site::router(AppState::new(config, db.store.clone()));
    let fetch = |encoding: &'static str, path: String| {
        let app = app.clone();
        async move {
            let request =
                Request::get(&path).header("accept-encoding", encoding).body(Body::empty()).unwrap();
            let response = app.oneshot(request).await.unwrap();
            let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_string());
            let (status, encoding, cache) =
                (response.status(), header("content-encoding"), header("cache-control"));
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, encoding, cache, String::from_utf8_lossy(&body).into_owned())
        }
    };
    let immutable = Some("public, max-age=31536000, immutable".to_string());
    assert_eq!(
        fetch("gzip, br", format!("/pkg/{ID}/app.js")).await,
        (StatusCode::OK, Some("br".into()), immutable.clone(), "brotli bytes".into())
    );
    assert_eq!(
        fetch("gzip", format!("/pkg/{ID}/app.js")).await,
        (StatusCode::OK, Some("gzip".into()), immutable.clone(), "gzip bytes".into())
    );
    assert_eq!(
        fetch("identity", format!("/pkg/{ID}/app.js")).await,
        (StatusCode::OK, None, immutable.clone(), "plain".into())
    );
    for path in [
        format!("/pkg/{ID}/missing.js"),
        format!("/pkg/{OLD}/app.js"),
        "/pkg/app.js".into(),
        "/pkg/build-id".into(),
    ] {
        let (status, _, cache, body) = fetch("gzip", path.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(cache.as_deref(), Some("no-store"), "{path}: a 404 is not kept");
        assert!(
            !body.contains("plain") && !body.contains("old build") && !body.contains("layout"),
            "{path}: {body}"
        );
    }

    // Pages: no-cache, and every file they name is this build's.
    for path in ["/", "/signin", "/no/such/page"] {
        let (status, _, cache, body) = fetch("identity", path.to_string()).await;
        assert!(status == StatusCode::OK || status == StatusCode::NOT_FOUND, "{path}: {status}");
        assert_eq!(cache.as_deref(), Some("no-cache"), "{path}");
        let named = [
            (format!("href=\"/pkg/{ID}/fixedpoint.css\""), "the build's stylesheet"),
            (format!("data-pkg=\"/pkg/{ID}\""), "the build's directory for the worker"),
            (format!("rel=\"modulepreload\" href=\"/pkg/{ID}/fixedpoint.js\""), "the main module's preload"),
            (format!("href=\"/pkg/{ID}/fixedpoint_bg.wasm\""), "the main module's wasm"),
        ];
        for (needle, what) in &named {
            assert!(body.contains(needle.as_str()), "{path}: {what}: {body}");
        }
        let outside = body.match_indices("/pkg/").filter(|(at, _)| !body[at + 5..].starts_with(ID)).count();
        assert_eq!(outside, 0, "{path}: nothing outside the build: {body}");
    }
    // The error page a handler's refusal gets links the build's stylesheet.
    let request = Request::post("/teams/nope")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("sec-fetch-site", "same-origin")
        .body(Body::from("action=stop"))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert!(response.status().is_client_error());
    assert_eq!(response.headers()["cache-control"], "no-cache");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&body).contains(&format!("href=\"/pkg/{ID}/fixedpoint.css\"")));
}
