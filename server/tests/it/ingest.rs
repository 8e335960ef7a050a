//! The ingest contract v1 over HTTP (PRODUCT.md section 2), on SQLite and
//! PostgreSQL, through the real router.

use crate::support::TestDb;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::config::Config;
use server::loops::{sweep_lost_runs, LoopSettings};
use server::site;
use server::store::{now_millis, Store};
use server::web::AppState;
use tower::ServiceExt;

struct Harness {
    app: axum::Router,
    store: Store,
    token: String,
    team_id: i64,
    _db: TestDb,
}

fn app_with(db: &TestDb, max_bytes: Option<&str>) -> axum::Router {
    let max_bytes = max_bytes.map(str::to_string);
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(db.url.clone()),
        "FIXEDPOINT_INGEST_MAX_BYTES" => max_bytes.clone(),
        _ => None,
    })
    .unwrap();
    site::router(AppState::new(config, db.store.clone()))
}

async fn harness(db: TestDb) -> Harness {
    let team = db.store.create_team("acme").await.unwrap();
    let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
    Harness { app: app_with(&db, None), store: db.store.clone(), token, team_id: team.id, _db: db }
}

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<String>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request.body(body.map(Body::from).unwrap_or_else(Body::empty)).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&bytes)}));
    (status, value)
}

impl Harness {
    async fn post(&self, loop_name: &str, body: Value) -> (StatusCode, Value) {
        self.post_raw(loop_name, body.to_string()).await
    }

    async fn post_raw(&self, loop_name: &str, body: String) -> (StatusCode, Value) {
        call(&self.app, "POST", &format!("/api/v1/loops/{loop_name}/rounds"), Some(&self.token), Some(body))
            .await
    }

    async fn history(&self, loop_name: &str, query: &str) -> (StatusCode, Value) {
        call(&self.app, "GET", &format!("/api/v1/loops/{loop_name}/rounds{query}"), Some(&self.token), None)
            .await
    }

    async fn heartbeat(&self, loop_name: &str, body: Value) -> (StatusCode, Value) {
        call(
            &self.app,
            "POST",
            &format!("/api/v1/loops/{loop_name}/heartbeat"),
            Some(&self.token),
            Some(body.to_string()),
        )
        .await
    }
}

/// A round whose blocking findings are `blocking` (test ids) plus the
/// warnings `warnings`.
fn round(number: u32, state: &str, blocking: &[&str], warnings: &[&str]) -> Value {
    let mut findings: Vec<Value> = blocking
        .iter()
        .map(|id| json!({"target": {"id": id}, "severity": "blocking", "criterion": "test", "message": "fails"}))
        .collect();
    findings.extend(warnings.iter().map(|id| {
        json!({"target": {"path": id, "start_line": 3}, "severity": "warning", "criterion": "style", "message": "meh"})
    }));
    json!({"round": number, "state": state, "findings": findings})
}

fn rounds_stored(history: &Value) -> usize {
    history["rounds"].as_array().map_or(0, Vec::len)
}

both_backends! {
    async fn every_class_is_answered_in_the_contract_shape(db: TestDb) {
        let h = harness(db).await;
        let steps: [(Value, &str, &str, &str); 8] = [
            (round(1, "a", &["x", "y"], &["w.rs"]), "first", "started", "continue"),
            (round(2, "b", &["x"], &[]), "converging", "progressing", "continue"),
            (round(3, "c", &["x"], &[]), "stalled", "stuck", "continue"),
            (round(4, "d", &["z"], &[]), "thrashing", "stuck", "stop"),
            (round(5, "e", &["z", "q"], &[]), "regressing", "regressed", "continue"),
            (round(6, "c", &["x"], &[]), "cycle", "cycling", "stop"),
            (round(7, "c", &["x"], &[]), "fixed_point", "wedged", "stop"),
            (round(8, "f", &[], &["w.rs"]), "done", "converged", "stop"),
        ];
        for (body, class, outcome, advice) in steps {
            let number = body["round"].clone();
            let (status, answer) = h.post("writer", body).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            assert_eq!(answer["round"], number);
            assert_eq!(answer["class"], class, "round {number}: {answer}");
            assert_eq!(answer["outcome"], outcome, "round {number}: {answer}");
            assert_eq!(answer["advice"], advice, "round {number}: {answer}");
            assert!(answer["reason"].as_str().is_some_and(|reason| !reason.is_empty()));
            assert_eq!(answer["operator"], json!({"stop": false, "steer": null}));
            assert!(answer["seen_at"].is_array());
            if number == 6 {
                assert_eq!(answer["seen_at"], json!([3]));
                assert_eq!(answer["period"], 3);
            }
            if number == 7 {
                assert_eq!(answer["seen_at"], json!([3, 6]));
            }
        }
        let (status, history) = h.history("writer", "").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(rounds_stored(&history), 8);
        assert_eq!(history["run"]["state"], "running");
        assert_eq!(history["rounds"][0]["findings"].as_array().unwrap().len(), 3);
        assert_eq!(history["rounds"][0]["blocking"], 2);

        // The state "c" was judged three times, in rounds 3, 6 and 7.
        let (status, seen) = call(&h.app, "GET", "/api/v1/loops/writer/states/c", Some(&h.token), None).await;
        assert_eq!(status, StatusCode::OK);
        let rounds: Vec<u64> = seen["rounds"].as_array().unwrap().iter().map(|r| r["round"].as_u64().unwrap()).collect();
        assert_eq!(rounds, [3, 6, 7]);
        let (_, unseen) = call(&h.app, "GET", "/api/v1/loops/writer/states/zzz", Some(&h.token), None).await;
        assert_eq!(unseen["seen"], 0);
    }
}

