//! Ingest throughput: rounds per second through the real router (token
//! check, JSON validation, classification, one transaction per round), with
//! 10 findings per round, on SQLite and PostgreSQL, with 1 and 16 concurrent
//! clients, beside a raw batched insert of the same rows through the same
//! pool as the baseline.
//!
//! ```text
//! cargo run --release -p server --example ingest_bench            # both databases
//! BENCH_ROUNDS=4000 BENCH_REPEAT=5 BENCH_PG=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run --release -p server --example ingest_bench
//! ```
//!
//! Each client reports to its own loop in runs of 20 rounds, so the history
//! replayed per round stays the size real runs have. PostgreSQL is skipped
//! when `BENCH_PG` (default the local server) does not answer.

use std::io::Write;
use std::time::Instant;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use server::config::Config;
use server::site;
use server::store::{now_millis, Store};
use server::web::AppState;
use tower::ServiceExt;

// The allocator of the `fixedpoint` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const FINDINGS: usize = 10;
const RUN_LENGTH: u32 = 20;
const BASELINE_BATCH: usize = 100;

fn round_body(round: u32) -> Value {
    let findings: Vec<Value> = (0..FINDINGS)
        .map(|index| {
            // The blocking set shrinks and grows over a run, so rounds
            // classify as converging, regressing and stalled in turn.
            let severity = if index < 3 + (round as usize % 3) { "blocking" } else { "warning" };
            json!({"target": {"path": format!("src/file{index}.rs"), "start_line": index + 1, "end_line": index + 4},
                   "severity": severity, "criterion": format!("rule-{index}"), "message": "a finding of the benchmark"})
        })
        .collect();
    json!({"round": round, "state": format!("state-{}", round % 7), "findings": findings,
           "spent": {"tokens": 1000 + round, "usd": 0.01, "seconds": 1.5}})
}

