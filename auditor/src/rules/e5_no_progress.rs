//! E5, no progress (DETECT).
//!
//! # What it detects
//! The loop compares this pass's state with an earlier one and stops when
//! nothing moved.
//!
//! # Why it matters
//! A loop that notices it is going round in circles knows something about its
//! own state: with E1 it is the second DETECT exit (CONVERGES).
//!
//! # What counts
//! Digests or hashes compared (`if digest == last_digest`), the state compared
//! with the previous state (`if plan == prev_plan`), membership in a set of
//! seen states (`if key in seen`, `seen.has(key)`, `if visited[next]`),
//! repeated-action detectors,
//! stall and patience counters (`if stall_count >= 3`), stale passes counted
//! or tracked (`stale_tracker.should_abort()`), passes that brought nothing
//! counted (`consecutiveEmptyIterations >= EMPTY_ITERATION_LIMIT`), no change
//! (`if not changed`, `git diff --quiet && break`, `delta < EPSILON`).
//!
//! # What does not
//! A comparison with a value the loop never updates (`prev` set once before
//! the loop): it can only give false comfort, so it is reported as the
//! warning `stale-progress-check` and not as an exit.
//!
//! # Example
//! ```text
//! digest = sha256(state).hexdigest()
//! if digest in seen:   # E5
//!     break
//! seen.add(digest)
//! ```

use super::ClauseView;
use crate::facts::{CallFact, Facts, KwargFact, Role};

/// Stale passes counted or tracked (`stale_rounds >= 3`,
/// `stale_tracker.should_abort()`): passes that brought nothing new. Not a
/// stale lock, cache or heartbeat, which are things grown old, not passes.
pub(crate) fn stale_passes(view: &ClauseView<'_>) -> bool {
    view.has("stale")
        && !view.any(&["lock", "cache", "heartbeat", "token", "session", "pid"])
        && (view.counted || view.any(super::COUNT_WORDS) || view.any(&["tracker", "len", "counter", "pass"]))
}

/// Passes that brought nothing, counted against a limit
/// (`consecutiveEmptyIterations >= EMPTY_ITERATION_LIMIT`, `empty_rounds >
/// 2`): a pass with neither a tool call nor an answer made no progress. Not
/// empty replies, turns or outputs counted (`emptyTurnCount >=
/// MAX_EMPTY_TURNS`: a model that answers nothing, the error threshold's),
/// nor a queue found empty (the work is done).
pub(crate) fn empty_passes(view: &ClauseView<'_>) -> bool {
    view.has("empty")
        && view.clause.ordering
        && view.any(&["iter", "round", "cycle", "cycles"])
        && !view.has("turn")
        && !view.error_counter
        && !view.any(&[
            "response",
            "responses",
            "reply",
            "replies",
            "output",
            "outputs",
            "error",
            "queue",
            "result",
        ])
}

