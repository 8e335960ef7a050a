//! E4, wall clock (BOUND).
//!
//! # What it detects
//! Elapsed time compared with a limit, a deadline, a timeout that ends the
//! whole loop.
//!
//! # Why it matters
//! It bounds how long the loop may run, whatever it achieves: on its own it
//! gives DIVERGES.
//!
//! # What counts
//! `if time.monotonic() - start > MAX_SECONDS: break`, `while time.Since(t0) <
//! limit`, `case <-time.After(d): return`, a deadline flag; a wrapper around
//! the loop: `timeout 600 ./agent.sh` in Bash, `asyncio.wait_for(run(),
//! timeout=...)`, `tokio::time::timeout(...)`, `context.WithTimeout` outside the
//! loop, `AbortSignal.timeout(ms)`, `signal.alarm(n)`; framework arguments such
//! as `max_execution_time=`; AutoGen's `TimeoutTermination`.
//!
//! # What does not
//! A `timeout=` handed to one HTTP call, a timeout wrapper inside the loop
//! around one request, an exception class named `Timeout` (`except
//! requests.Timeout: continue` does not end the loop).
//!
//! # Example
//! ```text
//! deadline = time.monotonic() + 600
//! while time.monotonic() < deadline:   # E4
//!     ...
//! ```

use super::{decorator_counts, name_words, ClauseView};
use crate::facts::{CallFact, Facts, KwargFact};

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    if view.has("deadline") {
        return true;
    }
    // A timeout around one request, `timeout(limit,
    // provider.infer(&req))`, or of one tool's handler, `durationMs >
    // guardrails.timeoutMs` for a tool, bounds that request or that call.
    let one_request = view.any_callee(&["timeout"]) && view.any(&["request", "infer", "inference", "fetch"]);
    let one_tool = view.has("tool")
        && view.has("timeout")
        && !view.any(&["run", "loop", "total", "overall", "agent", "session", "task"]);
    if one_request || one_tool {
        return false;
    }
    // `execCtx, cancel := context.WithTimeout(ctx, limit)` ... `if
    // execCtx.Err() != nil`: the context's time is up.
    // (Made inside the loop, `timeoutCtx` of one request's stream, it
    // bounds that pass.)
    if view.made_with_timeout
        && !view.timeout_made_in_pass
        && view.any(&["ctx", "context"])
        && view.any(&["error", "done"])
        && !clause.ordering
    {
        return true;
    }
    // `while (!controller.signal.aborted)` with `setTimeout(() =>
    // controller.abort(), timeoutMs)`: the timer is the deadline.
    if view.made_with_timeout && !view.timeout_made_in_pass && view.has("signal") && view.has("cancel") {
        return true;
    }
    // (A rate limit's sliding window, `now - stamps[0] > rateWindowMs`,
    // spaces requests out; it ends nothing.)
    if view.has("time")
        && names_a_clock(view)
        && !view.any(&["rate", "throttle", "cooldown"])
        && (clause.ordering || view.any(&["after", "out", "up", "exceeded", "exceed", "over", "max"]))
    {
        return true;
    }
    // (Timeouts counted in a row, `consecutive_timeouts >= max_timeouts`,
    // are failures of passes: an error threshold.)
    view.has("timeout")
        && !view.has("consecutive")
        && !view.timeout_made_in_pass
        && (clause.ordering || view.any_callee(&["timeout"]) || view.any(&["timed", "reached"]))
}

/// Whether the clause names time itself (`elapsed`, `time.time()`,
/// `duration`, `max_seconds`), not only a word that sounds like it (`now_node`).
fn names_a_clock(view: &ClauseView<'_>) -> bool {
    view.clause.idents.iter().any(|ident| {
        let lower = ident.to_ascii_lowercase();
        [
            "time",
            "elapsed",
            "duration",
            "sec",
            "minute",
            "hour",
            "clock",
            "monotonic",
            "since",
            "ms",
            "date",
            "instant",
        ]
        .iter()
        .any(|unit| lower.contains(unit))
    })
}

