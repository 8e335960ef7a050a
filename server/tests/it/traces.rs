//! OpenTelemetry traces in (`POST /v1/traces`): the official Python SDK and
//! OTLP/HTTP exporter (protobuf, gzip) from `end2end/.venv`, OTLP/JSON
//! fixtures shaped as the specification's examples, and exports built here
//! with the `opentelemetry-proto` types for out-of-order, duplicate, late,
//! restart, malformed and oversized cases. On SQLite and PostgreSQL.

use std::io::Write as _;
use std::process::Stdio;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, ResourceSpans, ScopeSpans, Span, Status};
use prost::Message as _;
use serde_json::{json, Value};
use server::loops::{HistoryRound, RoundSource, RoundWindow};
use server::store::{now_millis, Store};
use tokio::io::AsyncWriteExt;

use crate::support::http::{send, serve, state_with};
use crate::support::TestDb;

/// A team, its loop token and a router whose traces settle after `settle_ms`.
async fn setup(
    db: &TestDb,
    team: &str,
    settle_ms: i64,
    extra: &[(&str, String)],
) -> (axum::Router, String, i64) {
    let created = db.store.create_team(team).await.unwrap();
    let token = db.store.create_loop_token(team, "otel").await.unwrap().secret;
    let mut env = vec![("FIXEDPOINT_TRACES_SETTLE_MS", settle_ms.to_string())];
    env.extend(extra.iter().cloned());
    (server::site::router(state_with(db, &env)), token, created.id)
}

async fn rounds(store: &Store, team_id: i64, loop_name: &str, run: Option<&str>) -> Vec<HistoryRound> {
    store
        .loop_history_window(team_id, loop_name, run, RoundWindow::After(0), 500)
        .await
        .map(|history| history.rounds)
        .unwrap_or_default()
}

fn classes(rounds: &[HistoryRound]) -> Vec<&'static str> {
    rounds.iter().map(|round| round.class.as_str()).collect()
}

async fn count(store: &Store, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(store.pool()).await.unwrap()
}

// Building exports with the OpenTelemetry project's own types.

fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_string())) }),
        ..Default::default()
    }
}

fn int(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(any_value::Value::IntValue(value)) }),
        ..Default::default()
    }
}

const TRACE: u8 = 7;
const BASE_NS: u64 = 1_767_225_600_000_000_000;

fn span_of(
    trace: u8,
    id: u8,
    parent: Option<u8>,
    name: &str,
    from_ms: u64,
    to_ms: u64,
    attributes: Vec<KeyValue>,
) -> Span {
    Span {
        trace_id: vec![trace; 16],
        span_id: vec![id; 8],
        parent_span_id: parent.map(|parent| vec![parent; 8]).unwrap_or_default(),
        name: name.to_string(),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: BASE_NS + from_ms * 1_000_000,
        end_time_unix_nano: BASE_NS + to_ms * 1_000_000,
        attributes,
        ..Default::default()
    }
}

fn chat(id: u8, from_ms: u64, tokens: (i64, i64)) -> Span {
    span_of(
        TRACE,
        id,
        Some(1),
        "chat gpt-4o",
        from_ms,
        from_ms + 9,
        vec![
            text("gen_ai.operation.name", "chat"),
            text("gen_ai.provider.name", "openai"),
            int("gen_ai.usage.input_tokens", tokens.0),
            int("gen_ai.usage.output_tokens", tokens.1),
        ],
    )
}

fn tool(id: u8, from_ms: u64, name: &str, arguments: &str) -> Span {
    span_of(
        TRACE,
        id,
        Some(1),
        &format!("execute_tool {name}"),
        from_ms,
        from_ms + 9,
        vec![
            text("gen_ai.operation.name", "execute_tool"),
            text("gen_ai.tool.name", name),
            text("gen_ai.tool.call.arguments", arguments),
        ],
    )
}

fn agent(from_ms: u64, to_ms: u64) -> Span {
    span_of(
        TRACE,
        1,
        None,
        "invoke_agent scout",
        from_ms,
        to_ms,
        vec![text("gen_ai.operation.name", "invoke_agent"), text("gen_ai.agent.name", "scout")],
    )
}

