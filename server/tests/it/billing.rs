//! Billing against the local fake of Stripe's HTTP API, on both databases:
//! founder seats under concurrency, holds released only on Stripe's word,
//! the webhook matrix, and entitlements that follow subscription state.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{json, Value};
use server::newsletter::{seed_samples, Tier};
use server::signature;

use crate::support::fake_stripe::{FakeStripe, WEBHOOK_SECRET};
use crate::support::http::{
    app_with, get, post_form, post_json, send, serve, session_cookie, state_with, Reply, BASE,
};
use crate::support::TestDb;

struct Site {
    app: axum::Router,
    state: server::web::AppState,
    fake: FakeStripe,
}

/// The site with payments pointed at a fresh fake Stripe, listening for its
/// webhooks, with `seats` founder seats.
async fn site(db: &TestDb, seats: u32) -> Site {
    let fake = FakeStripe::start().await;
    let state = state_with(db, &fake.env(seats));
    let base = serve(state.clone()).await;
    fake.deliver_to(&base).await;
    Site { app: server::site::router(state.clone()), state, fake }
}

async fn checkout(site: &Site, cookie: &str, plan: &str) -> Reply {
    post_json(&site.app, "/api/v1/checkout", &json!({"plan": plan}).to_string(), Some(cookie)).await
}

fn session_id(reply: &Reply) -> String {
    let url: Value = serde_json::from_str(&reply.body).unwrap();
    url["url"].as_str().unwrap().rsplit('/').next().unwrap().to_string()
}

async fn founders(app: &axum::Router) -> Value {
    serde_json::from_str(&get(app, "/api/v1/founders", None).await.body).unwrap()
}

async fn tier_of(db: &TestDb, email: &str) -> Tier {
    let account = db.store.ensure_account(email).await.unwrap();
    db.store.reader_access(account.id).await.unwrap().tier
}

