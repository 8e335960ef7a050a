//! The newsletter's tables: issues, subscriptions (entitlements), private
//! feed tokens and downloads.

use sha2::{Digest, Sha256};
use sqlx::Row;

use super::format::ParsedIssue;
use super::{NewsletterError, Tier};
use crate::store::{now_millis, Store};

/// An issue as one reader may see it: `paid_html` is `None` unless the
/// reader is entitled to the issue's tier (or the issue is free).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueRecord {
    pub slug: String,
    pub title: String,
    pub date: String,
    pub tier: Tier,
    pub summary: String,
    pub free_html: String,
    pub paid_html: Option<String>,
    pub paid_words: i64,
    pub updated_at: i64,
}

impl IssueRecord {
    /// Whether the reader got everything (nothing is held back).
    pub fn complete(&self) -> bool {
        self.paid_words == 0 || self.paid_html.is_some()
    }
}

/// An issue in the archive: what any visitor may see of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueEntry {
    pub slug: String,
    pub title: String,
    pub date: String,
    pub tier: Tier,
    pub summary: String,
    /// Whether part of the issue is behind the paywall.
    pub has_paid_part: bool,
}

/// What storing an issue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredOutcome {
    New,
    Updated,
    Unchanged,
}

impl StoredOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            StoredOutcome::New => "new",
            StoredOutcome::Updated => "updated",
            StoredOutcome::Unchanged => "unchanged",
        }
    }
}

/// What a reader is entitled to, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderAccess {
    pub tier: Tier,
    /// `grant` or `stripe` (for the paid tiers).
    pub source: Option<String>,
    /// The subscription's status (`active`, `past_due`, ...).
    pub status: Option<String>,
    /// When the current period ends (a grant's expiry), Unix milliseconds.
    pub period_end: Option<i64>,
    pub cancel_at_period_end: bool,
}

impl ReaderAccess {
    pub fn free() -> ReaderAccess {
        ReaderAccess {
            tier: Tier::Free,
            source: None,
            status: None,
            period_end: None,
            cancel_at_period_end: false,
        }
    }
}

/// A stored download (the flagship tool's source archive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    pub file_name: String,
    pub content: Vec<u8>,
    pub sha256: String,
    pub size: i64,
    pub uploaded_at: i64,
}

/// The SQL rank of an issue's tier, compared with the reader's rank.
const TIER_RANK: &str = "(CASE tier WHEN 'free' THEN 0 WHEN 'pro' THEN 1 ELSE 2 END)";

fn rank(tier: Tier) -> i64 {
    match tier {
        Tier::Free => 0,
        Tier::Pro => 1,
        Tier::Founder => 2,
    }
}

fn tier_of(text: &str) -> Tier {
    // Only the importer writes this column, with a validated tier; an
    // unknown value (a hand edit) is treated as the highest tier, so it
    // can only hide, never reveal.
    Tier::from_name(text).unwrap_or(Tier::Founder)
}

const RECORD_COLUMNS: &str = "slug, title, date, tier, summary, free_html, paid_words, updated_at";

fn record(row: &sqlx::any::AnyRow) -> Result<IssueRecord, sqlx::Error> {
    Ok(IssueRecord {
        slug: row.try_get("slug")?,
        title: row.try_get("title")?,
        date: row.try_get("date")?,
        tier: tier_of(&row.try_get::<String, _>("tier")?),
        summary: row.try_get("summary")?,
        free_html: row.try_get("free_html")?,
        paid_html: row.try_get("paid")?,
        paid_words: row.try_get("paid_words")?,
        updated_at: row.try_get("updated_at")?,
    })
}

/// Token prefix of private feed URLs.
pub const FEED_TOKEN_PREFIX: &str = "fpf_";

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

