//! OpenTelemetry traces in: `POST /v1/traces` turns the spans of agents
//! instrumented with the GenAI conventions into rounds of loops (PRODUCT.md
//! section 2, "The second way in").
//!
//! - `http`: OTLP/HTTP (protobuf and JSON, gzip or not, the loop token as
//!   Bearer), decoded with the `opentelemetry-proto` message types.
//! - `mapping`: each span to its role (model call, tool call, agent or root
//!   span) and what a round needs of it, or a refusal for
//!   `partial_success`. Pure.
//! - `rounds`: a run's waiting spans to the rounds that are complete and
//!   settled, as ingest rounds. Pure.
//! - `store`: spans kept until their rounds are complete, and those rounds
//!   stored through `loops::ingest::store_round`, in one transaction.
//! - `sweeper`: rounds that wait for time alone (the settle time, the
//!   heartbeat window), and forgetting old spans.
//!
//! # Invariants
//!
//! - **A span answered 200 is kept.** The export's spans are written in the
//!   request's transaction before the answer; a restart finds them waiting
//!   and the sweeper stores their rounds.
//! - **A span counts once.** Every accepted span keeps a row (for a day
//!   after its round is stored), so an exporter's retry changes nothing.
//! - **The same spans give the same rounds, in any order.** Rounds are
//!   planned from the spans waiting at the time, sorted by start, and a
//!   round is stored only once the span that completed it has settled
//!   (`FIXEDPOINT_TRACES_SETTLE_MS`); a span that starts before a stored
//!   round's end and arrives after it is refused in `partial_success`.
//! - **A traced round is an ingest round.** It is classified and stored by
//!   the same code as `POST /api/v1/loops/{loop}/rounds`, so the dashboard,
//!   alerts, live streams and the rounds API see it like any other; without
//!   a finding event it is classified on its states alone, never `done`.
//! - **Teams never see each other.** The token's team owns every span,
//!   trace and run the export touches.

mod http;
mod mapping;
mod rounds;
mod store;
mod sweeper;

pub use http::{decode, router, Encoding};
pub use mapping::{map_export, MappedExport, MappedSpan, SpanDetail, SpanRole, FINDING_EVENT};
pub use rounds::{plan_rounds, state_of, Plan, PlannedRound, RunClock, TraceEnd, WaitingSpan};
pub use store::{Stored, DEFAULT_WINDOW_MS};
pub use sweeper::{spawn_traces_sweeper, sweep_every};