/// Waits until the fake's `kind` object `id` satisfies `until`.
async fn settle(site: &Site, kind: &str, id: &str, until: impl Fn(&Value) -> bool) {
    for _ in 0..100 {
        if until(&site.fake.object(kind, id).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the fake Stripe never reached the expected state");
}

both_backends! {
    async fn five_hundred_concurrent_founder_checkouts_hold_exactly_one_hundred_seats(db: TestDb) {
        let site = site(&db, 100).await;
        let mut cookies = Vec::new();
        for n in 0..500 {
            cookies.push(session_cookie(&db, &format!("reader{n}@example.com")).await);
        }
        let mut tasks = Vec::new();
        for cookie in cookies {
            let app = site.app.clone();
            tasks.push(tokio::spawn(async move {
                post_json(&app, "/api/v1/checkout", r#"{"plan":"founder_yearly"}"#, Some(&cookie)).await
            }));
        }
        let (mut held, mut sold_out) = (0, 0);
        for task in tasks {
            let reply = task.await.unwrap();
            match reply.status {
                StatusCode::OK => {
                    assert!(reply.body.contains("/checkout/cs_"), "{}", reply.body);
                    held += 1;
                }
                StatusCode::CONFLICT => {
                    assert!(reply.body.contains("\"sold_out\""), "{}", reply.body);
                    sold_out += 1;
                }
                other => panic!("unexpected {other}: {}", reply.body),
            }
        }
        assert_eq!((held, sold_out), (100, 400));
        let count = founders(&site.app).await;
        assert_eq!(count, json!({"taken": 0, "total": 100, "open": false}), "holds are not paid seats, and none is open");
        let holds: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM seat_holds WHERE state = 'held'")
            .fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(holds, 100);
        assert_eq!(site.fake.count("sessions").await, 100, "a Checkout Session only for each held seat");
    }
}

both_backends! {
    async fn a_completed_founder_checkout_grants_founder_and_shows_in_the_counter(db: TestDb) {
        seed_samples(&db.store).await.unwrap();
        let site = site(&db, 100).await;
        let cookie = session_cookie(&db, "ada@example.com").await;
        assert_eq!(founders(&site.app).await, json!({"taken": 0, "total": 100, "open": true}), "zero is shown as zero");

        let started = checkout(&site, &cookie, "founder_yearly").await;
        assert_eq!(started.status, StatusCode::OK, "{}", started.body);
        let session = session_id(&started);
        // A second click reuses the same checkout and seat.
        let again = checkout(&site, &cookie, "founder_yearly").await;
        assert_eq!(session_id(&again), session);
        let requests = site.fake.get("/_fake/requests").await;
        let creations: Vec<&Value> = requests.as_array().unwrap().iter()
            .filter(|r| r["method"] == "POST" && r["path"] == "/v1/checkout/sessions").collect();
        assert_eq!(creations.len(), 1);
        let created = creations[0];
        assert!(created["idempotency_key"].as_str().unwrap().starts_with("checkout-hold-"), "{created}");
        assert_eq!(created["body"]["mode"], "subscription");
        assert_eq!(created["body"]["line_items"][0]["price"], "price_founder_yearly");
        assert!(created["body"]["metadata"]["hold_id"].is_string());
        assert_eq!(created["body"]["client_reference_id"], created["body"]["metadata"]["account_id"]);
        let expires = created["body"]["expires_at"].as_str().unwrap().parse::<i64>().unwrap();
        let ttl = expires - server::store::now_millis() / 1000;
        assert!((1825..=1895).contains(&ttl), "the session lives 30.5 to 31.5 minutes: {ttl}");

        let done = site.fake.post(&format!("/_fake/checkout/sessions/{session}/complete"), json!({})).await;
        for delivery in done["deliveries"].as_array().unwrap() {
            assert_eq!(delivery["status"], 200, "{delivery}");
        }
        assert_eq!(tier_of(&db, "ada@example.com").await, Tier::Founder);
        assert_eq!(founders(&site.app).await, json!({"taken": 1, "total": 100, "open": true}));
        let issue = get(&site.app, "/issues/founders-field-notes", Some(&cookie)).await;
        assert!(issue.body.contains("Founders read this first."));
        let pricing = get(&site.app, "/pricing", None).await;
        assert!(pricing.body.contains("data-testid=\"founder-taken\">1<"), "the page reads the database");

        // The same customer is reused for a later checkout.
        assert_eq!(site.fake.count("customers").await, 1);
        let twice = checkout(&site, &cookie, "pro_monthly").await;
        assert_eq!(twice.status, StatusCode::CONFLICT, "{}", twice.body);
        assert!(twice.body.contains("already_subscribed"));
    }
}

both_backends! {
    async fn holds_are_released_by_expiry_events_and_by_the_sweeper_only(db: TestDb) {
        let site = site(&db, 2).await;
        let a = session_cookie(&db, "a@example.com").await;
        let b = session_cookie(&db, "b@example.com").await;
        let c = session_cookie(&db, "c@example.com").await;
        let session_a = session_id(&checkout(&site, &a, "founder_yearly").await);
        let session_b = session_id(&checkout(&site, &b, "founder_yearly").await);
        assert_eq!(checkout(&site, &c, "founder_yearly").await.status, StatusCode::CONFLICT);

        // Stripe says A's session expired: its seat is free again.
        site.fake.post(&format!("/_fake/checkout/sessions/{session_a}/expire"), json!({})).await;
        assert_eq!(founders(&site.app).await["open"], true);
        let session_c = session_id(&checkout(&site, &c, "founder_yearly").await);
        assert_eq!(founders(&site.app).await["open"], false);

        // A young hold is not swept, whatever the clock says about intent.
        let report = server::billing::sweeper::sweep(&site.state, Duration::ZERO).await.unwrap();
        assert_eq!(report, Default::default());
        // B's checkout is old: the sweeper expires it through Stripe and
        // releases the seat once Stripe says it is dead.
        let old = server::store::now_millis() - 40 * 60 * 1000;
        sqlx::query("UPDATE seat_holds SET created_at = $1 WHERE checkout_session_id = $2")
            .bind(old).bind(&session_b).execute(db.store.pool()).await.unwrap();
        let report = server::billing::sweeper::sweep(&site.state, Duration::ZERO).await.unwrap();
        assert_eq!(site.fake.object("sessions", &session_b).await["status"], "expired");
        // Expiring it also makes Stripe send `checkout.session.expired`, which
        // may release the hold first: either way it is released exactly once.
        assert!(report.released <= 1 && report.failed == 0, "{report:?}");
        let state: String = sqlx::query_scalar("SELECT state FROM seat_holds WHERE checkout_session_id = $1")
            .bind(&session_b).fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(state, "released");
        assert_eq!(founders(&site.app).await["open"], true);
        // C is untouched.
        let held: String = sqlx::query_scalar("SELECT state FROM seat_holds WHERE checkout_session_id = $1")
            .bind(&session_c).fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(held, "held");
    }
}

both_backends! {
    async fn a_hold_for_a_session_unknown_to_stripe_is_released_but_not_when_stripe_is_down(db: TestDb) {
        let site = site(&db, 1).await;
        let a = session_cookie(&db, "a@example.com").await;
        let b = session_cookie(&db, "b@example.com").await;
        let session = session_id(&checkout(&site, &a, "founder_yearly").await);
        // An old hold whose session id Stripe does not know (made with other
        // keys, say): it can never be paid.
        sqlx::query("UPDATE seat_holds SET created_at = $1, checkout_session_id = $2 WHERE checkout_session_id = $3")
            .bind(server::store::now_millis() - 40 * 60 * 1000)
            .bind("cs_test_never_made")
            .bind(&session)
            .execute(db.store.pool())
            .await
            .unwrap();

        // While Stripe cannot be reached, no answer is no news: the seat stays held.
        let mut unreachable = site.state.clone();
        let mut config = site.state.config.stripe.clone().expect("payments are configured");
        config.api_base = "http://127.0.0.1:9".to_string();
        unreachable.stripe = Some(std::sync::Arc::new(server::stripe_api::StripeApi::new(&config)));
        let report = server::billing::sweeper::sweep(&unreachable, Duration::ZERO).await.unwrap();
        assert_eq!((report.failed, report.released), (1, 0), "{report:?}");
        assert_eq!(checkout(&site, &b, "founder_yearly").await.status, StatusCode::CONFLICT);

        // Stripe answers that it has no such session: the seat is released.
        let report = server::billing::sweeper::sweep(&site.state, Duration::ZERO).await.unwrap();
        assert_eq!((report.failed, report.released), (0, 1), "{report:?}");
        let state: String = sqlx::query_scalar("SELECT state FROM seat_holds WHERE checkout_session_id = $1")
            .bind("cs_test_never_made")
            .fetch_one(db.store.pool())
            .await
            .unwrap();
        assert_eq!(state, "released");
        assert_eq!(founders(&site.app).await["open"], true);
        assert_eq!(checkout(&site, &b, "founder_yearly").await.status, StatusCode::OK);
        // A second sweep has nothing left to do.
        let report = server::billing::sweeper::sweep(&site.state, Duration::ZERO).await.unwrap();
        assert_eq!(report, Default::default());
    }
}

both_backends! {
    async fn a_completed_event_delayed_past_a_sweep_never_oversells(db: TestDb) {
        let site = site(&db, 1).await;
        let a = session_cookie(&db, "a@example.com").await;
        let b = session_cookie(&db, "b@example.com").await;
        let session = session_id(&checkout(&site, &a, "founder_yearly").await);
        // A pays at Stripe, but the events are held back.
        let paid = site.fake.post(&format!("/_fake/checkout/sessions/{session}/complete"), json!({"deliver": false})).await;
        sqlx::query("UPDATE seat_holds SET created_at = $1")
            .bind(server::store::now_millis() - 40 * 60 * 1000).execute(db.store.pool()).await.unwrap();
        // The sweeper cannot expire a completed session: it reads it and
        // keeps the seat as paid.
        let report = server::billing::sweeper::sweep(&site.state, Duration::ZERO).await.unwrap();
        assert_eq!(report.paid, 1, "{report:?}");
        assert_eq!(checkout(&site, &b, "founder_yearly").await.status, StatusCode::CONFLICT, "no second seat");
        // Now the delayed events arrive.
        for event in paid["events"].as_array().unwrap() {
            let reply = deliver(&site, event["payload"].as_str().unwrap(), event["signature"].as_str().unwrap()).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        }
        assert_eq!(tier_of(&db, "a@example.com").await, Tier::Founder);
        assert_eq!(founders(&site.app).await, json!({"taken": 1, "total": 1, "open": false}));

        // A payment that lands after Stripe expired a session whose seat was
        // then sold to someone else is refused: the subscription is cancelled.
        let site2 = self::site(&db, 1).await;
        let c = session_cookie(&db, "c@example.com").await;
        let d = session_cookie(&db, "d@example.com").await;
        sqlx::query("UPDATE seat_holds SET state = 'ended' WHERE state = 'paid'").execute(db.store.pool()).await.unwrap();
        sqlx::query("UPDATE founder_seat_counter SET used = 0").execute(db.store.pool()).await.unwrap();
        let late = session_id(&checkout(&site2, &c, "founder_yearly").await);
        site2.fake.post(&format!("/_fake/checkout/sessions/{late}/expire"), json!({})).await;
        let seat_d = session_id(&checkout(&site2, &d, "founder_yearly").await);
        let forced = site2.fake.post(&format!("/_fake/checkout/sessions/{late}/complete"), json!({"force": true})).await;
        let subscription = forced["subscription"]["id"].as_str().unwrap().to_string();
        settle(&site2, "subscriptions", &subscription, |object| object["status"] == "canceled").await;
        assert_eq!(tier_of(&db, "c@example.com").await, Tier::Free, "the late payer gets no seat");
        site2.fake.post(&format!("/_fake/checkout/sessions/{seat_d}/complete"), json!({})).await;
        assert_eq!(tier_of(&db, "d@example.com").await, Tier::Founder);
        assert_eq!(founders(&site2.app).await, json!({"taken": 1, "total": 1, "open": false}));
    }
}

async fn deliver(site: &Site, payload: &str, signature_header: &str) -> Reply {
    let request = axum::http::Request::post("/stripe/webhook")
        .header("content-type", "application/json")
        .header("stripe-signature", signature_header)
        .body(axum::body::Body::from(payload.to_string()))
        .unwrap();
    send(&site.app, request, "127.0.0.1:9").await
}

both_backends! {
    async fn the_webhook_matrix_ends_in_the_right_entitlements(db: TestDb) {
        let site = site(&db, 100).await;
        let cookie = session_cookie(&db, "pat@example.com").await;
        let session = session_id(&checkout(&site, &cookie, "pro_monthly").await);
        let paid = site.fake.post(&format!("/_fake/checkout/sessions/{session}/complete"), json!({"deliver": false})).await;
        let events = paid["events"].as_array().unwrap().clone();
        let (payload, header) = (events[0]["payload"].as_str().unwrap(), events[0]["signature"].as_str().unwrap());
        let now = server::store::now_millis() / 1000;

        // Bad signature, wrong secret, stale timestamp, no header: 400 and nothing changes.
        assert_eq!(deliver(&site, payload, &header.replace("v1=", "v1=00")).await.status, StatusCode::BAD_REQUEST);
        assert_eq!(deliver(&site, payload, &signature::sign(payload.as_bytes(), "whsec_wrong", now)).await.status, StatusCode::BAD_REQUEST);
        let stale = deliver(&site, payload, &signature::sign(payload.as_bytes(), WEBHOOK_SECRET, now - 301)).await;
        assert_eq!(stale.status, StatusCode::BAD_REQUEST);
        assert!(stale.body.contains("away from now"), "{}", stale.body);
        let tampered = payload.replace("checkout.session.completed", "checkout.session.expired");
        assert_eq!(deliver(&site, &tampered, header).await.status, StatusCode::BAD_REQUEST);
        let request = axum::http::Request::post("/stripe/webhook").body(axum::body::Body::from(payload.to_string())).unwrap();
        assert_eq!(send(&site.app, request, "127.0.0.1:9").await.status, StatusCode::BAD_REQUEST);
        assert_eq!(tier_of(&db, "pat@example.com").await, Tier::Free);

        // Out of order: the invoice and the subscription before the checkout.
        for event in events.iter().rev() {
            let reply = deliver(&site, event["payload"].as_str().unwrap(), event["signature"].as_str().unwrap()).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        }
        assert_eq!(tier_of(&db, "pat@example.com").await, Tier::Pro);
        // A repeated id changes nothing.
        let repeat = deliver(&site, payload, header).await;
        assert!(repeat.body.contains("duplicate"), "{}", repeat.body);
        let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM stripe_events").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(seen, 3);

        // Deleted arriving before updated: the state is Stripe's latest.
        let subscription = paid["subscription"]["id"].as_str().unwrap().to_string();
        let past_due = site.fake.post(&format!("/_fake/subscriptions/{subscription}/update"), json!({"status": "past_due", "deliver": false})).await;
        let canceled = site.fake.post(&format!("/_fake/subscriptions/{subscription}/update"), json!({"status": "canceled", "deliver": false})).await;
        for event in canceled["events"].as_array().unwrap().iter().chain(past_due["events"].as_array().unwrap()) {
            deliver(&site, event["payload"].as_str().unwrap(), event["signature"].as_str().unwrap()).await;
        }
        assert_eq!(tier_of(&db, "pat@example.com").await, Tier::Free, "a late past_due event does not revive a cancelled subscription");

        // An unknown event type is acknowledged and ignored.
        let unknown = json!({"id": "evt_unknown_1", "object": "event", "type": "radar.early_fraud_warning.created", "data": {"object": {}}}).to_string();
        let reply = deliver(&site, &unknown, &signature::sign(unknown.as_bytes(), WEBHOOK_SECRET, now)).await;
        assert_eq!(reply.status, StatusCode::OK);
        let not_json = "not json";
        assert_eq!(deliver(&site, not_json, &signature::sign(not_json.as_bytes(), WEBHOOK_SECRET, now)).await.status, StatusCode::BAD_REQUEST);
    }
}

both_backends! {
    async fn past_due_keeps_access_and_cancel_at_period_end_is_shown(db: TestDb) {
        let site = site(&db, 100).await;
        let cookie = session_cookie(&db, "kim@example.com").await;
        let session = session_id(&checkout(&site, &cookie, "pro_yearly").await);
        let paid = site.fake.post(&format!("/_fake/checkout/sessions/{session}/complete"), json!({})).await;
        let subscription = paid["subscription"]["id"].as_str().unwrap().to_string();
        site.fake.post(&format!("/_fake/subscriptions/{subscription}/update"), json!({"status": "past_due"})).await;
        assert_eq!(tier_of(&db, "kim@example.com").await, Tier::Pro, "Stripe's grace while it retries");
        let account = get(&site.app, "/account", Some(&cookie)).await;
        assert!(account.body.contains("payment failed"), "{}", account.body);
        site.fake.post(&format!("/_fake/subscriptions/{subscription}/update"), json!({"status": "active"})).await;

        let cancelled = post_form(&site.app, "/account/billing", "action=cancel", Some(&cookie)).await;
        assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.body);
        assert!(cancelled.body.contains("it will not renew"), "{}", cancelled.body);
        assert_eq!(tier_of(&db, "kim@example.com").await, Tier::Pro, "access lasts to the period's end");
        let portal = post_form(&site.app, "/account/billing", "action=portal", Some(&cookie)).await;
        assert_eq!(portal.status, StatusCode::SEE_OTHER);
        assert!(portal.headers["location"].to_str().unwrap().contains("/portal/"));

        site.fake.post(&format!("/_fake/subscriptions/{subscription}/update"), json!({"status": "unpaid"})).await;
        assert_eq!(tier_of(&db, "kim@example.com").await, Tier::Free, "after the grace, access ends");
    }
}

both_backends! {
    async fn a_failed_session_creation_gives_the_seat_back_at_once(db: TestDb) {
        let site = site(&db, 1).await;
        let cookie = session_cookie(&db, "a@example.com").await;
        site.fake.post("/_fake/fail-next", json!({"method": "POST", "path_prefix": "/v1/checkout/sessions", "status": 500, "type": "api_error", "message": "boom"})).await;
        let failed = checkout(&site, &cookie, "founder_yearly").await;
        assert_eq!(failed.status, StatusCode::BAD_GATEWAY, "{}", failed.body);
        assert!(failed.body.contains("nothing was charged"));
        assert_eq!(founders(&site.app).await["open"], true);
        let second = checkout(&site, &cookie, "founder_yearly").await;
        assert_eq!(second.status, StatusCode::OK, "{}", second.body);
    }
}

both_backends! {
    async fn checkout_refuses_bad_input_and_strangers(db: TestDb) {
        let site = site(&db, 100).await;
        let cookie = session_cookie(&db, "a@example.com").await;
        assert_eq!(checkout(&site, &cookie, "gold").await.status, StatusCode::BAD_REQUEST);
        let no_plan = post_json(&site.app, "/api/v1/checkout", "{}", Some(&cookie)).await;
        assert!(no_plan.body.contains("plan: required"));
        let not_json = post_json(&site.app, "/api/v1/checkout", "plan=pro", Some(&cookie)).await;
        assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
        let huge = post_json(&site.app, "/api/v1/checkout", &"x".repeat(10_000), Some(&cookie)).await;
        assert_eq!(huge.status, StatusCode::PAYLOAD_TOO_LARGE);
        let anonymous = post_json(&site.app, "/api/v1/checkout", r#"{"plan":"pro_monthly"}"#, None).await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
        let request = axum::http::Request::post("/api/v1/checkout")
            .header("content-type", "application/json")
            .header("sec-fetch-site", "cross-site")
            .header("cookie", &cookie)
            .body(axum::body::Body::from(r#"{"plan":"pro_monthly"}"#))
            .unwrap();
        assert_eq!(send(&site.app, request, "127.0.0.1:9").await.status, StatusCode::FORBIDDEN, "same origin only");
        let form = post_form(&site.app, "/checkout", "plan=pro_monthly", Some(&cookie)).await;
        assert_eq!(form.status, StatusCode::SEE_OTHER);
        assert!(form.headers["location"].to_str().unwrap().contains("/checkout/cs_"));
    }
}

both_backends! {
    async fn without_stripe_keys_payments_say_so_and_grant_nothing(db: TestDb) {
        let app = app_with(&db, &[]);
        let cookie = session_cookie(&db, "a@example.com").await;
        let reply = post_json(&app, "/api/v1/checkout", r#"{"plan":"pro_monthly"}"#, Some(&cookie)).await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
        let pricing = get(&app, "/pricing", Some(&cookie)).await;
        assert!(pricing.body.contains("Payments are not configured"));
        assert!(!pricing.body.contains("checkout-pro_monthly"));
        let webhook = axum::http::Request::post("/stripe/webhook").body(axum::body::Body::from("{}")).unwrap();
        assert_eq!(send(&app, webhook, "127.0.0.1:9").await.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(tier_of(&db, "a@example.com").await, Tier::Free);
        let waitlist = post_form(&app, "/pricing/waitlist", "email=wait%40example.com", None).await;
        assert!(waitlist.body.contains("on the founder waitlist"));
        let bad = post_form(&app, "/pricing/waitlist", "email=nope", None).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        // Anonymous writes are rate limited per address.
        let strict = app_with(&db, &[("FIXEDPOINT_SIGNIN_RATE_PER_MINUTE", "2".to_string())]);
        for n in 0..2 {
            let ok = post_form(&strict, "/pricing/waitlist", &format!("email=w{n}%40example.com"), None).await;
            assert_eq!(ok.status, StatusCode::OK);
        }
        let limited = post_form(&strict, "/pricing/waitlist", "email=w9%40example.com", None).await;
        assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(limited.body.contains("Too many requests"));
    }
}

/// Two instances on one PostgreSQL: a seat held through one reaches the
/// other's live count through the database's notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seat_count_is_live_across_instances_on_postgres() {
    let db = crate::support::postgres().await;
    let fake = FakeStripe::start().await;
    let first = state_with(&db, &fake.env(100));
    let second = state_with(&db, &fake.env(100));
    let listener = second.founders.start_postgres_listener(&db.url, db.store.clone(), 100).await.unwrap();
    let mut watch = second.founders.subscribe();
    second.founders.refresh(&db.store, 100).await;
    assert_eq!(watch.borrow_and_update().map(|count| count.held), Some(0));

    let account = db.store.ensure_account("a@example.com").await.unwrap();
    first.store.hold_founder_seat(account.id, 100, 60_000).await.unwrap();
    let changed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            watch.changed().await.unwrap();
            if watch.borrow().is_some_and(|count| count.held == 1) {
                return;
            }
        }
    })
    .await;
    assert!(changed.is_ok(), "the other instance heard the new hold");
    listener.abort();
}

both_backends! {
    async fn one_reader_cannot_hold_several_seats_by_clicking_in_parallel(db: TestDb) {
        let site = site(&db, 100).await;
        let cookie = session_cookie(&db, "eager@example.com").await;
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let app = site.app.clone();
            let cookie = cookie.clone();
            tasks.push(tokio::spawn(async move {
                post_json(&app, "/api/v1/checkout", r#"{"plan":"founder_yearly"}"#, Some(&cookie)).await
            }));
        }
        let mut urls = std::collections::BTreeSet::new();
        for task in tasks {
            let reply = task.await.unwrap();
            match reply.status {
                StatusCode::OK => {
                    urls.insert(session_id(&reply));
                }
                StatusCode::CONFLICT => assert!(reply.body.contains("checkout_in_progress"), "{}", reply.body),
                other => panic!("{other}: {}", reply.body),
            }
        }
        assert_eq!(urls.len(), 1, "every answer is the same checkout: {urls:?}");
        let holds: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM seat_holds").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(holds, 1);
        assert_eq!(founders(&site.app).await, json!({"taken": 0, "total": 100, "open": true}));
    }
}

both_backends! {
    // Parallel first checkouts of one reader store the same customer at the
    // same moment: every one of them is answered that customer, none fails
    // (on PostgreSQL a conflict clause naming only the account let the
    // losers fail on the customer's own unique index). A customer that is
    // another account's is refused, and the first account keeps it.
    async fn parallel_saves_of_one_stripe_customer_all_answer_it(db: TestDb) {
        for round in 0..5 {
            let account = db.store.ensure_account(&format!("racer{round}@example.com")).await.unwrap();
            let customer = format!("cus_race_{round}");
            let mut tasks = Vec::new();
            for _ in 0..12 {
                let store = db.store.clone();
                let customer = customer.clone();
                tasks.push(tokio::spawn(async move { store.save_stripe_customer(account.id, &customer).await }));
            }
            for task in tasks {
                assert_eq!(task.await.unwrap().unwrap(), customer);
            }
        }
        let thief = db.store.ensure_account("thief@example.com").await.unwrap();
        let refused = db.store.save_stripe_customer(thief.id, "cus_race_0").await;
        assert!(refused.is_err(), "another account's customer is not handed on: {refused:?}");
        assert_eq!(db.store.stripe_customer(thief.id).await.unwrap(), None);
        let owner = db.store.ensure_account("racer0@example.com").await.unwrap();
        assert_eq!(db.store.stripe_customer(owner.id).await.unwrap().as_deref(), Some("cus_race_0"));
    }
}

both_backends! {
    async fn a_founder_subscription_revived_after_its_seat_was_resold_is_cancelled(db: TestDb) {
        let site = site(&db, 1).await;
        let a = session_cookie(&db, "a@example.com").await;
        let b = session_cookie(&db, "b@example.com").await;
        let first = session_id(&checkout(&site, &a, "founder_yearly").await);
        let paid = site.fake.post(&format!("/_fake/checkout/sessions/{first}/complete"), json!({})).await;
        let subscription = paid["subscription"]["id"].as_str().unwrap().to_string();
        assert_eq!(tier_of(&db, "a@example.com").await, Tier::Founder);
        // Stripe gives up on A's payments: the seat is free, and B buys it.
        site.fake.post(&format!("/_fake/subscriptions/{subscription}/update"), json!({"status": "unpaid"})).await;
        assert_eq!(tier_of(&db, "a@example.com").await, Tier::Free);
        let second = session_id(&checkout(&site, &b, "founder_yearly").await);
        site.fake.post(&format!("/_fake/checkout/sessions/{second}/complete"), json!({})).await;
        assert_eq!(tier_of(&db, "b@example.com").await, Tier::Founder);
        // A pays the old invoice after all: there is no seat for A now.
        site.fake.post(&format!("/_fake/subscriptions/{subscription}/update"), json!({"status": "active"})).await;
        settle(&site, "subscriptions", &subscription, |object| object["status"] == "canceled").await;
        assert_eq!(tier_of(&db, "a@example.com").await, Tier::Free);
        assert_eq!(founders(&site.app).await, json!({"taken": 1, "total": 1, "open": false}));
    }
}

both_backends! {
    async fn an_event_about_a_subscription_stripe_does_not_know_is_acknowledged(db: TestDb) {
        let site = site(&db, 100).await;
        let now = server::store::now_millis() / 1000;
        // Signed, about a subscription the (fake) Stripe answers 404 for: no
        // retry would change that, so it is acknowledged, not failed.
        for (id, kind, object) in [
            ("evt_ghost_1", "customer.subscription.updated", json!({"id": "sub_ghost", "object": "subscription"})),
            ("evt_ghost_2", "invoice.paid", json!({"id": "in_ghost", "subscription": "sub_ghost"})),
        ] {
            let event = json!({"id": id, "object": "event", "type": kind, "data": {"object": object}}).to_string();
            let reply = deliver(&site, &event, &signature::sign(event.as_bytes(), WEBHOOK_SECRET, now)).await;
            assert_eq!(reply.status, StatusCode::OK, "{kind}: {}", reply.body);
            assert!(reply.body.contains("received"), "{}", reply.body);
        }
        let seen: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM stripe_events").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(seen, 2, "recorded as handled: a repeat is a duplicate");
        // A Stripe that cannot answer at all is still a failure to retry.
        let down = state_with(&db, &[vec![("STRIPE_API_BASE", "http://127.0.0.1:9".to_string())], site.fake.env(100)].concat());
        let event = json!({"id": "evt_down", "object": "event", "type": "customer.subscription.updated", "data": {"object": {"id": "sub_x"}}}).to_string();
        let request = axum::http::Request::post("/stripe/webhook")
            .header("content-type", "application/json")
            .header("stripe-signature", signature::sign(event.as_bytes(), WEBHOOK_SECRET, now))
            .body(axum::body::Body::from(event))
            .unwrap();
        let reply = send(&server::site::router(down), request, "127.0.0.1:9").await;
        assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", reply.body);
    }
}

both_backends! {
    async fn a_checkout_from_the_paywall_comes_back_to_the_issue_once_stripe_confirms(db: TestDb) {
        seed_samples(&db.store).await.unwrap();
        let site = site(&db, 100).await;
        let cookie = session_cookie(&db, "bea@example.com").await;
        let issue = "/issues/fixed-points-and-cycles";

        // A signed-in free reader pays from the paywall itself, and each
        // plan's form carries the issue.
        let paywall = get(&site.app, issue, Some(&cookie)).await;
        for plan in ["pro_monthly", "pro_yearly"] {
            assert!(paywall.body.contains(&format!("data-testid=\"checkout-{plan}\"")), "{}", paywall.body);
        }
        assert!(paywall.body.contains(&format!("name=\"next\" value=\"{issue}\"")), "{}", paywall.body);
        assert!(paywall.body.contains("A year costs $180 paid monthly (12 × $15) or $250 paid at once."));

        // The form's post starts Checkout with the issue in the success URL.
        let started = post_form(&site.app, "/checkout", "plan=pro_monthly&next=%2Fissues%2Ffixed-points-and-cycles", Some(&cookie)).await;
        assert_eq!(started.status, StatusCode::SEE_OTHER, "{}", started.body);
        let session = started.headers["location"].to_str().unwrap().rsplit('/').next().unwrap().to_string();
        let created = site.fake.object("sessions", &session).await;
        assert_eq!(created["success_url"], format!("{BASE}/checkout/thanks?next={issue}"), "{created}");
        assert_eq!(created["cancel_url"], format!("{BASE}/pricing?checkout=cancelled&next={issue}"));

        // Back from Checkout before Stripe's webhook: the page grants
        // nothing and says that the confirmation has not come.
        let early = get(&site.app, &format!("/checkout/thanks?next={issue}"), Some(&cookie)).await;
        assert_eq!(early.status, StatusCode::OK, "{}", early.body);
        assert!(early.body.contains("data-tier=\"free\""), "{}", early.body);
        assert!(early.body.contains("its confirmation has not reached us yet"), "{}", early.body);
        assert_eq!(tier_of(&db, "bea@example.com").await, Tier::Free, "the page itself grants nothing");
        assert!(!get(&site.app, issue, Some(&cookie)).await.body.contains("The digest trick"));

        let done = site.fake.post(&format!("/_fake/checkout/sessions/{session}/complete"), json!({})).await;
        for delivery in done["deliveries"].as_array().unwrap() {
            assert_eq!(delivery["status"], 200, "{delivery}");
        }
        let thanks = get(&site.app, &format!("/checkout/thanks?next={issue}"), Some(&cookie)).await;
        assert!(thanks.body.contains("data-tier=\"pro\""), "{}", thanks.body);
        assert!(thanks.body.contains("You are a Pro reader now."), "{}", thanks.body);
        assert!(thanks.body.contains(&format!("href=\"{issue}\"")), "the way back to the issue: {}", thanks.body);
        assert!(thanks.body.contains("Back to \u{201c}Fixed points and cycles\u{201d}"), "{}", thanks.body);
        assert!(get(&site.app, issue, Some(&cookie)).await.body.contains("The digest trick"));

        // Whatever `next` a link carries, the page links only into the site.
        for hostile in ["//evil.example", "https://evil.example", "/%2F%2Fevil.example", "/%5Cevil.example"] {
            let encoded = app::return_to::query_encode(hostile);
            let page = get(&site.app, &format!("/checkout/thanks?next={encoded}"), Some(&cookie)).await;
            assert_eq!(page.status, StatusCode::OK);
            assert!(!page.body.contains("evil.example"), "{hostile}: {}", page.body);
            assert!(!page.body.contains("data-testid=\"thanks-back\""), "{hostile}");
        }
    }
}

both_backends! {
    async fn a_checkout_carries_only_a_path_of_this_site(db: TestDb) {
        let site = site(&db, 100).await;
        let cookie = session_cookie(&db, "cy@example.com").await;
        let api = |next: &str| json!({"plan": "pro_yearly", "next": next}).to_string();
        for hostile in ["//evil.example", "/\\evil.example", "https://evil.example", "/%2f%2fevil.example", "/\t/evil.example", "javascript:alert(1)"] {
            let refused = post_json(&site.app, "/api/v1/checkout", &api(hostile), Some(&cookie)).await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{hostile:?}");
            assert!(refused.body.contains("\"error\":\"bad_next\"") && refused.body.contains("next: "), "{}", refused.body);

            // The pricing page's form drops it and checks out all the same.
            let body = format!("plan=pro_yearly&next={}", app::return_to::query_encode(hostile));
            let started = post_form(&site.app, "/checkout", &body, Some(&cookie)).await;
            assert_eq!(started.status, StatusCode::SEE_OTHER, "{hostile:?}: {}", started.body);
        }
        let sessions = site.fake.get("/_fake/state").await["sessions"].clone();
        for session in sessions.as_array().unwrap() {
            assert_eq!(session["success_url"], format!("{BASE}/checkout/thanks"), "{session}");
        }
        let kept = post_json(&site.app, "/api/v1/checkout", &api("/issues/x?from=mail"), Some(&cookie)).await;
        assert_eq!(kept.status, StatusCode::OK, "{}", kept.body);
        let session = site.fake.object("sessions", &session_id(&kept)).await;
        assert_eq!(session["success_url"], format!("{BASE}/checkout/thanks?next=/issues/x%3Ffrom%3Dmail"));

        // Signed out, the form sends the reader to sign in and back to the plans.
        let signed_out = post_form(&site.app, "/checkout", "plan=pro_yearly&next=%2Fissues%2Fx", None).await;
        assert_eq!(signed_out.status, StatusCode::SEE_OTHER);
        assert_eq!(signed_out.headers["location"], "/signin?next=/pricing%3Fnext%3D/issues/x");
    }
}
