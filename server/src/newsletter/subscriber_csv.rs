//! Subscriber lists in and out as CSV: `fixedpoint subscribers import FILE
//! [--confirmed]` reads the `email` column of the exports of Substack,
//! Buttondown, Ghost (`email`) and Mailchimp (`Email Address`); `export`
//! writes the list. An import checks every row before it stores any: a bad
//! row is named by its line and nothing of the file goes in.

use sqlx::Row;

use super::subscribers::{new_token, token_hash, CONFIRM_PREFIX, CONFIRM_TTL_MS};
use super::{NewsletterError, SubscribeOutcome, SubscriberStatus};
use crate::accounts::normalize_email;
use crate::store::{now_millis, Store};

/// Column names that hold the address, compared trimmed and lowercased.
const EMAIL_COLUMNS: [&str; 6] =
    ["email", "email address", "e-mail", "email_address", "emailaddress", "subscriber"];

/// The addresses of a subscriber CSV, normalised and without repeats, or
/// every problem as `FILE:LINE: message`.
pub fn read_addresses(bytes: &[u8], file: &str) -> Result<Vec<String>, Vec<String>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let headers = match reader.headers() {
        Ok(headers) => headers.clone(),
        Err(error) => return Err(vec![format!("{file}:1: not valid CSV: {error}")]),
    };
    let Some(column) =
        headers.iter().position(|name| EMAIL_COLUMNS.contains(&name.trim().to_lowercase().as_str()))
    else {
        let names: Vec<&str> = headers.iter().collect();
        return Err(vec![format!(
            "{file}:1: no `email` column (the header names {}); exports of Substack, Buttondown, Ghost and \
             Mailchimp have one",
            if names.is_empty() { "nothing".to_string() } else { format!("{names:?}") }
        )]);
    };
    let mut problems = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut addresses = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(record) => record,
            Err(error) => {
                let line = error.position().map_or(0, |position| line_at(bytes, position.byte()));
                problems.push(format!("{file}:{line}: not valid CSV: {error}"));
                continue;
            }
        };
        let line = record.position().map_or(0, |position| line_at(bytes, position.byte()));
        if record.iter().all(|field| field.trim().is_empty()) {
            continue;
        }
        let raw = record.get(column).unwrap_or_default();
        if raw.trim().is_empty() {
            problems.push(format!("{file}:{line}: email: empty"));
            continue;
        }
        match normalize_email(raw) {
            Ok(email) => {
                if seen.insert(email.clone()) {
                    addresses.push(email);
                }
            }
            Err(_) => problems.push(format!(
                "{file}:{line}: email: `{}` is not a valid address",
                raw.chars().filter(|c| !c.is_control()).take(100).collect::<String>()
            )),
        }
    }
    if problems.is_empty() {
        Ok(addresses)
    } else {
        Err(problems)
    }
}

/// The line (from 1) of the byte at `offset`: counted from the bytes, since
/// the reader's own count goes astray on CRLF files.
fn line_at(bytes: &[u8], offset: u64) -> u64 {
    let mut end = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
    // On CRLF files a record's offset can fall on the `\n` of the line
    // before it.
    while end < bytes.len() && matches!(bytes[end], b'\r' | b'\n') {
        end += 1;
    }
    bytes[..end].iter().filter(|byte| **byte == b'\n').count() as u64 + 1
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// New addresses (confirmed with `--confirmed`, else pending).
    pub added: i64,
    /// Pending addresses confirmed by a `--confirmed` import.
    pub confirmed: i64,
    /// Already on the list.
    pub already: i64,
    /// Left alone: the reader unsubscribed, or their server refused mail.
    pub kept_unsubscribed: i64,
    pub kept_bounced: i64,
    /// Confirmation links to mail (an import without `--confirmed`).
    pub to_confirm: Vec<SubscribeOutcome>,
}

