//! Site settings: small named values the operator can change at run time
//! (for example the site's title). Stored as text, one row per key.

use serde::Serialize;

use super::{now_millis, Store, StoreError};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub updated_at: i64,
}

/// Keys are short, lowercase words with dots, dashes or underscores: they
/// are identifiers, not content.
pub fn valid_setting_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"._-".contains(&byte))
}

impl Store {
    /// The value stored under `key`, if any.
    pub async fn setting(&self, key: &str) -> Result<Option<Setting>, StoreError> {
        let row: Option<(String, String, i64)> =
            sqlx::query_as("SELECT key, value, updated_at FROM site_settings WHERE key = $1")
                .bind(key)
                .fetch_optional(self.pool())
                .await?;
        Ok(row.map(|(key, value, updated_at)| Setting { key, value, updated_at }))
    }

    /// Stores `value` under `key`, replacing what was there in one statement.
    pub async fn put_setting(&self, key: &str, value: &str) -> Result<Setting, StoreError> {
        if !valid_setting_key(key) {
            return Err(StoreError::Invalid {
                field: "key",
                problem: "a setting key is 1-64 of a-z, 0-9, '.', '-', '_'",
            });
        }
        let updated_at = now_millis();
        sqlx::query(
            "INSERT INTO site_settings (key, value, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(key)
        .bind(value)
        .bind(updated_at)
        .execute(self.pool())
        .await?;
        Ok(Setting { key: key.to_string(), value: value.to_string(), updated_at })
    }

    /// Every setting, ordered by key.
    pub async fn settings(&self) -> Result<Vec<Setting>, StoreError> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT key, value, updated_at FROM site_settings ORDER BY key")
                .fetch_all(self.pool())
                .await?;
        Ok(rows.into_iter().map(|(key, value, updated_at)| Setting { key, value, updated_at }).collect())
    }

    /// Removes `key`; answers whether it existed.
    pub async fn delete_setting(&self, key: &str) -> Result<bool, StoreError> {
        let result =
            sqlx::query("DELETE FROM site_settings WHERE key = $1").bind(key).execute(self.pool()).await?;
        Ok(result.rows_affected() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::valid_setting_key;

    #[test]
    fn setting_keys_are_identifiers() {
        for good in ["site.title", "founder-seats", "a_b", "x1"] {
            assert!(valid_setting_key(good), "{good}");
        }
        for bad in ["", "Site", "a b", "a/b", &"k".repeat(65)] {
            assert!(!valid_setting_key(bad), "{bad}");
        }
    }
}
