//! Talking to the server: which rounds it holds, sending the others, and
//! heartbeats.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use reqwest::{Client, StatusCode, Url};
use serde_json::{json, Value};

use super::journal::{LoopDir, Problem};
use super::mapping::{rounds_of, run_id_of};
use super::ConnectorError;

/// Where to read and where to send.
#[derive(Debug, Clone)]
pub struct PushOptions {
    pub dir: PathBuf,
    /// The server's base URL, such as `https://fixedpoint.example`.
    pub to: String,
    pub token: String,
}

/// A round the server took, with its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SentRound {
    pub round: u32,
    pub class: String,
    pub advice: String,
    pub reason: String,
    pub operator_stop: bool,
    pub steer: Option<String>,
}

/// What one push did.
#[derive(Debug, Clone, Default)]
pub struct PushReport {
    pub loop_name: String,
    pub run: Option<String>,
    pub sent: Vec<SentRound>,
    /// Entries the server already held, left alone.
    pub already_stored: usize,
    /// What could not be read from the directory.
    pub problems: Vec<Problem>,
    /// Entries the server refused, with its reason.
    pub rejected: Vec<Problem>,
    /// The run state a heartbeat reported, when one was sent.
    pub heartbeat: Option<String>,
}

/// How long to wait for the server on any one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How often `--watch` sends a heartbeat when nothing changed, well inside
/// the default ten-minute window after which a silent run is lost.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(60);

/// An HTTP client configured for pushing.
pub fn http_client() -> Result<Client, ConnectorError> {
    Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .user_agent(format!("{}{}", super::USER_AGENT_PREFIX, env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|source| ConnectorError::Unreachable { url: String::new(), source })
}

fn endpoint(base: &str, loop_name: &str, tail: &[&str]) -> Result<Url, ConnectorError> {
    let bad = || ConnectorError::BadUrl { url: base.to_string() };
    let mut url = Url::parse(base).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad());
    }
    url.set_query(None);
    url.set_fragment(None);
    {
        let mut segments = url.path_segments_mut().map_err(|_| bad())?;
        segments.pop_if_empty().extend(["api", "v1", "loops", loop_name]).extend(tail);
    }
    Ok(url)
}

/// The error message of a JSON error body, or its raw text.
async fn error_text(response: reqwest::Response) -> String {
    let text = response.text().await.unwrap_or_default();
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|value| value.get("error").and_then(Value::as_str).map(str::to_string))
        .unwrap_or(text)
}

/// Reads the directory once and sends the rounds the server does not hold,
/// then a heartbeat that says whether the run is running or blocked.
pub async fn push_once(client: &Client, options: &PushOptions) -> Result<PushReport, ConnectorError> {
    let dir = LoopDir::read(&options.dir)?;
    let run = run_id_of(&dir);
    let mut report = PushReport {
        loop_name: dir.name.clone(),
        run: run.clone(),
        problems: dir.problems.clone(),
        ..PushReport::default()
    };
    let rounds_url = endpoint(&options.to, &dir.name, &["rounds"])?;
    let stored = match &run {
        Some(run) => stored_rounds(client, &rounds_url, run, &options.token).await?,
        None => BTreeSet::new(),
    };
    let last_stored = stored.last().copied().unwrap_or(0);

    for planned in rounds_of(&dir) {
        if stored.contains(&planned.round) {
            report.already_stored += 1;
            continue;
        }
        if planned.round < last_stored {
            report.rejected.push(Problem {
                file: "journal.md".to_string(),
                line: planned.line,
                message: format!(
                    "iteration {} comes before round {last_stored}, the last the server holds; not sent",
                    planned.round
                ),
            });
            continue;
        }
        let response = client
            .post(rounds_url.clone())
            .bearer_auth(&options.token)
            .json(&planned.body)
            .send()
            .await
            .map_err(|source| ConnectorError::Unreachable { url: rounds_url.to_string(), source })?;
        match response.status() {
            StatusCode::OK => {
                let answer: Value = response
                    .json()
                    .await
                    .map_err(|source| ConnectorError::Unreachable { url: rounds_url.to_string(), source })?;
                let text =
                    |field: &str| answer.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
                report.sent.push(SentRound {
                    round: planned.round,
                    class: text("class"),
                    advice: text("advice"),
                    reason: text("reason"),
                    operator_stop: answer["operator"]["stop"].as_bool().unwrap_or(false),
                    steer: answer["operator"]["steer"].as_str().map(str::to_string),
                });
            }
            StatusCode::UNAUTHORIZED => return Err(ConnectorError::Unauthorized),
            status if status.is_client_error() => {
                let message = error_text(response).await;
                report.rejected.push(Problem {
                    file: "journal.md".to_string(),
                    line: planned.line,
                    message: format!("the server refused iteration {} ({status}): {message}", planned.round),
                });
            }
            status => {
                return Err(ConnectorError::Server {
                    status: status.as_u16(),
                    what: format!("round {}", planned.round),
                    message: error_text(response).await,
                })
            }
        }
    }

    report.heartbeat = heartbeat(client, options, &dir, run.as_deref(), report.sent.is_empty()).await?;
    Ok(report)
}