both_backends! {
    async fn the_same_round_is_idempotent_and_a_different_body_conflicts(db: TestDb) {
        let h = harness(db).await;
        let first = round(1, "a", &["x"], &[]);
        let (_, answer) = h.post("loop", first.clone()).await;
        // Key order, whitespace and unknown fields do not make a body different.
        let mut again = first.clone();
        again["future_field"] = json!({"anything": [1, 2]});
        let (status, replay) = h.post_raw("loop", format!("  {again}\n")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(replay, answer);
        let (status, restarted) = h.post("loop", round(1, "a", &["y"], &[])).await;
        // Without a run id, round 1 with another body starts a new run.
        assert_eq!(status, StatusCode::OK, "{restarted}");
        assert_eq!(restarted["run"], "run-2");

        h.post("loop", round(2, "b", &["x"], &[])).await;
        // Round numbers may have gaps, but never go back.
        h.post("loop", round(4, "c", &["x"], &[])).await;
        let (status, error) = h.post("loop", round(4, "other", &["x"], &[])).await;
        assert_eq!(status, StatusCode::CONFLICT, "{error}");
        assert_eq!(error["field"], "round");
        let (status, error) = h.post("loop", round(3, "late", &[], &[])).await;
        assert_eq!(status, StatusCode::CONFLICT, "{error}");
        assert!(error["error"].as_str().unwrap().contains("strictly increasing"), "{error}");
        let (_, history) = h.history("loop", "").await;
        assert_eq!(rounds_stored(&history), 3, "nothing new was stored");
        let (_, first_run) = h.history("loop", "?run=run-1").await;
        assert_eq!(rounds_stored(&first_run), 1);

        // With an explicit run id, round 1 with another body is a conflict.
        let mut named = round(1, "n", &["x"], &[]);
        named["run"] = json!("2026-07-29a");
        assert_eq!(h.post("loop", named.clone()).await.0, StatusCode::OK);
        named["state"] = json!("m");
        let (status, error) = h.post("loop", named).await;
        assert_eq!(status, StatusCode::CONFLICT, "{error}");
        let (status, _) = h.history("loop", "?run=nope").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}

both_backends! {
    async fn malformed_bodies_get_400_naming_the_field_and_store_nothing(db: TestDb) {
        let h = harness(db).await;
        let good = json!({"target": {"id": "t"}, "severity": "blocking", "criterion": "c", "message": "m"});
        let bad_severity = json!({"target": {"id": "t2"}, "severity": "fatal", "criterion": "c"});
        let cases = [
            (json!({"state": "a"}), "round"),
            (json!({"round": 0, "state": "a"}), "round"),
            (json!({"round": 1, "state": ""}), "state"),
            (json!({"round": 1, "state": "s".repeat(257)}), "state"),
            (json!({"round": 1, "state": "a", "findings": [good, bad_severity]}), "findings[1].severity"),
            (json!({"round": 1, "state": "a", "findings": [{"target": {}, "severity": "info", "criterion": "c"}]}), "findings[0].target"),
            (json!({"round": 1, "state": "a", "spent": {"usd": -1}}), "spent.usd"),
            (json!({"round": 1, "state": "a", "exit": "E0"}), "exit"),
            (json!({"round": 1, "state": "a", "error": {"body": "x"}}), "error.code"),
            // NUL: PostgreSQL cannot store it, so neither database takes it.
            (json!({"round": 1, "state": "a", "findings": [{"target": {"id": "a\u{0}b"}, "severity": "info", "criterion": "c"}]}), "findings[0].target"),
            (json!({"round": 1, "state": "a", "findings": [{"target": {"path": "src/a\u{0}.rs"}, "severity": "info", "criterion": "c"}]}), "findings[0].target"),
            (json!({"round": 1, "state": "a", "findings": [{"target": {"id": "t"}, "severity": "info", "criterion": "c", "message": "m\u{0}"}]}), "findings[0].message"),
            (json!({"round": 1, "state": "a", "error": {"code": "500", "body": "stack\u{0}trace"}}), "error.body"),
            (json!({"round": 1, "state": "a\u{0}"}), "state"),
        ];
        for (body, field) in cases {
            let (status, error) = h.post("fragile", body.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(error["field"], field, "{body}: {error}");
            assert!(error["error"].as_str().unwrap().contains(field), "{error}");
        }
        let (status, error) = h.post_raw("fragile", "{\"round\": 1,".to_string()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(error["error"].as_str().unwrap().contains("not valid JSON"));
        let (status, error) = h.post_raw("fragile", r#"{"round": 1, "round": 2, "state": "a"}"#.to_string()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "a key given twice: {error}");
        assert!(error["error"].as_str().unwrap().contains("\"round\" is given twice"), "{error}");
        // Nothing was stored: not even the loop exists.
        let (status, _) = h.history("fragile", "").await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // Names a browser would resolve to another page, or too long to
        // travel in an address, are refused with the rule they break.
        let long = "%C3%A9".repeat(101);
        for (name, rule) in [("%2E", ". or .."), ("%2E%2E", ". or .."), (long.as_str(), "200 bytes"), ("a%2Fb", "/"), ("a%0Ab", "control")] {
            let (status, error) = h.post(name, json!({"round": 1, "state": "a"})).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {error}");
            assert_eq!(error["field"], "loop", "{name}: {error}");
            assert!(error["error"].as_str().unwrap().contains(rule), "{name}: {error}");
        }
        assert!(h.store.team_loops(h.team_id).await.unwrap().is_empty(), "no loop was stored");
    }
}

both_backends! {
    async fn oversized_bodies_get_413(db: TestDb) {
        let h = harness(db).await;
        let small = app_with(&h._db, Some("2000"));
        let big = json!({"round": 1, "state": "a", "padding": "p".repeat(5000)}).to_string();
        let (status, error) =
            call(&small, "POST", "/api/v1/loops/big/rounds", Some(&h.token), Some(big.clone())).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{error}");
        assert!(error["error"].as_str().unwrap().contains("2000"));
        // The default limit of 1 MiB takes the same body.
        assert_eq!(h.post_raw("big", big).await.0, StatusCode::OK);
        let huge = json!({"round": 2, "state": "b", "padding": "p".repeat(1024 * 1024)}).to_string();
        assert_eq!(h.post_raw("big", huge).await.0, StatusCode::PAYLOAD_TOO_LARGE);
    }
}

both_backends! {
    async fn tokens_are_required_and_revocation_is_immediate(db: TestDb) {
        let h = harness(db).await;
        let body = round(1, "a", &["x"], &[]).to_string();
        for token in [None, Some("fpl_0000"), Some("not-even-a-token")] {
            let (status, error) = call(&h.app, "POST", "/api/v1/loops/l/rounds", token, Some(body.clone())).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
            assert!(error["error"].is_string());
        }
        let other = h.store.create_loop_token("acme", "soon revoked").await.unwrap();
        let (status, _) = call(&h.app, "POST", "/api/v1/loops/l/rounds", Some(&other.secret), Some(body.clone())).await;
        assert_eq!(status, StatusCode::OK);
        assert!(h.store.revoke_loop_token(h.team_id, other.token.id).await.unwrap());
        let (status, _) = call(&h.app, "GET", "/api/v1/loops/l/rounds", Some(&other.secret), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        // A revoked token's round is refused and stores nothing.
        let next = round(2, "b", &["x"], &[]).to_string();
        let (status, _) = call(&h.app, "POST", "/api/v1/loops/l/rounds", Some(&other.secret), Some(next)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (_, rounds) = call(&h.app, "GET", "/api/v1/loops/l/rounds", Some(&h.token), None).await;
        assert_eq!(rounds["rounds"].as_array().map(Vec::len), Some(1), "{rounds}");
        // A stranger learns nothing about its body: 401 before 400 or 413.
        for bad_body in ["{not json".to_string(), json!({"round": 1, "padding": "p".repeat(2 << 20)}).to_string()] {
            for token in [None, Some("fpl_0000"), Some(other.secret.as_str())] {
                let (status, _) =
                    call(&h.app, "POST", "/api/v1/loops/l/rounds", token, Some(bad_body.clone())).await;
                assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
            }
        }
        let (status, _) =
            call(&h.app, "POST", "/api/v1/loops/l/rounds", Some(&h.token), Some("{not json".to_string())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let tokens = h.store.loop_tokens(h.team_id).await.unwrap();
        assert!(tokens.iter().any(|token| token.last_used_at.is_some()), "last use is recorded");
    }
}

both_backends! {
    async fn teams_never_see_each_others_loops(db: TestDb) {
        let h = harness(db).await;
        h.store.create_team("rival").await.unwrap();
        let rival = h.store.create_loop_token("rival", "theirs").await.unwrap().secret;
        assert_eq!(h.post("shared-name", round(1, "ours", &["x"], &[])).await.0, StatusCode::OK);
        for path in ["/api/v1/loops/shared-name/rounds", "/api/v1/loops/shared-name/states/ours"] {
            let (status, error) = call(&h.app, "GET", path, Some(&rival), None).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert_eq!(error["field"], "loop");
        }
        let (status, _) =
            call(&h.app, "POST", "/api/v1/loops/shared-name/heartbeat", Some(&rival), Some("{}".into())).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // The same name in the rival team is another loop.
        let (status, answer) = call(
            &h.app,
            "POST",
            "/api/v1/loops/shared-name/rounds",
            Some(&rival),
            Some(round(1, "theirs", &[], &[]).to_string()),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer["class"], "done");
        let (_, ours) = h.history("shared-name", "").await;
        assert_eq!(rounds_stored(&ours), 1);
        assert_eq!(ours["rounds"][0]["state"], "ours");
    }
}

both_backends! {
    async fn sixteen_concurrent_sends_of_one_round_store_one_row(db: TestDb) {
        let h = harness(db).await;
        let body = round(1, "a", &["x", "y"], &["w.rs"]);
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let app = h.app.clone();
            let token = h.token.clone();
            let body = body.to_string();
            tasks.push(tokio::spawn(async move {
                call(&app, "POST", "/api/v1/loops/raced/rounds", Some(&token), Some(body)).await
            }));
        }
        let mut answers = Vec::new();
        for task in tasks {
            let (status, answer) = task.await.unwrap();
            assert_eq!(status, StatusCode::OK, "{answer}");
            answers.push(answer);
        }
        assert!(answers.windows(2).all(|pair| pair[0] == pair[1]), "{answers:?}");
        let (_, history) = h.history("raced", "").await;
        assert_eq!(rounds_stored(&history), 1);
        assert_eq!(h.store.team_loops(h.team_id).await.unwrap().len(), 1);
    }
}

both_backends! {
    async fn operator_stop_and_steer_are_delivered_once(db: TestDb) {
        let h = harness(db).await;
        h.post("steered", round(1, "a", &["x"], &[])).await;
        h.store.set_loop_steer(h.team_id, "steered", Some("try the other parser")).await.unwrap();
        let (_, answer) = h.post("steered", round(2, "b", &["x", "y"], &[])).await;
        assert_eq!(answer["operator"], json!({"stop": false, "steer": "try the other parser"}));
        // Sent again, the round gets the answer it got, steer included.
        let (_, replay) = h.post("steered", round(2, "b", &["x", "y"], &[])).await;
        assert_eq!(replay, answer);
        let (_, next) = h.post("steered", round(3, "c", &["y"], &[])).await;
        assert_eq!(next["operator"], json!({"stop": false, "steer": null}));

        h.store.request_loop_stop(h.team_id, "steered").await.unwrap();
        let (_, stopped) = h.post("steered", round(4, "d", &["y"], &[])).await;
        assert_eq!(stopped["operator"]["stop"], true);
        // A loop that reads only `advice` stops too: round 4 made progress
        // (x went away), yet the answer that carries STOP advises stop.
        assert_eq!(stopped["advice"], "stop", "advice follows STOP: {stopped}");
        assert!(stopped["reason"].as_str().unwrap_or("").contains("STOP"), "{stopped}");
        let (_, replay) = h.post("steered", round(4, "d", &["y"], &[])).await;
        assert_eq!(replay["advice"], "stop", "the replay is the same answer");
        let (_, history) = h.history("steered", "").await;
        assert_eq!(history["run"]["state"], "stopped");
        // A stopped run takes only its final round, with the exit that ended it.
        let (status, _) = h.post("steered", round(5, "e", &["y"], &[])).await;
        assert_eq!(status, StatusCode::CONFLICT);
        let mut last = round(5, "e", &["y"], &[]);
        last["exit"] = json!("E6");
        let (status, last_answer) = h.post("steered", last).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(last_answer["operator"]["stop"], false, "STOP was delivered once");
        let (_, history) = h.history("steered", "").await;
        assert_eq!(history["run"]["state"], "stopped");
        assert_eq!(history["run"]["exit"], "E6");
        assert!(h.store.request_loop_stop(h.team_id, "nowhere").await.is_err());
    }
}

both_backends! {
    async fn exits_end_runs_and_errors_are_stored_raw(db: TestDb) {
        let h = harness(db).await;
        let raw = "{\"error\":{\"type\":\"overloaded\"}}\n\t<html>ünïcödé 😀</html>";
        let mut failing = round(1, "a", &["x"], &[]);
        failing["exit"] = json!("E3");
        failing["error"] = json!({"code": "529", "body": raw});
        failing["spent"] = json!({"tokens": 1234, "usd": 0.12, "seconds": 31.5});
        let (status, _) = h.post("budgeted", failing).await;
        assert_eq!(status, StatusCode::OK);
        let (_, history) = h.history("budgeted", "").await;
        assert_eq!(history["run"]["state"], "failed");
        assert_eq!(history["run"]["exit"], "E3");
        assert_eq!(history["rounds"][0]["error"], json!({"code": "529", "body": raw}));
        assert_eq!(history["rounds"][0]["spent"], json!({"tokens": 1234, "usd": 0.12, "seconds": 31.5}));
        let (status, error) = h.post("budgeted", round(2, "b", &[], &[])).await;
        assert_eq!(status, StatusCode::CONFLICT, "an ended run takes no more rounds: {error}");
        assert_eq!(error["field"], "run");

        let mut goal = round(1, "z", &[], &[]);
        goal["exit"] = json!("E1");
        h.post("goal", goal).await;
        assert_eq!(h.history("goal", "").await.1["run"]["state"], "done");
        // E5 (no progress) is a DETECT exit: the loop judged it had finished.
        let mut stalled = round(1, "s", &["x"], &[]);
        stalled["exit"] = json!("E5");
        h.post("stall", stalled).await;
        assert_eq!(h.history("stall", "").await.1["run"]["state"], "done");
    }
}

both_backends! {
    async fn the_ceiling_stops_a_loop_as_a_bound(db: TestDb) {
        let h = harness(db).await;
        h.post("capped", round(1, "a", &["x", "y"], &[])).await;
        let settings = LoopSettings { stall_threshold: 2, max_rounds: Some(2), heartbeat_window_ms: 600_000 };
        h.store.set_loop_settings(h.team_id, "capped", settings).await.unwrap();
        let (_, answer) = h.post("capped", round(2, "b", &["x"], &[])).await;
        assert_eq!(answer["class"], "converging");
        assert_eq!(answer["outcome"], "bounded");
        assert_eq!(answer["advice"], "stop");
        assert_eq!(answer["bound"]["max_rounds"], 2);
    }
}

both_backends! {
    async fn heartbeats_block_with_a_subject_and_silent_runs_are_lost(db: TestDb) {
        let h = harness(db).await;
        let (status, _) = h.heartbeat("beating", json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "no loop yet");
        h.post("beating", round(1, "a", &["x"], &[])).await;
        let (status, error) =
            h.heartbeat("beating", json!({"status": "blocked", "reason": "awaiting_approval"})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error["field"], "subject");
        let (status, beat) = h
            .heartbeat("beating", json!({"status": "blocked", "reason": "awaiting_approval", "subject": "PR #12"}))
            .await;
        assert_eq!(status, StatusCode::OK, "{beat}");
        assert_eq!(beat["run"]["state"], "blocked");
        assert_eq!(beat["run"]["blocked"], json!({"reason": "awaiting_approval", "subject": "PR #12"}));

        // Within the window nothing is lost; eleven minutes later it is.
        let now = now_millis();
        assert_eq!(sweep_lost_runs(&h.store, now + 60_000).await.unwrap(), 0);
        assert_eq!(sweep_lost_runs(&h.store, now + 11 * 60_000).await.unwrap(), 1);
        assert_eq!(h.history("beating", "").await.1["run"]["state"], "lost");
        // A lost run that reports again was only silent.
        let (status, answer) = h.post("beating", round(2, "b", &["x"], &[])).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(h.history("beating", "").await.1["run"]["state"], "running");
        let (status, beat) = h.heartbeat("beating", json!({})).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(beat["run"]["state"], "running");
    }
}

both_backends! {
    async fn rounds_stored_before_finding_keys_existed_still_classify(db: TestDb) {
        let h = harness(db).await;
        h.post("legacy", round(1, "a", &["x", "y"], &[])).await;
        h.post("legacy", round(2, "b", &["x"], &[])).await;
        // Rows written before migration 12 have no keys column value; the
        // engine must then read their findings from the findings table.
        sqlx::query("UPDATE rounds SET finding_keys = NULL").execute(h.store.pool()).await.unwrap();
        let (_, answer) = h.post("legacy", round(3, "c", &["x"], &[])).await;
        assert_eq!(answer["class"], "stalled", "{answer}");
        let (_, answer) = h.post("legacy", round(4, "a", &["x"], &[])).await;
        assert_eq!(answer["class"], "cycle", "{answer}");
        assert_eq!(answer["seen_at"], json!([1]));
    }
}

both_backends! {
    async fn spend_may_appear_after_rounds_without_it(db: TestDb) {
        // On PostgreSQL a NULL amount first, then a real one, used to fail
        // with "incorrect binary data format" (sqlx's Any driver typed the
        // NULL as float4 in the cached statement).
        let h = harness(db).await;
        let (status, _) = h.post("spender", round(1, "a", &["x"], &[])).await;
        assert_eq!(status, StatusCode::OK);
        for (index, spent) in [json!({"usd": 0.25}), json!({"seconds": 1.5}), json!({"usd": 1e-9, "seconds": 12345.678})]
            .into_iter()
            .enumerate()
        {
            let mut next = round(index as u32 + 2, &format!("s{index}"), &["x"], &[]);
            next["spent"] = spent.clone();
            let (status, body) = h.post("spender", next).await;
            assert_eq!(status, StatusCode::OK, "{spent}: {body}");
        }
        let (_, history) = h.history("spender", "").await;
        assert_eq!(history["rounds"][1]["spent"]["usd"], json!(0.25));
        assert_eq!(history["rounds"][2]["spent"]["seconds"], json!(1.5));
        assert_eq!(
            history["rounds"][3]["spent"],
            json!({"tokens": null, "usd": 1e-9, "seconds": 12345.678}),
            "amounts keep every digit"
        );
    }
}

both_backends! {
    async fn a_round_with_more_findings_than_one_statement_holds_is_stored_whole(db: TestDb) {
        let h = harness(db).await;
        // 900 findings: three insert statements of at most 400 rows, on
        // either database, each finding in its place.
        let ids: Vec<String> = (0..900).map(|index| format!("check-{index:03}")).collect();
        let blocking: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (status, answer) = h.post("wide", round(1, "a", &blocking, &["w.rs"])).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert!(answer["reason"].as_str().unwrap().contains("900 blocking findings among 901"), "{answer}");
        let (status, answer) = h.post("wide", round(2, "b", &blocking[..899], &[])).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["class"], "converging", "{answer}");
        let (_, history) = h.history("wide", "").await;
        let first = history["rounds"][0]["findings"].as_array().unwrap();
        assert_eq!(first.len(), 901);
        assert_eq!(first[0]["target"]["id"], "check-000");
        assert_eq!(first[899]["target"]["id"], "check-899");
        assert_eq!(first[900]["target"]["path"], "w.rs");
        assert_eq!(history["rounds"][1]["findings"].as_array().unwrap().len(), 899);
        let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM findings").fetch_one(h.store.pool()).await.unwrap();
        assert_eq!(stored, 901 + 899);
    }
}

both_backends! {
    async fn an_instance_never_classifies_with_a_history_another_instance_has_moved_past(db: TestDb) {
        // Two servers on one database: each remembers the runs it wrote to,
        // and must notice a round the other stored in between.
        let team = db.store.create_team("acme").await.unwrap();
        let other = Store::connect(&db.url).await.unwrap();
        let first = round(1, "a", &["x"], &[]);
        let report = |body: &Value| server::loops::RoundReport::from_json(body.to_string().as_bytes()).unwrap();
        db.store.ingest_round(team.id, "shared", &report(&first)).await.unwrap();
        other.ingest_round(team.id, "shared", &report(&round(2, "b", &["x"], &[]))).await.unwrap();
        // Round 3 judges round 2's state again: a fixed point. With only
        // round 1 in mind it would be "stalled".
        let third = db.store.ingest_round(team.id, "shared", &report(&round(3, "b", &["x"], &[]))).await.unwrap();
        assert_eq!(third.answer.class.as_str(), "fixed_point", "{:?}", third.answer);
        assert_eq!(third.answer.seen_at, vec![2]);
        other.close().await;
    }
}

both_backends! {
    async fn concurrent_good_and_conflicting_rounds_each_get_their_own_answer(db: TestDb) {
        // Eight loops, each sent round 1 of run "r1" twice at once with two
        // different bodies, among 32 concurrent requests that also carry a
        // malformed body and a body over the size limit: on SQLite they
        // share transactions, and no refusal may cost another request its
        // round or store half of one.
        let h = harness(db).await;
        let mut tasks = Vec::new();
        for index in 0..32 {
            let app = h.app.clone();
            let token = h.token.clone();
            let loop_name = format!("loop-{}", index % 8);
            let body = match index / 8 {
                0 => json!({"round": 1, "run": "r1", "state": "a", "findings": []}).to_string(),
                1 => json!({"round": 1, "run": "r1", "state": "b", "findings": []}).to_string(),
                2 => "{\"round\": 1, \"run\": ".to_string(),
                _ => json!({"round": 1, "run": "r1", "state": "x".repeat(2 << 20), "findings": []}).to_string(),
            };
            tasks.push(tokio::spawn(async move {
                let (status, answer) =
                    call(&app, "POST", &format!("/api/v1/loops/{loop_name}/rounds"), Some(&token), Some(body)).await;
                (index, status, answer)
            }));
        }
        let mut per_loop = std::collections::HashMap::<usize, Vec<StatusCode>>::new();
        for task in tasks {
            let (index, status, answer) = task.await.unwrap();
            match index / 8 {
                0 | 1 => per_loop.entry(index % 8).or_default().push(status),
                2 => assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}"),
                _ => assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}"),
            }
            if status == StatusCode::CONFLICT {
                assert_eq!(answer["field"], "round", "{answer}");
            }
        }
        for (loop_index, mut statuses) in per_loop {
            statuses.sort();
            assert_eq!(statuses, [StatusCode::OK, StatusCode::CONFLICT], "loop-{loop_index}");
            let (_, history) = h.history(&format!("loop-{loop_index}"), "").await;
            assert_eq!(rounds_stored(&history), 1, "loop-{loop_index}");
        }
        let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM rounds").fetch_one(h.store.pool()).await.unwrap();
        assert_eq!(stored, 8);
    }
}

both_backends! {
    async fn long_random_runs_get_the_reference_classification_across_a_restart(db: TestDb) {
        // Each round is classified from what the store remembers of its
        // run (the previous round and the earlier rounds of its state); the
        // reference replays the whole run. Random runs whose states repeat,
        // stored by one instance and continued by a fresh one on the same
        // database halfway, must get the reference's answer for every round.
        use rand::{Rng, SeedableRng};
        use server::convergence::{classify_run, LoopPolicy, RoundInput};
        let team = db.store.create_team("acme").await.unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(24);
        let ids = ["a", "b", "c", "d"];
        for run in 0..6 {
            let loop_name = format!("long-{run}");
            let length = 60;
            let mut bodies = Vec::new();
            let mut inputs: Vec<RoundInput> = Vec::new();
            for number in 1..=length {
                let state = format!("s{}", rng.random_range(0..3));
                let blocking: Vec<&str> = ids.iter().copied().filter(|_| rng.random_bool(0.4)).collect();
                let mut body = round(number, &state, &blocking, &[]);
                // Most rounds carry a ratchet that wanders: the store must
                // remember the previous one across the restart too.
                if rng.random_bool(0.7) {
                    body["ratchet"] = json!({"value": rng.random_range(0..3), "best": 2});
                }
                let report = server::loops::RoundReport::from_json(body.to_string().as_bytes()).unwrap();
                inputs.push(report.engine_input());
                bodies.push(report);
            }
            let expected = classify_run(&inputs, &LoopPolicy::default());
            let mut store = db.store.clone();
            let mut restarted = None;
            for (index, report) in bodies.iter().enumerate() {
                if index == length as usize / 2 {
                    let fresh = Store::open(&db.url).await.unwrap();
                    store = fresh.clone();
                    restarted = Some(fresh);
                }
                let got = store.ingest_round(team.id, &loop_name, report).await.unwrap();
                let want = &expected[index];
                assert_eq!(
                    (got.answer.class, got.answer.advice, &got.answer.seen_at, got.answer.consecutive, got.answer.period),
                    (want.class, want.advice, &want.seen_at, want.consecutive, want.period),
                    "run {run}, round {}: {}",
                    index + 1,
                    got.answer.reason
                );
                assert_eq!(got.answer.reason, want.reason);
            }
            if let Some(fresh) = restarted {
                fresh.close().await;
            }
        }
    }
}

both_backends! {
    async fn the_rounds_api_pages_a_run_and_links_its_neighbours(db: TestDb) {
        let h = harness(db).await;
        for number in 1..=12 {
            let (status, answer) = h.post("paged", round(number, &format!("s{number}"), &["x"], &[])).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
        }
        let numbers = |history: &Value| -> Vec<u64> {
            history["rounds"].as_array().unwrap().iter().map(|r| r["round"].as_u64().unwrap()).collect()
        };

        // From the start, five at a time, with a link to the next page only.
        let (status, first) = h.history("paged", "?limit=5").await;
        assert_eq!(status, StatusCode::OK, "{first}");
        assert_eq!(numbers(&first), [1, 2, 3, 4, 5]);
        assert_eq!(first["page"]["total"], 12);
        assert_eq!(first["links"]["older"], Value::Null);
        let newer = first["links"]["newer"].as_str().unwrap().to_string();
        assert!(newer.ends_with("&limit=5&after=5"), "{newer}");

        // Following the links walks the run forwards and back.
        let (_, second) = call(&h.app, "GET", &newer, Some(&h.token), None).await;
        assert_eq!(numbers(&second), [6, 7, 8, 9, 10]);
        let (_, third) = call(&h.app, "GET", second["links"]["newer"].as_str().unwrap(), Some(&h.token), None).await;
        assert_eq!(numbers(&third), [11, 12]);
        assert_eq!(third["links"]["newer"], Value::Null);
        let (_, back) = call(&h.app, "GET", third["links"]["older"].as_str().unwrap(), Some(&h.token), None).await;
        assert_eq!(numbers(&back), [6, 7, 8, 9, 10]);

        // `before` reads backwards from a round; the default page is at
        // most 500 rounds.
        let (_, latest) = h.history("paged", "?before=13&limit=3").await;
        assert_eq!(numbers(&latest), [10, 11, 12]);
        let (_, everything) = h.history("paged", "").await;
        assert_eq!(numbers(&everything).len(), 12);
        let (status, old_client) = h.history("paged", "?limit=1000").await;
        assert_eq!(status, StatusCode::OK, "a page size of 1,000 is still accepted: {old_client}");
        assert!(old_client["links"]["older"].is_null() && old_client["links"]["newer"].is_null());

        // Bad paging names its field and changes nothing.
        for (query, field) in [
            ("?after=1&before=5", "before"),
            ("?before=-1", "before"),
            ("?after=x", "after"),
            ("?limit=1001", "limit"),
            ("?limit=0", "limit"),
        ] {
            let (status, error) = h.history("paged", query).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {error}");
            assert_eq!(error["field"], field, "{query}: {error}");
        }
    }
}
