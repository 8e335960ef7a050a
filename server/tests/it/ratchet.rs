//! The ratchet travels with the round (the ingest contract's `ratchet:
//! {value, best, stall_count}`): stored per round, answered in the rounds
//! API and the loop page's data, drawn on its chart, and a round that moved
//! it is never a stall. On SQLite and PostgreSQL.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::{json, Value};

use crate::support::http::{app, get, send, sign_in};

/// A round of the issue's `.loop/` journal: the checks `missing`, each a
/// blocking finding, and the ratchet after it.
fn round(number: u32, missing: &[&str], ratchet: Value) -> Value {
    let findings: Vec<Value> = missing
        .iter()
        .map(|check| {
            json!({"target": {"id": format!("test:{check}")}, "severity": "blocking",
                   "criterion": "verify", "message": format!("{check} missing")})
        })
        .collect();
    json!({"round": number, "state": format!("iteration-{number}"), "findings": findings, "ratchet": ratchet})
}

async fn post(app: &axum::Router, token: &str, body: &Value) -> (StatusCode, Value) {
    let request = Request::post("/api/v1/loops/gatekeeper/rounds")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let reply = send(app, request, "127.0.0.1:2").await;
    (reply.status, serde_json::from_str(&reply.body).unwrap_or(Value::Null))
}

both_backends! {
    async fn a_round_that_moved_the_ratchet_is_never_a_stall_and_is_drawn(db: TestDb) {
        use server::accounts::TeamRole;
        let app = app(&db);
        db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        // "missing: audit, push, import" (ratchet 5 -> 6), then "missing:
        // push, import" (6 -> 7), then the same two missing while the
        // ratchet climbs once more (7 -> 8) and then stands (8 -> 8).
        let steps = [
            (round(1, &["audit", "push", "import"], json!({"value": 6, "best": 6, "stall_count": 0})), "first"),
            (round(2, &["push", "import"], json!({"value": 7, "best": 7, "stall_count": 0})), "converging"),
            (round(3, &["push", "import"], json!({"value": 8, "best": 8, "stall_count": 0})), "ratcheting"),
            (round(4, &["push", "import"], json!({"value": 8, "best": 8, "stall_count": 1})), "stalled"),
        ];
        let mut answers = Vec::new();
        for (body, class) in &steps {
            let (status, answer) = post(&app, &token, body).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            assert_eq!(answer["class"], *class, "round {}: {answer}", body["round"]);
            answers.push(answer);
        }
        assert_eq!(
            (&answers[2]["outcome"], &answers[2]["advice"], &answers[2]["consecutive"]),
            (&json!("progressing"), &json!("continue"), &json!(0))
        );
        assert_eq!(
            answers[2]["reason"],
            "the ratchet moved from 7 to 8 while the same 2 blocking findings remain, so the round made progress"
        );
        assert_eq!(answers[3]["consecutive"], 1, "the stall budget starts where the ratchet stopped");

        // The same round again is the same answer; another ratchet is
        // another body.
        let (status, replay) = post(&app, &token, &steps[2].0).await;
        assert_eq!((status, &replay), (StatusCode::OK, &answers[2]));
        let (status, conflict) = post(&app, &token, &round(3, &["push", "import"], json!({"value": 9}))).await;
        assert_eq!(status, StatusCode::CONFLICT, "{conflict}");
        // A bad ratchet is refused by field, and nothing is stored.
        for (ratchet, field) in [
            (json!(8), "ratchet"),
            (json!({"best": 8}), "ratchet.value"),
            (json!({"value": "8"}), "ratchet.value"),
            (json!({"value": 8, "best": [8]}), "ratchet.best"),
            (json!({"value": 8, "stall_count": -2}), "ratchet.stall_count"),
        ] {
            let (status, error) = post(&app, &token, &round(5, &["push"], ratchet.clone())).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{ratchet}: {error}");
            assert_eq!(error["field"], field, "{ratchet}: {error}");
        }

        // The rounds API gives each round's ratchet back as sent.
        let request = Request::get("/api/v1/loops/gatekeeper/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        let history: Value = serde_json::from_str(&send(&app, request, "127.0.0.1:2").await.body).unwrap();
        let rounds = history["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 4, "the refused rounds stored nothing");
        assert_eq!(rounds[3]["ratchet"], json!({"value": 8.0, "best": 8.0, "stall_count": 1}));
        assert_eq!(rounds[2]["class"], "ratcheting");

        // The loop page's data carries it per round and per bar, and the
        // chart draws its lane; the page never calls round 3 a stall.
        let ada = sign_in(&app, &db, "ada@example.com").await;
        let view = get(&app, "/loops/gatekeeper/view.json?team=acme", Some(&ada)).await;
        assert_eq!(view.status, StatusCode::OK, "{}", view.body);
        let view: Value = serde_json::from_str(&view.body).unwrap();
        let values: Vec<&Value> = view["chart"].as_array().unwrap().iter().map(|bar| &bar["ratchet"]).collect();
        assert_eq!(values, [&json!(6.0), &json!(7.0), &json!(8.0), &json!(8.0)]);
        assert_eq!(view["rounds"][1]["ratchet"], json!({"value": 7.0, "best": 7.0, "stall_count": 0}));
        assert_eq!(view["glance"]["recent"][2]["ratchet"], json!(8.0));
        let page = get(&app, "/loops/gatekeeper?team=acme&round=3", Some(&ada)).await;
        assert!(page.body.contains("ratchet: the one number the loop must move"), "the chart's lane");
        assert!(page.body.contains("<title>round 3: ratcheting, the ratchet moved</title>"), "{}", page.body);
        let lane = page.body.find("ratchet: the one number").unwrap();
        assert!(page.body.contains("<title>round 3: ratchet 8</title>"), "{}", &page.body[lane..lane + 1500]);
        assert!(page.body.contains("data-testid=\"round-ratchet\">8 (best 8, 0 rounds without a move)"), "{}", page.body);
        let table = page.body.find("data-testid=\"rounds\"").unwrap();
        assert!(page.body[table..].contains("<th scope=\"col\">Ratchet</th>"));
        assert!(!page.body.contains("<title>round 3: stalled</title>"), "round 3 is not drawn as a stall");
    }
}
