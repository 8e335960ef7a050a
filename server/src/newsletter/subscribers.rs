//! The subscribers of the mailed newsletter: double opt-in for addresses
//! given on a form, the choice signed-in readers make on `/account`, and
//! unsubscribing by the per-message token of a mail's link.
//!
//! Paying readers are subscribed unless they opt out: an account with a paid
//! tier and no `subscribers` row is on the list, and queuing a send writes its
//! row (`confirmed`, source `paid`). An opt-out is a row `unsubscribed`.

use sha2::{Digest, Sha256};
use sqlx::Row;

use super::NewsletterError;
use crate::store::{now_millis, Store};

/// Prefix of the confirmation token mailed to a new subscriber.
pub const CONFIRM_PREFIX: &str = "fpc_";
/// Prefix of the unsubscribe token carried by every newsletter message.
pub const UNSUBSCRIBE_PREFIX: &str = "fpu_";
/// How long a confirmation link works.
pub const CONFIRM_TTL_MS: i64 = 7 * 86_400_000;

/// Where a subscriber stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriberStatus {
    Pending,
    Confirmed,
    Unsubscribed,
    Bounced,
}

impl SubscriberStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SubscriberStatus::Pending => "pending",
            SubscriberStatus::Confirmed => "confirmed",
            SubscriberStatus::Unsubscribed => "unsubscribed",
            SubscriberStatus::Bounced => "bounced",
        }
    }

    pub fn from_name(name: &str) -> Option<SubscriberStatus> {
        match name {
            "pending" => Some(SubscriberStatus::Pending),
            "confirmed" => Some(SubscriberStatus::Confirmed),
            "unsubscribed" => Some(SubscriberStatus::Unsubscribed),
            "bounced" => Some(SubscriberStatus::Bounced),
            _ => None,
        }
    }
}

/// What a subscribe request needs mailed, if anything. The page answers the
/// same in every case; only the mail differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscribeOutcome {
    /// A new or still unconfirmed address: mail it this confirmation token.
    Confirm { email: String, token: String },
    /// Already on the list: nothing to confirm (a note may be mailed).
    AlreadyConfirmed { email: String },
    /// A relay refused the address for good: no mail goes to it.
    Bounced,
}

pub(crate) fn token_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

pub(crate) fn new_token(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{prefix}{}", hex::encode(bytes))
}

impl Store {
    /// A subscribe request for `email` (already normalised): a new address
    /// is stored `pending` with a fresh confirmation token; an unconfirmed
    /// or unsubscribed one gets a fresh token too.
    pub async fn request_subscription(
        &self,
        email: &str,
        source: &str,
    ) -> Result<SubscribeOutcome, NewsletterError> {
        let now = now_millis();
        let token = new_token(CONFIRM_PREFIX);
        let hash = token_hash(&token);
        let mut tx = self.begin_write().await?;
        // One statement stores a new address, or gives an unconfirmed or
        // unsubscribed one a fresh token (it stays off the list until the
        // new link is confirmed). Two requests for one new address at once
        // each leave their token stored in turn: a read of the status first
        // would let both see no row under PostgreSQL's read committed, and
        // the second would mail a link that was never kept.
        let stored: Option<String> = sqlx::query_scalar(
            "INSERT INTO subscribers (email, status, source, confirm_hash, confirm_expires_at, \
             created_at, updated_at) VALUES ($1, 'pending', $2, $3, $4, $5, $5) \
             ON CONFLICT (email) DO UPDATE SET confirm_hash = excluded.confirm_hash, \
             confirm_expires_at = excluded.confirm_expires_at, updated_at = excluded.updated_at \
             WHERE subscribers.status IN ('pending', 'unsubscribed') RETURNING email",
        )
        .bind(email)
        .bind(source)
        .bind(&hash)
        .bind(now + CONFIRM_TTL_MS)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let outcome = if stored.is_some() {
            SubscribeOutcome::Confirm { email: email.to_string(), token }
        } else {
            let status: Option<String> =
                sqlx::query_scalar("SELECT status FROM subscribers WHERE email = $1")
                    .bind(email)
                    .fetch_optional(&mut *tx)
                    .await?;
            match status.as_deref().and_then(SubscriberStatus::from_name) {
                Some(SubscriberStatus::Confirmed) => {
                    SubscribeOutcome::AlreadyConfirmed { email: email.to_string() }
                }
                Some(SubscriberStatus::Bounced) => SubscribeOutcome::Bounced,
                // The statement above stores every other state.
                other => {
                    return Err(NewsletterError::Invalid(format!(
                        "the subscription of {email} is in a state a request cannot change: {other:?}"
                    )))
                }
            }
        };
        tx.commit().await?;
        Ok(outcome)
    }

