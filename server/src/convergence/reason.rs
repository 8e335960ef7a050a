//! The `reason` of a classification: one plain sentence, with the numbers
//! in it, that a person can read in a log or on the dashboard without
//! knowing the classification rules. No trailing period, like the contract's
//! example, so callers can embed it in their own sentences.

use super::classify::{Class, Facts};
use super::ratchet::format_value;

/// States longer than this are shortened in sentences; the full digest is
/// always in the stored round, and a long hash only hides the sentence.
const STATE_SHOWN_CHARS: usize = 12;

pub(super) fn describe(facts: &Facts<'_>, threshold: u32) -> String {
    let state = short_state(facts.state);
    let blocking = count(facts.blocking, "blocking finding");
    if !facts.judged {
        return describe_unjudged(facts, &state);
    }
    match facts.class {
        Class::FixedPoint => {
            let times = count(facts.seen_at.len() + 1, "time");
            match &facts.change {
                _ if facts.blocking == 0 => {
                    format!("state {state} judged {times} with no blocking findings left")
                }
                Some(change) if change.new_blocking == 0 && change.resolved_blocking == 0 => {
                    format!("state {state} judged {times} with the same {blocking}")
                }
                // The judge is allowed to be inconsistent; say so rather
                // than claim the findings were the same.
                Some(change) => format!(
                    "state {state} judged {times}, now with {blocking} where the last judgement had {}",
                    change.blocking_before
                ),
                None => format!("state {state} judged {times} with {blocking}"),
            }
        }
        Class::Cycle => {
            let period = facts.period.unwrap_or_default();
            let earlier = facts.seen_at.last().copied().unwrap_or_default();
            let left = if facts.blocking == 0 { "no blocking findings left".to_owned() } else { blocking };
            format!(
                "state {state} returned after {} (cycle of period {period}: rounds {earlier}, {}) with {left}",
                count(period as usize, "round"),
                facts.round
            )
        }
        Class::Done => {
            let mut sentence = "no blocking findings left".to_owned();
            if let Some(change) = facts.change.as_ref().filter(|c| c.blocking_before > 0) {
                sentence.push_str(&format!(", down from {}", change.blocking_before));
            }
            let others = facts.all - facts.blocking;
            if others > 0 {
                let verb = if others == 1 { "remains" } else { "remain" };
                sentence.push_str(&format!("; {} {verb}", count(others, "non-blocking finding")));
            }
            sentence
        }
        Class::First => {
            format!("first round of the run, with {blocking} among {}", count(facts.all, "finding"))
        }
        Class::Ratcheting => {
            let moved = match facts.ratchet_move {
                Some((before, after)) if before.value != after.value => format!(
                    "the ratchet moved from {} to {}",
                    format_value(before.value),
                    format_value(after.value)
                ),
                Some((before, after)) => format!(
                    "the ratchet's best moved from {} to {}",
                    before.best.map(format_value).unwrap_or_default(),
                    after.best.map(format_value).unwrap_or_default()
                ),
                None => "the ratchet moved".to_owned(),
            };
            let (_, new, resolved) = movement(facts);
            if new == 0 && resolved == 0 {
                let verb = if facts.blocking == 1 { "remains" } else { "remain" };
                format!("{moved} while the same {blocking} {verb}, so the round made progress")
            } else {
                format!(
                    "{moved} while blocking findings stayed at {} with {new} new and {resolved} resolved, \
                     so the round made progress",
                    facts.blocking
                )
            }
        }
        Class::Stalled => format!(
            "state {state} is new but the same {blocking} {}; {}",
            if facts.blocking == 1 { "remains" } else { "remain" },
            streak(facts.streak, threshold)
        ),
        Class::Thrashing => {
            let (before, new, resolved) = movement(facts);
            format!(
                "blocking findings went from {before} to {} with {new} new and {resolved} resolved; {}",
                facts.blocking,
                streak(facts.streak, threshold)
            )
        }
        Class::Converging => {
            let (before, _, _) = movement(facts);
            let all_before = facts.change.as_ref().map_or(0, |c| c.all_before);
            format!(
                "findings went from {all_before} to {} and blocking findings from {before} to {} with none new",
                facts.all, facts.blocking
            )
        }
        // Only unjudged rounds are acting, and they were described above.
        Class::Acting => describe_unjudged(facts, &state),
        Class::Regressing => {
            let (before, new, resolved) = movement(facts);
            if new > 0 {
                format!(
                    "{} appeared: blocking findings went from {before} to {} with {new} new and {resolved} resolved",
                    count(new, "new blocking finding"),
                    facts.blocking
                )
            } else {
                let all_before = facts.change.as_ref().map_or(0, |c| c.all_before);
                format!(
                    "findings went from {all_before} to {} while blocking findings went from {before} to {} with none new",
                    facts.all, facts.blocking
                )
            }
        }
    }
}

/// A round nobody judged: what it did, compared with the rounds before.
fn describe_unjudged(facts: &Facts<'_>, state: &str) -> String {
    match facts.class {
        Class::FixedPoint => format!(
            "state {state} done {}: the same actions again, with no findings reported",
            count(facts.seen_at.len() + 1, "time")
        ),
        Class::Cycle => {
            let period = facts.period.unwrap_or_default();
            let earlier = facts.seen_at.last().copied().unwrap_or_default();
            format!(
                "state {state} returned after {} (cycle of period {period}: rounds {earlier}, {}), with no findings reported",
                count(period as usize, "round"),
                facts.round
            )
        }
        Class::First => "first round of the run; no findings reported, so nothing was judged".to_owned(),
        _ => format!("state {state} is new; no findings reported, so the run goes on unjudged"),
    }
}

/// Appends the ceiling to a sentence, saying plainly that the loop stops
/// because it ran out of rounds and not because it converged.
pub(super) fn with_ceiling(sentence: &str, round: u32, max_rounds: u32) -> String {
    format!(
        "{sentence}; round {round} reached the ceiling of {}, so the loop stops bounded, not converged",
        count(max_rounds as usize, "round")
    )
}

fn movement(facts: &Facts<'_>) -> (usize, usize, usize) {
    facts.change.as_ref().map_or((0, 0, 0), |c| (c.blocking_before, c.new_blocking, c.resolved_blocking))
}

fn streak(rounds: u32, threshold: u32) -> String {
    format!("{} in a row without progress (threshold {threshold})", count(rounds as usize, "round"))
}

/// `1 round`, `2 rounds`: every noun here takes a plain `s`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn short_state(state: &str) -> String {
    if state.is_empty() {
        return "(empty)".to_owned();
    }
    if state.chars().count() <= STATE_SHOWN_CHARS + 4 {
        return state.to_owned();
    }
    let shown: String = state.chars().take(STATE_SHOWN_CHARS).collect();
    format!("{shown}…")
}
