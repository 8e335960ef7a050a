//! OpenTelemetry traces in: spans per second through `POST /v1/traces` for
//! exports of 512 spans (protobuf, through the real router: token check,
//! decoding with opentelemetry-proto, mapping, the spans kept, the rounds
//! they complete classified and stored), and rounds per second against the
//! same rounds sent one by one to the native ingest API in the same run,
//! on SQLite and PostgreSQL.
//!
//! ```text
//! cargo run --release -p server --example traces_bench
//! BENCH_EXPORTS=80 BENCH_AGENTS=4 BENCH_REPEAT=5 cargo run --release -p server --example traces_bench
//! BENCH_PATTERN=whole-run cargo run --release -p server --example traces_bench
//! ```
//!
//! Each of `BENCH_AGENTS` agents (default 2, one client each) runs one long
//! traced run: every export holds 256 model calls and their tool calls, the
//! last round of an export completed by the next export's first model call,
//! and the agent's span in the last export. The model calls name the agent,
//! so the run is known from the first export on and its rounds are stored
//! as they complete. Tool calls repeat in a pattern,
//! so rounds classify as `first`, `acting`, `fixed_point` and `cycle`. The
//! settle time is 0: rounds are stored by the export that completes them.
//! Bodies are encoded before the clock starts, for both ways in. PostgreSQL
//! is skipped when `BENCH_PG` (default the local server) does not answer.

use std::io::Write;
use std::time::Instant;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message as _;
use serde_json::json;
use server::config::Config;
use server::site;
use server::store::{now_millis, Store};
use server::web::AppState;
use tower::ServiceExt;

// The allocator of the `fixedpoint` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SPANS_PER_EXPORT: usize = 512;
const ROUNDS_PER_EXPORT: usize = SPANS_PER_EXPORT / 2;
/// The tool calls of five successive rounds: a repeat and a return.
const PATTERN: [&str; 5] = ["a", "a", "b", "a", "c"];

fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue { key: key.to_string(), value: Some(AnyValue { value: Some(value) }), ..Default::default() }
}

fn text(key: &str, value: &str) -> KeyValue {
    attribute(key, any_value::Value::StringValue(value.to_string()))
}

/// What the `round`th round (0-based) of an agent does: in each stretch of
/// five rounds the pattern, new queries in the next stretch. With
/// `BENCH_PATTERN=whole-run` the same three queries for the whole run, so
/// every round's state was seen hundreds of times before (each round then
/// reads and stores all of them in `seen_at`, on both ways in).
fn tool_arguments(round: usize) -> String {
    static WHOLE_RUN: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        std::env::var("BENCH_PATTERN").is_ok_and(|pattern| pattern == "whole-run")
    });
    if *WHOLE_RUN {
        format!(r#"{{"query":"{}"}}"#, PATTERN[round % PATTERN.len()])
    } else {
        format!(r#"{{"query":"{}-{}"}}"#, round / PATTERN.len(), PATTERN[round % PATTERN.len()])
    }
}

/// Export `index` of `exports` of agent `agent`'s run, as protobuf.
fn export_body(agent: usize, index: usize, exports: usize, epoch: u64) -> Vec<u8> {
    let trace_id = {
        let mut id = [0_u8; 16];
        id[..8].copy_from_slice(&epoch.to_be_bytes());
        id[8..].copy_from_slice(&(agent as u64 + 1).to_be_bytes());
        id.to_vec()
    };
    let span_id = |number: u64| (number + 2).to_be_bytes().to_vec();
    let base = 1_767_225_600_000_000_000_u64 + epoch * 1_000;
    let mut spans = Vec::with_capacity(SPANS_PER_EXPORT);
    let (first_round, mut rounds) = (index * ROUNDS_PER_EXPORT, ROUNDS_PER_EXPORT);
    let last = index + 1 == exports;
    if last {
        // The agent's span takes the place of the last tool call.
        rounds -= 1;
    }
    for round in first_round..first_round + rounds {
        let at = base + round as u64 * 1_000_000;
        spans.push(Span {
            trace_id: trace_id.clone(),
            span_id: span_id(round as u64 * 2),
            parent_span_id: span_id(u64::MAX - 2),
            name: "chat model".to_string(),
            start_time_unix_nano: at,
            end_time_unix_nano: at + 400_000,
            attributes: vec![
                text("gen_ai.operation.name", "chat"),
                text("gen_ai.provider.name", "openai"),
                text("gen_ai.agent.name", &format!("agent-{agent}")),
                attribute("gen_ai.usage.input_tokens", any_value::Value::IntValue(1_000 + round as i64)),
                attribute("gen_ai.usage.output_tokens", any_value::Value::IntValue(100)),
            ],
            ..Default::default()
        });
        spans.push(Span {
            trace_id: trace_id.clone(),
            span_id: span_id(round as u64 * 2 + 1),
            parent_span_id: span_id(u64::MAX - 2),
            name: "execute_tool search".to_string(),
            start_time_unix_nano: at + 500_000,
            end_time_unix_nano: at + 900_000,
            attributes: vec![
                text("gen_ai.operation.name", "execute_tool"),
                text("gen_ai.tool.name", "search"),
                text("gen_ai.tool.call.arguments", &tool_arguments(round)),
            ],
            ..Default::default()
        });
    }
    if last {
        let end_round = first_round + rounds;
        spans.push(Span {
            trace_id: trace_id.clone(),
            span_id: span_id(end_round as u64 * 2),
            parent_span_id: span_id(u64::MAX - 2),
            name: "chat model".to_string(),
            start_time_unix_nano: base + end_round as u64 * 1_000_000,
            end_time_unix_nano: base + end_round as u64 * 1_000_000 + 400_000,
            attributes: vec![text("gen_ai.operation.name", "chat"), text("gen_ai.provider.name", "openai")],
            ..Default::default()
        });
        spans.push(Span {
            trace_id: trace_id.clone(),
            span_id: span_id(u64::MAX - 2),
            name: "invoke_agent".to_string(),
            start_time_unix_nano: base,
            end_time_unix_nano: base + (end_round as u64 + 1) * 1_000_000,
            attributes: vec![
                text("gen_ai.operation.name", "invoke_agent"),
                text("gen_ai.agent.name", &format!("agent-{agent}")),
            ],
            ..Default::default()
        });
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "bench")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

async fn router(store: &Store, url: &str) -> anyhow::Result<(axum::Router, String)> {
    let team = format!("bench-{}", now_millis() % 1_000_000_000);
    store.create_team(&team).await?;
    let token = store.create_loop_token(&team, "bench").await?.secret;
    let database_url = url.to_string();
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(database_url.clone()),
        "FIXEDPOINT_TRACES_SETTLE_MS" => Some("0".to_string()),
        _ => None,
    })?;
    Ok((site::router(AppState::new(config, store.clone())), token))
}