/// The round numbers of `run` the server already holds.
async fn stored_rounds(
    client: &Client,
    rounds_url: &Url,
    run: &str,
    token: &str,
) -> Result<BTreeSet<u32>, ConnectorError> {
    let mut stored = BTreeSet::new();
    let mut after = 0u32;
    loop {
        let response = client
            .get(rounds_url.clone())
            .bearer_auth(token)
            .query(&[("run", run), ("after", &after.to_string())])
            .send()
            .await
            .map_err(|source| ConnectorError::Unreachable { url: rounds_url.to_string(), source })?;
        match response.status() {
            StatusCode::OK => {}
            // A loop or run the server has never seen holds nothing yet.
            StatusCode::NOT_FOUND => return Ok(stored),
            StatusCode::UNAUTHORIZED => return Err(ConnectorError::Unauthorized),
            status => {
                return Err(ConnectorError::Server {
                    status: status.as_u16(),
                    what: "the history request".to_string(),
                    message: error_text(response).await,
                })
            }
        }
        let page: Value = response
            .json()
            .await
            .map_err(|source| ConnectorError::Unreachable { url: rounds_url.to_string(), source })?;
        let numbers: Vec<u32> = page["rounds"]
            .as_array()
            .map(|rounds| {
                rounds
                    .iter()
                    .filter_map(|round| round["round"].as_u64().and_then(|number| u32::try_from(number).ok()))
                    .collect()
            })
            .unwrap_or_default();
        let Some(&last) = numbers.last() else { return Ok(stored) };
        stored.extend(numbers.iter().copied());
        // The server says whether a newer page exists (servers before
        // paging did not: a page of fewer than 1,000 rounds was the last).
        let more = match page["page"]["has_newer"].as_bool() {
            Some(more) => more,
            None => numbers.len() >= 1000,
        };
        if !more {
            return Ok(stored);
        }
        after = last;
    }
}

/// Tells the server the run is blocked (a STOP file, a paused or blocked
/// status) or, when no round was sent this time, that it is still alive.
async fn heartbeat(
    client: &Client,
    options: &PushOptions,
    dir: &LoopDir,
    run: Option<&str>,
    nothing_sent: bool,
) -> Result<Option<String>, ConnectorError> {
    let Some(run) = run else { return Ok(None) };
    let status = dir.state_text("status").map(|status| status.to_lowercase());
    let last = dir.entries.last();
    let waiting_on = last
        .and_then(|entry| entry.next.clone().or_else(|| entry.unit.clone()))
        .unwrap_or_else(|| "the loop's state.json".to_string());
    let body = if let Some(stop) = &dir.stop_file {
        json!({"run": run, "status": "blocked", "reason": "stop_file", "subject": stop.display().to_string()})
    } else if let Some(reason @ ("paused" | "blocked")) = status.as_deref() {
        json!({"run": run, "status": "blocked", "reason": reason, "subject": waiting_on})
    } else if nothing_sent && !matches!(status.as_deref(), Some("done" | "retired" | "stalled")) {
        json!({"run": run, "status": "running"})
    } else {
        return Ok(None);
    };
    let url = endpoint(&options.to, &dir.name, &["heartbeat"])?;
    let response = client
        .post(url.clone())
        .bearer_auth(&options.token)
        .json(&body)
        .send()
        .await
        .map_err(|source| ConnectorError::Unreachable { url: url.to_string(), source })?;
    match response.status() {
        StatusCode::OK => {
            let answer: Value = response.json().await.unwrap_or_default();
            Ok(answer["run"]["state"].as_str().map(str::to_string))
        }
        StatusCode::UNAUTHORIZED => Err(ConnectorError::Unauthorized),
        // A run that has ended or that the server never saw takes no
        // heartbeat; that is not worth failing a push over.
        _ => Ok(None),
    }
}

/// When each file that matters last changed, to notice changes cheaply.
fn fingerprint(dir: &std::path::Path) -> Vec<Option<(SystemTime, u64)>> {
    let parent_stop = dir.parent().map(|parent| parent.join("STOP")).unwrap_or_default();
    [dir.join("journal.md"), dir.join("state.json"), dir.join("STOP"), parent_stop]
        .iter()
        .map(|path| std::fs::metadata(path).ok().and_then(|meta| Some((meta.modified().ok()?, meta.len()))))
        .collect()
}

/// Pushes now and again whenever the directory changes (looking every
/// `every`), with a heartbeat at least once a minute, until `shutdown`
/// resolves. A server that cannot be reached is retried at the next look; a
/// refused token ends the watch.
pub async fn watch(
    options: &PushOptions,
    every: Duration,
    shutdown: impl Future<Output = ()>,
    mut on_report: impl FnMut(Result<&PushReport, &ConnectorError>),
) -> Result<(), ConnectorError> {
    let client = http_client()?;
    tokio::pin!(shutdown);
    let mut seen = None;
    let mut last_push: Option<Instant> = None;
    loop {
        let now = fingerprint(&options.dir);
        let due = last_push.is_none_or(|at| at.elapsed() >= HEARTBEAT_EVERY);
        if seen.as_ref() != Some(&now) || due {
            match push_once(&client, options).await {
                Ok(report) => {
                    on_report(Ok(&report));
                    seen = Some(now);
                    last_push = Some(Instant::now());
                }
                Err(error @ (ConnectorError::Unauthorized | ConnectorError::BadUrl { .. })) => {
                    return Err(error)
                }
                Err(error) => {
                    on_report(Err(&error));
                    last_push = Some(Instant::now());
                }
            }
        }
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            () = tokio::time::sleep(every) => {}
        }
    }
}
