//! Accounts: people (sign-in links, sessions, operators), teams with their
//! members, and the loop tokens a team's loops report with. The web side of
//! sign-in lives in `web.rs`.
//!
//! # Invariants
//!
//! - A loop token is 256 random bits, shown once when it is created and
//!   stored only as the SHA-256 of its text. Looking a token up hashes what
//!   the caller sent; nothing ever compares secrets in memory.
//! - A revoked token stops working at once: every lookup checks
//!   `revoked_at`, there is no cache.
//! - A token belongs to exactly one team, and everything a token reaches is
//!   looked up within that team.

pub mod pages;
mod people;
mod teams;
mod tokens;
pub mod web;

use thiserror::Error;

use crate::store::StoreError;

pub(crate) use people::new_secret;
pub use people::{
    normalize_email, Account, AccountSummary, Membership, TeamMember, TeamRole, SESSION_PREFIX,
    SESSION_TTL_MS, SIGNIN_PREFIX, SIGNIN_TTL_MS,
};
pub use teams::{valid_team_slug, Team};
pub use tokens::{hash_loop_token, LoopToken, NewLoopToken, TokenIdentity, LOOP_TOKEN_PREFIX};
pub(crate) use tokens::{valid_token_name, LAST_USED_RESOLUTION_MS, TOKEN_TOUCH};

/// Errors of the accounts area. The store's own errors are wrapped, and the
/// web layer never shows their text.
#[derive(Debug, Error)]
pub enum AccountsError {
    #[error(
        "team slug {slug:?} is not valid: use 2 to 40 lowercase letters, digits and single dashes, \
         starting with a letter or digit and not ending with a dash"
    )]
    BadSlug { slug: String },
    #[error("a team with the slug {slug:?} already exists")]
    TeamExists { slug: String },
    #[error("you administer {limit} teams already, the most one reader may")]
    TooManyTeams { limit: i64 },
    #[error("no team has the slug {slug:?}")]
    NoSuchTeam { slug: String },
    #[error("a team needs at least one admin: make someone else admin first")]
    LastAdmin,
    #[error("email {email:?} is not a valid address")]
    BadEmail { email: String },
    #[error("token name {name:?} is not valid: use 1 to 64 printable characters")]
    BadTokenName { name: String },
    #[error("loading a loop for the dashboard: {0}")]
    Dashboard(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for AccountsError {
    fn from(error: sqlx::Error) -> Self {
        AccountsError::Store(StoreError::Database(error))
    }
}
