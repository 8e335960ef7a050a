//! The delivery ledger: queuing an issue for its recipients (one row per
//! recipient per issue, all written in one transaction) and the counts of a
//! send. The deliverer (`deliverer.rs`) works the rows off.
//!
//! Who gets an issue: every confirmed subscriber not yet queued for it, and
//! every paying reader who has not opted out (their `subscribers` row is
//! written in the same transaction). Each row keeps the tier the reader had
//! when the send was queued: a free reader's message carries the free part
//! and a link, a Pro or Founder reader's the whole issue; a founder-only
//! issue is queued for founders only.

use sqlx::Row;
use thiserror::Error;

use super::Tier;
use crate::store::Store;
use crate::store::{now_millis, StoreError};

/// Rows written per INSERT while queuing.
const QUEUE_CHUNK: usize = 400;

#[derive(Debug, Error)]
pub enum DeliveryError {
    #[error("slug {slug:?} is not valid: issue slugs are lowercase letters, digits and dashes")]
    BadSlug { slug: String },
    #[error("no issue has the slug {slug:?} (import it first: fixedpoint issues import DIR)")]
    NoSuchIssue { slug: String },
    #[error("{slug} was already queued for all {queued} of its recipients: nothing new to queue")]
    AlreadySent { slug: String, queued: i64 },
    #[error("{slug} has no recipients: no confirmed subscriber{founders}")]
    NoRecipients { slug: String, founders: &'static str },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for DeliveryError {
    fn from(error: sqlx::Error) -> Self {
        DeliveryError::Store(StoreError::from(error))
    }
}

/// What queuing a send did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedSend {
    pub slug: String,
    pub title: String,
    pub issue_tier: Tier,
    pub free: i64,
    pub pro: i64,
    pub founder: i64,
    /// Recipients queued for this issue by an earlier send.
    pub earlier: i64,
    pub dry_run: bool,
}

impl QueuedSend {
    pub fn total(&self) -> i64 {
        self.free + self.pro + self.founder
    }
}

/// A send's ledger counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    pub queued: i64,
    pub sent: i64,
    pub failed: i64,
    pub bounced: i64,
}

/// One send as the operator follows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SendProgress {
    pub slug: String,
    pub title: String,
    pub counts: DeliveryCounts,
    pub queued_at: i64,
    /// Messages a second over the last minute.
    pub rate_per_second: f64,
}

/// Whether `slug` has the shape of an issue slug (what the importer accepts).
pub fn valid_slug(slug: &str) -> bool {
    (1..=100).contains(&slug.len())
        && slug.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !slug.starts_with('-')
}

/// The rank of a reader's best live subscription (0 free, 1 Pro, 2
/// Founder) for the account with the email in column `email_column`. It is
/// the rule of `Store::reader_access` written as SQL (binds `$1`: now, `$2`:
/// now less a week of Stripe's silence), so a send of thousands is one query.
pub(crate) fn rank_sql(email_column: &str) -> String {
    format!(
        "COALESCE((SELECT MAX(CASE sub.tier WHEN 'founder' THEN 2 ELSE 1 END) FROM accounts a \
         JOIN subscriptions sub ON sub.account_id = a.id WHERE a.email = {email_column} \
         AND sub.tier IN ('pro', 'founder') AND ( \
           (sub.source = 'grant' AND sub.status = 'active' \
            AND (sub.current_period_end IS NULL OR sub.current_period_end > $1)) \
           OR (sub.source = 'stripe' AND sub.status IN ('active', 'trialing', 'past_due') \
            AND (sub.current_period_end IS NULL OR sub.current_period_end > $2)))), 0)"
    )
}

fn tier_of_rank(rank: i64) -> Tier {
    match rank {
        2 => Tier::Founder,
        1 => Tier::Pro,
        _ => Tier::Free,
    }
}

