//! `POST /api/v1/audit` through the real router: the report, and every
//! refusal with its status and the field it names.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::config::Config;
use server::site;
use server::web::AppState;
use tower::ServiceExt;

async fn app(rate: u32) -> (axum::Router, crate::support::TestDb) {
    let db = crate::support::sqlite().await;
    let url = db.url.clone();
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "FIXEDPOINT_AUDIT_RATE_PER_MINUTE" => Some(rate.to_string()),
        _ => None,
    })
    .unwrap();
    (site::router(AppState::new(config, db.store.clone())), db)
}

async fn post(app: &axum::Router, body: impl Into<Body>, from: &str) -> (StatusCode, Option<String>, Value) {
    let mut request = Request::post("/api/v1/audit")
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap();
    let addr: SocketAddr = from.parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(addr));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let retry = response.headers().get(header::RETRY_AFTER).map(|value| value.to_str().unwrap().to_string());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, retry, value)
}

const LOOP: &str = "for turn in range(10):\n    if agent.step().done:\n        break\n";

#[tokio::test]
async fn a_source_gets_the_json_report() {
    let (app, _db) = app(60).await;
    let body = json!({"source": LOOP, "language": "python"}).to_string();
    let (status, _, report) = post(&app, body, "127.0.0.1:1").await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["verdict"], "CONVERGES");
    assert_eq!(report["exit_code"], 0);
    assert_eq!(report["files"][0]["exits"].as_array().unwrap().len(), 8);
    assert_eq!(report["files"][0]["exits"][1]["found"], true, "E2 from range(10)");

    // Without a language it is detected.
    let body = json!({"source": LOOP}).to_string();
    let (status, _, report) = post(&app, body, "127.0.0.1:1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report["files"][0]["language"], "python");
}

#[tokio::test]
async fn malformed_bodies_are_400_naming_the_field() {
    let (app, _db) = app(600).await;
    for (body, field) in [
        (json!({"language": "python"}).to_string(), Some("source")),
        (json!({"source": 42}).to_string(), Some("source")),
        (json!({"source": LOOP, "language": 7}).to_string(), Some("language")),
        (json!({"source": LOOP, "path": ["x"]}).to_string(), Some("path")),
        ("{\"source\": ".to_string(), None),
        ("[1, 2]".to_string(), None),
    ] {
        let (status, _, answer) = post(&app, body.clone(), "127.0.0.1:1").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} -> {answer}");
        assert!(answer["error"].as_str().is_some_and(|error| !error.is_empty()), "{answer}");
        assert_eq!(answer["field"].as_str(), field, "{body} -> {answer}");
    }
}

#[tokio::test]
async fn unknown_or_undetectable_languages_are_422() {
    let (app, _db) = app(600).await;
    let (status, _, answer) =
        post(&app, json!({"source": LOOP, "language": "cobol"}).to_string(), "127.0.0.1:1").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer["field"], "language");
    let prose = json!({"source": "Dear diary, today nothing happened."}).to_string();
    let (status, _, answer) = post(&app, prose, "127.0.0.1:1").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["field"], "language");
}

#[tokio::test]
async fn bodies_over_one_mebibyte_are_413() {
    let (app, _db) = app(600).await;
    let source = "x = 1\n".repeat(200_000);
    let (status, _, answer) = post(&app, json!({"source": source}).to_string(), "127.0.0.1:1").await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415() {
    let (app, _db) = app(600).await;
    let request = Request::post("/api/v1/audit").body(Body::from(LOOP)).unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn each_address_is_rate_limited_with_retry_after() {
    let (app, _db) = app(3).await;
    let body = json!({"source": LOOP, "language": "python"}).to_string();
    for _ in 0..3 {
        let (status, _, _) = post(&app, body.clone(), "10.0.0.1:5000").await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, retry, answer) = post(&app, body.clone(), "10.0.0.1:5001").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=20).contains(&retry), "{retry}");
    // Another address is not affected.
    let (status, _, _) = post(&app, body, "10.0.0.2:5000").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn concurrent_audits_all_answer() {
    let (app, _db) = app(1000).await;
    let mut tasks = Vec::new();
    for index in 0..32 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let source = format!("{LOOP}# variant {index}\n");
            post(&app, json!({"source": source}).to_string(), "127.0.0.1:1").await
        }));
    }
    for task in tasks {
        let (status, _, report) = task.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(report["verdict"], "CONVERGES");
    }
}

#[tokio::test]
async fn audits_beyond_the_slots_wait_then_get_503_with_retry_after() {
    let db = crate::support::sqlite().await;
    let url = db.url.clone();
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "FIXEDPOINT_AUDIT_CONCURRENCY" => Some("1".to_string()),
        "FIXEDPOINT_AUDIT_WAIT_MS" => Some("200".to_string()),
        _ => None,
    })
    .unwrap();
    assert_eq!((config.audit_concurrency, config.audit_wait_ms), (1, 200));
    let state = AppState::new(config, db.store.clone());
    let app = site::router(state.clone());
    let body = json!({"source": LOOP, "language": "python"}).to_string();

    // The only slot is taken (as by a long audit): the request waits its
    // 200 ms, then is told when to come back.
    let taken = state.audit_slots.acquire().await.unwrap();
    let started = std::time::Instant::now();
    let (status, retry, error) = post(&app, body.clone(), "127.0.0.1:1").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200), "it waited first");
    assert_eq!(retry.as_deref(), Some("2"));
    assert!(error["error"].as_str().unwrap().contains("retry"), "{error}");

    // A slot freed while a request waits is taken by it.
    let waiting = tokio::spawn({
        let app = app.clone();
        let body = body.clone();
        async move { post(&app, body, "127.0.0.1:1").await.0 }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    drop(taken);
    assert_eq!(waiting.await.unwrap(), StatusCode::OK);
    assert_eq!(state.audit_slots.available(), 1, "the slot is given back after the audit");

    // The default is as many slots as cores.
    let cores = std::thread::available_parallelism().unwrap().get();
    let config = Config::from_lookup(|name| (name == "DATABASE_URL").then(|| db.url.clone())).unwrap();
    assert_eq!(config.audit_concurrency as usize, cores);
    assert_eq!(config.audit_wait_ms, 2000);
}