/// Spans and rounds per second through `/v1/traces`.
async fn traced(store: &Store, url: &str, agents: usize, exports: usize) -> anyhow::Result<(f64, f64)> {
    let (app, token) = router(store, url).await?;
    let epoch = now_millis() as u64;
    let bodies: Vec<Vec<Vec<u8>>> = (0..agents)
        .map(|agent| (0..exports).map(|index| export_body(agent, index, exports, epoch)).collect())
        .collect();
    let before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM rounds").fetch_one(store.pool()).await?;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for bodies in bodies {
        let app = app.clone();
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            for body in bodies {
                let request = Request::post("/v1/traces")
                    .header("authorization", format!("Bearer {token}"))
                    .header("content-type", "application/x-protobuf")
                    .body(Body::from(body))?;
                let response = app.clone().oneshot(request).await?;
                anyhow::ensure!(response.status() == StatusCode::OK, "export refused: {}", response.status());
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM rounds").fetch_one(store.pool()).await?;
    let rounds = (after - before) as usize;
    anyhow::ensure!(rounds == agents * exports * ROUNDS_PER_EXPORT, "{rounds} rounds were stored");
    Ok(((agents * exports * SPANS_PER_EXPORT) as f64 / elapsed, rounds as f64 / elapsed))
}

/// Rounds per second for the same rounds through the ingest API, one
/// request each.
async fn native(store: &Store, url: &str, agents: usize, exports: usize) -> anyhow::Result<f64> {
    let (app, token) = router(store, url).await?;
    let rounds = exports * ROUNDS_PER_EXPORT;
    let bodies: Vec<Vec<String>> = (0..agents)
        .map(|_| {
            (0..rounds)
                .map(|round| {
                    json!({"round": round + 1, "run": "native", "state": tool_arguments(round),
                           "spent": {"tokens": 1_100 + round, "seconds": 0.0009}})
                    .to_string()
                })
                .collect()
        })
        .collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (agent, bodies) in bodies.into_iter().enumerate() {
        let app = app.clone();
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            for body in bodies {
                let request = Request::post(format!("/api/v1/loops/native-{agent}/rounds"))
                    .header("authorization", format!("Bearer {token}"))
                    .header("content-type", "application/json")
                    .body(Body::from(body))?;
                let response = app.clone().oneshot(request).await?;
                anyhow::ensure!(response.status() == StatusCode::OK, "round refused: {}", response.status());
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok((agents * rounds) as f64 / started.elapsed().as_secs_f64())
}

async fn bench(
    name: &str,
    url: &str,
    (agents, exports, repeat): (usize, usize, usize),
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let store = Store::open(url).await?;
    // The two ways in alternate, so that a noisy moment of the machine
    // falls on both; the medians are compared.
    let (mut spans, mut traced_rounds, mut native_rounds) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeat {
        let (spans_per_second, rounds_per_second) = traced(&store, url, agents, exports).await?;
        spans.push(spans_per_second);
        traced_rounds.push(rounds_per_second);
        native_rounds.push(native(&store, url, agents, exports).await?);
    }
    let (spans, traced_rounds, native_rounds) =
        (median(&mut spans), median(&mut traced_rounds), median(&mut native_rounds));
    writeln!(
        out,
        "{name:<10} {agents} clients  /v1/traces {spans:>8.0} spans/s {traced_rounds:>8.0} rounds/s   \
         ingest API {native_rounds:>8.0} rounds/s   ratio {:>6.1}%",
        100.0 * traced_rounds / native_rounds
    )?;
    store.close().await;
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let shape = (setting("BENCH_AGENTS", 2), setting("BENCH_EXPORTS", 20), setting("BENCH_REPEAT", 5));
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} agents x {} exports of {SPANS_PER_EXPORT} spans ({ROUNDS_PER_EXPORT} rounds each), medians of {} runs",
        shape.0, shape.1, shape.2
    )?;
    let dir = tempfile::tempdir()?;
    let sqlite = format!("sqlite://{}?mode=rwc", dir.path().join("bench.db").display());
    bench("sqlite", &sqlite, shape, &mut out).await?;

    let admin = std::env::var("BENCH_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    match Store::connect(&admin).await {
        Ok(admin_store) => {
            let name = format!("fp_bench_traces_{}", std::process::id());
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(admin_store.pool()).await?;
            let (base, _) = admin.rsplit_once('/').unwrap_or((&admin, ""));
            let result = bench("postgres", &format!("{base}/{name}"), shape, &mut out).await;
            sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)")).execute(admin_store.pool()).await?;
            result?;
        }
        Err(error) => writeln!(out, "postgres   skipped: {error}")?,
    }
    Ok(())
}
