//! E2, turn cap (BOUND).
//!
//! # What it detects
//! A bounded number of iterations, turns, steps, rounds, attempts or retries.
//!
//! # Why it matters
//! It guarantees that the loop stops, but not that it finished: on its own it
//! gives DIVERGES.
//!
//! # What counts
//! `for _ in range(N)`, `for _ in 0..MAX_TURNS`, `for i in $(seq 1 $MAX)`; a
//! counter compared with a maximum (`turn >= max_turns`, `i < 10` as a loop
//! condition); framework arguments that bound the framework's own loop
//! (`max_iterations=`, `max_turns=`, `max_steps=`, `recursion_limit`,
//! `max_round=`, `stopWhen: stepCountIs(5)`, TanStack AI's
//! `agentLoopStrategy: maxIterations(10)`, AutoGen's
//! `MaxMessageTermination`); a retry decorator's `stop_after_attempt(3)` on a
//! function that is the loop itself.
//!
//! # What does not
//! `range(len(items))` (a walk over a collection); a retry count of one request
//! (`OpenAI(max_retries=3)`); `max_tokens`; a counter that is incremented but
//! never compared (a warning, `bound-not-enforced`).
//!
//! # Example
//! ```text
//! for turn in range(MAX_TURNS):   # E2
//!     ...
//! ```

use super::{decorator_counts, name_words, ClauseView, COUNT_WORDS};
use crate::facts::{CallFact, Facts, KwargFact, Role};

/// Names that are plain loop counters when compared with a number.
const GENERIC_COUNTERS: &[&str] =
    &["i", "j", "k", "n", "counter", "idx", "cnt", "num", "len", "max", "loop", "loops"];

/// A loop that starts a pool's workers (`for (let i = 0; i <
/// options.concurrency; i++)`, `for _ in range(max_workers)`): it counts
/// workers, not passes, and ends nothing the agent does.
pub(crate) fn counts_workers(view: &ClauseView<'_>) -> bool {
    view.any(&["concurrency", "workers", "worker", "threads", "parallelism", "pool"])
        && !view.any(COUNT_WORDS)
}

