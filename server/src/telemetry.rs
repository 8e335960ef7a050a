//! Structured logs through `tracing`.
//!
//! `RUST_LOG` filters as usual (default `info`); `FIXEDPOINT_LOG_FORMAT=json`
//! switches to one JSON object per line for log shippers.

use tracing_subscriber::{fmt, EnvFilter};

/// Installs the global subscriber. Logs go to standard error so that commands
/// which print a result (a token, a URL) keep standard output clean.
pub fn init() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let json = std::env::var("FIXEDPOINT_LOG_FORMAT").is_ok_and(|format| format == "json");
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second init (tests that call it twice) is harmless, so its error is
    // deliberately ignored.
    if json {
        let _ = builder.json().try_init();
    } else {
        let _ = builder.try_init();
    }
}
