//! The deliverer: a task of `fixedpoint serve` (with `SMTP_URL`) that works
//! the delivery ledger off.
//!
//! A claim takes due `queued` rows and moves their `next_attempt_at` past a
//! lease, in one statement (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so
//! instances never take the same row; SQLite has one writer). A row stays
//! `queued` until the relay's answer is written to it, row by row as each
//! answer comes: a crash loses no row (an unanswered claim comes due again
//! when its lease ends) and sends again only the messages whose answer had
//! not been written, at most the connections in flight. The relay's answer
//! decides the row: 2xx `sent`, 5xx `bounced` (and the address gets no more
//! mail), 4xx or no answer queued again with backoff, `failed` after
//! [`MAX_ATTEMPTS`]. The rate is the site's: each claim reserves its
//! messages' departure times in the `mail_rate` row that every instance
//! shares.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lettre::message::Mailbox;
use lettre::transport::smtp::client::AsyncSmtpConnection;
use sqlx::Row;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::message::{IssueContent, IssueLetter};
use super::subscribers::{new_token, token_hash, UNSUBSCRIBE_PREFIX};
use super::Tier;
use crate::store::{now_millis, Backend, Store, StoreError};

/// How long a claim holds its rows before they come due again.
pub const LEASE_MS: i64 = 60_000;
/// Tries of one message before its row is `failed`.
pub const MAX_ATTEMPTS: i64 = 8;
/// How often an idle deliverer looks for due rows.
const IDLE_POLL: Duration = Duration::from_millis(500);
/// The longest a row waits between two tries.
const MAX_BACKOFF_MS: i64 = 3_600_000;

/// What the deliverer needs from the configuration.
#[derive(Clone)]
pub struct DelivererConfig {
    /// The relay; each worker keeps one connection to it open.
    pub relay: crate::mail::SmtpRelay,
    pub from: Mailbox,
    pub public_url: String,
    /// Messages a second for the whole site; 0 for no limit.
    pub rate_per_second: u32,
    /// SMTP connections kept open (and messages in flight).
    pub connections: u32,
    /// The wait before the first retry of a 4xx; it doubles with each try.
    pub retry_ms: i64,
    /// Signs every message when set.
    pub dkim: Option<Arc<lettre::message::dkim::DkimConfig>>,
}

/// A claimed ledger row.
#[derive(Debug, Clone)]
struct Claimed {
    id: i64,
    issue_id: i64,
    subscriber_id: i64,
    email: String,
    tier: Tier,
    attempts: i64,
    /// The subscriber's status now: a row whose address left the list is
    /// not sent.
    on_list: bool,
}

/// A row on its way to a worker, with the letter for its issue and tier and
/// the earliest moment it may leave.
struct Job {
    row: Claimed,
    letter: Arc<IssueLetter>,
    not_before: tokio::time::Instant,
}

/// What the relay said to one message.
enum Outcome {
    Sent(String),
    Bounced(String),
    Retry(String),
}

/// Starts the deliverer; it runs until aborted.
pub fn spawn(store: Store, config: DelivererConfig) -> JoinHandle<()> {
    tokio::spawn(async move {
        let connections = config.connections.max(1) as usize;
        let (jobs, receiver) = mpsc::channel::<Job>(connections * 2);
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        let mut workers = Vec::with_capacity(connections);
        for _ in 0..connections {
            let receiver = receiver.clone();
            let store = store.clone();
            let config = config.clone();
            workers.push(tokio::spawn(async move {
                // This worker's connection: opened when needed, kept between
                // messages, dropped when the relay or the network broke it.
                let mut connection: Option<AsyncSmtpConnection> = None;
                loop {
                    let job = { receiver.lock().await.recv().await };
                    let Some(job) = job else { break };
                    deliver(&store, &config, &mut connection, job).await;
                }
            }));
        }
        let _workers = AbortOnDrop(workers);
        let batch = claim_size(&config);
        let mut letters: HashMap<(i64, Tier), Arc<IssueLetter>> = HashMap::new();
        loop {
            match claim_and_dispatch(&store, &config, batch, &jobs, &mut letters).await {
                Ok(0) => tokio::time::sleep(IDLE_POLL).await,
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, "the newsletter deliverer could not claim rows");
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            }
        }
    })
}

