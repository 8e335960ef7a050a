//! E3, budget cap (BOUND).
//!
//! # What it detects
//! Spend compared with a limit: tokens, cost, credits, money.
//!
//! # Why it matters
//! It stops a loop that would otherwise burn money, but says nothing about
//! whether the work is done: on its own it gives DIVERGES.
//!
//! # What counts
//! `if total_tokens > TOKEN_BUDGET: break`, `while spent_usd < max_usd`,
//! `if cost >= budget: return`; framework arguments such as
//! `max_budget_usd=`, `max_cost=`; AutoGen's `TokenUsageTermination`.
//!
//! # What does not
//! `max_tokens=` handed to one completion call (it caps one answer, not the
//! loop); a cost that is added up but never compared (warning
//! `bound-not-enforced`).
//!
//! # Example
//! ```text
//! if usage.total_tokens >= TOKEN_BUDGET:   # E3
//!     break
//! ```

use super::{name_words, ClauseView, COUNT_WORDS};
use crate::facts::{CallFact, Facts, KwargFact, Role};

/// Words of money or tokens spent (canonical: `usd` and `credits` are
/// `cost`): what a bare `budget` must count to be one.
const SPEND_WORDS: &[&str] = &["cost", "token", "usage"];

/// Words of keeping a context short, which a loop does and goes on.
const CONTEXT_MANAGEMENT_WORDS: &[&str] = &[
    "compact",
    "compaction",
    "compress",
    "compression",
    "summarize",
    "summarise",
    "truncate",
    "trim",
    "prune",
];

/// Words of a context window that ran full.
const WINDOW_WORDS: &[&str] = &["full", "overflow", "window", "length", "long", "exceeded", "exceed"];

/// Whether `word` is one of keeping a context short.
pub(crate) fn manages_context(word: &str) -> bool {
    CONTEXT_MANAGEMENT_WORDS.contains(&word)
}

/// A budget error caught to leave the loop (`except CostLimitExceeded:`,
/// `except ContextWindowExceededError:`).
pub(crate) fn handler_matches(view: &ClauseView<'_>) -> bool {
    // (`except BudgetTimeoutError`: the budget's clock ran out, the wall
    // clock's.)
    if view.any(&["timeout", "deadline"]) {
        return false;
    }
    view.has("cost")
        || view.has("budget")
        || (view.has("token") && view.any(&["max", "exceeded", "exceed", "window", "context", "overflow"]))
        || (view.has("context") && view.any(WINDOW_WORDS))
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    // Compactions counted against a cap (`if compactions_performed >=
    // self.config.max_compactions: break`): once the history may be
    // shortened no more, the context window is what ends the loop.
    // (Tries after an overflow error, `compactionRetries <
    // MAX_COMPACTION_RETRIES`, count failures: the error threshold's.)
    if clause.ordering
        && view.any(&["compactions", "compaction"])
        && view.any(&["max", "limit"])
        && !view.any(&["attempt", "retry"])
        && !view.failure_counter
    {
        return true;
    }
    // Tokens measured to decide when to compact the history: the loop
    // shortens its context and goes on (`if tokens_used < threshold:
    // return False` in `_check_and_compact`).
    if view.any(CONTEXT_MANAGEMENT_WORDS) {
        return false;
    }
    // The context window ran full (`if ctx_full:`, `context_overflow`,
    // `errors.Is(err, ErrContextTooLong)`).
    // (Or its length exceeded, `err.contextLengthExceeded`.)
    if view.any(&["context", "ctx"])
        && (view.any(&["full", "overflow", "window"])
            || (view.has("too") && view.has("long"))
            || (view.has("len") && view.any(&["exceeded", "exceeds", "exceed"])))
    {
        return true;
    }
    // The context's size against its cap (`context_size >
    // MAX_CONTEXT_CHARS`): the window the loop may fill.
    // (Only where the loop leaves when it is over: a `while` that drops
    // the oldest message until it fits trims and goes on.)
    // (So is a transcript's, `JSON.stringify(messages).length >
    // maxTranscriptChars`: the conversation measured in characters.)
    let measures_the_conversation = || {
        view.has("transcript")
            || (view.any_callee(&["stringify", "dumps"])
                && view.any(&["messages", "history", "conversation"]))
    };
    if clause.ordering
        && view.role == Role::Guard
        && (view.has("context") || measures_the_conversation())
        && view.has("max")
        && view.any(&["len", "chars", "token"])
        && !view.any(COUNT_WORDS)
    {
        return true;
    }
    // A monitor of spend asked whether everything should stop
    // (`tokenMonitor.shouldPauseAll()`, `cost_tracker.should_stop()`).
    if view.has("should") && view.any(&["pause", "stop"]) && view.any(&["token", "cost"]) {
        return true;
    }
    // Tokens counted with the model's encoder: `len(enc.encode(prompt)) > N`.
    if view.any_callee(&["encode"]) && view.has("len") && clause.ordering {
        return true;
    }
    // The verdict of a budget check (`if err := checkBudget(..); err !=
    // nil`, `if not self.ensure_budget():`).
    if view.has("budget") && view.any(CHECK_VERBS) && !view.any(COUNT_WORDS) {
        return true;
    }
    // The reply says the context or the account's usage ran out
    // (`stop_reason == "model_length"`, `tool_calls == "context_limit"`,
    // `grep -qi "usage limit reached"`).
    // (Literals are read as canonical words: `model_length` is `model len`.)
    let ran_out = ["max", "len", "window", "exceeded", "exceed", "overflow", "reached", "exhausted"];
    // (Only when the way out is taken on that message: an `else: raise`
    // beside `if "context_length_exceeded" in err: compact()` leaves on
    // every other error.)
    // (Nor `!= "token_overflow"`, which leaves on every other one.)
    if !clause.negated
        && !clause.differs
        && ((view.any_literal(&["model"]) && view.any_literal(&["len"]))
            || (view.any_literal(&["context"]) && view.any_literal(&ran_out))
            || (view.any_literal(&["token"]) && view.any_literal(&["overflow"]))
            || (view.any_literal(&["usage", "quota", "cost", "budget"]) && view.any_literal(&ran_out)))
    {
        return true;
    }
    let exceeded = view.any(&["over", "exceed", "exceeded", "exceeds", "exhausted"]);
    // (What a budget of steps has spent, `stepBudget.spent +
    // plan.steps.length > maxStepsPerRun`, is a count of passes: a turn
    // cap.)
    // (Not a budget of money whose names also say a step, `budget.spent_usd
    // + step_cost > budget.max_usd`: "spent" alone reads as "cost", so the
    // names themselves are asked for money or tokens.)
    let names_money = || {
        clause.idents.iter().any(|ident| {
            ["cost", "usd", "dollar", "price", "token", "money", "credit"]
                .iter()
                .any(|word| crate::words::contains_ignoring_case(ident, word))
        })
    };
    let spent_steps = view.has("budget") && view.any(COUNT_WORDS) && !names_money();
    if view.has("cost") && (clause.ordering || exceeded || view.has("max")) && !spent_steps {
        return true;
    }
    // A budget of passes (`explored < ExplorationBudget`, counted by one a
    // pass) is a turn cap.
    // (A budget of calls or requests is a turn cap.)
    // (Nor is one compared with a count of things kept: `graph.stateCount
    // >= budget.maxStates` caps what is explored.)
    if view.has("budget")
        && !view.any(COUNT_WORDS)
        && !view.has("len")
        && !view.any(&["call", "calls", "requests", "request"])
        && !view.counted
        && (clause.ordering || exceeded)
    {
        return true;
    }
    // Spend is summed, never counted one by one: `consecutive_max_tokens
    // >= 3` counts replies cut at the token limit.
    // And a per-request setting compared with another (`MaxTokensEscalate >
    // MaxTokens`) is no spend at all.
    view.any(&["token", "usage"]) && clause.ordering && !view.counted && !compares_settings(clause)
}

