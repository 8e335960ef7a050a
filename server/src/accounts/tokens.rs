//! Loop tokens: the bearer credentials a team's loops report rounds with.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::AccountsError;
use crate::store::{now_millis, Store};

/// Every loop token starts with this, so that a token pasted in the wrong
/// place (a log, a repository) is recognisable for what it is.
pub const LOOP_TOKEN_PREFIX: &str = "fpl_";

/// A token as listed: everything but the secret, which is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopToken {
    pub id: i64,
    pub team_id: i64,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// A token just created: the only moment its secret exists outside the
/// caller that will use it.
#[derive(Debug, Clone)]
pub struct NewLoopToken {
    pub token: LoopToken,
    pub secret: String,
}

/// Who a valid token speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenIdentity {
    pub token_id: i64,
    pub team_id: i64,
}

/// The stored form of a token: the SHA-256 of its text, in lowercase hex.
/// A plain hash suffices (no salt, no slow hash) because the secret is 256
/// random bits, not a password a person chose.
pub fn hash_loop_token(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn new_secret() -> String {
    super::people::new_secret(LOOP_TOKEN_PREFIX)
}

/// A token's name (loop and MCP tokens): 1 to 64 printable characters.
pub(crate) fn valid_token_name(name: &str) -> bool {
    // The stored-text rule for a one-line field (no NUL, no control
    // characters, at most 64 characters), and not blank.
    crate::stored_text::problem(name, crate::stored_text::Rule::line(64)).is_none() && !name.trim().is_empty()
}

/// A `loop_tokens` row as selected by [`Store::loop_tokens`].
type TokenRow = (i64, i64, String, i64, Option<i64>, Option<i64>);

/// How often a token's `last_used_at` is refreshed at most: writing it on
/// every round would add a write to the hottest path for a value people read
/// at minute granularity.
pub(crate) const LAST_USED_RESOLUTION_MS: i64 = 60_000;

/// The live token with a hash: its id, team and `last_used_at`.
const TOKEN_LOOKUP: &str =
    "SELECT id, team_id, last_used_at FROM loop_tokens WHERE token_hash = $1 AND revoked_at IS NULL";
/// Sets a token's `last_used_at` ($1) by id ($2).
pub(crate) const TOKEN_TOUCH: &str = "UPDATE loop_tokens SET last_used_at = $1 WHERE id = $2";

impl Store {
    /// Creates a token for the team `team_slug` and returns it with its
    /// secret, which cannot be recovered later.
    pub async fn create_loop_token(
        &self,
        team_slug: &str,
        name: &str,
    ) -> Result<NewLoopToken, AccountsError> {
        if !valid_token_name(name) {
            return Err(AccountsError::BadTokenName { name: name.to_string() });
        }
        let team = self
            .team_by_slug(team_slug)
            .await?
            .ok_or_else(|| AccountsError::NoSuchTeam { slug: team_slug.to_string() })?;
        let secret = new_secret();
        let created_at = now_millis();
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO loop_tokens (team_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(team.id)
        .bind(name)
        .bind(hash_loop_token(&secret))
        .bind(created_at)
        .fetch_one(self.pool())
        .await?;
        let token = LoopToken {
            id,
            team_id: team.id,
            name: name.to_string(),
            created_at,
            last_used_at: None,
            revoked_at: None,
        };
        Ok(NewLoopToken { token, secret })
    }

    /// The team's tokens, revoked ones included, oldest first.
    pub async fn loop_tokens(&self, team_id: i64) -> Result<Vec<LoopToken>, AccountsError> {
        let rows: Vec<TokenRow> = sqlx::query_as(
            "SELECT id, team_id, name, created_at, last_used_at, revoked_at FROM loop_tokens \
             WHERE team_id = $1 ORDER BY id",
        )
        .bind(team_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, team_id, name, created_at, last_used_at, revoked_at)| LoopToken {
                id,
                team_id,
                name,
                created_at,
                last_used_at,
                revoked_at,
            })
            .collect())
    }

    /// Revokes the team's token `token_id`; answers whether a live token of
    /// that team was revoked. Another team's token id changes nothing.
    pub async fn revoke_loop_token(&self, team_id: i64, token_id: i64) -> Result<bool, AccountsError> {
        let result = sqlx::query(
            "UPDATE loop_tokens SET revoked_at = $1 WHERE id = $2 AND team_id = $3 AND revoked_at IS NULL",
        )
        .bind(now_millis())
        .bind(token_id)
        .bind(team_id)
        .execute(self.pool())
        .await?;
        Ok(result.rows_affected() > 0)
    }

    /// The team a live token speaks for, or `None` for an unknown or revoked
    /// one. Refreshes the token's `last_used_at` (at minute resolution).
    pub async fn authenticate_loop_token(
        &self,
        secret: &str,
    ) -> Result<Option<TokenIdentity>, AccountsError> {
        if !secret.starts_with(LOOP_TOKEN_PREFIX) {
            return Ok(None);
        }
        let row: Option<(i64, i64, Option<i64>)> =
            sqlx::query_as(TOKEN_LOOKUP).bind(hash_loop_token(secret)).fetch_optional(self.pool()).await?;
        let Some((token_id, team_id, last_used_at)) = row else {
            return Ok(None);
        };
        let now = now_millis();
        if last_used_at.is_none_or(|last| now - last >= LAST_USED_RESOLUTION_MS) {
            sqlx::query(TOKEN_TOUCH).bind(now).bind(token_id).execute(self.pool()).await?;
        }
        Ok(Some(TokenIdentity { token_id, team_id }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_prefixed_256_bit_hex_and_differ() {
        let first = new_secret();
        let second = new_secret();
        assert!(first.starts_with(LOOP_TOKEN_PREFIX));
        assert_eq!(first.len(), LOOP_TOKEN_PREFIX.len() + 64);
        assert_ne!(first, second);
    }

    #[test]
    fn the_stored_hash_is_sha256_hex_of_the_whole_token() {
        // The SHA-256 of "abc", a published test vector.
        assert_eq!(
            hash_loop_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn token_names_are_short_printable_text() {
        assert!(valid_token_name("ci runner"));
        assert!(!valid_token_name(""));
        assert!(!valid_token_name("   "));
        assert!(!valid_token_name("a\nb"));
        assert!(!valid_token_name(&"n".repeat(65)));
    }
}
