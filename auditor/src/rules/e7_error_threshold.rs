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
//! `max_consecutive_errors=`; a retry written around one request of each
//! pass (`for attempt in range(3): try: ... except: if attempt == 2: raise`,
//! `@retry(stop=stop_after_attempt(5))` on the helper that makes it).
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
    // (A rate limit's error, `except RateLimitError: return`, is one
    // failure that leaves at once, not a limit of tries.)
    let limit = if view.has("rate") {
        &["exceeded", "exceed", "threshold", "many"][..]
    } else {
        &["max", "exceeded", "exceed", "threshold", "many"][..]
    };
    // (`except TooManyInvalidActions`: invalid moves counted to a limit.)
    view.has("breaker") || (view.any(limit) && view.any(&["attempt", "error", "invalid"]))
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    // (`if (denialTrip)`: denials or errors counted until they trip, a
    // breaker by another name.)
    if view.has("breaker") || (view.has("trip") && view.any(&["reject", "error"])) {
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
    // are failures of that request (`for i := 0; i < retryTimes; i++`,
    // `if attempt == 2: raise` in its handler). A `for attempt in range(3)`
    // whose every path returns or raises never tries again: only one that
    // waits between its tries is read from its range.
    if view.retries_one_step {
        // (`test_round < 2*max_tries` counts rounds of tests, each a pass:
        // the counted side, not the limit, says what is counted.)
        let counts_passes = clause.sides.as_ref().is_some_and(|sides| {
            sides.iter().any(|(words, _)| {
                let has = |w: &str| words.iter().any(|x| x == w);
                !has("max") && !has("attempt") && ["round", "turn", "iter", "step"].iter().any(|w| has(w))
            })
        });
        // (`attempt === maxRetries` before the rethrow compares with the
        // limit as surely as `attempt == 2`.)
        let with_the_limit = clause.equality && !clause.zero && (clause.number || view.has("max"));
        let tries = view.has("attempt") && !counts_passes && (clause.ordering || with_the_limit);
        let range =
            view.role == Role::RangeBound && (view.has("attempt") || (clause.bounds_tries && view.waits));
        if tries || range {
            return true;
        }
    }
    // (Blank lines typed in a row, `emptyLineCount >= 1`, end a person's
    // message: nothing failed.)
    let blank_lines = || view.has("empty") && view.has("line");
    // Bad outcomes counted (`bad_attempts <= max_bad_attempts`,
    // `no_command_count >= MAX_NO_COMMAND`).
    if view.any(&["bad", "invalid", "rejected", "wrong", "empty"])
        && view.any(&["attempt", "len", "times"])
        && clause.ordering
        && !blank_lines()
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
        && !blank_lines()
    {
        return true;
    }
    // Passes that timed out, counted in a row against a limit.
    if view.has("timeout") && view.has("consecutive") && clause.ordering {
        return true;
    }
    // (`err.statusCode === 400` asks which error came back, not how many;
    // `len(errs) > 0` whether any came, one failure as much as ten; an
    // entry of the pass before, `history[i - 1].remaining === left`, is a
    // pass compared with the last.)
    let status_code = view.has("status") && view.has("code");
    let any_came = clause.zero && view.has("len");
    let counted_to = clause.equality && clause.number && !clause.zero && !status_code && !view.pass_counter;
    view.has("error") && !any_came && (clause.ordering || counted_to)
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    has("error") && (has("max") || has("limit") || has("threshold"))
}

pub(crate) fn call_matches(facts: &Facts, call: &CallFact) -> bool {
    match call.callee_last.as_str() {
        "CircuitBreaker" | "circuit_breaker" => true,
        // The tries of one request of each pass, given up after a few.
        "stop_after_attempt" | "StopAfterAttempt" => super::decorates_a_step(facts, call.decorator_loop),
        _ => false,
    }
}
