//! People: accounts, the one-time sign-in links mailed to them, their
//! sessions and their membership of teams.
//!
//! A sign-in link carries 256 random bits; only their SHA-256 is stored. A
//! link works once (redeeming it is a single conditional UPDATE, so two
//! racing redeemers cannot both win) and for [`SIGNIN_TTL_MS`]. Redeeming
//! creates the account on first sign-in and a new session, whose token is
//! likewise stored only as a hash and expires after [`SESSION_TTL_MS`].

use serde::Serialize;

use super::{hash_loop_token as sha256_hex, AccountsError, Team};
use crate::store::{now_millis, Store};

/// How long a mailed sign-in link works: 15 minutes.
pub const SIGNIN_TTL_MS: i64 = 15 * 60 * 1000;
/// How long a session lasts: 30 days.
pub const SESSION_TTL_MS: i64 = 30 * 24 * 60 * 60 * 1000;

/// Sign-in tokens start with this; session tokens with [`SESSION_PREFIX`].
pub const SIGNIN_PREFIX: &str = "fps_";
pub const SESSION_PREFIX: &str = "fpc_";

/// Someone who has signed in at least once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Account {
    pub id: i64,
    pub email: String,
    pub is_operator: bool,
    pub created_at: i64,
}

/// A team as one of its members sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Membership {
    pub team: Team,
    pub role: TeamRole,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TeamRole {
    /// Manages members and tokens.
    Admin,
    Member,
}

impl TeamRole {
    fn as_str(self) -> &'static str {
        match self {
            TeamRole::Admin => "admin",
            TeamRole::Member => "member",
        }
    }

    fn parse(text: &str) -> TeamRole {
        if text == "admin" {
            TeamRole::Admin
        } else {
            TeamRole::Member
        }
    }
}

/// An email address as accounts are keyed: trimmed, lowercased and parsed
/// by lettre's address parser (the mail library that sends it) as a bare
/// `local@domain`. What a mail library would read as something else is
/// refused, not cleaned: a display name or angle brackets
/// (`"7"<ada@example.com>` would mail Ada while counting as a new address
/// against the per-address limits), comments, quoted local parts, IP
/// literals, whitespace, control characters, and the invisible formatting
/// characters (bidirectional overrides and isolates, left-to-right and
/// right-to-left marks, zero-width spaces) that make two addresses look
/// alike. Within lettre's grammar the rule is narrower still: a dot-atom
/// local part and a domain of at least two labels. Every per-address limit
/// (sign-in, subscribe), team invitations, subscriber imports and the
/// command line key on this form.
pub fn normalize_email(raw: &str) -> Result<String, AccountsError> {
    let email = raw.trim().to_lowercase();
    let bad =
        || AccountsError::BadEmail { email: raw.chars().filter(|c| !c.is_control()).take(100).collect() };
    // Characters that only display names, comments, quoted strings, IP
    // literals and address lists use: lettre would take some of them
    // (`"v"@x.test`), and none belongs in a key.
    let outside_bare = |c: char| "\"()<>[],;:\\".contains(c);
    if email.len() > 254
        || email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || is_invisible_format(c) || outside_bare(c))
    {
        return Err(bad());
    }
    let address: lettre::Address = email.parse().map_err(|_| bad())?;
    let (local, domain) = (address.user(), address.domain());
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        // Letters, digits and RFC 5322's atext symbols: no replacement
        // character (what a form decoder makes of bytes that are not UTF-8),
        // no other symbol a person would not type.
        && local.chars().all(|c| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c));
    let labels: Vec<&str> = domain.split('.').collect();
    // A name, not a number: the last label is no digits alone (127.0.0.1).
    let domain_ok = labels.len() >= 2
        && !labels.last().is_some_and(|top| top.chars().all(|c| c.is_ascii_digit()))
        && labels.iter().all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        });
    if !local_ok || !domain_ok {
        return Err(bad());
    }
    Ok(address.to_string())
}

/// Unicode's invisible formatting characters that spoof an address: the
/// bidirectional controls, zero-width characters and the soft hyphen.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// A new secret: `prefix` and 256 random bits in hex (sign-in links,
/// sessions, loop and MCP tokens).
pub(crate) fn new_secret(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{prefix}{}", hex::encode(bytes))
}

type AccountRow = (i64, String, i64, i64);

fn account(row: AccountRow) -> Account {
    let (id, email, is_operator, created_at) = row;
    Account { id, email, is_operator: is_operator != 0, created_at }
}

