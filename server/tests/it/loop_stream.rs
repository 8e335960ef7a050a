//! The loop page's live stream and data over HTTP, on both databases: new
//! rounds arrive as server-sent events, `Last-Event-ID` resumes from the
//! database, and nobody outside the team sees either.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use server::accounts::TeamRole;
use tower::ServiceExt;

use crate::support::http::{app, get, send, session_cookie};

async fn post_round(app: &axum::Router, token: &str, round: u32, state: &str) {
    let body = format!(r#"{{"round":{round},"state":"{state}","findings":[]}}"#);
    let request = Request::post("/api/v1/loops/nightly/rounds")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(send(app, request, "127.0.0.1:2").await.status, StatusCode::OK);
}

/// Opens the stream and returns a reader of its text as it arrives.
async fn open(app: &axum::Router, cookie: &str, last_event_id: Option<i64>) -> (StatusCode, Body) {
    let mut builder = Request::get("/loops/nightly/events?team=acme").header(header::COOKIE, cookie);
    if let Some(id) = last_event_id {
        builder = builder.header("last-event-id", id.to_string());
    }
    let response = app.clone().oneshot(builder.body(Body::empty()).unwrap()).await.unwrap();
    (response.status(), response.into_body())
}

/// Reads the stream until `needle` has arrived (or fails after 5 s).
async fn read_until(body: &mut Body, seen: &mut String, needle: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !seen.contains(needle) {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .unwrap_or_else(|_| panic!("{needle:?} did not arrive; got:\n{seen}"))
            .expect("the stream stays open")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            seen.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

both_backends! {
    async fn rounds_stream_live_and_resume_after_the_last_event_id(db: TestDb) {
        let app = app(&db);
        db.store.create_team("acme").await.unwrap();
        db.store.create_team("beta").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        db.store.add_team_member("beta", "bo@example.com", TeamRole::Member).await.unwrap();
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        post_round(&app, &token, 1, "aaaa1111").await;
        post_round(&app, &token, 2, "bbbb2222").await;
        let ada = session_cookie(&db, "ada@example.com").await;
        let bo = session_cookie(&db, "bo@example.com").await;

        // Outsiders get nothing: signed out 401, another team's member 404.
        let anonymous = app.clone().oneshot(Request::get("/loops/nightly/events").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(open(&app, &bo, None).await.0, StatusCode::NOT_FOUND);
        assert_eq!(get(&app, "/loops/nightly/view.json?team=acme", Some(&bo)).await.status, StatusCode::NOT_FOUND);

        // A fresh stream gets what is stored from now on.
        let (status, mut live) = open(&app, &ada, None).await;
        assert_eq!(status, StatusCode::OK);
        post_round(&app, &token, 3, "cccc3333").await;
        let mut seen = String::new();
        read_until(&mut live, &mut seen, "\"round\":3").await;
        assert!(seen.contains("event: round"), "{seen}");
        assert!(!seen.contains("\"round\":2"), "no history without Last-Event-ID: {seen}");
        let id_of = |text: &str, round: u32| -> i64 {
            let at = text.find(&format!("\"round\":{round}")).unwrap();
            let line = text[..at].rfind("id: ").unwrap();
            text[line + 4..].lines().next().unwrap().trim().parse().unwrap()
        };
        let third = id_of(&seen, 3);

        // Resuming after round 1's event id replays 2 and 3 from the
        // database, then goes on live without repeating them.
        let first_id: i64 = sqlx::query_scalar("SELECT id FROM rounds WHERE round = 1")
            .fetch_one(db.store.pool()).await.unwrap();
        let (_, mut resumed) = open(&app, &ada, Some(first_id)).await;
        let mut again = String::new();
        read_until(&mut resumed, &mut again, "\"round\":3").await;
        assert!(again.contains("\"round\":2"), "{again}");
        assert_eq!(id_of(&again, 3), third);
        post_round(&app, &token, 4, "dddd4444").await;
        read_until(&mut resumed, &mut again, "\"round\":4").await;
        assert_eq!(again.matches("\"round\":3").count(), 1, "no duplicate: {again}");
        read_until(&mut live, &mut seen, "\"round\":4").await;

        // The page's data, for the page to redraw itself.
        let view = get(&app, "/loops/nightly/view.json?team=acme", Some(&ada)).await;
        assert_eq!(view.status, StatusCode::OK);
        let view: serde_json::Value = serde_json::from_str(&view.body).unwrap();
        assert_eq!(view["rounds"].as_array().unwrap().len(), 4);
        assert_eq!(view["team"], "acme");
    }
}

both_backends! {
    async fn the_loop_page_shows_any_run_of_the_loop(db: TestDb) {
        let app = app(&db);
        db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        post_round(&app, &token, 1, "aaaa1111").await;
        post_round(&app, &token, 2, "oldrun22").await;
        // Round 1 again: the loop started over, a new run.
        post_round(&app, &token, 1, "newrun11").await;
        let ada = session_cookie(&db, "ada@example.com").await;

        let current = get(&app, "/loops/nightly?team=acme", Some(&ada)).await;
        assert!(current.body.contains("newrun11") && !current.body.contains("oldrun22"), "the current run by default");
        assert!(current.body.contains("run=run-1"), "the runs table links to each run: {}", current.body);
        let old = get(&app, "/loops/nightly?team=acme&run=run-1", Some(&ada)).await;
        assert_eq!(old.status, StatusCode::OK);
        assert!(old.body.contains("oldrun22"), "{}", old.body);
        let json = get(&app, "/loops/nightly/view.json?team=acme&run=run-1", Some(&ada)).await;
        let view: serde_json::Value = serde_json::from_str(&json.body).unwrap();
        assert_eq!(view["run"], "run-1");
        assert_eq!(view["rounds"].as_array().unwrap().len(), 2);
        let unknown = get(&app, "/loops/nightly?team=acme&run=nope", Some(&ada)).await;
        assert!(unknown.body.contains("newrun11"), "an unknown run shows the current one");
    }
}