/// The error a loop or stall detector raises, caught to leave (`except
/// LoopDetected: break`, `catch (e) { if (e instanceof StuckError) ... }`).
pub(crate) fn handler_matches(view: &ClauseView<'_>) -> bool {
    (view.has("detect") && view.any(&["loop", "loops", "cycle", "cycles", "repeat", "repetition"]))
        || view.any(&["stall", "stalled", "stuck"])
        || (view.has("progress") && view.any(&["no", "without"]))
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    if view.only_new && finds_nothing_new(view) {
        return true;
    }
    // Every way out below but the comparison with a previous value asks
    // for one of these words: most clauses have none, and a pass over
    // their few words costs less than the set lookups that follow.
    let may_match = clause.repeats_recent
        || loop_check_aborts(view)
        || view.words.iter().any(|word| {
            matches!(
                *word,
                "stale"
                    | "empty"
                    | "hash"
                    | "stall"
                    | "stuck"
                    | "unproductive"
                    | "seen"
                    | "change"
                    | "same"
                    | "identical"
                    | "duplicate"
                    | "detect"
                    | "cycle"
                    | "cycles"
                    | "guard"
            )
        });
    // The most frequent of the recent calls seen a few times
    // (`Counter(recent[-6:]).most_common(1)[0][1] >= 3`): one call repeats.
    // (Votes counted to a majority are a consensus reached.)
    if view.has("most")
        && view.has("common")
        && !view.any(&["vote", "votes", "answer", "answers"])
        && clause.ordering
        && clause.number
        && (view.role == Role::Guard) != clause.negated
    {
        return true;
    }
    if !may_match {
        return compares_with_previous(view);
    }
    if stale_passes(view) || empty_passes(view) {
        return true;
    }
    // Whether the loop leaves when the clause's detector fires: `if stuck:
    // break`, `while !loopDetected`; not `if done && !oscillationDetected`,
    // which leaves only when nothing was detected.
    // (A count of stalls held against its limit leaves when it reaches
    // it, however the comparison is written: `if (stalls <
    // MAX_STALLS) { ...; continue } else { return }`.)
    // (A loop's own condition reads as written: `while identical_answers <
    // CONSENSUS_THRESHOLD` goes on until they agree.)
    let against_a_limit = view.role == Role::Guard && clause.ordering && view.any(&["max", "threshold"]);
    let leaves_on_detection = (view.role == Role::Guard) != clause.negated || against_a_limit;
    // The last actions are all the same (`acts[-1] == acts[-2] ==
    // acts[-3]`, `len(set(last_three)) == 1`).
    if clause.repeats_recent {
        return true;
    }
    // (`allow_looping` is a setting, not a detector.)
    // (A "stall" moved only when a pass failed, `if [[ ! -s $out ]]; then
    // stall=$((stall+1))`, counts failures: the error threshold's.)
    // (`if detection.stuck` asks a detector whether the loop is stuck.)
    // (A hash compared must be found the same: `headAfter != headBefore`
    // leaves because something changed, and `err != nil` after resolving
    // one asks whether git answered.)
    let same_hash = view.has("hash") && !view.has("error") && (!clause.equality || leaves_on_same(view));
    if same_hash
        || (view.any(&["stall", "stuck", "unproductive"])
            && !view.has("allow")
            && !view.error_counter
            && leaves_on_detection)
    {
        return true;
    }
    // `state in seen`, `visits[state] >= 3`; not the size of a history
    // (`len(history) > MAX_HISTORY` is a cap).
    // (The history's name must be the clause's own: `err != nil` is not a
    // repetition check because `err` came from a call on the session's
    // history.)
    // (A call handed the history, `check_end(history=self.history)`, asks
    // its own question: the history must be what the clause looks in.)
    // (The call's name must ask: `seen.has(key)`, `history.get(state)`,
    // `history.count(call)`, `seen_before(state)`; `chat_with_history()`
    // talks to a model and `get_conversation_history()` fetches one.)
    let asks_the_history = clause.call_root.as_deref().is_none_or(|root| {
        let words = crate::words::canonical_words(root);
        let asks = |w: &String| matches!(w.as_str(), "has" | "contains" | "includes" | "count");
        matches!(words.as_slice(), [only] if only == "get")
            || words.first().is_some_and(|w| asks(w) || w == "seen")
            || words.last().is_some_and(asks)
    });
    // (`history[-1].get("role") != "user"` asks whose turn it is.)
    let asks_a_kind = view.any(&["role", "type", "kind"]) || view.any_literal(&["role", "type", "kind"]);
    // (`while history is None` waits for a history to exist at all.)
    if view.has("seen")
        && !asks_a_kind
        && !view.expanded
        && !view.has("len")
        && !clause.none_literal
        && asks_the_history
        && (clause.membership
            || clause.keyed_lookup
            || view.any_callee(&["has", "contains", "includes", "get"])
            || view.compares())
    {
        return true;
    }
    // (`not result.needs_improvement` is a reviewer's verdict: goal met; a
    // progress record's work left, `progress.remaining == 0`, is the work
    // done.)
    // (`Some(AgentStateChange::Done) =>` names the state a tool asked
    // for: a transition, not a pass that changed nothing.)
    // (Not a state compared with the one before, `state == prev_state`.)
    let state_transition =
        view.has("state") && clause.equality && !clause.negated && !clause.zero && !view.has("prev");
    // (Tasks `in_progress` are a status of the work, not its progress.)
    let in_progress = || {
        clause.idents.iter().any(|ident| {
            crate::words::contains_ignoring_case(ident, "in_progress")
                || crate::words::contains_ignoring_case(ident, "inprogress")
        })
    };
    // (A count of something else that mentions progress, `progress_nudges
    // < 2` for nudges sent, is a count, not a pass compared with the last;
    // one of passes without change says so, `rounds_without_progress`,
    // `steps_since_improvement`.)
    let counts_other = view.counted
        && clause.ordering
        && !clause.zero
        && !view.any(&["no", "without", "stall", "same", "none", "prev"])
        // ("since" reads as time to the words.)
        && !clause.idents.iter().any(|ident| crate::words::contains_ignoring_case(ident, "since"));
    if view.has("change")
        && !state_transition
        && !counts_other
        && !in_progress()
        && !view.any(&["needs", "need", "requires", "required"])
        && !view.has("queue")
        && (clause.negated
            || clause.zero
            || clause.ordering
            || clause.equality
            || view.any(&["quiet", "empty", "no", "without"]))
    {
        return true;
    }
    if view.any(&["same", "identical", "duplicate"]) && leaves_on_detection {
        return true;
    }
    // A guard against looping (`decision = loopGuard.observe(calls)` ...
    // `if (decision.exhausted)`): repeats, not a cap. (A "doom loop" is a
    // stall to the words, judged above.)
    if view.has("loop")
        && view.has("guard")
        && !view.any(super::COUNT_WORDS)
        && !view.has("max")
        && leaves_on_detection
    {
        return true;
    }
    // A loop detector (`loop_detected`, `detect_loop()`), or its check's
    // verdict to abort (`LoopCheckResult::Abort =>`).
    if (view.has("detect")
        && view.any(&["loop", "loops", "cycle", "cycles", "repeat"])
        && leaves_on_detection)
        || loop_check_aborts(view)
    {
        return true;
    }
    if view.any(&["cycle", "cycles"]) && view.any(&["found", "detect"]) && leaves_on_detection {
        return true;
    }
    compares_with_previous(view)
}

