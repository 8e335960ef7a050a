//! E7, error threshold (BOUND).
//!
//! # What it detects
//! Failures counted against a threshold: consecutive-failure limits, error
//! budgets, circuit breakers.
//!
//! # Why it matters
//! A loop that keeps failing should stop rather than retry forever; it is a
//! bound (DIVERGES on its own), because failing is not finishing.
//!
//! # What counts
//! `if consecutive_failures >= MAX_FAILURES: raise`, `errors > 3 && break`,
//! `if breaker.is_open(): return`; framework arguments such as
//! `max_consecutive_errors=`.
//!
//! # What does not
//! `if err != nil { return err }` on its own (a failure that ends the loop at
//! once is not a threshold), an exception handler that only logs, a failure
//! counter that is never compared (warning `bound-not-enforced`).
//!
//! # Example
//! ```text
//! except ToolError:
//!     failures += 1
//!     if failures >= MAX_FAILURES:   # E7
//!         raise
//! ```

use super::{name_words, ClauseView};
use crate::facts::Role;
use crate::facts::{CallFact, Facts, KwargFact};

/// A retry limit's error caught to leave the loop (`except MaxRetriesExceeded:`).
pub(crate) fn handler_matches(view: &ClauseView<'_>) -> bool {
    view.has("breaker")
        || (view.any(&["max", "exceeded", "exceed", "threshold", "many"]) && view.any(&["attempt", "error"]))
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    if view.has("breaker") {
        return true;
    }
    // An allowance spent by each skip just before the exit (`if
    // empty_retries_left > 0 { empty_retries_left -= 1; continue }` then
    // `break`, `if nudges < MAX_NUDGES { nudges++; continue }` then `return
    // Err(..)`): what it counts is the passes that went wrong, unless its
    // words say it counts every pass.
    let wrong_passes =
        view.any(&["nudge", "nudges", "attempt", "repair", "repairs", "error", "empty", "invalid"]);
    if clause.allowance
        && (wrong_passes || !view.any(&["iter", "turn", "step", "round", "depth", "recursion"]))
    {
        return true;
    }
    // A retry loop around one request inside the agent's loop: its attempts
    // are failures of that request (`for i := 0; i < retryTimes; i++`).
    if view.retries_one_step && view.has("attempt") && (clause.ordering || view.role == Role::RangeBound) {
        return true;
    }
    // Bad outcomes counted (`bad_attempts <= max_bad_attempts`,
    // `no_command_count >= MAX_NO_COMMAND`).
    if view.any(&["bad", "invalid", "rejected", "wrong", "empty"])
        && view.any(&["attempt", "len", "times"])
        && clause.ordering
    {
        return true;
    }
    // A counter moved only when something failed, compared with a limit.
    // (One set back to zero may count successes in a row instead:
    // `consecutive_complete >= required_verifications` is a goal met.)
    let counts_successes = view.any(&["done", "pass"]) && !view.has("error");
    if view.failure_counter
        && !counts_successes
        && (clause.ordering || (clause.equality && clause.number && !clause.zero))
    {
        return true;
    }
    // (`err.statusCode === 400` asks which error came back, not how many.)
    let status_code = view.has("status") && view.has("code");
    view.has("error")
        && (clause.ordering || (clause.equality && clause.number && !clause.zero && !status_code))
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    has("error") && (has("max") || has("limit") || has("threshold"))
}

pub(crate) fn call_matches(_facts: &Facts, call: &CallFact) -> bool {
    matches!(call.callee_last.as_str(), "CircuitBreaker" | "circuit_breaker")
}
