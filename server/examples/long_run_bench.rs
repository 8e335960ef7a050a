//! Long runs: one client posts 10,000 rounds of 10 findings to one run
//! through the real router, and the rate of rounds 100-1,000 is set beside
//! the rate of rounds 9,000-10,000 of the same run; then the loop page of
//! that run is fetched 10 times by a signed-in member (its size and median
//! serve time) and the rounds API is asked for its default page.
//!
//! ```text
//! cargo run --release -p server --example long_run_bench            # both databases
//! BENCH_ROUNDS=10000 BENCH_PG=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run --release -p server --example long_run_bench
//! ```
//!
//! The states are drawn so that the run revisits old states (cycles and
//! fixed points happen), and the blocking set shrinks and grows, so every
//! class of the convergence module turns up. PostgreSQL is skipped when
//! `BENCH_PG` (default the local server) does not answer.

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use server::accounts::TeamRole;
use server::config::Config;
use server::site;
use server::store::{now_millis, Store};
use server::web::AppState;
use tower::ServiceExt;

// The allocator of the `fixedpoint` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const FINDINGS: usize = 10;
const PAGE_FETCHES: usize = 10;

/// A small deterministic generator, so that both databases see the same run.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn round_body(round: u32, draw: &mut Draw) -> Value {
    // Mostly new states, with stretches that sit on one state and returns
    // to a state of a few hundred rounds before.
    let state = match draw.next() % 10 {
        0..=5 => format!("state-{round}"),
        6 | 7 => format!("state-{}", round.saturating_sub(1)),
        _ => format!("state-{}", round.saturating_sub(1 + (draw.next() % 300) as u32)),
    };
    let blocking = 1 + (draw.next() % 5) as usize;
    let findings: Vec<Value> = (0..FINDINGS)
        .map(|index| {
            let severity = if index < blocking { "blocking" } else { "warning" };
            json!({"target": {"path": format!("src/file{index}.rs"), "start_line": index + 1, "end_line": index + 4},
                   "severity": severity, "criterion": format!("rule-{index}"), "message": "a finding of the benchmark"})
        })
        .collect();
    json!({"round": round, "run": "long", "state": state, "findings": findings,
           "spent": {"tokens": 1000 + round, "usd": 0.01, "seconds": 1.5}})
}

async fn send(app: &axum::Router, mut request: Request<Body>) -> anyhow::Result<(StatusCode, Vec<u8>)> {
    request.extensions_mut().insert(ConnectInfo("127.0.0.1:9".parse::<SocketAddr>()?));
    let response = app.clone().oneshot(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes().to_vec();
    Ok((status, body))
}

struct Measured {
    early: f64,
    late: f64,
    page_bytes: usize,
    page_median: Duration,
    api_rounds: usize,
    api_bytes: usize,
}

async fn bench(url: &str, rounds: u32) -> anyhow::Result<Measured> {
    let store = Store::open(url).await?;
    let team = format!("long-{}", now_millis() % 1_000_000_000);
    store.create_team(&team).await?;
    let token = store.create_loop_token(&team, "bench").await?.secret;
    let database_url = url.to_string();
    let config = Config::from_lookup(|name| (name == "DATABASE_URL").then(|| database_url.clone()))?;
    let app = site::router(AppState::new(config, store.clone()));

    let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
    let (early_range, late_range) = ((100, 1_000), (rounds.saturating_sub(1_000), rounds));
    let (mut early_started, mut late_started) = (None, None);
    let (mut early, mut late) = (0.0, 0.0);
    for round in 1..=rounds {
        if round == early_range.0 + 1 {
            early_started = Some(Instant::now());
        }
        if round == late_range.0 + 1 {
            late_started = Some(Instant::now());
        }
        let request = Request::post("/api/v1/loops/long/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(round_body(round, &mut draw).to_string()))?;
        let (status, body) = send(&app, request).await?;
        anyhow::ensure!(
            status == StatusCode::OK,
            "round {round} refused: {status} {}",
            String::from_utf8_lossy(&body)
        );
        if round == early_range.1 {
            early = f64::from(early_range.1 - early_range.0)
                / early_started.map_or(f64::NAN, |started| started.elapsed().as_secs_f64());
        }
        if round == late_range.1 {
            late = f64::from(late_range.1 - late_range.0)
                / late_started.map_or(f64::NAN, |started| started.elapsed().as_secs_f64());
        }
    }

    // A member of the team, signed in the way the site signs people in.
    let email = format!("{team}@example.com");
    store.add_team_member(&team, &email, TeamRole::Member).await?;
    let signin = store.create_signin_token(&email).await?;
    let (_, session) = store
        .redeem_signin_token(&signin)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the sign-in token was refused"))?;
    let cookie = format!("fp_session={session}");
    let mut times = Vec::new();
    let mut page_bytes = 0;
    for _ in 0..PAGE_FETCHES {
        let request = Request::get(format!("/loops/long?team={team}"))
            .header(header::COOKIE, &cookie)
            .body(Body::empty())?;
        let started = Instant::now();
        let (status, body) = send(&app, request).await?;
        times.push(started.elapsed());
        anyhow::ensure!(status == StatusCode::OK, "the loop page answered {status}");
        page_bytes = body.len();
    }
    times.sort();

    let request = Request::get("/api/v1/loops/long/rounds")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())?;
    let (status, body) = send(&app, request).await?;
    anyhow::ensure!(status == StatusCode::OK, "the rounds API answered {status}");
    let answer: Value = serde_json::from_slice(&body)?;
    let api_rounds = answer["rounds"].as_array().map_or(0, Vec::len);
    store.close().await;
    Ok(Measured {
        early,
        late,
        page_bytes,
        page_median: times[times.len() / 2],
        api_rounds,
        api_bytes: body.len(),
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let rounds: u32 = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .filter(|n| *n >= 2_000)
        .unwrap_or(10_000);
    let mut out = std::io::stdout().lock();
    writeln!(out, "one run of {rounds} rounds of {FINDINGS} findings, one client")?;
    let sqlite_dir = tempfile::tempdir()?;
    let sqlite = format!("sqlite://{}?mode=rwc", sqlite_dir.path().join("bench.db").display());
    let postgres = std::env::var("BENCH_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    let mut targets = vec![("SQLite", sqlite)];
    match Store::open(&postgres).await {
        Ok(store) => {
            store.close().await;
            targets.push(("PostgreSQL", postgres));
        }
        Err(error) => writeln!(out, "PostgreSQL skipped: {error}")?,
    }
    for (name, url) in targets {
        let measured = bench(&url, rounds).await?;
        writeln!(
            out,
            "{name:<10} rounds 100-1,000 {:>6.0}/s   rounds {}-{} {:>6.0}/s   late/early {:>5.1}%",
            measured.early,
            rounds - 1_000,
            rounds,
            measured.late,
            100.0 * measured.late / measured.early
        )?;
        writeln!(
            out,
            "{name:<10} loop page {:.1} KB, median of {PAGE_FETCHES} {:.1} ms   rounds API {} rounds, {:.1} KB",
            measured.page_bytes as f64 / 1024.0,
            measured.page_median.as_secs_f64() * 1000.0,
            measured.api_rounds,
            measured.api_bytes as f64 / 1024.0
        )?;
    }
    Ok(())
}