/// The loop leaves when what this pass kept as new is empty: `if not
/// fresh: break`, `while new_results:`, `if (unseen.length === 0) break`,
/// `len(results) == 0`. (A name that holds only what was not met before:
/// `ClauseView::only_new`.)
fn finds_nothing_new(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    if clause.idents.len() > 2 || clause.membership || clause.none_literal {
        return false;
    }
    // (Ready tasks less those with a result, `pending = [t for t in
    // planner.get_ready_tasks() if t.id not in results]`: work left, and a
    // loop that ends when none is left has done it.)
    if view.words.iter().any(|w| super::names_work(w)) {
        return false;
    }
    let guard = view.role == Role::Guard;
    let condition = view.role == Role::LoopCondition;
    if clause.zero && clause.equality {
        // (`== 0` leaves an `if` when it holds, `!= 0` a `while` when it
        // fails.)
        return if clause.differs != clause.negated { condition } else { guard };
    }
    if clause.zero && clause.ordering {
        return condition && !clause.negated;
    }
    clause.sides.is_none()
        && !clause.ordering
        && !clause.equality
        && if guard { clause.negated } else { condition && !clause.negated }
}

/// A loop detector's verdict to abort (`match detector.check(&sig) {
/// LoopCheckResult::Abort => ...}`): no progress, no stop from outside.
/// (Named for the loop check, `LoopCheckResult`, or a detector; not
/// `loop_control.check()`, nor a verdict that is not the abort.)
pub(crate) fn loop_check_aborts(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    clause.equality
        && !clause.differs
        && !clause.negated
        && view.has("cancel")
        && view.has("check")
        && view.has("loop")
        && (view.any(&["detect", "detector", "repeat", "stuck"])
            || clause.idents.iter().any(|ident| {
                crate::words::contains_ignoring_case(ident, "loopcheck")
                    || crate::words::contains_ignoring_case(ident, "loop_check")
            }))
}

/// Whether an equality leaves the loop when its two sides are found the
/// same, not changed: `if headAfter != headBefore { return err }` leaves
/// because something moved. (An `if` and an `until` leave when the
/// comparison holds, a `while` when it fails. A check in a function the
/// loop calls is linked with that function's sense of its answer: it is
/// not judged here.)
fn leaves_on_same(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    let leaves_when_true = view.role == Role::Guard || clause.until;
    !view.in_loop_body || clause.differs == (leaves_when_true == clause.negated)
}

