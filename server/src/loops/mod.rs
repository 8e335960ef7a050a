//! Connected loops: the ingest API v1 (PRODUCT.md section 2), the store of
//! loops, runs, rounds and findings, run states, the lost-run sweeper and
//! the operator's STOP and STEER.
//!
//! # Invariants
//!
//! - **A round is stored whole or not at all.** A round, its findings, its
//!   run's new state and the delivery of pending operator commands are
//!   written in one transaction; validation happens before it, so a refused
//!   body stores nothing. On PostgreSQL each round has its own transaction;
//!   on SQLite, one thread writes every round, and rounds that arrive
//!   together share a transaction (group commit, see `writer`), each in a
//!   savepoint of its own, so a refused round takes no other with it.
//! - **Rounds of one loop are serialised.** The transaction starts by
//!   writing the loop's row (SQLite: the writer's `BEGIN IMMEDIATE`;
//!   PostgreSQL: the upsert locks the row), so two senders of the same
//!   round cannot both store it: the second finds the first's row and
//!   answers from it.
//! - **The same round gets the same answer.** A round is stored with its
//!   classification and the operator commands it delivered; sending it
//!   again (same body, see [`RoundReport::body_hash`]) replays that answer.
//! - **Teams never see each other.** Every lookup starts from the team of
//!   the caller's token; a loop of another team is indistinguishable from a
//!   loop that does not exist.
//!
//! # How runs end
//!
//! A round with `exit` ends its run:
//! - `done` when the exit is a DETECT exit (E1 goal met, E5 no progress: the
//!   loop itself judged it had finished) or the round has no blocking
//!   findings left;
//! - `stopped` when the exit is E6 (a person interrupted it);
//! - `failed`, with the exit, otherwise (a bound or an external event ended
//!   a run that still had blocking findings).
//!
//! An operator STOP delivered in a response also ends the run as `stopped`;
//! the loop may still report its final round, with an `exit`, to that run.
//! A run that says nothing (no round, no heartbeat) for its loop's heartbeat
//! window becomes `lost`; a lost run that reports again is running again.

pub(crate) mod db;
mod error;
mod http;
pub(crate) mod ingest;
mod queries;
mod sweeper;
pub(crate) mod wire;
pub(crate) mod writer;

/// Stored rounds are announced on the live channel; the event is its type.
pub use crate::live::RoundEvent;
pub use error::LoopsError;
pub use http::router;
pub(crate) use http::{bearer_token, read_body};
pub use ingest::{OperatorNote, RoundAnswer};
pub use queries::{
    bucket_chart, BlockedState, ChartPoint, GlanceRow, HistoryFinding, HistoryRound, LoopHistory,
    LoopSettings, LoopSummary, RoundWindow, RoundsPage, RunGlance, RunSummary, StateSighting, CHART_POINTS,
    MAX_HISTORY_ROUNDS,
};
pub use sweeper::{spawn_lost_run_sweeper, sweep_lost_runs, LOST_SWEEP_EVERY};
pub use wire::{
    validate_loop_name, Blocked, ExitId, Finding, Heartbeat, RoundError, RoundReport, RoundSource, Spent,
    ToolCall,
};

/// The states of a run, as stored and shown.
pub mod run_state {
    pub const RUNNING: &str = "running";
    pub const BLOCKED: &str = "blocked";
    pub const DONE: &str = "done";
    pub const FAILED: &str = "failed";
    pub const STOPPED: &str = "stopped";
    pub const LOST: &str = "lost";

    /// Whether a run in `state` has ended for good. `lost` is not final: a
    /// lost run that reports again was only silent.
    pub fn is_final(state: &str) -> bool {
        matches!(state, DONE | FAILED | STOPPED)
    }
}
