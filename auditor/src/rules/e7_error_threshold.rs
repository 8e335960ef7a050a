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
use crate::facts::{CallFact, Facts, KwargFact};

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    if view.has("breaker") {
        return true;
    }
    view.has("error") && (clause.ordering || (clause.equality && clause.number && !clause.zero))
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    has("error") && (has("max") || has("limit") || has("threshold"))
}

pub(crate) fn call_matches(_facts: &Facts, call: &CallFact) -> bool {
    matches!(call.callee_last.as_str(), "CircuitBreaker" | "circuit_breaker")
}