/// The state compared with its previous value (`state == prev_state`).
///
/// Or this round's measure against the same measure of the round before
/// (`len(issues_after) >= len(issues_before)`, `[ "$AFTER" -ge "$PREV" ]`):
/// whether the round changed it. (Which way is better depends on what is
/// measured, open tasks or a score: the direction is not judged.)
fn compares_with_previous(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    let Some([(left, _), (right, _)]) = &clause.sides else { return false };
    let has_prev = |side: &Vec<String>| side.iter().any(|w| w == "prev");
    // (`last.role != RoleTool` compares a kind, not two states.)
    if left.is_empty()
        || right.is_empty()
        || !(has_prev(left) ^ has_prev(right))
        || view.any(&["role", "type", "kind"])
    {
        return false;
    }
    if clause.equality {
        return leaves_on_same(view);
    }
    let (previous, current) = if has_prev(left) { (left, right) } else { (right, left) };
    let marker = |w: &String| matches!(w.as_str(), "after" | "current" | "new" | "prev" | "len");
    // (One measure on both sides: the same words besides the markers, or
    // none at all, `$AFTER` against `$PREV`.)
    let bare = previous.iter().all(marker) && current.iter().all(marker);
    clause.ordering
        && current.iter().any(|w| matches!(w.as_str(), "after" | "current" | "new"))
        && (bare || current.iter().any(|w| !marker(w) && previous.contains(w)))
}

/// A framework's own stall limit (`max_stall_count=3`, Magentic's rounds
/// without progress before it gives up or replans). (A `stuck_threshold=`
/// handed to a state object says nothing of what the loop does with it.)
pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = super::name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    has("stall") && has("max")
}

pub(crate) fn call_matches(_facts: &Facts, _call: &CallFact) -> bool {
    false
}

/// For a no-progress comparison inside a loop: the name of a compared value
/// the loop never updates, if any. `prev == state` where `prev` is assigned
/// only before the loop never changes, so the check cannot tell a stall from
/// progress after the first pass.
pub(crate) fn stale_operand(facts: &Facts, view: &ClauseView<'_>, loop_id: usize) -> Option<String> {
    let sides = view.clause.sides.as_ref()?;
    let loop_fact = facts.loops.get(loop_id)?;
    let assigned = &loop_fact.assigned;
    // A check in a helper the loop calls (`is_converged(output, history)`
    // with `prev = history[-1]` inside it): what the helper assigns is
    // worked out afresh on every call, so on every pass.
    let clause_function = facts.function_at(view.clause.range.start);
    let in_helper = !loop_fact.range.contains(&view.clause.range.start)
        && clause_function.is_some()
        && clause_function != loop_fact.function;
    let set_by_helper = |name: &str| {
        in_helper
            && facts.aliases.get(name).is_some_and(|definitions| {
                definitions.iter().any(|d| d.function == clause_function && d.at < view.clause.range.start)
            })
    };
    let is_updated = |name: &str| {
        assigned.contains(name)
            || assigned.contains(name.rsplit('.').next().unwrap_or(name))
            || set_by_helper(name)
    };
    let names: Vec<&str> = sides.iter().filter_map(|(_, name)| name.as_deref()).collect();
    if names.len() != 2 {
        return None;
    }
    let stale: Vec<&str> = names.iter().copied().filter(|name| !is_updated(name)).collect();
    // A count or a measure held against a bound (`duplicates >=
    // self.max_duplicates`, `delta < EPSILON`): the bound is meant not to
    // move. Only an earlier value that never moves is frozen.
    let earlier = |name: &str| {
        crate::words::canonical_words(name).iter().any(|w| {
            matches!(w.as_str(), "prev" | "previous" | "last" | "old" | "before" | "best" | "earlier")
        })
    };
    if view.clause.ordering && stale.iter().all(|name| !earlier(name)) {
        return None;
    }
    // One side moves and the other never does: the check compares against a
    // frozen value.
    (stale.len() == 1).then(|| stale[0].to_string())
}
