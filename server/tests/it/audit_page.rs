//! The audit page from the server's side: its examples hold the verdicts
//! they claim, the first paint carries a report, and the no-JavaScript form
//! (`POST /audit`) audits with the same engine and refuses bad input by name.

use std::net::SocketAddr;

use app::pages::audit::examples::EXAMPLES;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
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
        "LEPTOS_SITE_ROOT" => Some(env!("CARGO_MANIFEST_DIR").to_string() + "/../public"),
        _ => None,
    })
    .unwrap();
    (site::router(AppState::new(config, db.store.clone())), db)
}

async fn send(app: &axum::Router, request: Request<Body>) -> (StatusCode, String) {
    let mut request = request;
    request.extensions_mut().insert(ConnectInfo("127.0.0.1:9".parse::<SocketAddr>().unwrap()));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn form(body: String) -> Request<Body> {
    Request::post("/audit")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap()
}

fn encode(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap()
}

/// The verdict the page shows: the word inside the verdict element.
fn shown_verdict(html: &str) -> Option<&str> {
    let at = html.find("data-testid=\"audit-verdict\"")?;
    ["CONVERGES", "DIVERGES", "UNDEFINED"]
        .into_iter()
        .min_by_key(|word| html[at..].find(word).unwrap_or(usize::MAX))
}

#[test]
fn every_example_gets_the_verdict_it_claims() {
    assert!(EXAMPLES.len() >= 6);
    for example in EXAMPLES {
        let report = auditor::audit(example.source, None, None);
        assert_eq!(report.language.as_deref(), Some(example.language), "{}: detected language", example.slug);
        assert_eq!(report.verdict.as_str(), example.verdict, "{}: verdict\n{report:#?}", example.slug);
    }
    let languages: std::collections::HashSet<_> = EXAMPLES.iter().map(|e| e.language).collect();
    for language in ["python", "javascript", "typescript", "bash", "go", "rust"] {
        assert!(languages.contains(language), "an example in {language}");
    }
    let verdicts: std::collections::HashSet<_> = EXAMPLES.iter().map(|e| e.verdict).collect();
    assert_eq!(verdicts.len(), 3, "examples of every verdict");
}

#[tokio::test]
async fn the_first_paint_carries_the_report_of_the_opening_example() {
    let (app, _db) = app(60).await;
    let (status, html) = send(&app, Request::get("/audit").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown_verdict(&html), Some(EXAMPLES[0].verdict));
    assert!(html.contains("data-testid=\"exit-E2\" data-found=\"true\""), "E2 row marked found");
    assert!(html.contains("method=\"post\" action=\"/audit\""), "the page is a form without JavaScript");
    // The engine is the worker's business: the page itself never names it,
    // and no other page does either.
    assert!(!html.contains("auditor_bg.wasm"));
    let (_, home) = send(&app, Request::get("/").body(Body::empty()).unwrap()).await;
    assert!(!home.contains("auditor") && !home.contains("audit-worker"));
}

#[tokio::test]
async fn a_posted_form_is_audited_with_the_same_engine() {
    let (app, _db) = app(60).await;
    let source = "fn drive(a: &mut Agent) {\n    loop {\n        if a.step().converged {\n            break;\n        }\n    }\n}\n";
    let (status, html) = send(&app, form(encode(&[("source", source), ("language", "rust")]))).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(shown_verdict(&html), Some("CONVERGES"));
    assert!(html.contains("data-testid=\"exit-E1\" data-found=\"true\""));
    assert!(html.contains("if a.step().converged {"), "the source is shown again");

    // Auto-detection and a missing language both work.
    let (status, html) = send(&app, form(encode(&[("source", "while true; do\n  ./go.sh\ndone\n")]))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown_verdict(&html), Some("UNDEFINED"));
}

#[tokio::test]
async fn bad_forms_are_refused_by_name() {
    let (app, _db) = app(60).await;
    let (status, html) = send(&app, form(encode(&[("source", "x = 1"), ("language", "cobol")]))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("language: &quot;cobol&quot;") || html.contains("language: \"cobol\""), "{html}");
    assert!(html.contains("x = 1"), "the source is kept for correction");

    let (status, html) = send(&app, form(encode(&[("language", "python")]))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("source: missing"));

    let (status, html) = send(&app, form("source=%ZZ&&=".to_string())).await;
    assert!(status == StatusCode::BAD_REQUEST || status == StatusCode::OK, "{status}");
    assert!(!html.is_empty());

    let json = Request::post("/audit")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{\"source\": \"x\"}"))
        .unwrap();
    assert_eq!(send(&app, json).await.0, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let big = "x".repeat(server::audit::AUDIT_MAX_BYTES + 1);
    let (status, html) = send(&app, form(encode(&[("source", &big)]))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(html.contains("source: larger than"));
    assert!(!html.contains(&big[..1000]), "the oversized source is not echoed");

    // Hostile content is escaped, never markup.
    let (status, html) =
        send(&app, form(encode(&[("source", "</textarea><script>alert(1)</script>")]))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains("<script>alert(1)</script>"));
}

#[tokio::test]
async fn the_form_shares_the_audit_rate_limit() {
    let (app, _db) = app(2).await;
    for _ in 0..2 {
        assert_eq!(send(&app, form(encode(&[("source", "x = 1")]))).await.0, StatusCode::OK);
    }
    let (status, html) = send(&app, form(encode(&[("source", "x = 1")]))).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(html.contains("Too many audits"));
}
