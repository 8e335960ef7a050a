//! The newsletter: issues imported from Markdown files, the archive and the
//! issue pages with their paywall, the public and private feeds, the
//! flagship download, and who is entitled to what.
//!
//! The rule every part keeps: the paid remainder of an issue leaves the
//! database only for a reader entitled to the issue's tier. The queries take
//! the reader's tier and return the paid HTML as NULL otherwise, so no page,
//! feed or response downstream can leak what it never received.

pub mod deliverer;
pub mod delivery;
pub mod feeds;
pub mod format;
pub mod import;
mod mail_style;
pub mod message;
pub mod pages;
mod store;
pub mod subscribe;
pub mod subscriber_csv;
pub mod subscribers;

use thiserror::Error;

use crate::accounts::AccountsError;
use crate::store::StoreError;

pub use delivery::{DeliveryCounts, DeliveryError, QueuedSend, SendProgress};
pub use store::{Download, IssueEntry, IssueRecord, ReaderAccess, StoredOutcome};
pub use subscribers::{SubscribeOutcome, SubscriberStatus};

/// What a reader can read. Ordered: a higher tier reads everything a lower
/// one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Free,
    Pro,
    Founder,
}

impl Tier {
    pub fn from_name(name: &str) -> Option<Tier> {
        match name {
            "free" => Some(Tier::Free),
            "pro" => Some(Tier::Pro),
            "founder" => Some(Tier::Founder),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Free => "free",
            Tier::Pro => "pro",
            Tier::Founder => "founder",
        }
    }

    /// Whether a reader of this tier may read an issue of `issue` tier.
    pub fn reads(self, issue: Tier) -> bool {
        self >= issue
    }

    /// The tier's name for people.
    pub fn label(self) -> &'static str {
        match self {
            Tier::Free => "Free",
            Tier::Pro => "Pro",
            Tier::Founder => "Founder",
        }
    }
}

#[derive(Debug, Error)]
pub enum NewsletterError {
    #[error("no account has the email {email:?}")]
    NoSuchAccount { email: String },
    #[error("{email} has no paid subscription: private feeds are for Pro and Founder readers")]
    NotPaying { email: String },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Accounts(#[from] AccountsError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for NewsletterError {
    fn from(error: sqlx::Error) -> Self {
        NewsletterError::Store(StoreError::from(error))
    }
}

/// The three sample issues a new install shows (loaded on first start when
/// the archive is empty).
pub const SAMPLE_ISSUES: [(&str, &str); 3] = [
    (
        "001-the-loop-that-could-not-stop.md",
        include_str!("../../samples/issues/001-the-loop-that-could-not-stop.md"),
    ),
    ("002-fixed-points-and-cycles.md", include_str!("../../samples/issues/002-fixed-points-and-cycles.md")),
    ("003-founders-field-notes.md", include_str!("../../samples/issues/003-founders-field-notes.md")),
];

/// Loads the sample issues when the archive is empty; answers how many went
/// in. Safe to call on every start and from several instances at once: the
/// import is an upsert by slug.
pub async fn seed_samples(store: &crate::store::Store) -> Result<usize, NewsletterError> {
    if store.issue_count().await? > 0 {
        return Ok(0);
    }
    let mut loaded = 0;
    for (name, text) in SAMPLE_ISSUES {
        let issue = format::parse_issue(text.as_bytes())
            .map_err(|problem| NewsletterError::Invalid(format!("sample {name}: {problem}")))?;
        store.store_issue(&issue).await?;
        loaded += 1;
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_issues_parse_and_keep_their_paid_parts_apart() {
        let parsed: Vec<_> = SAMPLE_ISSUES
            .iter()
            .map(|(name, text)| (name, format::parse_issue(text.as_bytes()).unwrap()))
            .collect();
        let tiers: Vec<Tier> = parsed.iter().map(|(_, issue)| issue.tier).collect();
        assert_eq!(tiers, [Tier::Free, Tier::Pro, Tier::Founder]);
        let pro = &parsed[1].1;
        assert!(!pro.free_html.contains("The digest trick"));
        assert!(pro
            .paid_html
            .as_deref()
            .unwrap()
            .contains("The digest trick: hash the state, not the transcript."));
        let founder = &parsed[2].1;
        assert_eq!(founder.free_html, "");
        assert!(founder.paid_html.as_deref().unwrap().contains("Founders read this first."));
    }

    #[test]
    fn tiers_are_ordered() {
        assert!(Tier::Founder.reads(Tier::Pro));
        assert!(Tier::Pro.reads(Tier::Free));
        assert!(!Tier::Pro.reads(Tier::Founder));
        assert!(!Tier::Free.reads(Tier::Pro));
    }
}
