//! The eight exit rules, one file each, and the shared view of a clause they
//! judge.
//!
//! A clause is one operand of a condition under which a loop can be left (see
//! `facts.rs`). Each rule answers three questions: does this clause express
//! my exit, does this keyword argument configure it, does this call set it up.
//! A clause is claimed by at most one rule, in a fixed order of precedence:
//! the external and human exits first (their words are the most specific:
//! `ctx.Done()` is cancellation, not completion), then no progress, the three
//! bounds with units (time, money, failures), turn caps, and goal met last,
//! because its vocabulary (`done`, `ok`, `final`) is the loosest.

use crate::facts::{CallFact, Clause, Facts, HashSet, KwargFact, Role};
use crate::ExitId;

type ClauseRule = fn(&ClauseView<'_>) -> bool;
type KwargRule = fn(&KwargFact) -> bool;
type CallRule = fn(&Facts, &CallFact) -> bool;

pub(crate) mod e1_goal_met;
pub(crate) mod e2_turn_cap;
pub(crate) mod e3_budget_cap;
pub(crate) mod e4_wall_clock;
pub(crate) mod e5_no_progress;
pub(crate) mod e6_human_interrupt;
pub(crate) mod e7_error_threshold;
pub(crate) mod e8_external_event;

/// A clause with its words expanded by one level of assignment: in
/// `elapsed = time.time() - start` ... `if elapsed > LIMIT`, the clause reads
/// `elapsed` and `time`.
pub(crate) struct ClauseView<'a> {
    pub clause: &'a Clause,
    pub role: Role,
    /// The clause's words, its names' aliases' words and its callees',
    /// borrowed from the facts.
    pub words: HashSet<&'a str>,
    pub literals: HashSet<&'a str>,
    pub callees: HashSet<&'a str>,
}

impl<'a> ClauseView<'a> {
    pub(crate) fn new(facts: &'a Facts, clause: &'a Clause, role: Role) -> ClauseView<'a> {
        let mut words: HashSet<&'a str> = clause.words.iter().map(String::as_str).collect();
        for ident in &clause.idents {
            if let Some((alias_words, _)) = facts.aliases.get(ident) {
                words.extend(alias_words.iter().map(String::as_str));
            }
        }
        words.extend(clause.callees.iter().map(String::as_str));
        ClauseView {
            clause,
            role,
            words,
            literals: clause.literals.iter().map(String::as_str).collect(),
            callees: clause.callees.iter().map(String::as_str).collect(),
        }
    }

    pub(crate) fn has(&self, word: &str) -> bool {
        self.words.contains(word)
    }

    pub(crate) fn any(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.words.contains(*word))
    }

    pub(crate) fn any_literal(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.literals.contains(*word))
    }

    pub(crate) fn any_callee(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.callees.contains(*word))
    }

    /// Compares anything at all (`<`, `==`, `in`).
    pub(crate) fn compares(&self) -> bool {
        self.clause.ordering || self.clause.equality || self.clause.membership
    }
}

/// Words that count iterations of a loop.
pub(crate) const COUNT_WORDS: &[&str] = &["iter", "turn", "step", "round", "attempt", "depth", "recursion"];

/// The exit a clause expresses, if any. Handler clauses (an exception type)
/// only speak for the human and external exits: `except Timeout:` is not a
/// wall clock.
pub(crate) fn classify(view: &ClauseView<'_>) -> Option<ExitId> {
    if e8_external_event::clause_matches(view) {
        return Some(ExitId::E8);
    }
    if e6_human_interrupt::clause_matches(view) {
        return Some(ExitId::E6);
    }
    if view.role == Role::Handler {
        return None;
    }
    let ordered: [(ExitId, ClauseRule); 6] = [
        (ExitId::E5, e5_no_progress::clause_matches),
        (ExitId::E4, e4_wall_clock::clause_matches),
        (ExitId::E3, e3_budget_cap::clause_matches),
        (ExitId::E7, e7_error_threshold::clause_matches),
        (ExitId::E2, e2_turn_cap::clause_matches),
        (ExitId::E1, e1_goal_met::clause_matches),
    ];
    ordered.iter().find(|(_, matches)| matches(view)).map(|(id, _)| *id)
}

/// The words of a keyword argument's name.
pub(crate) fn name_words(kwarg: &KwargFact) -> &[String] {
    &kwarg.name_words
}

/// A keyword value that switches a bound off rather than setting one.
pub(crate) fn is_unbounded_value(kwarg: &KwargFact) -> bool {
    let value = kwarg.value_text.trim();
    matches!(
        value,
        "None"
            | "null"
            | "undefined"
            | "nil"
            | "0"
            | "-1"
            | "Infinity"
            | "math.inf"
            | "sys.maxsize"
            | "float('inf')"
            | "float(\"inf\")"
            | "Number.POSITIVE_INFINITY"
            | "Number.MAX_SAFE_INTEGER"
    )
}

/// The exit a keyword argument (or configuration key) sets up, if any.
pub(crate) fn classify_kwarg(kwarg: &KwargFact) -> Option<ExitId> {
    if is_unbounded_value(kwarg) {
        return None;
    }
    let rules: [(ExitId, KwargRule); 8] = [
        (ExitId::E8, e8_external_event::kwarg_matches),
        (ExitId::E6, e6_human_interrupt::kwarg_matches),
        (ExitId::E4, e4_wall_clock::kwarg_matches),
        (ExitId::E3, e3_budget_cap::kwarg_matches),
        (ExitId::E7, e7_error_threshold::kwarg_matches),
        (ExitId::E2, e2_turn_cap::kwarg_matches),
        (ExitId::E1, e1_goal_met::kwarg_matches),
        (ExitId::E5, e5_no_progress::kwarg_matches),
    ];
    rules.iter().find(|(_, matches)| matches(kwarg)).map(|(id, _)| *id)
}

/// The exits a call sets up on its own (termination conditions, signal
/// handlers, wrapping timeouts).
pub(crate) fn classify_call(facts: &Facts, call: &CallFact) -> Vec<ExitId> {
    let rules: [(ExitId, CallRule); 8] = [
        (ExitId::E1, e1_goal_met::call_matches),
        (ExitId::E2, e2_turn_cap::call_matches),
        (ExitId::E3, e3_budget_cap::call_matches),
        (ExitId::E4, e4_wall_clock::call_matches),
        (ExitId::E5, e5_no_progress::call_matches),
        (ExitId::E6, e6_human_interrupt::call_matches),
        (ExitId::E7, e7_error_threshold::call_matches),
        (ExitId::E8, e8_external_event::call_matches),
    ];
    rules.iter().filter(|(_, matches)| matches(facts, call)).map(|(id, _)| *id).collect()
}

/// Whether a retry decorator's settings count: a decorator on a function that
/// the loop calls once per turn bounds one request, not the loop.
pub(crate) fn decorator_counts(facts: &Facts, loop_id: Option<usize>) -> bool {
    match loop_id {
        None => true,
        Some(id) => {
            facts.loops[id].function_name.as_ref().is_none_or(|name| !facts.called_in_loops.contains(name))
        }
    }
}

/// Signal registration calls: `signal.signal`, `process.on`, `signal.Notify`,
/// `trap`, `loop.add_signal_handler`.
pub(crate) fn is_signal_registration(call: &CallFact) -> bool {
    matches!(call.callee_last.as_str(), "signal" | "add_signal_handler" | "Notify" | "NotifyContext" | "trap")
        && call.callee != "signal.alarm"
        || matches!(call.callee.as_str(), "process.on" | "process.once" | "process.addListener")
}
