//! The founders' MCP server through real MCP clients: the official Python
//! SDK (`mcp` from PyPI, in `end2end/.venv`) at revisions 2025-11-25 (the
//! initialize handshake) and 2026-07-28 (session-less), and the official
//! TypeScript SDK pinned at a release that speaks 2025-06-18. Founders are
//! made the real way, through Checkout against the fake Stripe. On SQLite
//! and PostgreSQL.

use std::process::Stdio;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::{json, Value};
use server::accounts::TeamRole;
use server::newsletter::seed_samples;
use tokio::io::AsyncWriteExt;

use crate::support::fake_stripe::FakeStripe;
use crate::support::http::{fixedpoint, get, post_form, post_json, send, serve, session_cookie, state_with};
use crate::support::TestDb;

struct Site {
    app: axum::Router,
    base: String,
    fake: FakeStripe,
}

async fn site(db: &TestDb, seats: u32, extra: &[(&'static str, &str)]) -> Site {
    let fake = FakeStripe::start().await;
    let mut env = fake.env(seats);
    env.extend(extra.iter().map(|(name, value)| (*name, value.to_string())));
    let state = state_with(db, &env);
    let base = serve(state.clone()).await;
    fake.deliver_to(&base).await;
    Site { app: server::site::router(state), base, fake }
}

/// Buys a plan through Checkout and the fake's completion; returns the
/// reader's cookie and the Stripe subscription id.
async fn subscribe(site: &Site, db: &TestDb, email: &str, plan: &str) -> (String, String) {
    let cookie = session_cookie(db, email).await;
    let started =
        post_json(&site.app, "/api/v1/checkout", &json!({"plan": plan}).to_string(), Some(&cookie)).await;
    assert_eq!(started.status, StatusCode::OK, "{}", started.body);
    let url: Value = serde_json::from_str(&started.body).unwrap();
    let session = url["url"].as_str().unwrap().rsplit('/').next().unwrap().to_string();
    let done = site.fake.post(&format!("/_fake/checkout/sessions/{session}/complete"), json!({})).await;
    let subscription = done["subscription"]["id"].as_str().unwrap().to_string();
    (cookie, subscription)
}

/// Makes an MCP token on `/account`, as a founder does, and reads it off the page.
async fn token_from_account(site: &Site, cookie: &str, name: &str) -> String {
    let made =
        post_form(&site.app, "/account", &format!("action=make_mcp_token&name={name}"), Some(cookie)).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.body);
    let at = made
        .body
        .find("data-testid=\"mcp-token\"")
        .unwrap_or_else(|| panic!("the new token is shown once: {}", made.body));
    let rest = &made.body[at..];
    let rest = &rest[rest.find('>').unwrap() + 1..];
    rest[..rest.find('<').unwrap()].to_string()
}

enum Sdk {
    Python,
    TypeScript,
}

/// Runs one client session with `plan` and returns what it printed.
async fn client(sdk: Sdk, plan: Value) -> Value {
    let end2end = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end");
    let mut command = match sdk {
        Sdk::Python => {
            let python = std::env::var("FIXEDPOINT_TEST_PYTHON")
                .unwrap_or_else(|_| format!("{end2end}/.venv/bin/python"));
            let mut command = tokio::process::Command::new(python);
            command.arg(format!("{end2end}/mcp/py_client.py"));
            command
        }
        Sdk::TypeScript => {
            let mut command = tokio::process::Command::new("node");
            command.arg(format!("{end2end}/mcp/js_client.mjs"));
            command
        }
    };
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect(
            "the MCP client runs: `make test` installs the mcp package in end2end/.venv and the npm packages",
        );
    child.stdin.take().unwrap().write_all(plan.to_string().as_bytes()).await.unwrap();
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| {
        panic!("the client printed no JSON: {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    })
}

fn plan(site: &Site, token: &str, mode: &str, calls: Value) -> Value {
    json!({"url": format!("{}/mcp", site.base), "token": token, "mode": mode, "calls": calls})
}

const LOOP: &str = "for turn in range(40):  # the cap\n    reply = agent.step()\n    if not reply.tool_calls:\n        break\n";

/// A team with a loop of three rounds (the third back at the first state),
/// and another team's loop.
async fn loops(site: &Site, db: &TestDb, member: &str) {
    db.store.create_team("acme").await.unwrap();
    db.store.create_team("rival").await.unwrap();
    db.store.add_team_member("acme", member, TeamRole::Member).await.unwrap();
    for (team, name, states) in
        [("acme", "drafter", ["s-one", "s-two", "s-one"]), ("rival", "secret", ["x", "y", "z"])]
    {
        let token = db.store.create_loop_token(team, "ci").await.unwrap().secret;
        for (index, state) in states.iter().enumerate() {
            let body = json!({
                "round": index + 1,
                "state": state,
                "findings": [{"target": {"id": "a"}, "severity": "blocking", "criterion": "c", "message": "m"}],
                "spent": {"usd": 0.5, "tokens": 1200},
            });
            let request = Request::post(format!("/api/v1/loops/{name}/rounds"))
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap();
            let reply = send(&site.app, request, "127.0.0.1:2").await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        }
    }
}

fn call(answer: &Value, index: usize) -> &Value {
    &answer["calls"][index]
}

both_backends! {
    async fn a_founder_calls_every_tool_from_three_clients(db: TestDb) {
        seed_samples(&db.store).await.unwrap();
        let site = site(&db, 1, &[]).await;
        let (cookie, _) = subscribe(&site, &db, "ada@example.com", "founder_yearly").await;
        loops(&site, &db, "ada@example.com").await;
        let account = get(&site.app, "/account", Some(&cookie)).await;
        assert!(account.body.contains("The founders-only MCP server: open now"), "{}", account.body);
        let token = token_from_account(&site, &cookie, "laptop").await;
        assert!(token.starts_with("fpm_"), "{token}");

        let calls = json!([
            {"tool": "audit_loop", "arguments": {"source": LOOP, "language": "python"}},
            {"tool": "loop_history", "arguments": {"team": "acme", "loop": "drafter", "last": 2}},
            {"tool": "seen_state", "arguments": {"team": "acme", "loop": "drafter", "state": "s-one"}},
            {"tool": "search_archive", "arguments": {"query": "digest trick"}},
            {"tool": "read_issue", "arguments": {"slug": "founders-field-notes"}},
            // The mistakes a model makes: each a readable tool error.
            {"tool": "audit_loop", "arguments": {"language": "python"}},
            {"tool": "audit_loop", "arguments": {"source": LOOP, "language": "cobol"}},
            {"tool": "loop_history", "arguments": {"team": "rival", "loop": "secret"}},
            {"tool": "loop_history", "arguments": {"team": "acme", "loop": "secret"}},
            {"tool": "loop_history", "arguments": {"team": "acme", "loop": "drafter", "last": 0}},
            {"tool": "read_issue", "arguments": {"slug": "no-such-issue"}},
            // And the session still works after them.
            {"tool": "seen_state", "arguments": {"team": "acme", "loop": "drafter", "state": "never"}},
        ]);
        let answer = client(Sdk::Python, plan(&site, &token, "legacy", calls.clone())).await;
        assert_eq!(answer["protocol_version"], "2025-11-25", "{answer}");
        let mut names: Vec<&str> = answer["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
        names.sort_unstable();
        assert_eq!(names, ["audit_loop", "loop_history", "read_issue", "search_archive", "seen_state"]);
        for tool in answer["tools"].as_array().unwrap() {
            assert!(tool["description"].as_str().unwrap().len() > 60, "{tool}");
            assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
            assert_eq!(tool["output_schema"]["type"], "object", "{tool}");
        }

        let audit = call(&answer, 0);
        assert_eq!(audit["is_error"], false, "{audit}");
        assert_eq!(audit["structured"]["verdict"], "CONVERGES", "{audit}");
        assert_eq!(audit["structured"]["files"][0]["exits"].as_array().unwrap().len(), 8);
        let history = call(&answer, 1);
        assert_eq!(history["is_error"], false, "{history}");
        assert_eq!(history["structured"]["total_rounds"], 3);
        let rounds = history["structured"]["rounds"].as_array().unwrap();
        assert_eq!(rounds.iter().map(|round| round["round"].as_u64().unwrap()).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(rounds[1]["class"], "cycle", "{history}");
        assert_eq!(rounds[1]["seen_at"], json!([1]));
        assert_eq!(rounds[1]["blocking"], 1);
        assert_eq!(rounds[1]["spent"]["usd"], 0.5);
        assert!(["continue", "stop"].contains(&rounds[1]["advice"].as_str().unwrap()));
        let seen = call(&answer, 2);
        assert_eq!(seen["structured"]["seen"], true, "{seen}");
        assert_eq!(seen["structured"]["rounds"].as_array().unwrap().len(), 2);
        let search = call(&answer, 3);
        assert_eq!(search["structured"]["issues"][0]["slug"], "fixed-points-and-cycles", "{search}");
        assert!(search["structured"]["issues"][0]["excerpt"].as_str().unwrap().contains("digest trick"), "the paid part is searched");
        let issue = call(&answer, 4);
        assert!(issue["structured"]["text"].as_str().unwrap().contains("Founders read this first."), "{issue}");

        for index in 5..=10 {
            let refused = call(&answer, index);
            assert_eq!(refused["is_error"], true, "call {index}: {refused}");
            assert!(!refused["text"].as_str().unwrap().is_empty());
        }
        assert!(call(&answer, 5)["text"].as_str().unwrap().contains("source"), "the missing field is named");
        assert!(call(&answer, 6)["text"].as_str().unwrap().contains("cobol"));
        // Another team's loop reads exactly like a loop that does not exist.
        assert_eq!(
            call(&answer, 7)["text"].as_str().unwrap().replace("rival", "acme"),
            call(&answer, 8)["text"].as_str().unwrap(),
        );
        assert!(!call(&answer, 7)["text"].as_str().unwrap().contains("s-one"));
        let after = call(&answer, 11);
        assert_eq!(after["is_error"], false, "{after}");
        assert_eq!(after["structured"]["seen"], false);

        // The session-less revision, from the same SDK.
        let modern = client(Sdk::Python, plan(&site, &token, "auto", json!([calls[2]]))).await;
        assert_eq!(modern["protocol_version"], "2026-07-28", "{modern}");
        assert_eq!(call(&modern, 0)["structured"]["seen"], true, "{modern}");

        // 2025-06-18, from the TypeScript SDK.
        let older = client(Sdk::TypeScript, plan(&site, &token, "legacy", json!([calls[0], calls[7]]))).await;
        assert_eq!(older["protocol_version"], "2025-06-18", "{older}");
        assert_eq!(call(&older, 0)["structured"]["verdict"], "CONVERGES", "{older}");
        assert_eq!(call(&older, 1)["is_error"], true);
        assert_eq!(older["tools"].as_array().unwrap().len(), 5);
    }
}

/// A raw POST of an `initialize` request, for the gate's HTTP answers.
async fn initialize(base: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

async fn error_of(response: reqwest::Response) -> (StatusCode, Option<String>, String) {
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let challenge =
        response.headers().get("www-authenticate").map(|value| value.to_str().unwrap().to_string());
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, challenge, body["error"]["message"].as_str().unwrap_or_default().to_string())
}

both_backends! {
    async fn the_gate_admits_founders_only_once_the_seats_are_taken(db: TestDb) {
        let site = site(&db, 2, &[("FIXEDPOINT_MCP_RATE_PER_MINUTE", "8")]).await;
        let (ada, ada_subscription) = subscribe(&site, &db, "ada@example.com", "founder_yearly").await;

        // No token, a malformed one, an unknown one: 401 with the challenge.
        let (status, challenge, message) = error_of(initialize(&site.base, None).await).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(challenge.as_deref(), Some("Bearer realm=\"fixedpoint-mcp\""));
        assert!(message.contains("/account"), "{message}");
        for bad in ["fpm_", "fpm_0000", "fpl_not-an-mcp-token", "Basic abc"] {
            let (status, challenge, _) = error_of(initialize(&site.base, Some(bad)).await).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{bad:?}");
            assert!(challenge.unwrap().contains("invalid_token"));
        }
        let refused = client(Sdk::Python, plan(&site, "fpm_unknown", "legacy", json!([]))).await;
        assert!(refused.get("tools").is_none(), "{refused}");
        assert_eq!(refused["code"], -32001, "{refused}");
        assert!(refused["connect_error"].as_str().unwrap().contains("unknown or revoked"), "the client shows why: {refused}");

        // One of two seats taken: the server is not open yet, and says so.
        let token = token_from_account(&site, &ada, "agent").await;
        let (status, _, message) = error_of(initialize(&site.base, Some(&token)).await).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(message.contains("all 2 founder seats") && message.contains("1 is left"), "{message}");
        let waiting = client(Sdk::Python, plan(&site, &token, "legacy", json!([]))).await;
        assert!(waiting["connect_error"].as_str().unwrap().contains("1 is left"), "{waiting}");
        let account = get(&site.app, "/account", Some(&ada)).await;
        assert!(account.body.contains("switched on once all 2 seats are taken: 1 is left"), "{}", account.body);
        let pricing = get(&site.app, "/pricing", None).await;
        assert!(pricing.body.contains("1 is left"), "the pricing page says how many are left");

        // The last seat is sold: the server opens.
        let (bo, _) = subscribe(&site, &db, "bo@example.com", "founder_yearly").await;
        let answer = client(Sdk::Python, plan(&site, &token, "legacy", json!([]))).await;
        assert_eq!(answer["tools"].as_array().map(Vec::len), Some(5), "{answer}");

        // A message with a key given twice is refused before rmcp reads it
        // (serde would keep the last `method`), naming the key; the same
        // message without the repeat is answered. (A token of its own: the
        // rate is counted by token.)
        let raw_token = token_from_account(&site, &ada, "raw").await;
        let raw = |body: &'static str| {
            reqwest::Client::new()
                .post(format!("{}/mcp", site.base))
                .bearer_auth(&raw_token)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(body)
                .send()
        };
        let twice = raw(r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#).await.unwrap();
        let (status, _, message) = error_of(twice).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{message}");
        assert!(message.contains("method"), "the message names the key: {message}");
        let nested = raw(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","name":"b","version":"1"}}}"#).await.unwrap();
        assert_eq!(nested.status(), 400, "a repeat inside params is refused too");
        let once = raw(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#).await.unwrap();
        assert_eq!(once.status(), 200);

        // A reader who is not a founder: no token from the page, and a token
        // made for them anyway (they were a founder once) is refused.
        let (pat, _) = subscribe(&site, &db, "pat@example.com", "pro_yearly").await;
        let denied = post_form(&site.app, "/account", "action=make_mcp_token&name=x", Some(&pat)).await;
        assert_eq!(denied.status, StatusCode::FORBIDDEN, "{}", denied.body);
        let pat_account = db.store.ensure_account("pat@example.com").await.unwrap();
        let pat_token = db.store.create_mcp_token(pat_account.id, "old").await.unwrap().secret;
        let (status, _, message) = error_of(initialize(&site.base, Some(&pat_token)).await).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(message.contains("founders") && message.contains("pro"), "{message}");

        // A revoked token stops at once; another founder cannot revoke it.
        let bo_token = token_from_account(&site, &bo, "bo-agent").await;
        let tokens = db.store.mcp_tokens(db.store.ensure_account("bo@example.com").await.unwrap().id).await.unwrap();
        let across = post_form(&site.app, "/account", &format!("action=revoke_mcp_token&token_id={}", tokens[0].id), Some(&ada)).await;
        assert!(across.body.contains("already revoked"), "another founder's token id changes nothing");
        assert_ne!(error_of(initialize(&site.base, Some(&bo_token)).await).await.0, StatusCode::UNAUTHORIZED);
        let revoked = post_form(&site.app, "/account", &format!("action=revoke_mcp_token&token_id={}", tokens[0].id), Some(&bo)).await;
        assert!(revoked.body.contains("no longer works"), "{}", revoked.body);
        assert_eq!(error_of(initialize(&site.base, Some(&bo_token)).await).await.0, StatusCode::UNAUTHORIZED);
        let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM mcp_tokens").fetch_all(db.store.pool()).await.unwrap();
        assert!(stored.iter().all(|hash| hash.len() == 64 && !hash.starts_with("fpm_")), "only hashes are stored");

        // The rate is the token's: past it, 429 with Retry-After.
        let fresh = token_from_account(&site, &bo, "fresh").await;
        let mut statuses = Vec::new();
        for _ in 0..10 {
            let response = initialize(&site.base, Some(&fresh)).await;
            statuses.push(response.status().as_u16());
            if response.status() == 429 {
                let wait: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
                assert!((1..=60).contains(&wait), "{wait}");
            }
        }
        assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 429, 429], "eight a minute");

        // A founder's subscription ends: that founder is refused at once.
        site.fake.post(&format!("/_fake/subscriptions/{ada_subscription}/update"), json!({"status": "canceled"})).await;
        let (status, _, message) = error_of(initialize(&site.base, Some(&token)).await).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{message}");
        assert!(message.contains("free"), "{message}");
    }
}

both_backends! {
    async fn the_switch_opens_or_shuts_the_server_regardless_of_seats(db: TestDb) {
        // Behind a proxy: the site's public name is not this machine's.
        let on = site(&db, 100, &[("FIXEDPOINT_MCP", "on"), ("PUBLIC_URL", "https://fixedpoint.example")]).await;
        let (ada, _) = subscribe(&on, &db, "ada@example.com", "founder_yearly").await;
        let token = token_from_account(&on, &ada, "agent").await;
        let answer = client(Sdk::Python, plan(&on, &token, "legacy", json!([]))).await;
        assert_eq!(answer["tools"].as_array().map(Vec::len), Some(5), "{answer}");
        assert!(get(&on.app, "/pricing", None).await.body.contains("MCP server: open now"));

        // The command line makes one too, alone on its last line; and
        // refuses a reader who is not a founder, naming why.
        let made = fixedpoint(&db.url, &["mcp-token", "ada@example.com", "--name", "cli"]);
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        let cli_token = String::from_utf8(made.stdout).unwrap().lines().last().unwrap().to_string();
        assert_eq!(initialize(&on.base, Some(&cli_token)).await.status(), 200);
        db.store.ensure_account("cy@example.com").await.unwrap();
        let refused = fixedpoint(&db.url, &["mcp-token", "cy@example.com"]);
        assert_eq!(refused.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("not a founder"));
        let refused = fixedpoint(&db.url, &["mcp-token", "\"x\"<cy@example.com>"]);
        assert_eq!(refused.status.code(), Some(1), "a display name is not an address");

        let off = site(&db, 1, &[("FIXEDPOINT_MCP", "off")]).await;
        let (status, _, message) = error_of(initialize(&off.base, Some(&token)).await).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(message.contains("switched off"), "{message}");

        // A browser page elsewhere cannot drive it (the Origin check).
        let response = reqwest::Client::new()
            .post(format!("{}/mcp", on.base))
            .bearer_auth(&token)
            .header("origin", "https://evil.example")
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        // Nor a name that points at this machine without being the site's
        // (DNS rebinding); the site's own address passes.
        for (host, status) in [("rebound.example", 403), ("fixedpoint.example", 200)] {
            let response = reqwest::Client::new()
                .post(format!("{}/mcp", on.base))
                .bearer_auth(&token)
                .header("host", host)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), status, "Host: {host}");
        }
    }
}