impl Store {
    /// Stores every address in one transaction. With `confirmed` the
    /// operator holds their consent: they go on the list at once; without
    /// it each new or pending address gets a confirmation token to mail.
    /// An address that unsubscribed or bounced is never put back.
    pub async fn import_subscribers(
        &self,
        addresses: &[String],
        confirmed: bool,
    ) -> Result<ImportReport, NewsletterError> {
        let now = now_millis();
        let mut report = ImportReport::default();
        let mut tx = self.begin_write().await?;
        for email in addresses {
            let status: Option<String> =
                sqlx::query_scalar("SELECT status FROM subscribers WHERE email = $1")
                    .bind(email)
                    .fetch_optional(&mut *tx)
                    .await?;
            let status = status.as_deref().and_then(SubscriberStatus::from_name);
            match (status, confirmed) {
                (None, true) => {
                    sqlx::query(
                        "INSERT INTO subscribers (email, status, source, created_at, updated_at, confirmed_at) \
                         VALUES ($1, 'confirmed', 'import', $2, $2, $2)",
                    )
                    .bind(email)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    report.added += 1;
                }
                (None | Some(SubscriberStatus::Pending), false) => {
                    let token = new_token(CONFIRM_PREFIX);
                    sqlx::query(
                        "INSERT INTO subscribers (email, status, source, confirm_hash, confirm_expires_at, \
                         created_at, updated_at) VALUES ($1, 'pending', 'import', $2, $3, $4, $4) \
                         ON CONFLICT (email) DO UPDATE SET confirm_hash = excluded.confirm_hash, \
                         confirm_expires_at = excluded.confirm_expires_at, updated_at = excluded.updated_at",
                    )
                    .bind(email)
                    .bind(token_hash(&token))
                    .bind(now + CONFIRM_TTL_MS)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    if status.is_none() {
                        report.added += 1;
                    }
                    report.to_confirm.push(SubscribeOutcome::Confirm { email: email.clone(), token });
                }
                (Some(SubscriberStatus::Pending), true) => {
                    sqlx::query(
                        "UPDATE subscribers SET status = 'confirmed', confirm_hash = NULL, confirmed_at = $2, \
                         updated_at = $2 WHERE email = $1",
                    )
                    .bind(email)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    report.confirmed += 1;
                }
                (Some(SubscriberStatus::Confirmed), _) => report.already += 1,
                (Some(SubscriberStatus::Unsubscribed), _) => report.kept_unsubscribed += 1,
                (Some(SubscriberStatus::Bounced), _) => report.kept_bounced += 1,
            }
        }
        tx.commit().await?;
        Ok(report)
    }

    /// The list as CSV: `email,status,source,created_at,confirmed_at` (UTC
    /// times), paying readers without a row of their own included as the
    /// confirmed subscribers they are.
    pub async fn export_subscribers(&self, out: &mut impl std::io::Write) -> Result<usize, NewsletterError> {
        let now = now_millis();
        let rows = sqlx::query(&format!(
            "SELECT email, status, source, created_at, confirmed_at FROM subscribers \
             UNION ALL SELECT a.email, 'confirmed', 'paid', a.created_at, NULL FROM accounts a \
             WHERE {} > 0 AND NOT EXISTS (SELECT 1 FROM subscribers s WHERE s.email = a.email) \
             ORDER BY 1",
            super::delivery::rank_sql("a.email")
        ))
        .bind(now)
        .bind(now - 7 * 86_400_000)
        .fetch_all(self.pool())
        .await?;
        let mut writer = csv::Writer::from_writer(out);
        let invalid = |error: csv::Error| NewsletterError::Invalid(format!("writing the CSV: {error}"));
        writer.write_record(["email", "status", "source", "created_at", "confirmed_at"]).map_err(invalid)?;
        for row in &rows {
            let created: i64 = row.try_get("created_at")?;
            let confirmed: Option<i64> = row.try_get("confirmed_at")?;
            writer
                .write_record([
                    row.try_get::<String, _>("email")?,
                    row.try_get::<String, _>("status")?,
                    row.try_get::<String, _>("source")?,
                    app::auth::format_time(created),
                    confirmed.map(app::auth::format_time).unwrap_or_default(),
                ])
                .map_err(invalid)?;
        }
        writer.flush().map_err(|error| NewsletterError::Invalid(format!("writing the CSV: {error}")))?;
        Ok(rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_email_column_of_each_service_is_found() {
        let mailchimp = "Email Address,First Name,MEMBER_RATING\r\nAda@Example.com,Ada,2\r\n";
        assert_eq!(read_addresses(mailchimp.as_bytes(), "m.csv").unwrap(), ["ada@example.com"]);
        let crlf = "email\r\nok@example.com\r\nbad\r\n";
        assert_eq!(
            read_addresses(crlf.as_bytes(), "c.csv").unwrap_err(),
            ["c.csv:3: email: `bad` is not a valid address"]
        );
        let substack = "\u{feff}email,active_subscription,created_at\nbob@example.com,false,2024-01-01\n";
        assert_eq!(read_addresses(substack.as_bytes(), "s.csv").unwrap(), ["bob@example.com"]);
        let ghost = "id,email,name,note\n1,\"cy@example.com\",\"Cy, Jr.\",\"a \"\"quoted\"\" note\"\n";
        assert_eq!(read_addresses(ghost.as_bytes(), "g.csv").unwrap(), ["cy@example.com"]);
    }

    #[test]
    fn bad_rows_are_named_by_line_and_repeats_count_once() {
        let text = "email,name\nok@example.com,a\nnot-an-address,b\n\nOK@example.com,c\n,Dee\n";
        let problems = read_addresses(text.as_bytes(), "list.csv").unwrap_err();
        assert_eq!(
            problems,
            ["list.csv:3: email: `not-an-address` is not a valid address", "list.csv:6: email: empty"]
        );
        let none = read_addresses(b"name,phone\nAda,1\n", "x.csv").unwrap_err();
        assert!(none[0].starts_with("x.csv:1: no `email` column"), "{none:?}");
        assert_eq!(read_addresses(b"email\na@example.com\nA@example.com\n", "d.csv").unwrap().len(), 1);
    }
}
