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
