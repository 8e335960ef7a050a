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
use crate::facts::{CallFact, Facts, KwargFact};

/// Words of a context window that ran full.
const WINDOW_WORDS: &[&str] = &["full", "overflow", "window", "length", "exceeded", "exceed"];

/// A budget error caught to leave the loop (`except CostLimitExceeded:`,
/// `except ContextWindowExceededError:`).
pub(crate) fn handler_matches(view: &ClauseView<'_>) -> bool {
    view.has("cost")
        || view.has("budget")
        || (view.has("token") && view.any(&["max", "exceeded", "exceed", "window", "context", "overflow"]))
        || (view.has("context") && view.any(WINDOW_WORDS))
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    // The context window ran full (`if ctx_full:`, `context_overflow`).
    if view.any(&["context", "ctx"]) && view.any(&["full", "overflow", "window"]) {
        return true;
    }
    // Tokens counted with the model's encoder: `len(enc.encode(prompt)) > N`.
    if view.any_callee(&["encode"]) && view.has("len") && clause.ordering {
        return true;
    }
    let exceeded = view.any(&["over", "exceed", "exceeded", "exceeds", "exhausted"]);
    if view.has("cost") && (clause.ordering || exceeded || view.has("max")) {
        return true;
    }
    // A budget of passes (`explored < ExplorationBudget`, counted by one a
    // pass) is a turn cap.
    // (A budget of calls or requests is a turn cap.)
    if view.has("budget")
        && !view.any(COUNT_WORDS)
        && !view.any(&["call", "calls", "requests", "request"])
        && !view.counted
        && (clause.ordering || exceeded)
    {
        return true;
    }
    // Spend is summed, never counted one by one: `consecutive_max_tokens
    // >= 3` counts replies cut at the token limit.
    view.any(&["token", "usage"]) && clause.ordering && !view.counted
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
    if has("cost") || (has("budget") && !words.iter().any(|w| COUNT_WORDS.contains(&w.as_str()))) {
        return has("max") || has("budget") || has("limit");
    }
    // `max_tokens` caps one answer; a total or a budget of tokens caps the loop.
    has("token") && (has("total") || has("budget")) && (has("max") || has("limit"))
}

pub(crate) fn call_matches(_facts: &Facts, call: &CallFact) -> bool {
    matches!(call.callee_last.as_str(), "TokenUsageTermination" | "CostTermination")
}