impl Store {
    /// Queues issue `slug` for every recipient not yet queued for it, in one
    /// transaction (a dry run rolls it back, so it counts exactly what a send
    /// would queue).
    pub async fn queue_send(&self, slug: &str, dry_run: bool) -> Result<QueuedSend, DeliveryError> {
        if !valid_slug(slug) {
            return Err(DeliveryError::BadSlug { slug: slug.chars().take(100).collect() });
        }
        let now = now_millis();
        let stripe_grace = now - 7 * 86_400_000;
        // It reads the subscribers, then writes their deliveries.
        let mut tx = self.begin_write().await?;
        let issue = sqlx::query("SELECT id, title, tier FROM issues WHERE slug = $1")
            .bind(slug)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| DeliveryError::NoSuchIssue { slug: slug.to_string() })?;
        let issue_id: i64 = issue.try_get("id")?;
        let title: String = issue.try_get("title")?;
        let issue_tier = Tier::from_name(&issue.try_get::<String, _>("tier")?).unwrap_or(Tier::Founder);

        // Paying readers without a row are subscribed by default.
        sqlx::query(&format!(
            "INSERT INTO subscribers (email, status, source, created_at, updated_at, confirmed_at) \
             SELECT a.email, 'confirmed', 'paid', $3, $3, $3 FROM accounts a \
             WHERE {} > 0 AND NOT EXISTS (SELECT 1 FROM subscribers s WHERE s.email = a.email) \
             ON CONFLICT (email) DO NOTHING",
            rank_sql("a.email")
        ))
        .bind(now)
        .bind(stripe_grace)
        .bind(now)
        .execute(&mut *tx)
        .await?;

