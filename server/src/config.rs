//! Configuration from the environment. Every variable has a default that
//! gives a working site on one machine; the README lists them all.

use std::net::SocketAddr;
use std::path::PathBuf;

use thiserror::Error;

/// The default database: a SQLite file in the working directory, created on
/// first start.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://fixedpoint.db?mode=rwc";
pub const DEFAULT_ADDR: &str = "127.0.0.1:3000";
pub const DEFAULT_SITE_ROOT: &str = "target/site";
/// Audit API requests a minute per client address, unless configured otherwise.
pub const DEFAULT_AUDIT_RATE_PER_MINUTE: u32 = 60;

/// The largest body the ingest API reads, unless configured otherwise.
pub const DEFAULT_INGEST_MAX_BYTES: usize = 1024 * 1024;
/// The largest OTLP export `POST /v1/traces` reads (and inflates to).
pub const DEFAULT_TRACES_MAX_BYTES: usize = 8 * 1024 * 1024;
/// How long a complete traced round waits for spans that arrive out of
/// order before it is stored.
pub const DEFAULT_TRACES_SETTLE_MS: i64 = 5_000;

#[derive(Debug, Clone)]
pub struct Config {
    /// Where `serve` listens (`FIXEDPOINT_ADDR`).
    pub addr: SocketAddr,
    /// `DATABASE_URL`: `sqlite://...` or `postgres://...`.
    pub database_url: String,
    /// The site's public base URL, used in links sent by mail and in feeds
    /// (`PUBLIC_URL`, default `http://` + the listen address).
    pub public_url: String,
    /// The built site: `pkg/` with the WebAssembly bundle and CSS, plus the
    /// files of `public/` (`LEPTOS_SITE_ROOT`, default `target/site`).
    pub site_root: PathBuf,
    /// The largest request body the loops API accepts, in bytes
    /// (`FIXEDPOINT_INGEST_MAX_BYTES`, default 1 MiB); larger ones get 413.
    pub ingest_max_bytes: usize,
    /// The largest OTLP export `POST /v1/traces` accepts, as sent and once
    /// inflated (`FIXEDPOINT_TRACES_MAX_BYTES`, default 8 MiB).
    pub traces_max_bytes: usize,
    /// How long a complete round from traces waits, after the span that
    /// completed it arrived, for spans an exporter sends out of order
    /// (`FIXEDPOINT_TRACES_SETTLE_MS`, default 5000; 0 stores it in the
    /// export that completes it).
    pub traces_settle_ms: i64,
    /// Requests a minute one client address may make to `POST /api/v1/audit`
    /// (`FIXEDPOINT_AUDIT_RATE_PER_MINUTE`, default 60).
    pub audit_rate_per_minute: u32,
    /// Audits the server runs at once, over the audit API, the audit page's
    /// form and the MCP tool (`FIXEDPOINT_AUDIT_CONCURRENCY`, default the
    /// number of cores): each worst-case source holds some hundreds of MB
    /// while it is audited.
    pub audit_concurrency: u32,
    /// How long an audit request waits for a free slot before it is
    /// answered 503 with `Retry-After` (`FIXEDPOINT_AUDIT_WAIT_MS`, default
    /// 2000).
    pub audit_wait_ms: u32,
    /// `SMTP_URL` (`smtp://host:port`): where mail goes. Without it every
    /// message stays in the outbox table and the log, for the operator.
    pub smtp_url: Option<String>,
    /// Sign-in link requests a minute one client address may make
    /// (`FIXEDPOINT_SIGNIN_RATE_PER_MINUTE`, default 20).
    pub signin_rate_per_minute: u32,
    /// Payments: present only when `STRIPE_SECRET_KEY` is set. Without it
    /// the paid buttons say payments are not configured and checkout
    /// answers 503.
    pub stripe: Option<StripeConfig>,
    /// Founder seats that may be sold at once (`FIXEDPOINT_FOUNDER_SEATS`,
    /// default 100; smaller for staging).
    pub founder_seats: u32,
    /// `FIXEDPOINT_ALLOW_PRIVATE_WEBHOOKS=1` lets teams send alerts to
    /// loopback and private addresses (a test or a private deployment);
    /// refused by default.
    pub allow_private_webhooks: bool,
    /// The founders' MCP server (`FIXEDPOINT_MCP`): `auto` (the default)
    /// opens it once every founder seat is taken, `on` opens it now (for
    /// staging), `off` keeps it shut.
    pub mcp: McpSwitch,
    /// MCP tool calls a minute one token may make
    /// (`FIXEDPOINT_MCP_RATE_PER_MINUTE`, default 120).
    pub mcp_rate_per_minute: u32,
    /// Who the site's mail comes from (`FIXEDPOINT_MAIL_FROM`, a mailbox
    /// such as `Fixed Point <news@example.com>`).
    pub mail_from: String,
    /// Newsletter messages a second for the whole site, every instance
    /// together (`FIXEDPOINT_MAIL_RATE_PER_SECOND`, default 20; 0 for no
    /// limit).
    pub mail_rate_per_second: u32,
    /// SMTP connections the deliverer keeps open, and so messages in flight
    /// (`FIXEDPOINT_MAIL_CONNECTIONS`, default 4).
    pub mail_connections: u32,
    /// The wait before a message the relay deferred (4xx) is tried again,
    /// doubling with each try (`FIXEDPOINT_MAIL_RETRY_MS`, default 60000).
    pub mail_retry_ms: u32,
    /// DKIM signing of the newsletter: `FIXEDPOINT_DKIM_KEY` (an RSA key
    /// in PKCS#1 PEM, or the path of a file holding one),
    /// `FIXEDPOINT_DKIM_SELECTOR`, `FIXEDPOINT_DKIM_DOMAIN` (default: the
    /// sender's domain). `None` without a key.
    pub dkim: Option<DkimSettings>,
}