async fn ingest(store: &Store, url: &str, clients: usize, rounds: usize) -> anyhow::Result<f64> {
    let team = format!("bench-{}", now_millis() % 1_000_000_000);
    store.create_team(&team).await?;
    let token = store.create_loop_token(&team, "bench").await?.secret;
    let database_url = url.to_string();
    let config = Config::from_lookup(|name| (name == "DATABASE_URL").then(|| database_url.clone()))?;
    let app = site::router(AppState::new(config, store.clone()));
    let per_client = rounds / clients;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let app = app.clone();
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            for index in 0..per_client {
                let round = (index as u32 % RUN_LENGTH) + 1;
                let request = Request::post(format!("/api/v1/loops/bench-{client}/rounds"))
                    .header("authorization", format!("Bearer {token}"))
                    .header("content-type", "application/json")
                    .body(Body::from(round_body(round).to_string()))?;
                let response = app.clone().oneshot(request).await?;
                anyhow::ensure!(response.status() == StatusCode::OK, "round refused: {}", response.status());
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok((per_client * clients) as f64 / started.elapsed().as_secs_f64())
}

/// The same rows (a round and its 10 findings) inserted with no validation,
/// no classification and no per-round transaction: batches of 100 rounds.
async fn raw_baseline(store: &Store, clients: usize, rounds: usize) -> anyhow::Result<f64> {
    let team = store.create_team(&format!("raw-{}", now_millis() % 1_000_000_000)).await?;
    let per_client = rounds / clients;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let pool = store.pool();
            let loop_id: i64 = sqlx::query_scalar(
                "INSERT INTO loops (team_id, name, created_at) VALUES ($1, $2, $3) RETURNING id",
            )
            .bind(team.id)
            .bind(format!("raw-{client}"))
            .bind(now_millis())
            .fetch_one(pool)
            .await?;
            let run_id: i64 = sqlx::query_scalar(
                "INSERT INTO runs (loop_id, run_key, state, started_at, last_seen_at) VALUES ($1, 'raw', 'running', $2, $2) RETURNING id",
            )
            .bind(loop_id)
            .bind(now_millis())
            .fetch_one(pool)
            .await?;
            let mut number = 0i64;
            while (number as usize) < per_client {
                // The baseline's transaction writes first, so a deferred
                // BEGIN takes the write lock as BEGIN IMMEDIATE would.
                #[allow(clippy::disallowed_methods)]
                let mut tx = pool.begin().await?;
                for _ in 0..BASELINE_BATCH.min(per_client - number as usize) {
                    number += 1;
                    let round_id: i64 = sqlx::query_scalar(
                        "INSERT INTO rounds (run_id, loop_id, round, state_digest, body_hash, class, outcome, advice, \
                         reason, seen_at, consecutive, blocking_count, finding_count, created_at) \
                         VALUES ($1, $2, $3, 'state', 'hash', 'first', 'started', 'continue', 'raw', '[]', 0, 3, 10, $4) RETURNING id",
                    )
                    .bind(run_id)
                    .bind(loop_id)
                    .bind(number)
                    .bind(now_millis())
                    .fetch_one(&mut *tx)
                    .await?;
                    let mut sql = String::from(
                        "INSERT INTO findings (round_id, position, target_path, start_line, end_line, severity, criterion, message) VALUES ",
                    );
                    for index in 0..FINDINGS {
                        let base = index * 6;
                        if index > 0 {
                            sql.push_str(", ");
                        }
                        sql.push_str(&format!("(${}, ${}, ${}, ${}, ${}, 'blocking', ${}, 'raw')", base + 1, base + 2, base + 3, base + 4, base + 5, base + 6));
                    }
                    let mut query = sqlx::query(&sql);
                    for index in 0..FINDINGS {
                        query = query
                            .bind(round_id)
                            .bind(index as i64)
                            .bind(format!("src/file{index}.rs"))
                            .bind(index as i64 + 1)
                            .bind(index as i64 + 4)
                            .bind(format!("rule-{index}"));
                    }
                    query.execute(&mut *tx).await?;
                }
                tx.commit().await?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok((per_client * clients) as f64 / started.elapsed().as_secs_f64())
}

async fn bench(
    name: &str,
    url: &str,
    rounds: usize,
    repeat: usize,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let store = Store::open(url).await?;
    for clients in [1, 16] {
        // The ingest and its baseline alternate, so that a noisy moment of
        // the machine falls on both; the medians are compared.
        let mut api = Vec::new();
        let mut raw = Vec::new();
        for _ in 0..repeat {
            api.push(ingest(&store, url, clients, rounds).await?);
            raw.push(raw_baseline(&store, clients, rounds).await?);
        }
        let (api, raw) = (median(&mut api), median(&mut raw));
        writeln!(
            out,
            "{name:<10} {clients:>3} clients  ingest {api:>8.0} rounds/s   raw batched {raw:>8.0} rounds/s   ratio {:>5.1}%",
            100.0 * api / raw
        )?;
    }
    store.close().await;
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let rounds: usize =
        std::env::var("BENCH_ROUNDS").ok().and_then(|value| value.parse().ok()).unwrap_or(2000);
    let repeat: usize = std::env::var("BENCH_REPEAT")
        .ok()
        .and_then(|value| value.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{rounds} rounds of {FINDINGS} findings per configuration, medians of {repeat} runs")?;
    let dir = tempfile::tempdir()?;
    let sqlite = format!("sqlite://{}?mode=rwc", dir.path().join("bench.db").display());
    bench("sqlite", &sqlite, rounds, repeat, &mut out).await?;

    let admin = std::env::var("BENCH_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    match Store::connect(&admin).await {
        Ok(admin_store) => {
            let name = format!("fp_bench_{}", std::process::id());
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(admin_store.pool()).await?;
            let (base, _) = admin.rsplit_once('/').unwrap_or((&admin, ""));
            let result = bench("postgres", &format!("{base}/{name}"), rounds, repeat, &mut out).await;
            sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)")).execute(admin_store.pool()).await?;
            result?;
        }
        Err(error) => writeln!(out, "postgres   skipped: {error}")?,
    }
    Ok(())
}
