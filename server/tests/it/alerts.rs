//! Alerts over HTTP, on both databases: the team page sets the webhook, a
//! loop entering a bad state queues one alert, the deliverer signs and
//! sends it, failures back off and give up, a lost run alerts too.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::routing::post;
use server::accounts::TeamRole;

use crate::support::http::{app_with, post_form, send, session_cookie};

type Received = Arc<Mutex<Vec<(HeaderMap, String)>>>;

/// A webhook receiver on a free port answering `status`; returns its URL
/// and what it received.
async fn receiver(status: StatusCode) -> (String, Received) {
    let received: Received = Arc::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let store = store.clone();
            async move {
                store.lock().unwrap().push((headers, String::from_utf8_lossy(&body).into_owned()));
                status
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), received)
}

async fn round(app: &axum::Router, token: &str, n: u32, state: &str) {
    let body = format!(
        r#"{{"round":{n},"state":"{state}","findings":[{{"target":{{"id":"a"}},"severity":"blocking","criterion":"c","message":"m"}}]}}"#
    );
    let request = Request::post("/api/v1/loops/drafter/rounds")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap();
    let reply = send(app, request, "127.0.0.1:2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

fn secret_on(body: &str) -> String {
    let at =
        body.find("data-testid=\"webhook-secret\"").unwrap_or_else(|| panic!("the secret is shown: {body}"));
    let rest = &body[at..];
    let start = rest.find("fpw_").unwrap();
    rest[start..start + 68].to_string()
}

both_backends! {
    async fn a_loop_entering_a_bad_state_alerts_its_team_once_signed(db: TestDb) {
        let allow = [("FIXEDPOINT_ALLOW_PRIVATE_WEBHOOKS", "1".to_string())];
        let app = app_with(&db, &allow);
        db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "lead@example.com", TeamRole::Admin).await.unwrap();
        db.store.add_team_member("acme", "member@example.com", TeamRole::Member).await.unwrap();
        let lead = session_cookie(&db, "lead@example.com").await;
        let member = session_cookie(&db, "member@example.com").await;
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        let (url, received) = receiver(StatusCode::OK).await;

        // Only admins set it; private addresses only when allowed.
        let refused = post_form(&app, "/teams/acme", &format!("action=set_webhook&url={url}"), Some(&member)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        let strict = app_with(&db, &[]);
        let private = post_form(&strict, "/teams/acme", &format!("action=set_webhook&url={url}"), Some(&lead)).await;
        assert_eq!(private.status, StatusCode::BAD_REQUEST);
        assert!(private.body.contains("loopback or private address"), "{}", private.body);
        let bad = post_form(&app, "/teams/acme", "action=set_webhook&url=ftp%3A%2F%2Fx", Some(&lead)).await;
        assert!(bad.body.contains("url: must start with https:// or http://"));
        let set = post_form(&app, "/teams/acme", &format!("action=set_webhook&url={url}"), Some(&lead)).await;
        assert_eq!(set.status, StatusCode::OK, "{}", set.body);
        let secret = secret_on(&set.body);

        // Round 1 has blocking findings (first); round 2 judges the same
        // state (wedged): one alert. Round 3 stays wedged: no second alert.
        round(&app, &token, 1, "aaaa1111").await;
        round(&app, &token, 2, "aaaa1111").await;
        round(&app, &token, 3, "aaaa1111").await;
        let client = reqwest::Client::new();
        let report = server::alerts::deliver_due(&db.store, &client, server::store::now_millis()).await.unwrap();
        assert_eq!(report.delivered, 1, "{report:?}");
        let calls = received.lock().unwrap().clone();
        assert_eq!(calls.len(), 1);
        let (headers, body) = &calls[0];
        let payload: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(payload["type"], "loop.wedged");
        assert_eq!(payload["loop"], "drafter");
        assert_eq!(payload["team"], "acme");
        assert_eq!(payload["round"], 2);
        let signature = headers["fixedpoint-signature"].to_str().unwrap();
        let now = server::store::now_millis() / 1000;
        assert!(server::signature::verify(Some(signature), body.as_bytes(), &secret, now).is_ok(), "signed with the secret shown once");

        // The team page lists the delivery for members too.
        let page = crate::support::http::get(&app, "/teams/acme", Some(&member)).await;
        assert!(page.body.contains("data-testid=\"deliveries\""), "{}", page.body);
        assert!(page.body.contains("wedged"));
        assert!(!page.body.contains(&secret), "the secret shows only once");

        // A run that goes silent is lost, and alerts.
        let later = server::store::now_millis() + 60 * 60 * 1000;
        assert_eq!(server::loops::sweep_lost_runs(&db.store, later).await.unwrap(), 1);
        server::alerts::deliver_due(&db.store, &client, later).await.unwrap();
        let last = received.lock().unwrap().last().unwrap().1.clone();
        assert!(last.contains("\"type\":\"loop.lost\""), "{last}");
    }
}

both_backends! {
    async fn failed_deliveries_back_off_and_give_up(db: TestDb) {
        let allow = [("FIXEDPOINT_ALLOW_PRIVATE_WEBHOOKS", "1".to_string())];
        let app = app_with(&db, &allow);
        db.store.create_team("acme").await.unwrap();
        let team = db.store.team_by_slug("acme").await.unwrap().unwrap();
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        let (url, received) = receiver(StatusCode::INTERNAL_SERVER_ERROR).await;
        db.store.set_team_webhook(team.id, &url).await.unwrap();
        round(&app, &token, 1, "aaaa1111").await;
        round(&app, &token, 2, "aaaa1111").await;

        let client = reqwest::Client::new();
        let mut now = server::store::now_millis();
        let first = server::alerts::deliver_due(&db.store, &client, now).await.unwrap();
        assert_eq!(first.retrying, 1);
        // Not due again before the backoff has passed.
        let early = server::alerts::deliver_due(&db.store, &client, now + 29_000).await.unwrap();
        assert_eq!(early, Default::default());
        for attempt in 1..server::alerts::MAX_ATTEMPTS {
            now += server::alerts::backoff(attempt - 1).as_millis() as i64 + 1_000;
            server::alerts::deliver_due(&db.store, &client, now).await.unwrap();
        }
        let deliveries = db.store.alert_deliveries(team.id, 10).await.unwrap();
        assert_eq!(deliveries.len(), 1);
        assert_eq!(deliveries[0].status, "failed");
        assert_eq!(deliveries[0].attempts, server::alerts::MAX_ATTEMPTS);
        assert_eq!(deliveries[0].last_status, Some(500));
        assert_eq!(received.lock().unwrap().len() as i64, server::alerts::MAX_ATTEMPTS);

        // An address nobody listens on: a plain reason, not the client's text.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        db.store.set_team_webhook(team.id, &format!("http://{closed}/hook")).await.unwrap();
        round(&app, &token, 3, "cccc3333").await;
        round(&app, &token, 4, "cccc3333").await;
        server::alerts::deliver_due(&db.store, &client, now + 10 * 60 * 60 * 1000).await.unwrap();
        let latest = db.store.alert_deliveries(team.id, 1).await.unwrap().remove(0);
        assert_eq!(latest.last_error.as_deref(), Some("could not connect"), "{latest:?}");

        // Without a webhook nothing is queued.
        let queued = db.store.alert_deliveries(team.id, 10).await.unwrap().len();
        assert!(db.store.remove_team_webhook(team.id).await.unwrap());
        round(&app, &token, 5, "bbbb2222").await;
        round(&app, &token, 6, "bbbb2222").await;
        assert_eq!(db.store.alert_deliveries(team.id, 10).await.unwrap().len(), queued);
    }
}
