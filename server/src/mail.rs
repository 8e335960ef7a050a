//! Outgoing mail. Every message is first written to the `outbox` table, so
//! the operator can see what the site sent (`/admin`). With `SMTP_URL` set it
//! is then delivered over SMTP (lettre) and its stored body is redacted, since
//! a sign-in link is a credential; without it the outbox and the server log
//! are the delivery, which is what the embedded default wants.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::PoolConfig;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::Serialize;

use crate::store::{now_millis, Store, StoreError};

/// One message of the outbox, as the operator sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxMessage {
    pub id: i64,
    pub recipient: String,
    pub subject: String,
    pub body: String,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    pub error: Option<String>,
}

#[derive(Clone)]
pub struct Mailer {
    smtp: Option<AsyncSmtpTransport<Tokio1Executor>>,
    from: Mailbox,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer").field("smtp", &self.smtp.is_some()).finish()
    }
}

impl Mailer {
    /// A mailer for `SMTP_URL` (`smtp://[USER:PASSWORD@]HOST[:PORT]`), or the
    /// outbox alone when there is none; its mail comes from `from`.
    pub fn new(smtp_url: Option<&str>, from: &str) -> Mailer {
        let from = from.parse().unwrap_or_else(|_| {
            crate::config::DEFAULT_MAIL_FROM.parse().expect("the default sender is a mailbox")
        });
        Mailer { smtp: smtp_url.and_then(|url| smtp_transport(url, 2)), from }
    }

    /// Records the message in the outbox and, with SMTP, delivers it. A
    /// delivery failure is recorded and logged, never shown to the person who
    /// asked (a sign-in page must answer the same way whatever happens).
    pub async fn send(&self, store: &Store, to: &str, subject: &str, body: &str) -> Result<(), StoreError> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO outbox (recipient, subject, body, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(to)
        .bind(subject)
        .bind(body)
        .bind(now_millis())
        .fetch_one(store.pool())
        .await?;
        let Some(smtp) = &self.smtp else {
            tracing::info!(outbox_id = id, to, subject, "mail kept in the outbox (no SMTP_URL):\n{body}");
            return Ok(());
        };
        let outcome = match message(&self.from, to, subject, body) {
            Ok(message) => smtp.send(message).await.map(|_| ()).map_err(|error| error.to_string()),
            Err(error) => Err(error),
        };
        match outcome {
            Ok(()) => {
                sqlx::query("UPDATE outbox SET sent_at = $1, body = $2 WHERE id = $3")
                    .bind(now_millis())
                    .bind(redact_links(body))
                    .bind(id)
                    .execute(store.pool())
                    .await?;
                tracing::info!(outbox_id = id, to, subject, "mail sent");
            }
            Err(error) => {
                sqlx::query("UPDATE outbox SET error = $1 WHERE id = $2")
                    .bind(&error)
                    .bind(id)
                    .execute(store.pool())
                    .await?;
                tracing::warn!(outbox_id = id, to, subject, %error, "mail could not be sent");
            }
        }
        Ok(())
    }
}

/// A pooled SMTP transport for `SMTP_URL` (`smtp://[USER:PASSWORD@]HOST[:PORT]`)
/// keeping up to `connections` connections open; `None` for a URL of
/// another shape (the configuration refuses those at start).
pub fn smtp_transport(url: &str, connections: u32) -> Option<AsyncSmtpTransport<Tokio1Executor>> {
    let relay = SmtpRelay::parse(url)?;
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(relay.host)
        .port(relay.port)
        .timeout(Some(Duration::from_secs(10)))
        .pool_config(PoolConfig::new().max_size(connections.max(1)).idle_timeout(Duration::from_secs(30)));
    if let Some(credentials) = relay.credentials {
        builder = builder.credentials(credentials);
    }
    Some(builder.build())
}

/// Where `SMTP_URL` points, for callers that keep connections of their own
/// (the newsletter's deliverer: one per worker, with `TCP_NODELAY`, since
/// lettre's own sockets wait on the relay's delayed ACK between the body and
/// its final dot, about 40 ms a message).
#[derive(Clone)]
pub struct SmtpRelay {
    pub host: String,
    pub port: u16,
    pub credentials: Option<Credentials>,
}

