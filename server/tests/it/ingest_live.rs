//! Live events: a stored round is heard by subscribers in the same process
//! and, on PostgreSQL, by another instance on the same database.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;
use server::config::Config;
use server::live::LiveEvents;
use server::loops::RoundEvent;
use server::site;
use server::store::Store;
use server::web::AppState;
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::broadcast::Receiver;
use tower::ServiceExt;

fn state(url: &str, store: Store) -> AppState {
    let url = url.to_string();
    let config = Config::from_lookup(|name| (name == "DATABASE_URL").then(|| url.clone())).unwrap();
    AppState::new(config, store)
}

async fn post_round(state: &AppState, token: &str, loop_name: &str, round: u32, state_digest: &str) {
    let body = json!({"round": round, "state": state_digest, "findings": [
        {"target": {"id": "t"}, "severity": "blocking", "criterion": "c", "message": "m"}]});
    let request = Request::post(format!("/api/v1/loops/{loop_name}/rounds"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = site::router(state.clone()).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

async fn next_event(receiver: &mut Receiver<RoundEvent>) -> RoundEvent {
    tokio::time::timeout(Duration::from_secs(10), receiver.recv())
        .await
        .expect("an event within 10 seconds")
        .expect("the channel is open")
}

both_backends! {
    async fn each_stored_round_is_published_once_and_replays_are_not(db: TestDb) {
        db.store.create_team("acme").await.unwrap();
        let token = db.store.create_loop_token("acme", "live").await.unwrap().secret;
        let app = state(&db.url, db.store.clone());
        let relay = match db.store.backend() {
            server::store::Backend::Postgres => Some(app.live.start_postgres_relay(&db.url).await.unwrap()),
            server::store::Backend::Sqlite => None,
        };
        let mut receiver = app.live.subscribe();
        post_round(&app, &token, "watched", 1, "a").await;
        post_round(&app, &token, "watched", 1, "a").await;
        post_round(&app, &token, "watched", 2, "a").await;
        let first = next_event(&mut receiver).await;
        assert_eq!((first.loop_name.as_str(), first.round, first.class.as_str()), ("watched", 1, "first"));
        assert_eq!(first.blocking, 1);
        let second = next_event(&mut receiver).await;
        assert_eq!((second.round, second.class.as_str()), (2, "fixed_point"));
        // The replay of round 1 published nothing, and nothing came twice.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(matches!(receiver.try_recv(), Err(TryRecvError::Empty)));
        if let Some(relay) = relay {
            relay.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_sent_to_one_instance_is_heard_live_on_another() {
    let db = crate::support::postgres().await;
    db.store.create_team("acme").await.unwrap();
    let token = db.store.create_loop_token("acme", "live").await.unwrap().secret;
    // Two instances: separate pools, separate live channels, one database.
    let first = state(&db.url, db.store.clone());
    let second = state(&db.url, Store::open(&db.url).await.unwrap());
    let relays = [
        first.live.start_postgres_relay(&db.url).await.unwrap(),
        second.live.start_postgres_relay(&db.url).await.unwrap(),
    ];
    let mut on_first = first.live.subscribe();
    let mut on_second = second.live.subscribe();
    post_round(&first, &token, "shared", 1, "x").await;
    let heard = next_event(&mut on_second).await;
    assert_eq!((heard.loop_name.as_str(), heard.round), ("shared", 1));
    assert_eq!(next_event(&mut on_first).await, heard, "the sender's own instance hears it too");
    post_round(&second, &token, "shared", 2, "y").await;
    assert_eq!(next_event(&mut on_first).await.round, 2);
    assert_eq!(next_event(&mut on_second).await.round, 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(on_first.try_recv(), Err(TryRecvError::Empty)), "each event arrives once");
    for relay in relays {
        relay.abort();
    }
    // An unrelayed channel still works in-process, as on SQLite.
    let local = LiveEvents::new();
    let mut receiver = local.subscribe();
    local.publish(heard.clone());
    assert_eq!(receiver.recv().await.unwrap(), heard);
}
