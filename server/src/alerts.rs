//! Alerts: a team's outgoing webhook, called when one of its loops becomes
//! wedged, cycling, stalled, thrashing or lost.
//!
//! An alert is queued in the same transaction as the round (or the sweep)
//! that caused it, so none is lost and none is sent for a round that was
//! not stored. A background task delivers the queue: a JSON POST signed like
//! Stripe's webhooks (`Fixedpoint-Signature: t=<unix seconds>,v1=<hex
//! HMAC-SHA256(secret, "t.body")>`), retried with exponential backoff
//! (30 s doubling, at most an hour apart) and given up after
//! [`MAX_ATTEMPTS`]. Several instances may deliver together: each claims an
//! alert with a conditional update before sending it.
//!
//! An alert fires when a loop *enters* a state: a run that stays stalled
//! for ten rounds alerts once.

use std::time::Duration;

use sqlx::{Any, Row, Transaction};
use tokio::task::JoinHandle;

use crate::store::{now_millis, Store, StoreError};

/// Deliveries are given up after this many failed attempts.
pub const MAX_ATTEMPTS: i64 = 8;
/// How often the deliverer looks for due alerts.
pub const DELIVER_EVERY: Duration = Duration::from_secs(2);
/// A webhook must answer within this.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The states that alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertKind {
    Wedged,
    Cycling,
    Stalled,
    Thrashing,
    Lost,
}

impl AlertKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Wedged => "wedged",
            AlertKind::Cycling => "cycling",
            AlertKind::Stalled => "stalled",
            AlertKind::Thrashing => "thrashing",
            AlertKind::Lost => "lost",
        }
    }

    /// The alert a round's classification (as stored: class, outcome,
    /// advice) calls for, if any. A fixed point or a cycle alerts only when
    /// blocking findings remain (a converged one is good news); stalled and
    /// thrashing only once the loop's threshold turned the advice to stop.
    pub fn of_round(class: &str, outcome: &str, advice: &str) -> Option<AlertKind> {
        match (class, outcome, advice) {
            ("fixed_point", "wedged", _) => Some(AlertKind::Wedged),
            ("cycle", "cycling", _) => Some(AlertKind::Cycling),
            ("stalled", _, "stop") => Some(AlertKind::Stalled),
            ("thrashing", _, "stop") => Some(AlertKind::Thrashing),
            _ => None,
        }
    }
}

/// A team's webhook as its page shows it (the secret shows once, when made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamWebhook {
    pub url: String,
    pub created_at: i64,
}

/// One delivery as the team page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertDelivery {
    pub id: i64,
    pub loop_name: String,
    pub kind: String,
    pub status: String,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

/// Whether an address is one a server must not call on a team's behalf:
/// loopback, private, link-local, carrier-grade NAT, unspecified, and the
/// IPv6 forms of them (unique local, IPv4-mapped).
pub fn is_private(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(ip) => {
            let [a, b, ..] = ip.octets();
            ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || (a == 100 && (64..128).contains(&b))
        }
        std::net::IpAddr::V6(ip) => {
            if let Some(v4) = ip.to_ipv4_mapped() {
                return is_private(std::net::IpAddr::V4(v4));
            }
            let first = ip.segments()[0];
            ip.is_loopback()
                || ip.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Checks a webhook URL as the HTTP client will read it (WHATWG parsing):
/// http(s), a host, at most 2,000 characters. Unless `allow_private`, a host
/// that is a loopback or private address (in any spelling the parser
/// accepts) or `localhost` is refused here; names that resolve to such
/// addresses are refused when the deliverer connects (see
/// [`PublicOnlyResolver`]).
pub fn check_url(url: &str, allow_private: bool) -> Result<(), &'static str> {
    let url = url.trim();
    if url.len() > 2000 {
        return Err("url: at most 2,000 characters");
    }
    // The stored-text rule: the URL is stored as typed, and a NUL (which
    // the URL parser would percent-encode) is no text PostgreSQL can hold.
    if crate::stored_text::problem(url, crate::stored_text::Rule::line(2000)).is_some() {
        return Err("url: must not contain NUL or control characters");
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|_| "url: not a URL such as https://hooks.example.com/fixedpoint")?;
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err("url: must start with https:// or http://");
    }
    let Some(host) = parsed.host() else { return Err("url: needs a host") };
    if allow_private {
        return Ok(());
    }
    let private = match host {
        url::Host::Ipv4(ip) => is_private(ip.into()),
        url::Host::Ipv6(ip) => is_private(ip.into()),
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    };
    if private {
        return Err("url: a loopback or private address cannot receive alerts from this server");
    }
    Ok(())
}

