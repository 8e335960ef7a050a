//! The founders' MCP server against the audit API: the same 2,000-line
//! Python source audited through `tools/call audit_loop` on `/mcp` and
//! through `POST /api/v1/audit`, over loopback HTTP to one server, in
//! alternating rounds; p50 and p99 of each and the ratio of the p50s.
//!
//! ```text
//! cargo run --release -p server --example mcp_bench          # 200 calls each
//! BENCH_CALLS=500 cargo run --release -p server --example mcp_bench
//! ```
//!
//! The issue's goal: the protocol costs at most 25% more at p50.

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use server::config::Config;
use server::site;
use server::store::{now_millis, Store};
use server::web::AppState;

#[path = "../../auditor/benches/common/mod.rs"]
mod common;

// The allocator of the `fixedpoint` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let calls: usize = std::env::var("BENCH_CALLS").ok().and_then(|value| value.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("bench.db").display());
    let store = Store::open(&url).await?;
    let config = Config::from_lookup(|name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "FIXEDPOINT_MCP" => Some("on".into()),
        "FIXEDPOINT_MCP_RATE_PER_MINUTE" => Some("1000000".into()),
        "FIXEDPOINT_AUDIT_RATE_PER_MINUTE" => Some("1000000".into()),
        _ => None,
    })?;

    // A founder, written straight into the store: this measures the
    // protocol, not Checkout.
    let account = store.ensure_account("bench@example.com").await?;
    sqlx::query(
        "INSERT INTO subscriptions (account_id, source, tier, status, created_at, updated_at) \
         VALUES ($1, 'grant', 'founder', 'active', $2, $3)",
    )
    .bind(account.id)
    .bind(now_millis())
    .bind(now_millis())
    .execute(store.pool())
    .await?;
    let token = store.create_mcp_token(account.id, "bench").await?.secret;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let service =
        site::router(AppState::new(config, store)).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });

    let source = common::generated(auditor::Language::Python);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "source: {} lines, {} bytes; {calls} calls each, alternating",
        source.lines().count(),
        source.len()
    )?;
    let http = reqwest::Client::new();
    let api_body = json!({"source": source, "language": "python"}).to_string();
    let mcp_body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "audit_loop", "arguments": {"source": source, "language": "python"}},
    })
    .to_string();

    let api = || async {
        let started = Instant::now();
        let response = http
            .post(format!("{base}/api/v1/audit"))
            .header("content-type", "application/json")
            .body(api_body.clone())
            .send()
            .await?;
        anyhow::ensure!(response.status() == 200, "the API answered {}", response.status());
        let report: Value = response.json().await?;
        anyhow::ensure!(report["verdict"] == "CONVERGES");
        Ok::<_, anyhow::Error>(started.elapsed())
    };
    let mcp = || async {
        let started = Instant::now();
        let response = http
            .post(format!("{base}/mcp"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(mcp_body.clone())
            .send()
            .await?;
        anyhow::ensure!(response.status() == 200, "/mcp answered {}", response.status());
        let answer: Value = response.json().await?;
        anyhow::ensure!(
            answer["result"]["structuredContent"]["verdict"] == "CONVERGES",
            "unexpected answer: {}",
            answer.to_string().chars().take(300).collect::<String>()
        );
        Ok::<_, anyhow::Error>(started.elapsed())
    };

    // Warm both paths (allocator, parser tables, connections).
    for _ in 0..10 {
        api().await?;
        mcp().await?;
    }
    let (mut api_times, mut mcp_times) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for index in 0..calls {
        // Alternate which goes first, so neither always follows the other.
        if index % 2 == 0 {
            api_times.push(api().await?);
            mcp_times.push(mcp().await?);
        } else {
            mcp_times.push(mcp().await?);
            api_times.push(api().await?);
        }
    }
    api_times.sort_unstable();
    mcp_times.sort_unstable();
    let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
    let (api_p50, api_p99) = (percentile(&api_times, 0.5), percentile(&api_times, 0.99));
    let (mcp_p50, mcp_p99) = (percentile(&mcp_times, 0.5), percentile(&mcp_times, 0.99));
    writeln!(out, "POST /api/v1/audit        p50 {:7.2} ms   p99 {:7.2} ms", ms(api_p50), ms(api_p99))?;
    writeln!(out, "/mcp tools/call audit_loop p50 {:7.2} ms   p99 {:7.2} ms", ms(mcp_p50), ms(mcp_p99))?;
    writeln!(
        out,
        "MCP / API: p50 {:.3} (goal <= 1.25), p99 {:.3}",
        mcp_p50.as_secs_f64() / api_p50.as_secs_f64(),
        mcp_p99.as_secs_f64() / api_p99.as_secs_f64()
    )?;
    Ok(())
}