/// A DKIM key and where its public half is published
/// (`SELECTOR._domainkey.DOMAIN`).
#[derive(Clone)]
pub struct DkimSettings {
    pub key_pem: String,
    pub selector: String,
    pub domain: String,
}

impl std::fmt::Debug for DkimSettings {
    // The key never reaches a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DkimSettings")
            .field("selector", &self.selector)
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

impl DkimSettings {
    /// lettre's signing configuration: relaxed canonicalisation, and the
    /// headers a receiver checks, the one-click unsubscribe ones included
    /// (RFC 8058 asks that they be signed).
    pub fn signing(&self) -> Result<lettre::message::dkim::DkimConfig, String> {
        use lettre::message::dkim::{
            DkimCanonicalization, DkimCanonicalizationType, DkimConfig, DkimSigningAlgorithm, DkimSigningKey,
        };
        use lettre::message::header::HeaderName;
        let key = DkimSigningKey::new(&self.key_pem, DkimSigningAlgorithm::Rsa)
            .map_err(|error| format!("not an RSA private key in PKCS#1 PEM ({error})"))?;
        let headers =
            ["From", "To", "Subject", "Date", "Message-ID", "List-Unsubscribe", "List-Unsubscribe-Post"]
                .into_iter()
                .map(HeaderName::new_from_ascii_str)
                .collect();
        Ok(DkimConfig::new(
            self.selector.clone(),
            self.domain.clone(),
            key,
            headers,
            DkimCanonicalization {
                header: DkimCanonicalizationType::Relaxed,
                body: DkimCanonicalizationType::Relaxed,
            },
        ))
    }
}

/// How the founders' MCP server is switched on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpSwitch {
    /// On once every founder seat is taken.
    Auto,
    On,
    Off,
}

/// Stripe's keys and the Prices of the three plans.
#[derive(Clone)]
pub struct StripeConfig {
    /// `STRIPE_SECRET_KEY`.
    pub secret_key: String,
    /// `STRIPE_WEBHOOK_SECRET`: the endpoint's signing secret (`whsec_...`).
    pub webhook_secret: String,
    /// `STRIPE_API_BASE` (default `https://api.stripe.com`): where the
    /// Stripe library sends its requests (the tests' local fake).
    pub api_base: String,
    /// `STRIPE_PRICE_PRO_MONTHLY`, `STRIPE_PRICE_PRO_YEARLY`,
    /// `STRIPE_PRICE_FOUNDER_YEARLY`: the Price ids of the plans.
    pub price_pro_monthly: String,
    pub price_pro_yearly: String,
    pub price_founder_yearly: String,
    /// `STRIPE_PORTAL_CONFIGURATION`: the Customer Portal configuration
    /// (one that offers no switch into the founder price); Stripe's default
    /// when unset.
    pub portal_configuration: Option<String>,
}