/// A DNS resolver for the alert client that drops loopback and private
/// addresses, so a public name that points inside cannot be used to reach
/// the server's own network.
#[derive(Debug, Clone, Copy)]
pub struct PublicOnlyResolver;

impl reqwest::dns::Resolve for PublicOnlyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| !is_private(addr.ip()))
                .collect();
            if addrs.is_empty() {
                return Err("the name resolves only to loopback or private addresses".into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The HTTP client alerts go out through: no redirects (a redirect could
/// lead inside), and with `allow_private` off, the public-only resolver.
pub fn alert_client(allow_private: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
    let builder =
        if allow_private { builder } else { builder.dns_resolver(std::sync::Arc::new(PublicOnlyResolver)) };
    builder.build().unwrap_or_default()
}

/// The statement of [`enqueue`], for callers with a transaction of
/// another kind: team, loop, kind, payload, time.
pub(crate) const ENQUEUE: &str =
    "INSERT INTO alert_deliveries (team_id, loop_name, kind, payload, status, attempts, next_attempt_at, created_at) \
     SELECT $1, $2, $3, $4, 'pending', 0, $5, $5 WHERE EXISTS (SELECT 1 FROM team_webhooks WHERE team_id = $1)";

/// Queues an alert for the team if it has a webhook (inside the caller's
/// transaction).
pub async fn enqueue(
    tx: &mut Transaction<'static, Any>,
    team_id: i64,
    loop_name: &str,
    kind: AlertKind,
    payload: &serde_json::Value,
    now: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(ENQUEUE)
        .bind(team_id)
        .bind(loop_name)
        .bind(kind.as_str())
        .bind(payload.to_string())
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

fn delivery(row: &sqlx::any::AnyRow) -> Result<AlertDelivery, sqlx::Error> {
    Ok(AlertDelivery {
        id: row.try_get("id")?,
        loop_name: row.try_get("loop_name")?,
        kind: row.try_get("kind")?,
        status: row.try_get("status")?,
        attempts: row.try_get("attempts")?,
        last_status: row.try_get("last_status")?,
        last_error: row.try_get("last_error")?,
        created_at: row.try_get("created_at")?,
        delivered_at: row.try_get("delivered_at")?,
    })
}

impl Store {
    /// Sets the team's webhook URL with a new signing secret; answers the
    /// secret (shown once on the team page).
    pub async fn set_team_webhook(&self, team_id: i64, url: &str) -> Result<String, StoreError> {
        let bytes: [u8; 32] = rand::random();
        let secret = format!("fpw_{}", hex::encode(bytes));
        sqlx::query(
            "INSERT INTO team_webhooks (team_id, url, secret, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (team_id) DO UPDATE SET url = excluded.url, secret = excluded.secret, created_at = excluded.created_at",
        )
        .bind(team_id)
        .bind(url.trim())
        .bind(&secret)
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        Ok(secret)
    }

    pub async fn remove_team_webhook(&self, team_id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM team_webhooks WHERE team_id = $1")
            .bind(team_id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub async fn team_webhook(&self, team_id: i64) -> Result<Option<TeamWebhook>, StoreError> {
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT url, created_at FROM team_webhooks WHERE team_id = $1")
                .bind(team_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(row.map(|(url, created_at)| TeamWebhook { url, created_at }))
    }

    /// The team's latest deliveries, newest first.
    pub async fn alert_deliveries(&self, team_id: i64, limit: i64) -> Result<Vec<AlertDelivery>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, loop_name, kind, status, attempts, last_status, last_error, created_at, delivered_at \
             FROM alert_deliveries WHERE team_id = $1 ORDER BY id DESC LIMIT $2",
        )
        .bind(team_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.iter().map(delivery).collect::<Result<_, _>>()?)
    }
}

/// What one pass of the deliverer did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryReport {
    pub delivered: usize,
    pub retrying: usize,
    pub failed: usize,
}

/// The wait before attempt `attempts + 1`: 30 s doubling, at most an hour.
pub fn backoff(attempts: i64) -> Duration {
    let seconds = 30u64.saturating_mul(1u64 << attempts.clamp(0, 16));
    Duration::from_secs(seconds.min(3600))
}

/// Delivers the alerts due at `now` (Unix ms).
pub async fn deliver_due(
    store: &Store,
    client: &reqwest::Client,
    now: i64,
) -> Result<DeliveryReport, StoreError> {
    use futures_util::stream::{self, StreamExt};

    let due = sqlx::query(
        "SELECT d.id, d.payload, d.attempts, w.url, w.secret FROM alert_deliveries d \
         JOIN team_webhooks w ON w.team_id = d.team_id \
         WHERE d.status = 'pending' AND d.next_attempt_at <= $1 ORDER BY d.id LIMIT 50",
    )
    .bind(now)
    .fetch_all(store.pool())
    .await?;
    // A few at a time, so one slow endpoint does not hold up every other
    // team's alerts for its whole timeout.
    let outcomes: Vec<Result<Option<Delivered>, StoreError>> = stream::iter(due)
        .map(|row| deliver_one(store, client, row, now))
        .buffer_unordered(CONCURRENT_DELIVERIES)
        .collect()
        .await;
    let mut report = DeliveryReport::default();
    for outcome in outcomes {
        match outcome? {
            Some(Delivered::Yes) => report.delivered += 1,
            Some(Delivered::Retrying) => report.retrying += 1,
            Some(Delivered::GaveUp) => report.failed += 1,
            None => {}
        }
    }
    Ok(report)
}

/// Deliveries sent at once by one deliverer.
const CONCURRENT_DELIVERIES: usize = 8;

enum Delivered {
    Yes,
    Retrying,
    GaveUp,
}

/// Claims and sends one due alert; `None` when another deliverer had it.
async fn deliver_one(
    store: &Store,
    client: &reqwest::Client,
    row: sqlx::any::AnyRow,
    now: i64,
) -> Result<Option<Delivered>, StoreError> {
    let id: i64 = row.try_get("id")?;
    let attempts: i64 = row.try_get("attempts")?;
    // Claim it: another instance that read the same row loses here. The
    // lease runs from the claim, not from the start of the pass.
    let lease_from = now.max(now_millis());
    let claimed = sqlx::query(
        "UPDATE alert_deliveries SET next_attempt_at = $2 WHERE id = $1 AND status = 'pending' AND next_attempt_at <= $3",
    )
    .bind(id)
    .bind(lease_from + REQUEST_TIMEOUT.as_millis() as i64 * 6)
    .bind(now)
    .execute(store.pool())
    .await?;
    if claimed.rows_affected() != 1 {
        return Ok(None);
    }
    let payload: String = row.try_get("payload")?;
    let url: String = row.try_get("url")?;
    let secret: String = row.try_get("secret")?;
    let signature = crate::signature::sign(payload.as_bytes(), &secret, now_millis() / 1000);
    let sent = client
        .post(&url)
        .header("content-type", "application/json")
        .header("fixedpoint-signature", signature)
        .header("user-agent", "fixedpoint-alerts/1")
        .body(payload)
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await;
    let (status, error) = match sent {
        Ok(response) if response.status().is_success() => (Some(i64::from(response.status().as_u16())), None),
        Ok(response) => {
            (Some(i64::from(response.status().as_u16())), Some(format!("HTTP {}", response.status())))
        }
        // The client's own text can carry the URL (a secret for some
        // services) and internal detail: the page gets a plain reason.
        Err(error) if error.is_timeout() => (None, Some("no answer within 10 s".to_string())),
        Err(error) if error.is_connect() => (None, Some("could not connect".to_string())),
        Err(_) => (None, Some("the request failed".to_string())),
    };
    let attempts = attempts + 1;
    if error.is_none() {
        sqlx::query(
            "UPDATE alert_deliveries SET status = 'delivered', attempts = $2, last_status = $3, last_error = NULL, \
             delivered_at = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(attempts)
        .bind(status)
        .bind(now_millis())
        .execute(store.pool())
        .await?;
        return Ok(Some(Delivered::Yes));
    }
    let gave_up = attempts >= MAX_ATTEMPTS;
    sqlx::query(
        "UPDATE alert_deliveries SET status = $2, attempts = $3, last_status = $4, last_error = $5, \
         next_attempt_at = $6 WHERE id = $1",
    )
    .bind(id)
    .bind(if gave_up { "failed" } else { "pending" })
    .bind(attempts)
    .bind(status)
    .bind(error)
    .bind(now.max(now_millis()) + backoff(attempts - 1).as_millis() as i64)
    .execute(store.pool())
    .await?;
    Ok(Some(if gave_up { Delivered::GaveUp } else { Delivered::Retrying }))
}

/// Delivers due alerts every `every` until aborted.
pub fn spawn_deliverer(store: Store, every: Duration, allow_private: bool) -> JoinHandle<()> {
    tokio::spawn(async move {
        let client = alert_client(allow_private);
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match deliver_due(&store, &client, now_millis()).await {
                Ok(report) if report != DeliveryReport::default() => {
                    tracing::info!(?report, "alert deliveries")
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "delivering alerts failed"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bad_states_alert() {
        use crate::convergence::{Advice, Class, Outcome};
        let kind = |class: Class, outcome: Outcome, advice: Advice| {
            AlertKind::of_round(class.as_str(), outcome.as_str(), advice.as_str())
        };
        assert_eq!(kind(Class::FixedPoint, Outcome::Wedged, Advice::Stop), Some(AlertKind::Wedged));
        assert_eq!(kind(Class::FixedPoint, Outcome::Converged, Advice::Stop), None);
        assert_eq!(kind(Class::Cycle, Outcome::Cycling, Advice::Stop), Some(AlertKind::Cycling));
        assert_eq!(kind(Class::Cycle, Outcome::Converged, Advice::Stop), None);
        assert_eq!(kind(Class::Stalled, Outcome::Stuck, Advice::Continue), None, "below the threshold");
        assert_eq!(kind(Class::Stalled, Outcome::Stuck, Advice::Stop), Some(AlertKind::Stalled));
        assert_eq!(kind(Class::Thrashing, Outcome::Stuck, Advice::Stop), Some(AlertKind::Thrashing));
        assert_eq!(kind(Class::Converging, Outcome::Progressing, Advice::Continue), None);
    }

    #[test]
    fn backoff_doubles_to_an_hour() {
        assert_eq!(backoff(0), Duration::from_secs(30));
        assert_eq!(backoff(1), Duration::from_secs(60));
        assert_eq!(backoff(6), Duration::from_secs(1920));
        assert_eq!(backoff(7), Duration::from_secs(3600));
        assert_eq!(backoff(60), Duration::from_secs(3600));
    }

    #[test]
    fn webhook_urls_are_checked() {
        assert!(check_url("https://hooks.example.com/x", false).is_ok());
        assert!(check_url("ftp://x", false).is_err());
        assert!(check_url("https://", false).is_err());
        assert!(check_url("http://127.0.0.1:9/x", false).is_err());
        assert!(check_url("http://localhost/x", false).is_err());
        assert!(check_url("http://10.1.2.3/x", false).is_err());
        assert!(check_url("http://[::1]:80/x", false).is_err());
        assert!(check_url("http://user@192.168.0.1/", false).is_err());
        // Spellings the URL parser turns into loopback addresses.
        for sneaky in [
            "http://127.0.0.1\\@example.com/",
            "http://2130706433/",
            "http://127.1/",
            "http://0x7f.0.0.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://localhost./",
            "http://100.64.0.1/",
            "http://[fe80::1]/",
        ] {
            assert!(check_url(sneaky, false).is_err(), "{sneaky} must be refused");
        }
        assert!(check_url("http://127.0.0.1:9/x", true).is_ok());
        assert!(check_url(&format!("https://x.example/{}", "a".repeat(2000)), false).is_err());
    }
}