/// A deadline's error caught to leave the loop (`except DeadlineExceeded:`),
/// or a timeout of the whole run (`except BudgetTimeoutError`,
/// `AgentTimeoutError`); a bare `except TimeoutError` is as likely one
/// request's.
pub(crate) fn handler_matches(view: &ClauseView<'_>) -> bool {
    view.has("deadline")
        || (view.has("timeout")
            && view.any(&["budget", "run", "task", "agent", "session", "total", "overall", "wall", "job"]))
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    if kwarg.decorator_loop.is_some() {
        return has("time") && has("max");
    }
    if has("deadline") {
        return true;
    }
    // `abortSignal: AbortSignal.timeout(60_000)` on the run, not on one
    // request made inside a loop.
    if kwarg.value_callees.iter().any(|w| w == "timeout") && has("signal") && !kwarg.in_loop {
        return true;
    }
    // (`maxTimeToFirstToken`, `max_time_per_step`: how long one request or
    // one step may take, not the run.)
    // (Nor `max_interval_minutes`: how long to wait between passes.)
    let one_request = (has("first") && has("token")) || has("per") || has("step") || has("interval");
    has("time") && has("max") && !has("timeout") && !one_request
}

pub(crate) fn call_matches(facts: &Facts, call: &CallFact) -> bool {
    match call.callee_last.as_str() {
        "TimeoutTermination" => true,
        "stop_after_delay" => decorator_counts(facts, call.decorator_loop),
        "alarm" => call.callee.starts_with("signal"),
        "timeout" | "wait_for" | "fail_after" | "move_on_after" | "WithTimeout" | "WithDeadline" => {
            // Only a timeout around the loop bounds the loop: not one inside
            // it, and not one in a helper the loop calls on every turn (nor
            // in a closure such a helper makes: the nearest named function
            // is the helper).
            // (Nor one in a closure written inside a loop's body, a
            // retry callback that times its own request.)
            // (A field's method of the same name, `self._tools.execute` in
            // the loop, is no call of the function that holds the timeout.)
            let in_a_loops_body =
                facts.loops.iter().any(|l| l.kind.is_written() && l.range.contains(&call.range.start));
            let called_on_turns = |name: &String| {
                facts.called_in_loops.contains(name)
                    && facts.calls.iter().any(|other| {
                        let fields_method = ["self.", "this."].iter().any(|receiver| {
                            other.callee.strip_prefix(receiver).is_some_and(|rest| rest.contains('.'))
                        });
                        &other.callee_last == name && !fields_method && !other.loops.is_empty()
                    })
            };
            !call.in_loop
                && !in_a_loops_body
                && call.decorator_loop.is_none()
                && call.named_function.as_ref().is_none_or(|name| !called_on_turns(name))
                && !configures_a_client(call)
                && !bounds_one_step(facts, call)
        }
        _ => false,
    }
}

/// `reqwest::Client::builder().timeout(..)`, `http.timeout(..)`: the
/// timeout of every request the client makes, not of the loop.
fn configures_a_client(call: &CallFact) -> bool {
    let callee = call.callee.to_ascii_lowercase();
    ["client", "builder", "http", "request", "session"].iter().any(|word| callee.contains(word))
}

/// `prepCtx, prepCancel := context.WithTimeout(ctx, 30*time.Second)`: a
/// context named for one step (preparing, stopping, a probe) bounds that
/// step, not the run. So does a timeout in a function that stops or closes
/// what runs (`async def stop(self)`, `Shutdown()`): it bounds the wait for
/// the loop to finish after it was told to (`await
/// asyncio.wait_for(self._task, timeout=5.0)`).
fn bounds_one_step(facts: &Facts, call: &CallFact) -> bool {
    const STEPS: &[&str] = &[
        "prep", "probe", "health", "dial", "connect", "req", "fetch", "read", "write", "init", "setup",
        "drain", "flush", "save",
    ];
    let in_a_stopping_function = call.named_function.as_deref().is_some_and(|name| {
        let words = crate::words::split_identifier(name);
        stops_what_runs(&words)
            && !words.iter().any(|w| {
                matches!(w.as_str(), "run" | "loop" | "main" | "agent" | "execute" | "until" | "start")
            })
    });
    in_a_stopping_function
        || facts
            .assigns
            .iter()
            .filter(|a| a.range.start <= call.range.start && a.range.end >= call.range.end)
            .any(|a| {
                stops_what_runs(&crate::words::split_identifier(&a.target))
                    || crate::words::canonical_words(&a.target).iter().any(|w| STEPS.contains(&w.as_str()))
            })
}

/// A name's own words (not their canonical forms, which read "shutdown" as
/// a cancel and "terminate" as done) that stop or close what runs.
fn stops_what_runs(words: &[String]) -> bool {
    let has = |word: &str| words.iter().any(|w| w == word);
    [
        "stop",
        "stops",
        "stopped",
        "stopping",
        "shutdown",
        "close",
        "cleanup",
        "teardown",
        "dispose",
        "terminate",
    ]
    .iter()
    .any(|w| has(w))
        || (has("down") && (has("shut") || has("tear")))
        || (has("clean") && has("up"))
}