/// Aborts the worker tasks when the deliverer itself is aborted.
struct AbortOnDrop(Vec<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for worker in &self.0 {
            worker.abort();
        }
    }
}

/// Rows per claim: enough to keep every connection busy, and no more than
/// about two seconds of sending at the configured rate.
fn claim_size(config: &DelivererConfig) -> i64 {
    let by_connections = i64::from(config.connections.max(1)) * 4;
    if config.rate_per_second == 0 {
        by_connections.min(200)
    } else {
        by_connections.min(i64::from(config.rate_per_second) * 2).clamp(1, 200)
    }
}

/// Claims due rows, renders what is missing and hands the rows to the
/// workers; answers how many rows were claimed.
async fn claim_and_dispatch(
    store: &Store,
    config: &DelivererConfig,
    batch: i64,
    jobs: &mpsc::Sender<Job>,
    letters: &mut HashMap<(i64, Tier), Arc<IssueLetter>>,
) -> Result<usize, StoreError> {
    // Wait for room first, so claimed rows do not sit in memory for long.
    let permit = match jobs.reserve().await {
        Ok(permit) => permit,
        Err(_) => return Ok(0),
    };
    let claimed = claim(store, batch).await?;
    if claimed.is_empty() {
        drop(permit);
        return Ok(0);
    }
    let count = claimed.len();
    let (sendable, gone): (Vec<_>, Vec<_>) = claimed.into_iter().partition(|row| row.on_list);
    for row in gone {
        record(store, &row, Outcome::Retry(String::new()), config.retry_ms, true).await?;
    }
    // Each issue is read and rendered once per tier, then kept (a send is
    // thousands of rows of one issue).
    for row in &sendable {
        if let Entry::Vacant(slot) = letters.entry((row.issue_id, row.tier)) {
            let Some(issue) = issue_content(store, row.issue_id).await? else { continue };
            slot.insert(Arc::new(IssueLetter::render(&issue, row.tier, &config.public_url)));
        }
    }
    let departures = reserve_departures(store, config, sendable.len()).await?;
    let mut permit = Some(permit);
    for (row, not_before) in sendable.into_iter().zip(departures) {
        let Some(letter) = letters.get(&(row.issue_id, row.tier)).cloned() else {
            tracing::error!(delivery = row.id, "a queued delivery's issue is gone");
            continue;
        };
        let job = Job { row, letter, not_before };
        match permit.take() {
            Some(permit) => permit.send(job),
            None => {
                if jobs.send(job).await.is_err() {
                    break;
                }
            }
        }
    }
    Ok(count)
}

/// Takes up to `batch` due rows for this instance.
async fn claim(store: &Store, batch: i64) -> Result<Vec<Claimed>, StoreError> {
    let now = now_millis();
    let lock = match store.backend() {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    let rows = sqlx::query(&format!(
        "UPDATE deliveries SET next_attempt_at = $1, updated_at = $2 WHERE id IN ( \
           SELECT id FROM deliveries WHERE state = 'queued' AND next_attempt_at <= $2 \
           ORDER BY next_attempt_at, id LIMIT $3{lock}) \
         RETURNING id, issue_id, subscriber_id, email, tier, attempts, \
           (SELECT status FROM subscribers s WHERE s.id = deliveries.subscriber_id) AS status"
    ))
    .bind(now + LEASE_MS)
    .bind(now)
    .bind(batch)
    .fetch_all(store.pool())
    .await?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        let tier: String = row.try_get("tier")?;
        let status: Option<String> = row.try_get("status")?;
        claimed.push(Claimed {
            id: row.try_get("id")?,
            issue_id: row.try_get("issue_id")?,
            subscriber_id: row.try_get("subscriber_id")?,
            email: row.try_get("email")?,
            tier: Tier::from_name(&tier).unwrap_or(Tier::Free),
            attempts: row.try_get("attempts")?,
            on_list: status.as_deref() == Some("confirmed"),
        });
    }
    claimed.sort_by_key(|row| row.id);
    Ok(claimed)
}