/// A run of five rounds: search a, search a (a fixed point), read x,
/// search a (a cycle of period 2), and an answer without tools.
fn scout_run() -> Vec<Span> {
    vec![
        agent(0, 200),
        chat(10, 10, (100, 10)),
        tool(11, 21, "search", r#"{"q":"a"}"#),
        chat(20, 31, (110, 11)),
        tool(21, 41, "search", r#"{"q":"a"}"#),
        chat(30, 51, (120, 12)),
        tool(31, 61, "read", r#"{"path":"x"}"#),
        chat(40, 71, (130, 13)),
        tool(41, 81, "search", r#"{"q":"a"}"#),
        chat(50, 91, (140, 14)),
    ]
}

fn export(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "scout-service")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
            ..Default::default()
        }],
    }
}

struct Answer {
    status: StatusCode,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    fn partial(&self) -> (i64, String) {
        let response = ExportTraceServiceResponse::decode(self.body.as_slice()).expect("a protobuf response");
        response
            .partial_success
            .map(|partial| (partial.rejected_spans, partial.error_message))
            .unwrap_or_default()
    }

    /// The `google.rpc.Status` message of a protobuf error answer.
    fn status_message(&self) -> String {
        // google.rpc.Status: code = 1, message = 2; read with prost's own
        // wire format through a message of the same shape.
        #[derive(Clone, PartialEq, prost::Message)]
        struct RpcStatus {
            #[prost(int32, tag = "1")]
            code: i32,
            #[prost(string, tag = "2")]
            message: String,
        }
        RpcStatus::decode(self.body.as_slice()).expect("a google.rpc.Status").message
    }
}

async fn post(
    app: &axum::Router,
    token: Option<&str>,
    content_type: &str,
    encoding: Option<&str>,
    body: Vec<u8>,
) -> Answer {
    let mut builder = Request::post("/v1/traces").header(header::CONTENT_TYPE, content_type);
    if let Some(token) = token {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(encoding) = encoding {
        builder = builder.header(header::CONTENT_ENCODING, encoding);
    }
    let reply = {
        let request = builder.body(Body::from(body)).unwrap();
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = response.into_body().collect().await.unwrap().to_bytes().to_vec();
        Answer { status, content_type, body }
    };
    reply
}

async fn post_spans(app: &axum::Router, token: &str, spans: Vec<Span>) -> Answer {
    let answer = post(app, Some(token), "application/x-protobuf", None, export(spans).encode_to_vec()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer.body));
    answer
}

/// What two ways of sending the same spans must agree on.
fn summary(rounds: &[HistoryRound]) -> Vec<Value> {
    rounds
        .iter()
        .map(|round| {
            json!([
                round.round,
                round.state,
                round.class.as_str(),
                round.outcome.as_str(),
                round.spent.tokens,
                round.seen_at,
                round.tool_calls.iter().map(|call| (&call.name, &call.arguments)).collect::<Vec<_>>()
            ])
        })
        .collect()
}

