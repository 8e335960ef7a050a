//! The convergence engine: given the earlier rounds of a loop run and the
//! round just reported, it says what kind of round this was and whether the
//! loop should go on. PRODUCT.md section 2 is the contract it implements.
//!
//! # Invariants
//!
//! - **Pure.** No IO, no clock, no randomness, no async, no global state.
//!   Everything the answer depends on is in the arguments, so the store
//!   decides what history to pass and the engine never reaches for more.
//! - **Deterministic.** The same arguments give the same [`Classification`],
//!   reason text included. The ingest API relies on this: a round sent again
//!   must get the same answer it got the first time.
//! - **Blind to the order of findings.** A round's findings are a set of
//!   [`FindingKey`]s, `(target, severity, criterion)`: their order and any
//!   duplicates mean nothing, and a code target without `end_line` is the
//!   same as one whose `end_line` equals its `start_line`.
//! - **Total.** Every input gets an answer; nothing here panics on input.
//!   Validation that deserves a `400` happens when a [`Target`] is
//!   deserialised, and is reported with the field it concerns.
//!
//! # The classes
//!
//! With `B_n` the blocking keys of round `n` and `F_n` all its keys, the
//! first of these that holds is the class ("previous" is the run's previous
//! reported round; round numbers may have gaps):
//!
//! 1. `fixed_point`: the state equals the previous round's. Stop; `converged`
//!    if `B_n` is empty, else `wedged`.
//! 2. `cycle`: the state equals an earlier round `k`'s, not the previous
//!    one's; the period is `n - k` for the latest such `k`, the smallest.
//!    Stop; `cycling`, or `converged` if `B_n` is empty (the loop came back
//!    to a state with nothing blocking, so there is nothing left to do).
//! 3. `done`: `B_n` is empty. Stop; `converged`.
//! 4. `first`: the run's first round. Continue; `started`.
//! 5. `ratcheting` (added to PRODUCT.md's eight, so checked before the
//!    stuck classes it takes rounds from): `|B_n| == |B_{n-1}|` and the
//!    round's ratchet moved since the previous round's (see
//!    [`Ratchet::moved_from`]). Continue; `progressing`. A round that
//!    moved the loop's one number is never a stall.
//! 6. `stalled`: `B_n == B_{n-1}`. `stuck`.
//! 7. `thrashing`: `|B_n| == |B_{n-1}|` but the sets differ. `stuck`.
//! 8. `converging`: `|F_n| < |F_{n-1}|` and `B_n ⊆ B_{n-1}`. Continue;
//!    `progressing`.
//! 9. `regressing`: anything else. Continue; `regressed`.
//!
//! # The stall threshold
//!
//! The engine counts rounds without progress: a streak that a `stalled`,
//! `thrashing`, `fixed_point` or `cycle` round extends by one and any other
//! class resets to zero. A `stalled` or `thrashing` round advises `stop`
//! once the streak, counting itself, reaches the threshold (default 2;
//! 0 counts as 1). So with the default, the first stalled round after some
//! progress continues and the second in a row stops. `stalled` and
//! `thrashing` share the streak, because both mean the blocking count did
//! not move: a loop that alternates between them would otherwise never be
//! stopped. A fixed point or a cycle extends the streak rather than
//! resetting it, because "a pass that changes nothing consumes the budget
//! rather than resetting it": a loop that ignores a `stop` and repeats
//! itself gets no fresh allowance. The streak is reported as `consecutive`
//! on rounds that extend it and is zero on the others.
//!
//! # The ceiling
//!
//! When the loop has a `max_rounds` and the round's number is at or above
//! it, an answer that would have been `continue` becomes `stop` with outcome
//! `bounded` and the [`Bound`] recorded; the class stays what it was and the
//! reason says the ceiling was hit. An answer that already stops keeps its
//! own outcome, so a loop that converges on its last allowed round is
//! recorded as converged: running out of rounds and converging are
//! different diagnoses.
//!
//! # History
//!
//! [`classify_round`] takes the earlier rounds in any order and ignores
//! those numbered at or above the current round, so the caller may pass the
//! whole stored run. It replays the history each time, which is linear in
//! the run's findings: it is the reference. [`classify_next`] gives the same
//! answer from a [`RunMemory`] (the previous round and the earlier rounds of
//! the same state), which the store reads with two indexed lookups, so
//! ingest costs the same at every length of run; a property test holds the
//! two together. [`classify_run`] classifies a whole run in one walk.

mod classify;
mod diff;
mod finding;
mod fingerprint;
mod ratchet;
mod reason;

#[cfg(test)]
mod tests;

pub use classify::{
    classify_next, classify_round, classify_run, Advice, Bound, Class, Classification, LoopPolicy, Outcome,
    PreviousRound, RoundInput, RunMemory, UnknownWireName, DEFAULT_STALL_THRESHOLD,
};
pub use diff::{diff_rounds, RoundDiff};
pub use finding::{FindingKey, Severity, Target, TargetError};
pub use fingerprint::{Fingerprint, NEAR_BITS};
pub use ratchet::Ratchet;
