//! `fixedpoint push`: connects a loop kept by the file-based loop protocol
//! (LOOP-PROTOCOL.md) to the ingest API without touching the loop's code.
//!
//! # How it works
//!
//! 1. [`LoopDir::read`] reads `.loop/NAME/` tolerantly: `state.json` keeps
//!    every field it does not know, each `journal.md` entry becomes one
//!    [`JournalEntry`], and whatever cannot be read is named with its file
//!    and line in [`LoopDir::problems`] and skipped, never taking the rest
//!    down with it.
//! 2. [`rounds_of`] maps each entry to a round of the ingest contract: the
//!    iteration number is the round, the commit the entry names (or a
//!    digest of its `Did` and `Verify` text) is the state, failing tests in
//!    `Verify` are blocking findings and each flag is a warning.
//! 3. [`push_once`] asks the server which rounds of the run it already holds
//!    and sends only the others, so a push that was interrupted resumes
//!    without duplicates (and a round sent twice is idempotent anyway).
//! 4. [`watch`] repeats that whenever the directory changes, and sends a
//!    heartbeat in between so the run is not taken for lost.
//!
//! The run id is the directory's `state.json` `run_id` when it has one, and
//! otherwise a digest of the first journal entry's heading: stable across
//! pushes, and new when the journal is started over.

mod client;
mod journal;
mod mapping;

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

pub use client::{http_client, push_once, watch, PushOptions, PushReport, SentRound};
pub use journal::{JournalEntry, LoopDir, Problem};
pub use mapping::{rounds_of, PlannedRound};

/// What can stop a push as a whole. Problems with single entries are not
/// errors: they are reported in [`LoopDir::problems`] and skipped.
#[derive(Debug, Error)]
pub enum ConnectorError {
    #[error("{path} is not a loop directory: {reason}")]
    NotALoopDir { path: PathBuf, reason: String },
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--to {url:?} is not an http:// or https:// URL")]
    BadUrl { url: String },
    #[error("could not reach {url}: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the server refused the token (401): check --token")]
    Unauthorized,
    #[error("the server answered {status} to {what}: {message}")]
    Server { status: u16, what: String, message: String },
}

/// How the connector's requests name themselves; the ingest API marks the
/// rounds it sends as the connector's.
pub const USER_AGENT_PREFIX: &str = "fixedpoint-push/";

/// How often `--watch` looks at the directory.
pub const WATCH_EVERY: Duration = Duration::from_secs(2);