/// Each side of the comparison that names tokens names a maximum of them:
/// two per-request settings weighed against each other.
fn compares_settings(clause: &crate::facts::Clause) -> bool {
    let Some(sides) = &clause.sides else { return false };
    let mut token_sides = sides.iter().filter(|(words, _)| words.iter().any(|w| w == "token")).peekable();
    token_sides.peek().is_some()
        && token_sides.all(|(words, _)| {
            words.iter().any(|w| w == "max" || w == "limit")
                && !words
                    .iter()
                    .any(|w| matches!(w.as_str(), "total" | "used" | "usage" | "spent" | "budget"))
        })
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    // A setting given inside a loop configures one request or one record
    // (`thinking: {budget_tokens: 1024}`, `"tool_budget": ...` in a log
    // line), and a thinking budget caps one reply's reasoning.
    if kwarg.in_loop || has("thinking") || matches!(kwarg.name.as_str(), "budget_tokens" | "BudgetTokens") {
        return false;
    }
    if has("cost") {
        return has("max") || has("budget") || has("limit");
    }
    // A bare `budget` (a struct field `Budget: b`, a logged `"tool_budget"`)
    // says nothing of what it counts: its value must be spend, and a value
    // built from a count of passes (`IterationBudget::new(max_iterations)`)
    // is a turn cap.
    if has("budget") && !words.iter().any(|w| COUNT_WORDS.contains(&w.as_str())) {
        let value_has = |word: &str| kwarg.value_words.iter().any(|w| w == word);
        let counts_passes = kwarg.value_words.iter().any(|w| COUNT_WORDS.contains(&w.as_str()));
        let spend = SPEND_WORDS.iter().any(|w| has(w) || value_has(w));
        // (`max_budget=2.5`: an amount with cents is money.)
        let amount = kwarg.value_text.trim().contains('.') && kwarg.value_text.trim().parse::<f64>().is_ok();
        return !counts_passes && (spend || amount);
    }
    // `max_tokens` caps one answer; a total or a budget of tokens caps the loop.
    has("token") && (has("total") || has("budget")) && (has("max") || has("limit"))
}

pub(crate) fn call_matches(facts: &Facts, call: &CallFact) -> bool {
    matches!(call.callee_last.as_str(), "TokenUsageTermination" | "CostTermination")
        || checks_budget_and_leaves(facts, call)
}

/// Verbs of a call that checks something and fails when it does not hold
/// (`if ! _wait_for_budget codex; then break`: a wait that gave up).
const CHECK_VERBS: &[&str] = &["check", "enforce", "ensure", "verify", "guard", "wait"];

/// `self.check_budget()?` in the loop, where `check_budget` is defined in
/// the source and hands the check on (`BudgetContext { .. }.check()`): its
/// failure leaves the loop, and its name says what it checks. A callee the
/// source does not define stays a warning (`check-not-in-source`).
fn checks_budget_and_leaves(facts: &Facts, call: &CallFact) -> bool {
    // (Asked of every call in a loop: a name without "budget" is no such
    // check, and saying so needs no split.)
    if !call.in_loop || call.caught || !crate::words::contains_ignoring_case(&call.callee_last, "budget") {
        return false;
    }
    let words = crate::words::canonical_words(&call.callee_last);
    let has = |word: &str| words.iter().any(|w| w == word);
    has("budget")
        && CHECK_VERBS.iter().any(|verb| has(verb))
        && facts.functions.iter().any(|f| f.name.as_deref() == Some(call.callee_last.as_str()))
}