    /// Redeems a confirmation token: the address is on the list from now.
    /// Answers the address, or `None` for a used, expired or unknown token.
    pub async fn confirm_subscription(&self, secret: &str) -> Result<Option<String>, NewsletterError> {
        if !secret.starts_with(CONFIRM_PREFIX) || secret.len() > 100 {
            return Ok(None);
        }
        let now = now_millis();
        let row = sqlx::query(
            "UPDATE subscribers SET status = 'confirmed', confirm_hash = NULL, confirm_expires_at = NULL, \
             confirmed_at = $2, unsubscribed_at = NULL, updated_at = $2 \
             WHERE confirm_hash = $1 AND confirm_expires_at > $2 AND status IN ('pending', 'unsubscribed') \
             RETURNING email",
        )
        .bind(token_hash(secret))
        .bind(now)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|row| row.try_get("email")).transpose()?)
    }

    /// The address an unsubscribe token belongs to, and whether it is still
    /// on the list (for the page the link opens).
    pub async fn unsubscribe_target(
        &self,
        secret: &str,
    ) -> Result<Option<(String, SubscriberStatus)>, NewsletterError> {
        if !secret.starts_with(UNSUBSCRIBE_PREFIX) || secret.len() > 100 {
            return Ok(None);
        }
        let row = sqlx::query(
            "SELECT s.email, s.status FROM unsubscribe_tokens t JOIN subscribers s ON s.id = t.subscriber_id \
             WHERE t.token_hash = $1",
        )
        .bind(token_hash(secret))
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else { return Ok(None) };
        let status: String = row.try_get("status")?;
        Ok(Some((
            row.try_get("email")?,
            SubscriberStatus::from_name(&status).unwrap_or(SubscriberStatus::Bounced),
        )))
    }

    /// Unsubscribes the address of an unsubscribe token (RFC 8058: no
    /// sign-in needed, the token is the proof). Answers the address, or
    /// `None` for an unknown token. Saying it twice changes nothing.
    pub async fn unsubscribe_by_token(&self, secret: &str) -> Result<Option<String>, NewsletterError> {
        let Some((email, _)) = self.unsubscribe_target(secret).await? else {
            return Ok(None);
        };
        self.unsubscribe_email(&email).await?;
        Ok(Some(email))
    }

    /// Takes `email` off the list (a bounced address stays bounced). An
    /// address without a row gets one, so a paying reader's opt-out sticks.
    pub async fn unsubscribe_email(&self, email: &str) -> Result<(), NewsletterError> {
        let now = now_millis();
        sqlx::query(
            "INSERT INTO subscribers (email, status, source, created_at, updated_at, unsubscribed_at) \
             VALUES ($1, 'unsubscribed', 'account', $2, $2, $2) \
             ON CONFLICT (email) DO UPDATE SET status = 'unsubscribed', confirm_hash = NULL, \
             unsubscribed_at = excluded.unsubscribed_at, updated_at = excluded.updated_at \
             WHERE subscribers.status <> 'bounced'",
        )
        .bind(email)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Puts `email` on the list at once: the address was proved otherwise
    /// (a signed-in reader's own address, an import the operator holds the
    /// consent of). A bounced address stays bounced.
    pub async fn confirm_email(&self, email: &str, source: &str) -> Result<(), NewsletterError> {
        let now = now_millis();
        sqlx::query(
            "INSERT INTO subscribers (email, status, source, created_at, updated_at, confirmed_at) \
             VALUES ($1, 'confirmed', $2, $3, $3, $3) \
             ON CONFLICT (email) DO UPDATE SET status = 'confirmed', confirm_hash = NULL, \
             confirmed_at = excluded.confirmed_at, updated_at = excluded.updated_at, unsubscribed_at = NULL \
             WHERE subscribers.status <> 'bounced'",
        )
        .bind(email)
        .bind(source)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The status of `email` on the list, if it has a row.
    pub async fn subscriber_status(&self, email: &str) -> Result<Option<SubscriberStatus>, NewsletterError> {
        let status: Option<String> = sqlx::query_scalar("SELECT status FROM subscribers WHERE email = $1")
            .bind(email)
            .fetch_optional(self.pool())
            .await?;
        Ok(status.as_deref().and_then(SubscriberStatus::from_name))
    }

    /// Whether the newsletter goes to this reader: their row says so, or
    /// they pay and have no row (paying readers are subscribed by default).
    pub async fn receives_newsletter(&self, email: &str, paying: bool) -> Result<bool, NewsletterError> {
        Ok(match self.subscriber_status(email).await? {
            Some(status) => status == SubscriberStatus::Confirmed,
            None => paying,
        })
    }
}
