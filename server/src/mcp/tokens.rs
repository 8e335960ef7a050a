//! Personal MCP tokens: a founder's bearer credential for `/mcp`. Made on
//! `/account` or by `fixedpoint mcp-token EMAIL`, shown once, kept as the
//! SHA-256 of the secret (as loop tokens are), revocable on `/account`.

use serde::{Deserialize, Serialize};

use crate::accounts::{hash_loop_token, valid_token_name, AccountsError, LAST_USED_RESOLUTION_MS};
use crate::store::{now_millis, Store};

/// Every MCP token starts with this, so that one pasted in the wrong place
/// is recognisable (and never mistaken for a loop token, `fpl_`).
pub const MCP_TOKEN_PREFIX: &str = "fpm_";

/// A founder may keep this many live tokens: one per agent or machine is
/// plenty, and a leaked session cannot mint an unbounded number.
pub const MAX_LIVE_TOKENS: i64 = 20;

/// A token as listed: everything but the secret, which is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToken {
    pub id: i64,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// A token just made: the only moment its secret exists outside the agent
/// that will use it.
#[derive(Debug, Clone)]
pub struct NewMcpToken {
    pub token: McpToken,
    pub secret: String,
}

/// Who a live token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCaller {
    pub token_id: i64,
    pub account_id: i64,
    pub email: String,
}

/// Why a token could not be made.
#[derive(Debug, thiserror::Error)]
pub enum McpTokenError {
    #[error("token name {0:?} is not valid: use 1 to 64 printable characters")]
    BadName(String),
    #[error("you already have {MAX_LIVE_TOKENS} live MCP tokens: revoke one first")]
    TooMany,
    #[error(transparent)]
    Accounts(#[from] AccountsError),
}

impl From<sqlx::Error> for McpTokenError {
    fn from(error: sqlx::Error) -> Self {
        McpTokenError::Accounts(error.into())
    }
}

fn new_secret() -> String {
    crate::accounts::new_secret(MCP_TOKEN_PREFIX)
}

type TokenRow = (i64, String, i64, Option<i64>, Option<i64>);

impl Store {
    /// Makes a token for `account_id` and returns it with its secret, which
    /// cannot be recovered later. Whether the account may use it is decided
    /// at each request, not here.
    pub async fn create_mcp_token(&self, account_id: i64, name: &str) -> Result<NewMcpToken, McpTokenError> {
        let name = name.trim();
        if !valid_token_name(name) {
            return Err(McpTokenError::BadName(name.to_string()));
        }
        let secret = new_secret();
        let created_at = now_millis();
        // The count and the insert in one statement: two tabs making tokens
        // at once cannot both pass a count taken before either wrote.
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO mcp_tokens (account_id, name, token_hash, created_at) \
             SELECT $1, $2, $3, $4 WHERE (SELECT COUNT(*) FROM mcp_tokens \
               WHERE account_id = $5 AND revoked_at IS NULL) < $6 RETURNING id",
        )
        .bind(account_id)
        .bind(name)
        .bind(hash_loop_token(&secret))
        .bind(created_at)
        .bind(account_id)
        .bind(MAX_LIVE_TOKENS)
        .fetch_optional(self.pool())
        .await?;
        let id = id.ok_or(McpTokenError::TooMany)?;
        let token = McpToken { id, name: name.to_string(), created_at, last_used_at: None, revoked_at: None };
        Ok(NewMcpToken { token, secret })
    }

    /// The account's tokens, revoked ones included, newest first.
    pub async fn mcp_tokens(&self, account_id: i64) -> Result<Vec<McpToken>, AccountsError> {
        let rows: Vec<TokenRow> = sqlx::query_as(
            "SELECT id, name, created_at, last_used_at, revoked_at FROM mcp_tokens \
             WHERE account_id = $1 ORDER BY id DESC",
        )
        .bind(account_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, name, created_at, last_used_at, revoked_at)| McpToken {
                id,
                name,
                created_at,
                last_used_at,
                revoked_at,
            })
            .collect())
    }

    /// Revokes the account's token `token_id`; answers whether a live token
    /// of that account was revoked. Another account's token id changes
    /// nothing.
    pub async fn revoke_mcp_token(&self, account_id: i64, token_id: i64) -> Result<bool, AccountsError> {
        let result = sqlx::query(
            "UPDATE mcp_tokens SET revoked_at = $1 WHERE id = $2 AND account_id = $3 AND revoked_at IS NULL",
        )
        .bind(now_millis())
        .bind(token_id)
        .bind(account_id)
        .execute(self.pool())
        .await?;
        Ok(result.rows_affected() > 0)
    }

    /// The account a live token speaks for, or `None` for an unknown or
    /// revoked one. Refreshes `last_used_at` at minute resolution.
    pub async fn authenticate_mcp_token(&self, secret: &str) -> Result<Option<McpCaller>, AccountsError> {
        if !secret.starts_with(MCP_TOKEN_PREFIX) {
            return Ok(None);
        }
        let row: Option<(i64, i64, String, Option<i64>)> = sqlx::query_as(
            "SELECT t.id, t.account_id, a.email, t.last_used_at FROM mcp_tokens t \
             JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = $1 AND t.revoked_at IS NULL",
        )
        .bind(hash_loop_token(secret))
        .fetch_optional(self.pool())
        .await?;
        let Some((token_id, account_id, email, last_used_at)) = row else {
            return Ok(None);
        };
        let now = now_millis();
        if last_used_at.is_none_or(|last| now - last >= LAST_USED_RESOLUTION_MS) {
            sqlx::query("UPDATE mcp_tokens SET last_used_at = $1 WHERE id = $2")
                .bind(now)
                .bind(token_id)
                .execute(self.pool())
                .await?;
        }
        Ok(Some(McpCaller { token_id, account_id, email }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_prefixed_256_bit_hex_and_differ() {
        let first = new_secret();
        assert!(first.starts_with(MCP_TOKEN_PREFIX));
        assert_eq!(first.len(), MCP_TOKEN_PREFIX.len() + 64);
        assert_ne!(first, new_secret());
    }
}