impl Store {
    /// Issues a sign-in link token for `email` (normalised); returns the
    /// secret to mail. Nothing tells whether an account exists.
    pub async fn create_signin_token(&self, email: &str) -> Result<String, AccountsError> {
        let email = normalize_email(email)?;
        let secret = new_secret(SIGNIN_PREFIX);
        let now = now_millis();
        sqlx::query(
            "INSERT INTO signin_tokens (token_hash, email, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(sha256_hex(&secret))
        .bind(&email)
        .bind(now)
        .bind(now + SIGNIN_TTL_MS)
        .execute(self.pool())
        .await?;
        Ok(secret)
    }

    /// Redeems a sign-in token: marks it used, creates the account on first
    /// sign-in and a session. `None` for an unknown, used, expired or
    /// altered token. Returns the account and the session's secret.
    pub async fn redeem_signin_token(
        &self,
        secret: &str,
    ) -> Result<Option<(Account, String)>, AccountsError> {
        if !secret.starts_with(SIGNIN_PREFIX) || secret.len() != SIGNIN_PREFIX.len() + 64 {
            return Ok(None);
        }
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let email: Option<String> = sqlx::query_scalar(
            "UPDATE signin_tokens SET used_at = $1 \
             WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING email",
        )
        .bind(now)
        .bind(sha256_hex(secret))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(email) = email else {
            return Ok(None);
        };
        sqlx::query(
            "INSERT INTO accounts (email, created_at) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING",
        )
        .bind(&email)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let row: AccountRow =
            sqlx::query_as("SELECT id, email, is_operator, created_at FROM accounts WHERE email = $1")
                .bind(&email)
                .fetch_one(&mut *tx)
                .await?;
        let session = new_secret(SESSION_PREFIX);
        sqlx::query(
            "INSERT INTO sessions (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(sha256_hex(&session))
        .bind(row.0)
        .bind(now)
        .bind(now + SESSION_TTL_MS)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some((account(row), session)))
    }

    /// The account a live session token belongs to.
    pub async fn session_account(&self, secret: &str) -> Result<Option<Account>, AccountsError> {
        if !secret.starts_with(SESSION_PREFIX) {
            return Ok(None);
        }
        let row: Option<AccountRow> = sqlx::query_as(
            "SELECT a.id, a.email, a.is_operator, a.created_at FROM sessions s \
             JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = $1 AND s.expires_at > $2",
        )
        .bind(sha256_hex(secret))
        .bind(now_millis())
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(account))
    }

    /// Ends a session (signing out). Unknown tokens change nothing.
    pub async fn end_session(&self, secret: &str) -> Result<(), AccountsError> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
            .bind(sha256_hex(secret))
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The account of `email`, creating it if needed (operator commands).
    pub async fn ensure_account(&self, email: &str) -> Result<Account, AccountsError> {
        let email = normalize_email(email)?;
        sqlx::query(
            "INSERT INTO accounts (email, created_at) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING",
        )
        .bind(&email)
        .bind(now_millis())
        .execute(self.pool())
        .await?;
        let row: AccountRow =
            sqlx::query_as("SELECT id, email, is_operator, created_at FROM accounts WHERE email = $1")
                .bind(&email)
                .fetch_one(self.pool())
                .await?;
        Ok(account(row))
    }

    /// Makes `email` an operator (creating the account if needed).
    pub async fn grant_operator(&self, email: &str) -> Result<Account, AccountsError> {
        let account = self.ensure_account(email).await?;
        sqlx::query("UPDATE accounts SET is_operator = 1 WHERE id = $1")
            .bind(account.id)
            .execute(self.pool())
            .await?;
        Ok(Account { is_operator: true, ..account })
    }

    /// Adds `email` to the team `slug` (creating the account if needed);
    /// answers whether it was new. An existing member keeps their role.
    pub async fn add_team_member(
        &self,
        slug: &str,
        email: &str,
        role: TeamRole,
    ) -> Result<bool, AccountsError> {
        let team = self
            .team_by_slug(slug)
            .await?
            .ok_or_else(|| AccountsError::NoSuchTeam { slug: slug.to_string() })?;
        let account = self.ensure_account(email).await?;
        let added: Option<i64> = sqlx::query_scalar(
            "INSERT INTO team_members (team_id, account_id, role, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (team_id, account_id) DO NOTHING RETURNING team_id",
        )
        .bind(team.id)
        .bind(account.id)
        .bind(role.as_str())
        .bind(now_millis())
        .fetch_optional(self.pool())
        .await?;
        Ok(added.is_some())
    }