        let earlier: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM deliveries WHERE issue_id = $1")
            .bind(issue_id)
            .fetch_one(&mut *tx)
            .await?;
        let candidates = sqlx::query(&format!(
            "SELECT s.id, s.email, CAST({} AS BIGINT) AS rank FROM subscribers s \
             WHERE s.status = 'confirmed' \
             AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.issue_id = $3 AND d.subscriber_id = s.id) \
             ORDER BY s.id",
            rank_sql("s.email")
        ))
        .bind(now)
        .bind(stripe_grace)
        .bind(issue_id)
        .fetch_all(&mut *tx)
        .await?;
        let mut recipients = Vec::with_capacity(candidates.len());
        for row in &candidates {
            let tier = tier_of_rank(row.try_get("rank")?);
            // A founder-only issue goes to founders only; every other issue
            // to everyone on the list, cut to what their tier reads.
            if issue_tier == Tier::Founder && tier != Tier::Founder {
                continue;
            }
            recipients.push((row.try_get::<i64, _>("id")?, row.try_get::<String, _>("email")?, tier));
        }
        if recipients.is_empty() {
            tx.rollback().await?;
            return Err(if earlier > 0 {
                DeliveryError::AlreadySent { slug: slug.to_string(), queued: earlier }
            } else {
                DeliveryError::NoRecipients {
                    slug: slug.to_string(),
                    founders: if issue_tier == Tier::Founder { " with the Founder tier" } else { "" },
                }
            });
        }
        let mut queued = QueuedSend {
            slug: slug.to_string(),
            title,
            issue_tier,
            free: 0,
            pro: 0,
            founder: 0,
            earlier,
            dry_run,
        };
        for chunk in recipients.chunks(QUEUE_CHUNK) {
            let mut sql = String::from(
                "INSERT INTO deliveries (issue_id, subscriber_id, email, tier, state, attempts, \
                 next_attempt_at, created_at, updated_at) VALUES ",
            );
            for index in 0..chunk.len() {
                let base = index * 3;
                if index > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!(
                    "($1, ${}, ${}, ${}, 'queued', 0, $2, $2, $2)",
                    base + 3,
                    base + 4,
                    base + 5
                ));
            }
            sql.push_str(" ON CONFLICT (issue_id, subscriber_id) DO NOTHING");
            let mut query = sqlx::query(&sql).bind(issue_id).bind(now);
            for (id, email, tier) in chunk {
                query = query.bind(*id).bind(email.as_str()).bind(tier.as_str());
            }
            let inserted = query.execute(&mut *tx).await?.rows_affected();
            if inserted != chunk.len() as u64 {
                // Another send of the same issue queued some of them at this
                // moment: give way rather than count what this one did not do.
                tx.rollback().await?;
                return Err(DeliveryError::AlreadySent { slug: slug.to_string(), queued: earlier });
            }
            for (_, _, tier) in chunk {
                match tier {
                    Tier::Free => queued.free += 1,
                    Tier::Pro => queued.pro += 1,
                    Tier::Founder => queued.founder += 1,
                }
            }
        }
        if dry_run {
            tx.rollback().await?;
        } else {
            tx.commit().await?;
        }
        Ok(queued)
    }

    /// The ledger counts of issue `slug`'s sends (all zero before any).
    pub async fn delivery_counts(&self, slug: &str) -> Result<DeliveryCounts, DeliveryError> {
        if !valid_slug(slug) {
            return Err(DeliveryError::BadSlug { slug: slug.chars().take(100).collect() });
        }
        let issue_id: i64 = sqlx::query_scalar("SELECT id FROM issues WHERE slug = $1")
            .bind(slug)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| DeliveryError::NoSuchIssue { slug: slug.to_string() })?;
        let rows =
            sqlx::query("SELECT state, COUNT(*) AS n FROM deliveries WHERE issue_id = $1 GROUP BY state")
                .bind(issue_id)
                .fetch_all(self.pool())
                .await?;
        let mut counts = DeliveryCounts::default();
        for row in rows {
            let n: i64 = row.try_get("n")?;
            match row.try_get::<String, _>("state")?.as_str() {
                "queued" => counts.queued = n,
                "sent" => counts.sent = n,
                "failed" => counts.failed = n,
                "bounced" => counts.bounced = n,
                _ => {}
            }
        }
        Ok(counts)
    }

    /// Every send, newest first, with its counts and its rate over the last
    /// minute (the admin page's progress).
    pub async fn send_progress(&self, limit: i64) -> Result<Vec<SendProgress>, DeliveryError> {
        let since = now_millis() - 60_000;
        let rows = sqlx::query(
            "SELECT i.slug, i.title, MIN(d.created_at) AS queued_at, \
             SUM(CASE WHEN d.state = 'queued' THEN 1 ELSE 0 END) AS queued, \
             SUM(CASE WHEN d.state = 'sent' THEN 1 ELSE 0 END) AS sent, \
             SUM(CASE WHEN d.state = 'failed' THEN 1 ELSE 0 END) AS failed, \
             SUM(CASE WHEN d.state = 'bounced' THEN 1 ELSE 0 END) AS bounced, \
             SUM(CASE WHEN d.state = 'sent' AND d.sent_at > $1 THEN 1 ELSE 0 END) AS recent \
             FROM deliveries d JOIN issues i ON i.id = d.issue_id \
             GROUP BY i.id, i.slug, i.title ORDER BY MIN(d.created_at) DESC LIMIT $2",
        )
        .bind(since)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        let mut sends = Vec::with_capacity(rows.len());
        for row in rows {
            let count = |name: &str| -> Result<i64, sqlx::Error> {
                row.try_get::<Option<i64>, _>(name).map(Option::unwrap_or_default)
            };
            sends.push(SendProgress {
                slug: row.try_get("slug")?,
                title: row.try_get("title")?,
                queued_at: row.try_get("queued_at")?,
                counts: DeliveryCounts {
                    queued: count("queued")?,
                    sent: count("sent")?,
                    failed: count("failed")?,
                    bounced: count("bounced")?,
                },
                rate_per_second: count("recent")? as f64 / 60.0,
            });
        }
        Ok(sends)
    }
}