impl std::fmt::Debug for StripeConfig {
    // Keys never reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeConfig")
            .field("api_base", &self.api_base)
            .field("price_pro_monthly", &self.price_pro_monthly)
            .field("price_pro_yearly", &self.price_pro_yearly)
            .field("price_founder_yearly", &self.price_founder_yearly)
            .finish_non_exhaustive()
    }
}

/// Who the site's mail comes from, unless `FIXEDPOINT_MAIL_FROM` says.
pub const DEFAULT_MAIL_FROM: &str = "Fixed Point <no-reply@fixedpoint.invalid>";
/// Newsletter messages a second, unless configured otherwise.
pub const DEFAULT_MAIL_RATE_PER_SECOND: u32 = 20;

/// Stripe's API, unless `STRIPE_API_BASE` says otherwise.
pub const DEFAULT_STRIPE_API_BASE: &str = "https://api.stripe.com";

#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    #[error("FIXEDPOINT_ADDR={value:?} is not a socket address such as 127.0.0.1:3000")]
    BadAddr { value: String },
    #[error("DATABASE_URL must start with sqlite: or postgres:// (got {scheme:?})")]
    BadDatabaseUrl { scheme: String },
    #[error("FIXEDPOINT_INGEST_MAX_BYTES={value:?} is not a positive number of bytes")]
    BadIngestMaxBytes { value: String },
    #[error("SMTP_URL={value:?} must be smtp://[USER:PASSWORD@]HOST[:PORT] (a local relay; TLS to the relay is not built in yet)")]
    BadSmtpUrl { value: String },
    #[error("STRIPE_SECRET_KEY is set but {name} is not: payments need it")]
    MissingStripe { name: &'static str },
    #[error("FIXEDPOINT_MCP={value:?} must be auto, on or off")]
    BadMcpSwitch { value: String },
    #[error("{name}={value:?} is not a positive whole number")]
    BadNumber { name: &'static str, value: String },
    #[error("FIXEDPOINT_MAIL_FROM={value:?} is not a mailbox such as `Fixed Point <news@example.com>`")]
    BadMailFrom { value: String },
    #[error("FIXEDPOINT_DKIM_KEY: {problem}")]
    BadDkimKey { problem: String },
    #[error("FIXEDPOINT_DKIM_KEY is set but FIXEDPOINT_DKIM_SELECTOR is not: DKIM needs the selector the key is published under")]
    MissingDkimSelector,
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup`, so tests need not touch the
    /// process environment.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let non_empty = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        // A positive whole number, or its default when unset.
        let positive = |name: &'static str, default: u32| match non_empty(name) {
            None => Ok(default),
            Some(value) => value
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(ConfigError::BadNumber { name, value }),
        };
        let addr_text = non_empty("FIXEDPOINT_ADDR").unwrap_or_else(|| DEFAULT_ADDR.to_string());
        let addr: SocketAddr =
            addr_text.trim().parse().map_err(|_| ConfigError::BadAddr { value: addr_text.clone() })?;
        let database_url = database_url_from(non_empty("DATABASE_URL"))?;
        let public_url = non_empty("PUBLIC_URL")
            .map(|url| url.trim_end_matches('/').to_string())
            .unwrap_or_else(|| format!("http://{addr}"));
        let site_root = non_empty("LEPTOS_SITE_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SITE_ROOT));
        let ingest_max_bytes = match non_empty("FIXEDPOINT_INGEST_MAX_BYTES") {
            None => DEFAULT_INGEST_MAX_BYTES,
            Some(value) => value
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|bytes| *bytes > 0)
                .ok_or(ConfigError::BadIngestMaxBytes { value })?,
        };
        let traces_max_bytes = match non_empty("FIXEDPOINT_TRACES_MAX_BYTES") {
            None => DEFAULT_TRACES_MAX_BYTES,
            Some(value) => value
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|bytes| *bytes > 0)
                .ok_or(ConfigError::BadNumber { name: "FIXEDPOINT_TRACES_MAX_BYTES", value })?,
        };
        let traces_settle_ms = match non_empty("FIXEDPOINT_TRACES_SETTLE_MS") {
            None => DEFAULT_TRACES_SETTLE_MS,
            Some(value) => value
                .trim()
                .parse::<u32>()
                .map(i64::from)
                .map_err(|_| ConfigError::BadNumber { name: "FIXEDPOINT_TRACES_SETTLE_MS", value })?,
        };
        let audit_rate_per_minute =
            positive("FIXEDPOINT_AUDIT_RATE_PER_MINUTE", DEFAULT_AUDIT_RATE_PER_MINUTE)?;
        let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
        let audit_concurrency =
            positive("FIXEDPOINT_AUDIT_CONCURRENCY", u32::try_from(cores).unwrap_or(u32::MAX))?;
        let audit_wait_ms = match non_empty("FIXEDPOINT_AUDIT_WAIT_MS") {
            None => 2000,
            Some(value) => value
                .trim()
                .parse::<u32>()
                .map_err(|_| ConfigError::BadNumber { name: "FIXEDPOINT_AUDIT_WAIT_MS", value })?,
        };
        let smtp_url = non_empty("SMTP_URL").map(|url| url.trim().to_string());
        if let Some(url) = &smtp_url {
            if !url.starts_with("smtp://") {
                return Err(ConfigError::BadSmtpUrl { value: url.clone() });
            }
        }
        let signin_rate_per_minute = positive("FIXEDPOINT_SIGNIN_RATE_PER_MINUTE", 20)?;
        let stripe = match non_empty("STRIPE_SECRET_KEY") {
            None => None,
            Some(secret_key) => {
                let required = |name: &'static str| {
                    non_empty(name)
                        .map(|value| value.trim().to_string())
                        .ok_or(ConfigError::MissingStripe { name })
                };
                Some(StripeConfig {
                    secret_key: secret_key.trim().to_string(),
                    webhook_secret: required("STRIPE_WEBHOOK_SECRET")?,
                    api_base: non_empty("STRIPE_API_BASE")
                        .map(|base| base.trim().trim_end_matches('/').to_string())
                        .unwrap_or_else(|| DEFAULT_STRIPE_API_BASE.to_string()),
                    price_pro_monthly: required("STRIPE_PRICE_PRO_MONTHLY")?,
                    price_pro_yearly: required("STRIPE_PRICE_PRO_YEARLY")?,
                    price_founder_yearly: required("STRIPE_PRICE_FOUNDER_YEARLY")?,
                    portal_configuration: non_empty("STRIPE_PORTAL_CONFIGURATION")
                        .map(|id| id.trim().to_string()),
                })
            }
        };
        let founder_seats = positive("FIXEDPOINT_FOUNDER_SEATS", 100)?;
        let allow_private_webhooks = non_empty("FIXEDPOINT_ALLOW_PRIVATE_WEBHOOKS")
            .is_some_and(|value| matches!(value.trim(), "1" | "true" | "yes"));
        let mcp = match non_empty("FIXEDPOINT_MCP").map(|value| value.trim().to_ascii_lowercase()) {
            None => McpSwitch::Auto,
            Some(value) => match value.as_str() {
                "auto" => McpSwitch::Auto,
                "on" | "1" | "true" => McpSwitch::On,
                "off" | "0" | "false" => McpSwitch::Off,
                _ => return Err(ConfigError::BadMcpSwitch { value }),
            },
        };
        let mcp_rate_per_minute = positive("FIXEDPOINT_MCP_RATE_PER_MINUTE", 120)?;
        let mail_from = non_empty("FIXEDPOINT_MAIL_FROM")
            .map(|value| value.trim().to_string())
            .unwrap_or_else(|| DEFAULT_MAIL_FROM.to_string());
        if mail_from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(ConfigError::BadMailFrom { value: mail_from });
        }
        let mail_rate_per_second = match non_empty("FIXEDPOINT_MAIL_RATE_PER_SECOND") {
            None => DEFAULT_MAIL_RATE_PER_SECOND,
            Some(value) => value
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|rate| *rate <= 1_000_000)
                .ok_or(ConfigError::BadNumber { name: "FIXEDPOINT_MAIL_RATE_PER_SECOND", value })?,
        };
        let mail_connections = positive("FIXEDPOINT_MAIL_CONNECTIONS", 4)?;
        let mail_retry_ms = positive("FIXEDPOINT_MAIL_RETRY_MS", 60_000)?;
        let dkim = match non_empty("FIXEDPOINT_DKIM_KEY") {
            None => None,
            Some(value) => {
                let value = value.trim().to_string();
                let key_pem = if value.starts_with("-----BEGIN") {
                    value
                } else {
                    std::fs::read_to_string(&value).map_err(|error| ConfigError::BadDkimKey {
                        problem: format!("cannot read the key file {value:?}: {error}"),
                    })?
                };
                let selector = non_empty("FIXEDPOINT_DKIM_SELECTOR")
                    .map(|selector| selector.trim().to_string())
                    .ok_or(ConfigError::MissingDkimSelector)?;
                let from_domain = mail_from
                    .parse::<lettre::message::Mailbox>()
                    .map(|mailbox| mailbox.email.domain().to_string())
                    .unwrap_or_default();
                let domain = non_empty("FIXEDPOINT_DKIM_DOMAIN")
                    .map(|domain| domain.trim().to_string())
                    .unwrap_or(from_domain);
                let settings = DkimSettings { key_pem, selector, domain };
                settings.signing().map_err(|problem| ConfigError::BadDkimKey { problem })?;
                Some(settings)
            }
        };
        Ok(Config {
            dkim,
            mail_from,
            mail_rate_per_second,
            mail_connections,
            mail_retry_ms,
            mcp,
            mcp_rate_per_minute,
            allow_private_webhooks,
            stripe,
            founder_seats,
            addr,
            database_url,
            public_url,
            site_root,
            ingest_max_bytes,
            traces_max_bytes,
            traces_settle_ms,
            audit_rate_per_minute,
            audit_concurrency,
            audit_wait_ms,
            smtp_url,
            signin_rate_per_minute,
        })
    }
}

/// Validates a `DATABASE_URL` (or supplies the default) so a typo fails at
/// start with a message instead of deep inside the driver.
pub fn database_url_from(value: Option<String>) -> Result<String, ConfigError> {
    let url = value.unwrap_or_else(|| DEFAULT_DATABASE_URL.to_string());
    let url = url.trim().to_string();
    if url.starts_with("sqlite:") || url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(url)
    } else {
        let scheme = url.split(':').next().unwrap_or_default().to_string();
        Err(ConfigError::BadDatabaseUrl { scheme })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|name| {
            vars.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string())
        })
    }

    #[test]
    fn zero_configuration_gives_the_documented_defaults() {
        let config = config(&[]).unwrap();
        assert_eq!(config.addr.to_string(), "127.0.0.1:3000");
        assert_eq!(config.database_url, DEFAULT_DATABASE_URL);
        assert_eq!(config.public_url, "http://127.0.0.1:3000");
        assert_eq!(config.site_root, PathBuf::from("target/site"));
    }

    #[test]
    fn bad_values_are_named() {
        assert_eq!(
            config(&[("FIXEDPOINT_ADDR", "localhost")]).unwrap_err(),
            ConfigError::BadAddr { value: "localhost".into() }
        );
        assert_eq!(
            config(&[("DATABASE_URL", "mysql://x")]).unwrap_err(),
            ConfigError::BadDatabaseUrl { scheme: "mysql".into() }
        );
        assert_eq!(
            config(&[("FIXEDPOINT_MCP", "maybe")]).unwrap_err(),
            ConfigError::BadMcpSwitch { value: "maybe".into() }
        );
    }

    #[test]
    fn the_mcp_server_waits_for_the_seats_unless_switched() {
        assert_eq!(config(&[]).unwrap().mcp, McpSwitch::Auto);
        assert_eq!(config(&[("FIXEDPOINT_MCP", " ON ")]).unwrap().mcp, McpSwitch::On);
        assert_eq!(config(&[("FIXEDPOINT_MCP", "off")]).unwrap().mcp, McpSwitch::Off);
    }

    #[test]
    fn public_url_loses_its_trailing_slash() {
        let config = config(&[("PUBLIC_URL", "https://fixedpoint.example/")]).unwrap();
        assert_eq!(config.public_url, "https://fixedpoint.example");
    }
}
