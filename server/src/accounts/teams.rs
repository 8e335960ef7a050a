//! Teams: a slug that names the team in URLs and commands.

use serde::Serialize;

use super::AccountsError;
use crate::store::{now_millis, Store};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Team {
    pub id: i64,
    pub slug: String,
    pub created_at: i64,
}

/// A slug is 2 to 40 characters of lowercase ASCII letters, digits and
/// single dashes, neither starting nor ending with a dash. Slugs appear in
/// URLs and shell commands, so they are kept to characters that need no
/// quoting anywhere.
pub fn valid_team_slug(slug: &str) -> bool {
    let bytes = slug.as_bytes();
    (2..=40).contains(&bytes.len())
        && bytes.iter().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
        && !slug.contains("--")
}

/// How many teams one reader may administer (teams made on the web count,
/// and so do those an operator made them admin of).
pub const MAX_TEAMS_PER_ADMIN: i64 = 20;

impl Store {
    /// Creates the team `slug`; refuses a bad or taken slug.
    pub async fn create_team(&self, slug: &str) -> Result<Team, AccountsError> {
        if !valid_team_slug(slug) {
            return Err(AccountsError::BadSlug { slug: slug.to_string() });
        }
        let created_at = now_millis();
        // `ON CONFLICT DO NOTHING` turns a taken slug into "no row" instead
        // of a database error, whichever backend and however many callers
        // race for the same slug.
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO teams (slug, created_at) VALUES ($1, $2) ON CONFLICT (slug) DO NOTHING RETURNING id",
        )
        .bind(slug)
        .bind(created_at)
        .fetch_optional(self.pool())
        .await?;
        match id {
            Some(id) => Ok(Team { id, slug: slug.to_string(), created_at }),
            None => Err(AccountsError::TeamExists { slug: slug.to_string() }),
        }
    }

    /// Creates the team `slug` with `account_id` as its admin, in one
    /// transaction (never a team without its admin). Refuses a bad or taken
    /// slug, and a reader who already administers [`MAX_TEAMS_PER_ADMIN`].
    pub async fn create_team_for(&self, slug: &str, account_id: i64) -> Result<Team, AccountsError> {
        if !valid_team_slug(slug) {
            return Err(AccountsError::BadSlug { slug: slug.to_string() });
        }
        let created_at = now_millis();
        let mut tx = self.begin_write().await?;
        let administered: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM team_members WHERE account_id = $1 AND role = 'admin'")
                .bind(account_id)
                .fetch_one(&mut *tx)
                .await?;
        if administered >= MAX_TEAMS_PER_ADMIN {
            return Err(AccountsError::TooManyTeams { limit: MAX_TEAMS_PER_ADMIN });
        }
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO teams (slug, created_at) VALUES ($1, $2) ON CONFLICT (slug) DO NOTHING RETURNING id",
        )
        .bind(slug)
        .bind(created_at)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(id) = id else {
            return Err(AccountsError::TeamExists { slug: slug.to_string() });
        };
        sqlx::query(
            "INSERT INTO team_members (team_id, account_id, role, created_at) VALUES ($1, $2, 'admin', $3)",
        )
        .bind(id)
        .bind(account_id)
        .bind(created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Team { id, slug: slug.to_string(), created_at })
    }

    /// The team named `slug`, if there is one.
    pub async fn team_by_slug(&self, slug: &str) -> Result<Option<Team>, AccountsError> {
        let row: Option<(i64, String, i64)> =
            sqlx::query_as("SELECT id, slug, created_at FROM teams WHERE slug = $1")
                .bind(slug)
                .fetch_optional(self.pool())
                .await?;
        Ok(row.map(|(id, slug, created_at)| Team { id, slug, created_at }))
    }
}

#[cfg(test)]
mod tests {
    use super::valid_team_slug;

    #[test]
    fn slugs_are_url_and_shell_safe() {
        for good in ["acme", "a1", "team-42", "0day", &"a".repeat(40)] {
            assert!(valid_team_slug(good), "{good}");
        }
        for bad in
            ["", "a", "Acme", "-acme", "acme-", "ac--me", "ac me", "ac_me", "ac/me", "äcme", &"a".repeat(41)]
        {
            assert!(!valid_team_slug(bad), "{bad}");
        }
    }
}