impl Store {
    pub async fn issue_count(&self) -> Result<i64, NewsletterError> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM issues").fetch_one(self.pool()).await?)
    }

    /// Inserts or updates the issue with this slug, in one statement.
    pub async fn store_issue(&self, issue: &ParsedIssue) -> Result<StoredOutcome, NewsletterError> {
        let previous: Option<String> = sqlx::query_scalar("SELECT source_hash FROM issues WHERE slug = $1")
            .bind(&issue.slug)
            .fetch_optional(self.pool())
            .await?;
        if previous.as_deref() == Some(issue.source_hash.as_str()) {
            return Ok(StoredOutcome::Unchanged);
        }
        let now = now_millis();
        sqlx::query(
            "INSERT INTO issues (slug, title, date, tier, summary, free_html, paid_html, free_words, paid_words, \
             source_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11) \
             ON CONFLICT (slug) DO UPDATE SET title = excluded.title, date = excluded.date, tier = excluded.tier, \
             summary = excluded.summary, free_html = excluded.free_html, paid_html = excluded.paid_html, \
             free_words = excluded.free_words, paid_words = excluded.paid_words, \
             source_hash = excluded.source_hash, updated_at = excluded.updated_at",
        )
        .bind(&issue.slug)
        .bind(&issue.title)
        .bind(&issue.date)
        .bind(issue.tier.as_str())
        .bind(&issue.summary)
        .bind(&issue.free_html)
        .bind(issue.paid_html.as_deref())
        .bind(issue.free_words)
        .bind(issue.paid_words)
        .bind(&issue.source_hash)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(if previous.is_some() { StoredOutcome::Updated } else { StoredOutcome::New })
    }

    /// Every issue, newest first: titles and summaries only.
    pub async fn archive(&self) -> Result<Vec<IssueEntry>, NewsletterError> {
        let rows = sqlx::query(
            "SELECT slug, title, date, tier, summary, paid_words FROM issues ORDER BY date DESC, id DESC",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(entry).collect::<Result<_, _>>().map_err(NewsletterError::from)
    }

    /// The newest free issue, for the home page.
    pub async fn latest_free_issue(&self) -> Result<Option<IssueEntry>, NewsletterError> {
        let row = sqlx::query(
            "SELECT slug, title, date, tier, summary, paid_words FROM issues WHERE tier = 'free' \
             ORDER BY date DESC, id DESC LIMIT 1",
        )
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(entry).transpose().map_err(NewsletterError::from)
    }

    /// The issue `slug` as a reader of tier `reader` may see it.
    pub async fn issue_for(&self, slug: &str, reader: Tier) -> Result<Option<IssueRecord>, NewsletterError> {
        let row = sqlx::query(&format!(
            "SELECT {RECORD_COLUMNS}, CASE WHEN {TIER_RANK} <= $2 THEN paid_html ELSE NULL END AS paid \
             FROM issues WHERE slug = $1"
        ))
        .bind(slug)
        .bind(rank(reader))
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(record).transpose().map_err(NewsletterError::from)
    }

    /// The newest `limit` issues for a feed read at tier `reader`.
    pub async fn feed_issues(&self, reader: Tier, limit: i64) -> Result<Vec<IssueRecord>, NewsletterError> {
        let rows = sqlx::query(&format!(
            "SELECT {RECORD_COLUMNS}, CASE WHEN {TIER_RANK} <= $1 THEN paid_html ELSE NULL END AS paid \
             FROM issues ORDER BY date DESC, id DESC LIMIT $2"
        ))
        .bind(rank(reader))
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record).collect::<Result<_, _>>().map_err(NewsletterError::from)
    }

    /// What `account_id` is entitled to now: the best of its live
    /// subscriptions. A grant counts until it expires; a Stripe subscription
    /// counts while Stripe says it is active, trialing or past due (Stripe's
    /// grace while it retries a failed payment); anything else is free.
    pub async fn reader_access(&self, account_id: i64) -> Result<ReaderAccess, NewsletterError> {
        let rows = sqlx::query(
            "SELECT source, tier, status, current_period_end, cancel_at_period_end FROM subscriptions \
             WHERE account_id = $1 AND tier IN ('pro', 'founder') AND ( \
               (source = 'grant' AND status = 'active' AND (current_period_end IS NULL OR current_period_end > $2)) \
               OR (source = 'stripe' AND status IN ('active', 'trialing', 'past_due') \
                   AND (current_period_end IS NULL OR current_period_end > $3)))",
        )
        .bind(account_id)
        .bind(now_millis())
        // A week past the period's end without word from Stripe (a renewal
        // or the end) access stops rather than lasting for ever.
        .bind(now_millis() - 7 * 86_400_000)
        .fetch_all(self.pool())
        .await?;
        let mut best = ReaderAccess::free();
        for row in rows {
            let tier = tier_of(&row.try_get::<String, _>("tier")?);
            let period_end: Option<i64> = row.try_get("current_period_end")?;
            let better = tier > best.tier
                || (tier == best.tier
                    && best.source.is_some()
                    && period_end.unwrap_or(i64::MAX) > best.period_end.unwrap_or(i64::MAX));
            if better {
                best = ReaderAccess {
                    tier,
                    source: Some(row.try_get("source")?),
                    status: Some(row.try_get("status")?),
                    period_end,
                    cancel_at_period_end: row.try_get::<i64, _>("cancel_at_period_end")? != 0,
                };
            }
        }
        Ok(best)
    }

    /// A complimentary subscription (operator's `grant`): Pro only, never a
    /// founder seat. `days` of `None` never expires.
    pub async fn grant_pro(
        &self,
        account_id: i64,
        days: Option<u32>,
    ) -> Result<Option<i64>, NewsletterError> {
        let now = now_millis();
        let until = days.map(|days| now + i64::from(days) * 86_400_000);
        sqlx::query(
            "INSERT INTO subscriptions (account_id, source, tier, status, current_period_end, created_at, updated_at) \
             VALUES ($1, 'grant', 'pro', 'active', $2, $3, $3)",
        )
        .bind(account_id)
        .bind(until)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(until)
    }

    /// Makes a new private feed token for `account_id`, replacing (and so
    /// revoking) any earlier one; returns the secret, which is stored only
    /// as its hash.
    pub async fn rotate_feed_token(&self, account_id: i64) -> Result<String, NewsletterError> {
        let bytes: [u8; 32] = rand::random();
        let secret = format!("{FEED_TOKEN_PREFIX}{}", hex::encode(bytes));
        sqlx::query(
            "INSERT INTO feed_tokens (account_id, token_hash, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (account_id) DO UPDATE SET token_hash = excluded.token_hash, created_at = excluded.created_at",
        )
        .bind(account_id)
        .bind(hash(&secret))
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        Ok(secret)
    }

    pub async fn revoke_feed_token(&self, account_id: i64) -> Result<bool, NewsletterError> {
        let done = sqlx::query("DELETE FROM feed_tokens WHERE account_id = $1")
            .bind(account_id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// When `account_id`'s feed token was made, if it has one.
    pub async fn feed_token_created(&self, account_id: i64) -> Result<Option<i64>, NewsletterError> {
        Ok(sqlx::query_scalar("SELECT created_at FROM feed_tokens WHERE account_id = $1")
            .bind(account_id)
            .fetch_optional(self.pool())
            .await?)
    }

    /// The account a private feed token belongs to.
    pub async fn feed_token_account(&self, secret: &str) -> Result<Option<i64>, NewsletterError> {
        if !secret.starts_with(FEED_TOKEN_PREFIX) || secret.len() > 100 {
            return Ok(None);
        }
        Ok(sqlx::query_scalar("SELECT account_id FROM feed_tokens WHERE token_hash = $1")
            .bind(hash(secret))
            .fetch_optional(self.pool())
            .await?)
    }

    /// The account with this (normalised) email, without creating one.
    pub async fn account_id_by_email(&self, email: &str) -> Result<Option<i64>, NewsletterError> {
        let email = crate::accounts::normalize_email(email)?;
        Ok(sqlx::query_scalar("SELECT id FROM accounts WHERE email = $1")
            .bind(email)
            .fetch_optional(self.pool())
            .await?)
    }

    /// Stores (or replaces) the download `name`.
    pub async fn put_download(
        &self,
        name: &str,
        file_name: &str,
        content: &[u8],
    ) -> Result<String, NewsletterError> {
        let sha = hex::encode(Sha256::digest(content));
        sqlx::query(
            "INSERT INTO downloads (name, file_name, content, sha256, size, uploaded_at) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (name) DO UPDATE SET file_name = excluded.file_name, content = excluded.content, \
             sha256 = excluded.sha256, size = excluded.size, uploaded_at = excluded.uploaded_at",
        )
        .bind(name)
        .bind(file_name)
        .bind(content.to_vec())
        .bind(&sha)
        .bind(content.len() as i64)
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        Ok(sha)
    }

    /// The download `name`, with its bytes.
    pub async fn download(&self, name: &str) -> Result<Option<Download>, NewsletterError> {
        let row = sqlx::query(
            "SELECT file_name, content, sha256, size, uploaded_at FROM downloads WHERE name = $1",
        )
        .bind(name)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(Download {
            file_name: row.try_get("file_name")?,
            content: row.try_get("content")?,
            sha256: row.try_get("sha256")?,
            size: row.try_get("size")?,
            uploaded_at: row.try_get("uploaded_at")?,
        }))
    }

    /// The download's name and size (no bytes), for pages that link to it.
    pub async fn download_info(&self, name: &str) -> Result<Option<(String, i64)>, NewsletterError> {
        Ok(sqlx::query_as("SELECT file_name, size FROM downloads WHERE name = $1")
            .bind(name)
            .fetch_optional(self.pool())
            .await?)
    }
}

fn entry(row: &sqlx::any::AnyRow) -> Result<IssueEntry, sqlx::Error> {
    Ok(IssueEntry {
        slug: row.try_get("slug")?,
        title: row.try_get("title")?,
        date: row.try_get("date")?,
        tier: tier_of(&row.try_get::<String, _>("tier")?),
        summary: row.try_get("summary")?,
        has_paid_part: row.try_get::<i64, _>("paid_words")? > 0,
    })
}