/// The clause measures text, not how many entries there are: a
/// conversation's size in characters (`len(json.dumps(messages)) >
/// self.char_budget`), one message's content, a context window.
fn measures_text(view: &ClauseView<'_>) -> bool {
    view.any(&[
        "char",
        "chars",
        "characters",
        "byte",
        "bytes",
        "content",
        "text",
        "context",
        "window",
        "json",
        "dumps",
    ])
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    if view.role == Role::RangeBound {
        return true;
    }
    // A length compared with zero asks whether something is empty
    // (`len(message.ToolCalls) > 0`), not how many passes ran.
    if clause.zero && view.has("len") && !view.pass_counter {
        return false;
    }
    // A length that only makes sure there are enough entries to compare
    // (`len(acts) >= 3 and acts[-1] == acts[-2] == acts[-3]`).
    if clause.beside_repeat && view.has("len") {
        return false;
    }
    // A plain index equal to a collection's measured length asks for the
    // last item of a walk (`i === outputs.length - 1`), not how many passes
    // ran (`turn_count == 30` is a count: it is the plain side).
    let last_item = || {
        let Some([a, b]) = clause.sides.as_ref() else { return false };
        let measured = |(words, plain): &(Vec<String>, Option<String>)| {
            plain.is_none() && words.len() > 1 && words.iter().any(|w| w == "len")
        };
        let index = |(words, plain): &(Vec<String>, Option<String>)| {
            plain.is_some() && !words.iter().any(|w| w == "len")
        };
        (measured(a) && index(b)) || (measured(b) && index(a))
    };
    if clause.equality && !clause.ordering && !view.has("max") && last_item() {
        return false;
    }
    // A counter the loop moves by a constant each pass, whatever its name
    // (`calls_left -= 1` ... `while calls_left > 0`).
    if view.pass_counter && (clause.ordering || (clause.equality && clause.number)) {
        return true;
    }
    // A budget of things counted one at a time (`explored <
    // ExplorationBudget`); money and tokens were claimed first.
    if view.counted && view.has("budget") && clause.ordering {
        return true;
    }
    // The history grows by a pass each time: its length is a pass count
    // (`if len(history) >= 50: break`, `while len(self.run_history) <
    // self.budget`).
    if clause.ordering
        && view.has("len")
        && view.any(&["seen", "message", "messages", "trajectory", "actions", "steps"])
        && (clause.number || view.has("max") || (view.has("budget") && !measures_text(view)))
    {
        return true;
    }
    // A limit flagged as reached (`_tool_limit_reached`, `max_steps_hit`);
    // time, money and failures were claimed by their own rules first.
    if view.has("max") && view.any(&["reached", "hit", "exceeded", "exceed", "exhausted"]) {
        return true;
    }
    // A helper given the count (`should_continue(iterations)`,
    // `has_reached_max_iterations(i, max_iter)`).
    let asks_to_go_on = clause.call_root.as_deref().is_some_and(|name| {
        crate::words::canonical_words(name).iter().any(|w| {
            matches!(
                w.as_str(),
                "continue"
                    | "max"
                    | "reached"
                    | "exceeded"
                    | "proceed"
                    | "allow"
                    | "allowed"
                    | "should"
                    | "can"
            )
        })
    });
    if asks_to_go_on
        && clause.words.iter().any(|w| COUNT_WORDS.contains(&w.as_str()) && !clause.callees.contains(w))
    {
        return true;
    }
    let compared = clause.ordering || (clause.equality && (clause.number || view.has("max")));
    if view.any(COUNT_WORDS) && compared {
        return true;
    }
    if view.has("max")
        && view.any(&["message", "messages", "msg", "calls", "requests", "request", "reply", "replies"])
        && clause.ordering
    {
        return true;
    }
    // Anything counted against a maximum that is not time, money or failures
    // (those rules come first): `runs >= MAX_RUNS`, `len(history) > MAX_HISTORY`.
    if clause.ordering && view.has("max") {
        return true;
    }
    // `i < 10`, `[ $n -lt 5 ]`: a bare counter against a number.
    clause.ordering
        && (clause.number || view.has("max"))
        && !clause.words.is_empty()
        && clause.words.iter().all(|w| GENERIC_COUNTERS.contains(&w.as_str()))
        && !(clause.zero && view.has("len"))
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    if kwarg.decorator_loop.is_some() {
        return has("attempt") || (has("max") && has("tries"));
    }
    if matches!(kwarg.name.as_str(), "stopWhen" | "stop_when") {
        return kwarg.value_words.iter().any(|w| w == "step" || w == "round" || w == "turn");
    }
    // TanStack AI: `agentLoopStrategy: maxIterations(10)`.
    if kwarg.name == "agentLoopStrategy" {
        let has_value = |word: &str| kwarg.value_words.iter().any(|w| w == word);
        return has_value("max") && ["iter", "step", "turn", "round"].iter().any(|w| has_value(w));
    }
    if has("attempt") {
        // `max_retries=` configures one request's retries.
        return false;
    }
    (has("max") || has("limit"))
        && words.iter().any(|w| {
            COUNT_WORDS.contains(&w.as_str())
                || matches!(
                    w.as_str(),
                    "message"
                        | "messages"
                        | "msg"
                        | "reply"
                        | "consecutive"
                        | "request"
                        | "requests"
                        // (`max_loops=50`: the framework's passes.)
                        | "loops"
                )
        })
}

pub(crate) fn call_matches(facts: &Facts, call: &CallFact) -> bool {
    match call.callee_last.as_str() {
        // (Go: charmbracelet/fantasy's `fantasy.StepCountIs(10)`.)
        "MaxMessageTermination" | "stepCountIs" | "StepCountIs" => true,
        "stop_after_attempt" | "StopAfterAttempt" => decorator_counts(facts, call.decorator_loop),
        // An agent's option or setter of its own cap, outside any loop
        // (`agent.WithMaxSteps(10)`, `a.SetMaxIterations(10)`).
        name if call.loops.is_empty()
            && name.len() <= 24
            && ["with", "set"]
                .iter()
                .any(|prefix| name.get(..prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(prefix))) =>
        {
            let words = crate::words::canonical_words(name);
            matches!(words.first().map(String::as_str), Some("with" | "set"))
                && words.iter().any(|w| w == "max")
                && words.iter().any(|w| matches!(w.as_str(), "iter" | "turn" | "step" | "round"))
        }
        _ => false,
    }
}