/// Reserves `count` departure times in the site-wide rate row: one update,
/// so every instance's messages share the rate.
async fn reserve_departures(
    store: &Store,
    config: &DelivererConfig,
    count: usize,
) -> Result<Vec<tokio::time::Instant>, StoreError> {
    let start = tokio::time::Instant::now();
    if config.rate_per_second == 0 || count == 0 {
        return Ok(vec![start; count]);
    }
    let interval_us = 1_000_000 / i64::from(config.rate_per_second);
    let now_us = now_millis() * 1000;
    let span = interval_us * count as i64;
    let end: i64 = sqlx::query_scalar(
        "UPDATE mail_rate SET next_at_us = (CASE WHEN next_at_us > $1 THEN next_at_us ELSE $1 END) + $2 \
         WHERE id = 1 RETURNING next_at_us",
    )
    .bind(now_us)
    .bind(span)
    .fetch_one(store.pool())
    .await?;
    let first = end - span;
    Ok((0..count as i64)
        .map(|index| {
            let wait_us = (first + index * interval_us - now_us).max(0);
            start + Duration::from_micros(wait_us as u64)
        })
        .collect())
}

async fn issue_content(store: &Store, issue_id: i64) -> Result<Option<IssueContent>, StoreError> {
    let row = sqlx::query(
        "SELECT slug, title, summary, date, tier, free_html, paid_html FROM issues WHERE id = $1",
    )
    .bind(issue_id)
    .fetch_optional(store.pool())
    .await?;
    let Some(row) = row else { return Ok(None) };
    let tier: String = row.try_get("tier")?;
    Ok(Some(IssueContent {
        slug: row.try_get("slug")?,
        title: row.try_get("title")?,
        summary: row.try_get("summary")?,
        date: row.try_get("date")?,
        tier: Tier::from_name(&tier).unwrap_or(Tier::Founder),
        free_html: row.try_get("free_html")?,
        paid_html: row.try_get("paid_html")?,
    }))
}

/// Sends one row's message and writes the relay's answer to the row.
async fn deliver(
    store: &Store,
    config: &DelivererConfig,
    connection: &mut Option<AsyncSmtpConnection>,
    job: Job,
) {
    tokio::time::sleep_until(job.not_before).await;
    let row = job.row;
    let outcome = match unsubscribe_url(store, config, &row).await {
        Ok(url) => {
            let domain = config.from.email.domain().to_string();
            let message_id = format!("<{}.{}@{domain}>", row.id, hex::encode(rand::random::<[u8; 8]>()));
            match job.letter.message(&config.from, &row.email, &url, &message_id) {
                Ok(mut message) => {
                    if let Some(dkim) = &config.dkim {
                        message.sign(dkim);
                    }
                    send(config, connection, &message).await
                }
                // An address the relay could never take (the ledger only
                // holds normalised ones): nothing to retry.
                Err(problem) => Outcome::Bounced(short(&problem)),
            }
        }
        Err(error) => Outcome::Retry(short(&format!("could not store the unsubscribe token: {error}"))),
    };
    if let Err(error) = record(store, &row, outcome, config.retry_ms, false).await {
        tracing::error!(%error, delivery = row.id, "could not record a delivery's outcome");
    }
}

/// Sends one message over the worker's connection (opening one when there
/// is none) and answers what the relay said.
async fn send(
    config: &DelivererConfig,
    connection: &mut Option<AsyncSmtpConnection>,
    message: &lettre::Message,
) -> Outcome {
    if connection.as_ref().is_some_and(|open| open.has_broken()) {
        *connection = None;
    }
    if connection.is_none() {
        match config.relay.connect().await {
            Ok(open) => *connection = Some(open),
            Err(problem) => return Outcome::Retry(short(&problem)),
        }
    }
    let Some(open) = connection.as_mut() else { return Outcome::Retry("no connection".to_string()) };
    let answer =
        tokio::time::timeout(Duration::from_secs(30), open.send(message.envelope(), &message.formatted()))
            .await;
    match answer {
        Ok(answer) => {
            if answer.is_err() {
                // lettre ends the session after a refusal; the next message
                // opens a new one.
                *connection = None;
            }
            relay_outcome(answer)
        }
        Err(_) => {
            *connection = None;
            Outcome::Retry("the relay did not answer within 30 s".to_string())
        }
    }
}