    /// The teams `account_id` belongs to, by slug.
    pub async fn memberships(&self, account_id: i64) -> Result<Vec<Membership>, AccountsError> {
        let rows: Vec<(i64, String, i64, String)> = sqlx::query_as(
            "SELECT t.id, t.slug, t.created_at, m.role FROM team_members m JOIN teams t ON t.id = m.team_id \
             WHERE m.account_id = $1 ORDER BY t.slug",
        )
        .bind(account_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, slug, created_at, role)| Membership {
                team: Team { id, slug, created_at },
                role: TeamRole::parse(&role),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_or_refused() {
        assert_eq!(normalize_email("  Ada@Example.COM ").unwrap(), "ada@example.com");
        for bad in [
            "",
            "ada",
            "ada@",
            "@example.com",
            "ada@example",
            "a da@example.com",
            "ada@.com",
            "ada@x..com",
            "a@b@c.com",
            // Display names, brackets, comments and quotes: a mail library
            // would deliver these to the bare address inside.
            "\"7\"<victim@x.test>",
            "Victim <victim@x.test>",
            "<victim@x.test>",
            "victim@x.test>",
            "victim(comment)@x.test",
            "\"v\"@x.test",
            "a,b@x.test",
            "victim@x.test;other@y.test",
            // Invisible characters that make two addresses look alike.
            "\u{202e}victim@x.test",
            "vic\u{200b}tim@x.test",
            "victim@x.test\u{feff}",
            "\u{200e}victim@x.test",
            "victim\u{200f}@x.test",
            "victim@x\u{202a}.test",
            "vic\u{2066}tim\u{2069}@x.test",
            ".victim@x.test",
            "victim@-x.test",
            // IP literals and bare hosts: lettre's grammar takes them.
            "victim@[127.0.0.1]",
            "victim@127.0.0.1",
            "victim@localhost",
            // Bytes that were not UTF-8, as a form decoder passes them on.
            "vic\u{fffd}tim@x.test",
            "victim@x\u{fffd}.test",
        ] {
            assert!(normalize_email(bad).is_err(), "{bad:?} accepted");
        }
        assert!(normalize_email(&format!("{}@example.com", "a".repeat(65))).is_err());
        for good in ["o'brien+news@example.co.uk", "ada.lovelace@sub.example.com", "jörg@müller.de"] {
            assert!(normalize_email(good).is_ok(), "{good:?} refused");
        }
        // What is taken is what lettre will send to, and one key per person.
        for (typed, key) in [("Victim@X.Test", "victim@x.test"), (" victim@x.test\n", "victim@x.test")] {
            let normalised = normalize_email(typed).unwrap();
            assert_eq!(normalised, key);
            assert_eq!(normalised.parse::<lettre::Address>().unwrap().to_string(), key);
        }
    }
}

/// A member of a team, as its page lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeamMember {
    pub account_id: i64,
    pub email: String,
    pub role: TeamRole,
}

/// An account as the operator's overview lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccountSummary {
    pub account: Account,
    pub teams: Vec<String>,
}

impl Store {
    /// The role of `account_id` in `team_id`, or `None` for a non-member.
    pub async fn team_role(&self, team_id: i64, account_id: i64) -> Result<Option<TeamRole>, AccountsError> {
        let role: Option<String> =
            sqlx::query_scalar("SELECT role FROM team_members WHERE team_id = $1 AND account_id = $2")
                .bind(team_id)
                .bind(account_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(role.as_deref().map(TeamRole::parse))
    }

    /// The team's members, by email.
    pub async fn team_members(&self, team_id: i64) -> Result<Vec<TeamMember>, AccountsError> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT a.id, a.email, m.role FROM team_members m JOIN accounts a ON a.id = m.account_id \
             WHERE m.team_id = $1 ORDER BY a.email",
        )
        .bind(team_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(account_id, email, role)| TeamMember { account_id, email, role: TeamRole::parse(&role) })
            .collect())
    }

    /// Removes `email` from the team. Refuses to remove the team's last
    /// admin (a team nobody can manage); answers whether someone was removed.
    pub async fn remove_team_member(&self, team_id: i64, email: &str) -> Result<bool, AccountsError> {
        let email = normalize_email(email)?;
        let members = self.team_members(team_id).await?;
        let Some(member) = members.iter().find(|m| m.email == email) else {
            return Ok(false);
        };
        let admins = members.iter().filter(|m| m.role == TeamRole::Admin).count();
        if member.role == TeamRole::Admin && admins <= 1 {
            return Err(AccountsError::LastAdmin);
        }
        let result = sqlx::query("DELETE FROM team_members WHERE team_id = $1 AND account_id = $2")
            .bind(team_id)
            .bind(member.account_id)
            .execute(self.pool())
            .await?;
        Ok(result.rows_affected() > 0)
    }

    /// Every account with the slugs of its teams, newest first (operators).
    pub async fn account_summaries(&self, limit: i64) -> Result<Vec<AccountSummary>, AccountsError> {
        let rows: Vec<AccountRow> = sqlx::query_as(
            "SELECT id, email, is_operator, created_at FROM accounts ORDER BY id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        let mut summaries = Vec::with_capacity(rows.len());
        for row in rows {
            let account = account(row);
            let teams = self.memberships(account.id).await?.into_iter().map(|m| m.team.slug).collect();
            summaries.push(AccountSummary { account, teams });
        }
        Ok(summaries)
    }
}