impl std::fmt::Debug for SmtpRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpRelay")
            .field("host", &self.host)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl SmtpRelay {
    /// `smtp://[USER:PASSWORD@]HOST[:PORT]`, or `None` for another shape.
    pub fn parse(url: &str) -> Option<SmtpRelay> {
        let rest = url.strip_prefix("smtp://")?.trim_end_matches('/');
        let (credentials, address) = match rest.rsplit_once('@') {
            Some((credentials, address)) => (Some(credentials), address),
            None => (None, rest),
        };
        let (host, port) = match address.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().ok()?),
            None => (address, 25),
        };
        let credentials = credentials
            .and_then(|c| c.split_once(':'))
            .map(|(user, password)| Credentials::new(user.to_string(), password.to_string()));
        Some(SmtpRelay { host: host.to_string(), port, credentials })
    }

    /// A new connection: TCP with `TCP_NODELAY`, EHLO, and AUTH when the URL
    /// has credentials.
    pub async fn connect(&self) -> Result<lettre::transport::smtp::client::AsyncSmtpConnection, String> {
        use lettre::transport::smtp::authentication::Mechanism;
        use lettre::transport::smtp::client::AsyncSmtpConnection;
        use lettre::transport::smtp::extension::ClientId;
        let connect = tokio::net::TcpStream::connect((self.host.as_str(), self.port));
        let stream = tokio::time::timeout(Duration::from_secs(10), connect)
            .await
            .map_err(|_| format!("connecting to {}:{} timed out", self.host, self.port))?
            .map_err(|error| format!("connecting to {}:{}: {error}", self.host, self.port))?;
        stream.set_nodelay(true).map_err(|error| format!("TCP_NODELAY: {error}"))?;
        let hello = ClientId::default();
        let mut connection = tokio::time::timeout(
            Duration::from_secs(10),
            AsyncSmtpConnection::connect_with_transport(Box::new(stream), &hello),
        )
        .await
        .map_err(|_| "the relay did not greet within 10 s".to_string())?
        .map_err(|error| format!("greeting the relay: {error}"))?;
        if let Some(credentials) = &self.credentials {
            connection
                .auth(&[Mechanism::Plain, Mechanism::Login], credentials)
                .await
                .map_err(|error| format!("signing in to the relay: {error}"))?;
        }
        Ok(connection)
    }
}

fn message(from: &Mailbox, to: &str, subject: &str, body: &str) -> Result<Message, String> {
    let to: Mailbox = to.parse().map_err(|error| format!("recipient {to:?}: {error}"))?;
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject(subject)
        .body(body.to_string())
        .map_err(|error| error.to_string())
}

/// The body as stored after delivery: links that carry a token are cut at
/// `token=`, so the outbox never holds a working credential that was mailed.
fn redact_links(body: &str) -> String {
    body.lines()
        .map(|line| match line.find("token=") {
            Some(at) => format!("{}token=[sent, not kept]", &line[..at]),
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An `outbox` row as selected by [`Store::outbox`].
type OutboxRow = (i64, String, String, String, i64, Option<i64>, Option<String>);

impl Store {
    /// The latest `limit` messages of the outbox, newest first.
    pub async fn outbox(&self, limit: i64) -> Result<Vec<OutboxMessage>, StoreError> {
        let rows: Vec<OutboxRow> = sqlx::query_as(
            "SELECT id, recipient, subject, body, created_at, sent_at, error FROM outbox ORDER BY id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, recipient, subject, body, created_at, sent_at, error)| OutboxMessage {
                id,
                recipient,
                subject,
                body,
                created_at,
                sent_at,
                error,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivered_links_are_not_kept() {
        let body = "Sign in:\nhttp://x/signin/verify?token=fps_abc\nBye";
        assert_eq!(redact_links(body), "Sign in:\nhttp://x/signin/verify?token=[sent, not kept]\nBye");
    }
}