/// What the relay's answer means for the row.
fn relay_outcome(
    answer: Result<lettre::transport::smtp::response::Response, lettre::transport::smtp::Error>,
) -> Outcome {
    match answer {
        Ok(response) => Outcome::Sent(reply_text(response.code().to_string(), response.message())),
        Err(error) if error.is_permanent() => Outcome::Bounced(short(&error.to_string())),
        Err(error) => Outcome::Retry(short(&error.to_string())),
    }
}

/// A fresh unsubscribe token for this message, stored as its hash.
async fn unsubscribe_url(
    store: &Store,
    config: &DelivererConfig,
    row: &Claimed,
) -> Result<String, StoreError> {
    let token = new_token(UNSUBSCRIBE_PREFIX);
    sqlx::query("INSERT INTO unsubscribe_tokens (token_hash, subscriber_id, created_at) VALUES ($1, $2, $3)")
        .bind(token_hash(&token))
        .bind(row.subscriber_id)
        .bind(now_millis())
        .execute(store.pool())
        .await?;
    Ok(format!("{}/unsubscribe/{token}", config.public_url))
}

fn reply_text<'a>(code: String, lines: impl Iterator<Item = &'a str>) -> String {
    let text: Vec<&str> = lines.collect();
    short(&format!("{code} {}", text.join(" ")))
}

fn short(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(300).collect()
}

/// Writes a row's outcome. `left_list`: the address left the list before its
/// turn (the row is `failed`, nothing was sent).
async fn record(
    store: &Store,
    row: &Claimed,
    outcome: Outcome,
    retry_ms: i64,
    left_list: bool,
) -> Result<(), StoreError> {
    let now = now_millis();
    let attempts = row.attempts + i64::from(!left_list);
    if left_list {
        sqlx::query(
            "UPDATE deliveries SET state = 'failed', last_reply = $2, updated_at = $3 WHERE id = $1 AND state = 'queued'",
        )
        .bind(row.id)
        .bind("not sent: the address left the list before its turn")
        .bind(now)
        .execute(store.pool())
        .await?;
        return Ok(());
    }
    match outcome {
        Outcome::Sent(reply) => {
            sqlx::query(
                "UPDATE deliveries SET state = 'sent', attempts = $2, last_reply = $3, sent_at = $4, updated_at = $4 \
                 WHERE id = $1",
            )
            .bind(row.id)
            .bind(attempts)
            .bind(reply)
            .bind(now)
            .execute(store.pool())
            .await?;
        }
        Outcome::Bounced(reply) => {
            let mut tx = store.begin_write().await?;
            sqlx::query(
                "UPDATE deliveries SET state = 'bounced', attempts = $2, last_reply = $3, updated_at = $4 WHERE id = $1",
            )
            .bind(row.id)
            .bind(attempts)
            .bind(&reply)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "UPDATE subscribers SET status = 'bounced', bounced_at = $2, updated_at = $2 \
                 WHERE id = $1 AND status <> 'bounced'",
            )
            .bind(row.subscriber_id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            tracing::warn!(delivery = row.id, %reply, "the relay refused an address for good: marked bounced");
        }
        Outcome::Retry(reply) => {
            let give_up = attempts >= MAX_ATTEMPTS;
            let backoff = retry_ms.saturating_mul(1 << (attempts - 1).clamp(0, 20)).min(MAX_BACKOFF_MS);
            sqlx::query(
                "UPDATE deliveries SET state = $2, attempts = $3, last_reply = $4, next_attempt_at = $5, updated_at = $6 \
                 WHERE id = $1",
            )
            .bind(row.id)
            .bind(if give_up { "failed" } else { "queued" })
            .bind(attempts)
            .bind(&reply)
            .bind(now + backoff)
            .bind(now)
            .execute(store.pool())
            .await?;
            tracing::info!(delivery = row.id, attempts, give_up, %reply, "a message was not taken: retrying later");
        }
    }
    Ok(())
}