both_backends! {
    async fn spans_of_an_agent_become_classified_rounds(db: TestDb) {
        let (app, token, team) = setup(&db, "acme", 0, &[]).await;
        let answer = post_spans(&app, &token, scout_run()).await;
        assert_eq!(answer.content_type, "application/x-protobuf");
        assert_eq!(answer.partial(), (0, String::new()), "every span maps");
        let run = hex_trace();
        let got = rounds(&db.store, team, "scout", Some(&run)).await;
        assert_eq!(classes(&got), ["first", "fixed_point", "acting", "cycle", "acting"]);
        assert_eq!(got[1].outcome.as_str(), "wedged", "the same actions again, nobody judged them done");
        assert_eq!(got[3].period, Some(2));
        assert_eq!(got[0].spent.tokens, Some(110), "input and output tokens of the round");
        assert_eq!(got[0].spent.seconds, Some(0.02), "from the model call's start to its tool call's end");
        assert_eq!(got[0].tool_calls.len(), 1);
        assert_eq!(got[0].tool_calls[0].name, "search");
        assert_eq!(got[0].tool_calls[0].arguments.as_deref(), Some(r#"{"q":"a"}"#));
        assert!(got[4].tool_calls.is_empty());
        assert!(got.iter().all(|round| round.source == RoundSource::Traces));
        assert!(got.iter().all(|round| round.class.as_str() != "done"), "no finding events: never done");
        // The loop is the agent's name, not the service's.
        assert!(rounds(&db.store, team, "scout-service", None).await.is_empty());
    }
}

fn hex_trace() -> String {
    hex::encode([TRACE; 16])
}

both_backends! {
    async fn out_of_order_and_duplicate_exports_give_the_same_rounds(db: TestDb) {
        // One export, in order, for one team...
        let (app, token, team) = setup(&db, "in-order", 0, &[]).await;
        post_spans(&app, &token, scout_run()).await;
        let expected = summary(&rounds(&db.store, team, "scout", None).await);
        assert_eq!(expected.len(), 5);

        // ...and the same spans for another team in five exports, shuffled,
        // with retries sent again, inside the settle time.
        let (app, token, shuffled_team) = setup(&db, "shuffled", 60_000, &[]).await;
        let spans = scout_run();
        let pick = |indexes: &[usize]| indexes.iter().map(|&index| spans[index].clone()).collect::<Vec<_>>();
        for part in [&[8, 0, 9][..], &[5, 2], &[1, 7], &[4, 6, 3, 7], &[2, 3], &[8, 0, 9]] {
            let answer = post_spans(&app, &token, pick(part)).await;
            assert_eq!(answer.partial().0, 0, "nothing is refused: {:?}", answer.partial());
        }
        assert!(rounds(&db.store, shuffled_team, "scout", None).await.is_empty(), "nothing is stored before it settles");
        assert_eq!(count(&db.store, "trace_spans").await, 20, "each span once per team");
        // The settle time passes (the sweeper's clock, not a sleep).
        db.store.sweep_traces(now_millis() + 61_000, 60_000).await.unwrap();
        let got = summary(&rounds(&db.store, shuffled_team, "scout", None).await);
        assert_eq!(got, expected);
        // A retry after the rounds were stored changes nothing.
        let answer = post_spans(&app, &token, spans.clone()).await;
        assert_eq!(answer.partial().0, 0);
        db.store.sweep_traces(now_millis() + 62_000, 60_000).await.unwrap();
        assert_eq!(summary(&rounds(&db.store, shuffled_team, "scout", None).await), expected);
    }
}

both_backends! {
    async fn a_round_waits_for_the_next_model_call_or_the_agents_end(db: TestDb) {
        let (app, token, team) = setup(&db, "acme", 0, &[]).await;
        let spans = scout_run();
        // The first model call and its tool: the round is not complete.
        post_spans(&app, &token, vec![spans[1].clone(), spans[2].clone()]).await;
        assert!(rounds(&db.store, team, "scout", None).await.is_empty());
        // The agent span names the loop; the next model call completes round 1.
        post_spans(&app, &token, vec![spans[3].clone()]).await;
        assert!(rounds(&db.store, team, "scout", None).await.is_empty(), "the loop is not known yet");
        post_spans(&app, &token, vec![spans[0].clone()]).await;
        let got = rounds(&db.store, team, "scout", None).await;
        // Round 2's tool call has not arrived: it is an answer so far.
        assert_eq!(classes(&got), ["first", "acting"], "the agent's end completes the last round too");
        assert!(got[1].tool_calls.is_empty());
        // A tool call that started in round 2 and arrives after it was stored
        // is refused in partial_success, by name.
        let answer = post_spans(&app, &token, vec![spans[4].clone()]).await;
        let (rejected, message) = answer.partial();
        assert_eq!(rejected, 1);
        assert!(message.contains("arrived after its round was stored"), "{message}");
        assert!(message.contains(&hex::encode([21_u8; 8])), "{message}");
    }
}

both_backends! {
    async fn a_restart_loses_no_span_that_was_answered(db: TestDb) {
        let spans = scout_run();
        {
            // A server of its own, shut down after the first export.
            let store = Store::open(&db.url).await.unwrap();
            store.create_team("acme").await.unwrap();
            let token = store.create_loop_token("acme", "otel").await.unwrap().secret;
            let config = server::config::Config::from_lookup(|name| match name {
                "DATABASE_URL" => Some(db.url.clone()),
                "FIXEDPOINT_TRACES_SETTLE_MS" => Some("0".to_string()),
                _ => None,
            })
            .unwrap();
            let app = server::site::router(server::web::AppState::new(config, store.clone()));
            post_spans(&app, &token, spans[1..5].to_vec()).await;
            drop(app);
            store.close().await;
            let team = db.store.team_by_slug("acme").await.unwrap().unwrap().id;
            assert!(rounds(&db.store, team, "scout", None).await.is_empty(), "nothing is complete yet");
            // The restarted server gets the rest.
            let store = Store::open(&db.url).await.unwrap();
            let config = server::config::Config::from_lookup(|name| match name {
                "DATABASE_URL" => Some(db.url.clone()),
                "FIXEDPOINT_TRACES_SETTLE_MS" => Some("0".to_string()),
                _ => None,
            })
            .unwrap();
            let app = server::site::router(server::web::AppState::new(config, store.clone()));
            let mut rest = vec![spans[0].clone()];
            rest.extend(spans[5..].iter().cloned());
            post_spans(&app, &token, rest).await;
            let got = rounds(&store, team, "scout", None).await;
            assert_eq!(classes(&got), ["first", "fixed_point", "acting", "cycle", "acting"]);
            assert_eq!(got[0].tool_calls.len(), 1, "round 1's tool call was kept across the restart");
        }
    }
}

both_backends! {
    async fn findings_errors_and_older_attribute_names_are_read(db: TestDb) {
        let (app, token, team) = setup(&db, "acme", 0, &[]).await;
        let mut legacy_chat = span_of(TRACE, 10, Some(1), "chat gpt-4o", 10, 19, vec![
            text("gen_ai.system", "openai"),
            text("gen_ai.request.model", "gpt-4o"),
            int("gen_ai.usage.prompt_tokens", 300),
            int("gen_ai.usage.completion_tokens", 40),
        ]);
        legacy_chat.attributes.push(text("gen_ai.conversation.id", "conv-9"));
        let mut failing = tool(11, 21, "compile", r#"{"file":"a.rs"}"#);
        let description = "error[E0308]: mismatched types\n  --> a.rs:4:9\n   |\n4  |     let x: u32 = \"ü\";";
        failing.status = Some(Status { code: status::StatusCode::Error as i32, message: description.to_string() });
        failing.attributes.push(text("error.type", "CompileError"));
        failing.events.push(span::Event {
            name: "fixedpoint.finding".to_string(),
            attributes: vec![
                text("target.path", "a.rs"),
                int("target.start_line", 4),
                int("target.end_line", 4),
                text("severity", "blocking"),
                text("criterion", "compiles"),
                text("message", "mismatched types"),
            ],
            ..Default::default()
        });
        let older_tool = span_of(TRACE, 21, Some(1), "compile", 41, 49, vec![
            text("gen_ai.tool.name", "compile"),
            text("gen_ai.tool.call.arguments", r#"{"file":"a.rs"}"#),
        ]);
        let spans = vec![agent(0, 100), legacy_chat, failing, chat(20, 31, (1, 2)), older_tool];
        let answer = post_spans(&app, &token, spans).await;
        assert_eq!(answer.partial().0, 0, "{:?}", answer.partial());
        let got = rounds(&db.store, team, "scout", Some("conv-9")).await;
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].spent.tokens, Some(340), "the older usage names");
        let error = got[0].error.as_ref().expect("the failed tool call is the round's error");
        assert_eq!((error.code.as_str(), error.body.as_str()), ("CompileError", description));
        assert_eq!(got[0].findings.len(), 1);
        assert_eq!(got[0].findings[0].key.criterion, "compiles");
        assert_eq!(got[0].class.as_str(), "first");
        assert!(got[0].tool_calls[0].failed);
        // Round 2 did the same (a tool span without an operation name) and
        // reported no finding: the same actions again.
        assert_eq!((got[1].class.as_str(), got[1].outcome.as_str()), ("fixed_point", "wedged"));
    }
}

both_backends! {
    async fn spans_that_map_to_nothing_or_are_malformed_are_counted(db: TestDb) {
        let (app, token, team) = setup(&db, "acme", 0, &[]).await;
        let mut spans = scout_run();
        spans.push(span_of(TRACE, 90, Some(11), "SELECT users", 22, 23, vec![text("db.system", "postgresql")]));
        let mut bad_finding = tool(91, 95, "search", "{}");
        bad_finding.events.push(span::Event {
            name: "fixedpoint.finding".to_string(),
            attributes: vec![text("target.id", "x"), text("severity", "fatal"), text("criterion", "c")],
            ..Default::default()
        });
        spans.push(bad_finding);
        let mut short_id = chat(92, 96, (1, 1));
        short_id.span_id = vec![1, 2, 3];
        spans.push(short_id);
        let answer = post_spans(&app, &token, spans).await;
        let (rejected, message) = answer.partial();
        assert_eq!(rejected, 3, "{message}");
        assert!(message.starts_with("3 spans were not accepted"), "{message}");
        assert!(message.contains("\"SELECT users\"") && message.contains("not a GenAI"), "{message}");
        assert!(message.contains("severity must be one of blocking, warning, info"), "{message}");
        assert!(message.contains("spanId must be 8 bytes"), "{message}");
        assert_eq!(rounds(&db.store, team, "scout", None).await.len(), 5, "the good spans still count");
    }
}

both_backends! {
    async fn bad_requests_are_refused_and_store_nothing(db: TestDb) {
        let (app, token, _) = setup(&db, "acme", 0, &[("FIXEDPOINT_TRACES_MAX_BYTES", "20000".to_string())]).await;
        let body = export(scout_run()).encode_to_vec();
        // Who is asking.
        let answer = post(&app, None, "application/x-protobuf", None, body.clone()).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        assert!(answer.status_message().contains("loop token"), "{}", answer.status_message());
        let answer = post(&app, Some("fpl_not-a-token"), "application/x-protobuf", None, body.clone()).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        // What it sends.
        let answer = post(&app, Some(&token), "text/plain", None, body.clone()).await;
        assert_eq!(answer.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(String::from_utf8_lossy(&answer.body).contains("text/plain"));
        let answer = post(&app, Some(&token), "application/x-protobuf", Some("br"), body.clone()).await;
        assert_eq!(answer.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(answer.status_message().contains("br"), "{}", answer.status_message());
        let answer = post(&app, Some(&token), "application/x-protobuf", None, b"\xff\xff\xff\x07garbage".to_vec()).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        assert!(answer.status_message().contains("protobuf ExportTraceServiceRequest"), "{}", answer.status_message());
        let answer = post(&app, Some(&token), "application/json", None, br#"{"resourceSpans": [{"scopeSpans": 3}]}"#.to_vec()).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        let error: Value = serde_json::from_slice(&answer.body).unwrap();
        assert!(error["message"].as_str().unwrap().contains("OTLP/JSON"), "{error}");
        let answer = post(&app, Some(&token), "application/x-protobuf", Some("gzip"), b"not gzip at all".to_vec()).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        // How much it sends: as sent, and once inflated.
        let answer = post(&app, Some(&token), "application/x-protobuf", None, vec![0; 30_000]).await;
        assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
        let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        bomb.write_all(&vec![0; 5_000_000]).unwrap();
        let bomb = bomb.finish().unwrap();
        assert!(bomb.len() < 20_000);
        let answer = post(&app, Some(&token), "application/x-protobuf", Some("gzip"), bomb).await;
        assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(answer.status_message().contains("inflates"), "{}", answer.status_message());
        assert_eq!(count(&db.store, "trace_spans").await, 0);
        assert_eq!(count(&db.store, "rounds").await, 0);
        // The same export, gzip, is fine.
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(&body).unwrap();
        let answer = post(&app, Some(&token), "application/x-protobuf", Some("gzip"), gzip.finish().unwrap()).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(count(&db.store, "rounds").await, 5);
    }
}

both_backends! {
    async fn a_teams_token_reaches_its_own_loops_only(db: TestDb) {
        let (app, token_a, team_a) = setup(&db, "alpha", 0, &[]).await;
        db.store.create_team("beta").await.unwrap();
        let token_b = db.store.create_loop_token("beta", "otel").await.unwrap().secret;
        let team_b = db.store.team_by_slug("beta").await.unwrap().unwrap().id;
        post_spans(&app, &token_a, scout_run()).await;
        // The same trace ids and agent from another team: its own loop.
        let spans = scout_run()[..5].to_vec();
        post_spans(&app, &token_b, spans).await;
        assert_eq!(rounds(&db.store, team_a, "scout", None).await.len(), 5);
        assert_eq!(rounds(&db.store, team_b, "scout", None).await.len(), 2, "beta's own two complete rounds");
        // And the rounds API answers beta's token with beta's loop only.
        let answer = send(
            &app,
            Request::get("/api/v1/loops/scout/rounds").header(header::AUTHORIZATION, format!("Bearer {token_b}")).body(Body::empty()).unwrap(),
            "127.0.0.1:9",
        )
        .await;
        let history: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(history["rounds"].as_array().unwrap().len(), 2, "{history}");
        assert_eq!(history["rounds"][0]["source"], "traces");
    }
}

both_backends! {
    async fn an_otlp_json_export_as_the_specification_writes_it(db: TestDb) {
        let (app, token, team) = setup(&db, "acme", 0, &[]).await;
        let body = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/traces/agent_run.json")).unwrap();
        let answer = post(&app, Some(&token), "application/json", None, body).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer.body));
        assert_eq!(answer.content_type, "application/json");
        let response: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(response["partialSuccess"]["rejectedSpans"], 1, "{response}");
        assert!(response["partialSuccess"]["errorMessage"].as_str().unwrap().contains("\"GET /weather\""), "{response}");
        let got = rounds(&db.store, team, "weather-agent", Some("conversation-42")).await;
        assert_eq!(classes(&got), ["first", "fixed_point", "fixed_point"]);
        assert_eq!(got[2].seen_at, [1, 2]);
        assert_eq!(got.iter().map(|round| round.spent.tokens.unwrap()).collect::<Vec<_>>(), [150, 170, 190]);
        assert_eq!(got[0].tool_calls[0].arguments.as_deref(), Some(r#"{"city":"Paris"}"#));
    }
}

both_backends! {
    async fn the_python_exporter_reports_an_agent_that_repeats_itself(db: TestDb) {
        let (_, token, team) = setup(&db, "acme", 0, &[]).await;
        let state = state_with(&db, &[("FIXEDPOINT_TRACES_SETTLE_MS", "0".to_string())]);
        let base = serve(state).await;
        let step = |legacy: bool| json!({"tool": "search", "arguments": {"query": "fixed point"}, "input_tokens": 200, "output_tokens": 25, "legacy": legacy});
        let plan = json!({
            "url": base, "token": token, "agent": "py-researcher", "conversation": "py-conv-1",
            "service": "research-service", "gzip": true, "batch": 3, "extra_span": true,
            "rounds": [step(false), step(true), step(false)],
        });
        let printed = python_agent(plan).await;
        assert_eq!(printed["flushed"], true, "{printed}");
        let got = rounds(&db.store, team, "py-researcher", Some("py-conv-1")).await;
        assert_eq!(classes(&got), ["first", "fixed_point", "fixed_point"], "{:?}", summary(&got));
        assert!(got[1..].iter().all(|round| round.outcome.as_str() == "wedged" && round.advice.as_str() == "stop"));
        assert!(got.iter().all(|round| round.spent.tokens == Some(225)), "spend summed per round: {:?}", summary(&got));
        assert_eq!(got[0].tool_calls[0].arguments.as_deref(), Some(r#"{"query": "fixed point"}"#));
        // The HTTP client spans under each tool call map to nothing.
        assert_eq!(count(&db.store, "trace_spans").await, 7, "one agent span, three chats, three tools");
    }
}

/// Runs the Python agent of `end2end/traces` with `plan`; its last line.
async fn python_agent(plan: Value) -> Value {
    let end2end = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end");
    let python =
        std::env::var("FIXEDPOINT_TEST_PYTHON").unwrap_or_else(|_| format!("{end2end}/.venv/bin/python"));
    let mut child = tokio::process::Command::new(python)
        .arg(format!("{end2end}/traces/py_agent.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the Python exporter runs: `make test` installs opentelemetry-sdk in end2end/.venv");
    child.stdin.take().unwrap().write_all(plan.to_string().as_bytes()).await.unwrap();
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|_| {
        panic!("the agent printed no JSON: {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    })
}

both_backends! {
    async fn the_loop_page_says_where_rounds_come_from_and_lists_tool_calls(db: TestDb) {
        let (app, token, _) = setup(&db, "acme", 0, &[]).await;
        post_spans(&app, &token, scout_run()).await;
        // The connector's rounds (it names itself) and a plain API round.
        for (round, agent) in [(1, "fixedpoint-push/0.1.0"), (2, "curl/8.0")] {
            let answer = send(
                &app,
                Request::post("/api/v1/loops/scout/rounds")
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .header(header::CONTENT_TYPE, "application/json")
                    .header(header::USER_AGENT, agent)
                    .body(Body::from(json!({"round": round, "run": "pushed", "state": format!("s{round}")}).to_string()))
                    .unwrap(),
                "127.0.0.1:9",
            )
            .await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        }
        let team = db.store.team_by_slug("acme").await.unwrap().unwrap().id;
        let pushed = rounds(&db.store, team, "scout", Some("pushed")).await;
        assert_eq!(pushed.iter().map(|round| round.source).collect::<Vec<_>>(), [RoundSource::Connector, RoundSource::Api]);

        db.store.add_team_member("acme", "reader@example.com", server::accounts::TeamRole::Member).await.unwrap();
        let cookie = crate::support::http::session_cookie(&db, "reader@example.com").await;
        let page = crate::support::http::get(&app, &format!("/loops/scout?team=acme&run={}", hex_trace()), Some(&cookie)).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("Rounds from: API, connector, traces"), "{}", page.body);
        assert!(page.body.contains("data-testid=\"tool-calls\""));
        assert!(page.body.contains("read({&quot;path&quot;:&quot;x&quot;})") || page.body.contains(r#"read({"path":"x"})"#), "the tool call and its arguments");
        assert!(page.body.contains("110 tokens"), "tokens when no money was reported");
        assert!(page.body.contains(">acting<"), "the added class is shown");
    }
}

both_backends! {
    async fn concurrent_exports_of_one_run_give_the_rounds_of_one_export(db: TestDb) {
        let (app, token, team) = setup(&db, "in-order", 0, &[]).await;
        post_spans(&app, &token, scout_run()).await;
        let expected = summary(&rounds(&db.store, team, "scout", None).await);
        // Eight exporters send overlapping parts of the same run at once,
        // settled or not: each span is kept once and each round stored once.
        for settle_ms in [0, 60_000] {
            let slug = format!("racing-{settle_ms}");
            let (app, token, racing_team) = setup(&db, &slug, settle_ms, &[]).await;
            let spans = scout_run();
            let mut tasks = Vec::new();
            for worker in 0..8_usize {
                let part: Vec<Span> =
                    spans.iter().enumerate().filter(|(at, _)| (at + worker) % 3 != 0).map(|(_, span)| span.clone()).collect();
                let (app, token) = (app.clone(), token.clone());
                tasks.push(tokio::spawn(async move { post_spans(&app, &token, part).await.partial() }));
            }
            for task in tasks {
                let (rejected, message) = task.await.unwrap();
                assert!(settle_ms == 0 || rejected == 0, "{message}");
            }
            db.store.sweep_traces(now_millis() + 61_000, settle_ms).await.unwrap();
            let got = summary(&rounds(&db.store, racing_team, "scout", None).await);
            if settle_ms == 0 {
                // Without a settle time a part may complete a round before
                // another part brings its tool call: fewer tool calls, never
                // a round twice or out of order.
                assert!(got.len() <= expected.len() && !got.is_empty(), "{got:?}");
                let numbers: Vec<u64> = got.iter().map(|round| round[0].as_u64().unwrap()).collect();
                assert_eq!(numbers, (1..=got.len() as u64).collect::<Vec<_>>());
            } else {
                assert_eq!(got, expected);
            }
            let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM trace_spans WHERE team_id = $1")
                .bind(racing_team)
                .fetch_one(db.store.pool())
                .await
                .unwrap();
            assert_eq!(kept, 10, "each span once");
        }
    }
}

both_backends! {
    async fn rounds_after_an_operator_stop_are_refused_and_take_no_other_with_them(db: TestDb) {
        let (app, token, team) = setup(&db, "acme", 0, &[]).await;
        // Model calls that name their agent: the run is known at once.
        let named = |mut span: Span| {
            span.attributes.push(text("gen_ai.agent.name", "scout"));
            span
        };
        let spans = scout_run();
        // Round 1 is stored: chat 2 completes it.
        post_spans(&app, &token, vec![named(spans[1].clone()), spans[2].clone(), named(spans[3].clone())]).await;
        assert_eq!(classes(&rounds(&db.store, team, "scout", None).await), ["first"]);
        // The operator stops the loop; the stop is delivered with the next
        // round stored, which ends the run, so the rounds after it are
        // refused and their spans dropped, in the same export.
        db.store.request_loop_stop(team, "scout").await.unwrap();
        let answer =
            post_spans(&app, &token, vec![named(spans[5].clone()), named(spans[7].clone()), named(spans[9].clone())]).await;
        assert_eq!(answer.partial().0, 0);
        let after = rounds(&db.store, team, "scout", None).await;
        assert_eq!(after.len(), 2, "the round that took the stop is stored, the ones after it are not");
        assert!(after[1].operator.stop);
        let dropped: i64 =
            sqlx::query_scalar("SELECT dropped_spans FROM traced_runs").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(dropped, 2, "the two refused rounds' model calls");
        let waiting: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM trace_spans WHERE round IS NULL").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(waiting, 1, "the last model call waits for its round to complete");
    }
}

both_backends! {
    async fn the_sweeper_ends_silent_runs_and_traces_that_never_name_their_agent(db: TestDb) {
        let (app, token, team) = setup(&db, "acme", 0, &[]).await;
        let spans = scout_run();
        // Model and tool calls whose trace never shows its agent or root span.
        post_spans(&app, &token, spans[1..5].to_vec()).await;
        assert_eq!(count(&db.store, "rounds").await, 0);
        db.store.sweep_traces(now_millis() + 60_000, 0).await.unwrap();
        assert_eq!(count(&db.store, "rounds").await, 0, "a minute of silence is not the heartbeat window");
        // Ten minutes on, the trace is given a run from what it has (the
        // service's name, the trace id) and its last round ends.
        db.store.sweep_traces(now_millis() + 601_000, 0).await.unwrap();
        let got = rounds(&db.store, team, "scout-service", Some(&hex_trace())).await;
        assert_eq!(classes(&got), ["first", "fixed_point"]);
        assert_eq!(got[1].tool_calls.len(), 1, "the last round keeps its tool call");
        let due: Option<i64> = sqlx::query_scalar("SELECT due_at FROM traced_runs").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(due, None, "nothing is left for the sweeper");
        // A run whose trace is known goes silent: its waiting model call is
        // a round once the window has passed.
        let named = |mut span: Span| {
            span.trace_id = vec![8; 16];
            span.attributes.push(text("gen_ai.agent.name", "named"));
            span
        };
        post_spans(&app, &token, vec![named(spans[1].clone()), named(spans[2].clone())]).await;
        db.store.sweep_traces(now_millis() + 1_000, 0).await.unwrap();
        assert!(rounds(&db.store, team, "named", None).await.is_empty());
        db.store.sweep_traces(now_millis() + 601_000, 0).await.unwrap();
        assert_eq!(classes(&rounds(&db.store, team, "named", None).await), ["first"]);
    }
}

both_backends! {
    async fn the_javascript_exporter_sends_otlp_json(db: TestDb) {
        let (_, token, team) = setup(&db, "acme", 0, &[]).await;
        // The JavaScript exporter sends batches side by side, so they arrive
        // in any order: the settle time lets every span find its round.
        let base = serve(state_with(&db, &[("FIXEDPOINT_TRACES_SETTLE_MS", "2000".to_string())])).await;
        let finding = json!({"target.path": "src/loop.ts", "target.start_line": 12, "severity": "blocking",
                             "criterion": "tests-pass", "message": "2 tests fail"});
        let plan = json!({
            "url": base, "token": token, "agent": "js-fixer", "conversation": "js-conv-1", "service": "fixer",
            "batch": 2,
            "rounds": [
                {"tool": "run_tests", "arguments": {"path": "src"}, "input_tokens": 300, "output_tokens": 30, "finding": finding},
                {"tool": "edit", "arguments": {"file": "src/loop.ts"}, "input_tokens": 310, "output_tokens": 40},
                {"tool": "run_tests", "arguments": {"path": "src"}, "input_tokens": 320, "output_tokens": 50, "error": "2 failed"},
            ],
        });
        let printed = exporter_agent("node", "js_agent.mjs", plan).await;
        assert_eq!(printed["flushed"], true, "{printed}");
        // The settle time passes (the sweeper's clock, not a sleep).
        db.store.sweep_traces(now_millis() + 2_500, 2_000).await.unwrap();
        let got = rounds(&db.store, team, "js-fixer", Some("js-conv-1")).await;
        assert_eq!(classes(&got), ["first", "acting", "cycle"], "{:?}", summary(&got));
        assert_eq!(got[0].findings.len(), 1, "the finding event, judged");
        assert_eq!(got[0].findings[0].key.criterion, "tests-pass");
        assert_eq!(got.iter().map(|round| round.spent.tokens.unwrap()).collect::<Vec<_>>(), [330, 350, 370]);
        assert_eq!(got[2].error.as_ref().map(|error| error.body.as_str()), Some("2 failed"));
        assert_eq!(got[2].period, Some(2));
    }
}

/// Runs an exporter script of `end2end/traces` with `plan`; its last line.
async fn exporter_agent(program: &str, script: &str, plan: Value) -> Value {
    let end2end = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end");
    let mut child = tokio::process::Command::new(program)
        .arg(format!("{end2end}/traces/{script}"))
        .current_dir(end2end)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the exporter runs: `make test` installs end2end's npm packages and .venv");
    child.stdin.take().unwrap().write_all(plan.to_string().as_bytes()).await.unwrap();
    let output = child.wait_with_output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|_| {
        panic!("the agent printed no JSON: {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    })
}
