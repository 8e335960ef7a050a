//! Every case goes through `check`: a run written as `(state, findings)`
//! pairs numbered from round 1, the class and advice expected for its last
//! round. A finding is written `SEVERITY TARGET CRITERION`, with severity
//! `B`, `W` or `I` and target `path:start[-end]` or `#id`.

use super::*;

use Advice::{Continue, Stop};
use Class::*;

fn finding(spec: &str) -> FindingKey {
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let [severity, target, criterion] = parts[..] else {
        panic!("finding spec {spec:?} needs SEVERITY TARGET CRITERION");
    };
    let severity = match severity {
        "B" => Severity::Blocking,
        "W" => Severity::Warning,
        "I" => Severity::Info,
        other => panic!("unknown severity {other:?} in {spec:?}"),
    };
    let target = match target.strip_prefix('#') {
        Some(id) => Target::other(id),
        None => {
            let (path, lines) = target.rsplit_once(':').expect("path:lines");
            match lines.split_once('-') {
                Some((start, end)) => Target::code(
                    path,
                    start.parse().expect("start line"),
                    Some(end.parse().expect("end line")),
                ),
                None => Target::code(path, lines.parse().expect("start line"), None),
            }
        }
    };
    FindingKey::new(target, severity, criterion)
}

fn run(rounds: &[(&str, &[&str])]) -> Vec<RoundInput> {
    rounds
        .iter()
        .zip(1..)
        .map(|((state, findings), round)| RoundInput {
            round,
            state: (*state).to_owned(),
            findings: findings.iter().map(|spec| finding(spec)).collect(),
            judged: true,
            ratchet: None,
        })
        .collect()
}

fn check(rounds: &[(&str, &[&str])], class: Class, advice: Advice) -> Classification {
    check_with(LoopPolicy::default(), rounds, class, advice)
}

fn check_with(
    policy: LoopPolicy,
    rounds: &[(&str, &[&str])],
    class: Class,
    advice: Advice,
) -> Classification {
    let inputs = run(rounds);
    let (current, history) = inputs.split_last().expect("a case needs a round");
    let got = classify_round(history, current, &policy);
    assert_eq!((got.class, got.advice), (class, advice), "round {} was judged: {}", got.round, got.reason);
    // Classifying the whole run must give every round the same answer as
    // classifying it alone against the rounds before it.
    let whole = classify_run(&inputs, &policy);
    for (n, classification) in whole.iter().enumerate() {
        let alone = classify_round(&inputs[..n], &inputs[n], &policy);
        assert_eq!(classification, &alone, "round {}", n + 1);
    }
    assert_eq!(whole.last(), Some(&got));
    got
}

fn ceiling(max_rounds: u32) -> LoopPolicy {
    LoopPolicy { max_rounds: Some(max_rounds), ..LoopPolicy::default() }
}

fn threshold(stall_threshold: u32) -> LoopPolicy {
    LoopPolicy { stall_threshold, ..LoopPolicy::default() }
}

const X: &str = "B src/loop.rs:10-14 bounded-only";
const Y: &str = "B draft.md:4-9 word-floor";
const Z: &str = "B #budget:tokens over-budget";
const V: &str = "B #tests:integration failing";
const W1: &str = "W draft.md:20 passive-voice";
const W2: &str = "I draft.md:30 long-sentence";

// first and done

#[test]
fn first_round_with_blocking_findings_continues() {
    let got = check(&[("a1", &[X, Y, W1])], First, Continue);
    assert_eq!(got.outcome, Outcome::Started);
    assert_eq!(got.reason, "first round of the run, with 2 blocking findings among 3 findings");
}

#[test]
fn first_round_without_findings_is_done() {
    let got = check(&[("a1", &[])], Done, Stop);
    assert_eq!(got.outcome, Outcome::Converged);
    assert_eq!(got.reason, "no blocking findings left");
}

#[test]
fn first_round_with_only_non_blocking_findings_is_done() {
    let got = check(&[("a1", &[W1, W2])], Done, Stop);
    assert_eq!(got.reason, "no blocking findings left; 2 non-blocking findings remain");
}

#[test]
fn empty_findings_after_blocking_ones_is_done() {
    let got = check(&[("a1", &[X, Y]), ("a2", &[W1])], Done, Stop);
    assert_eq!(got.outcome, Outcome::Converged);
    assert_eq!(got.reason, "no blocking findings left, down from 2; 1 non-blocking finding remains");
}

#[test]
fn a_downgraded_finding_no_longer_blocks() {
    // Severity is part of the key: the blocking finding was resolved and a
    // warning appeared in its place.
    check(&[("a1", &["B a.rs:1 style"]), ("a2", &["W a.rs:1 style"])], Done, Stop);
}

// fixed_point

#[test]
fn fixed_point_with_blocking_findings_is_wedged() {
    // The contract's own example.
    let got = check(&[("b740d1b7", &[X, Y]), ("b740d1b7", &[X, Y]), ("b740d1b7", &[Y, X])], FixedPoint, Stop);
    assert_eq!(got.outcome, Outcome::Wedged);
    assert_eq!(got.seen_at, vec![1, 2]);
    assert_eq!(got.reason, "state b740d1b7 judged 3 times with the same 2 blocking findings");
}

#[test]
fn fixed_point_without_blocking_findings_is_converged() {
    // A fixed point is checked before done, and keeps its own class.
    let got = check(&[("a1", &[X]), ("a2", &[W1]), ("a2", &[W1])], FixedPoint, Stop);
    assert_eq!(got.outcome, Outcome::Converged);
    assert_eq!(got.reason, "state a2 judged 2 times with no blocking findings left");
}

#[test]
fn fixed_point_on_the_second_round() {
    let got = check(&[("a1", &[X]), ("a1", &[X])], FixedPoint, Stop);
    assert_eq!(got.seen_at, vec![1]);
    assert_eq!(got.consecutive, 1);
}

#[test]
fn fixed_point_with_an_inconsistent_judge_says_so() {
    let got = check(&[("a1", &[X]), ("a1", &[X, Y])], FixedPoint, Stop);
    assert_eq!(got.outcome, Outcome::Wedged);
    assert_eq!(
        got.reason,
        "state a1 judged 2 times, now with 2 blocking findings where the last judgement had 1"
    );
}

#[test]
fn fixed_point_after_a_cycle() {
    let got = check(&[("a", &[X]), ("b", &[Y]), ("a", &[X]), ("a", &[X])], FixedPoint, Stop);
    assert_eq!(got.seen_at, vec![1, 3]);
    assert_eq!(got.period, None);
    assert_eq!(got.reason, "state a judged 3 times with the same 1 blocking finding");
}

// cycle

#[test]
fn cycle_of_period_two() {
    let got = check(&[("a", &[X]), ("b", &[Y]), ("a", &[X])], Cycle, Stop);
    assert_eq!(got.period, Some(2));
    assert_eq!(got.outcome, Outcome::Cycling);
}

#[test]
fn cycle_of_period_three() {
    let got = check(
        &[("e01a", &[X, Y]), ("9f2c", &[X, Y]), ("77b0", &[X, Z]), ("31d4", &[Y, Z]), ("9f2c", &[X, Y])],
        Cycle,
        Stop,
    );
    assert_eq!(got.period, Some(3));
    assert_eq!(got.seen_at, vec![2]);
    assert_eq!(
        got.reason,
        "state 9f2c returned after 3 rounds (cycle of period 3: rounds 2, 5) with 2 blocking findings"
    );
}

#[test]
fn cycle_takes_the_smallest_period() {
    let got = check(&[("a", &[X]), ("b", &[X, Y]), ("a", &[X]), ("c", &[Y]), ("a", &[X])], Cycle, Stop);
    assert_eq!(got.seen_at, vec![1, 3]);
    assert_eq!(got.period, Some(2));
}

#[test]
fn cycle_back_to_a_clean_state_is_converged() {
    // The cycle is checked before done, but the state it returned to has
    // nothing blocking, so the loop has nothing left to do.
    let got = check(&[("a", &[W1]), ("b", &[X]), ("a", &[W1])], Cycle, Stop);
    assert_eq!(got.outcome, Outcome::Converged);
    assert_eq!(
        got.reason,
        "state a returned after 2 rounds (cycle of period 2: rounds 1, 3) with no blocking findings left"
    );
}

#[test]
fn cycle_period_counts_round_numbers_across_gaps() {
    let inputs = [
        RoundInput { round: 1, state: "a".into(), findings: vec![finding(X)], judged: true, ratchet: None },
        RoundInput { round: 4, state: "b".into(), findings: vec![finding(Y)], judged: true, ratchet: None },
    ];
    let current =
        RoundInput { round: 7, state: "a".into(), findings: vec![finding(X)], judged: true, ratchet: None };
    let got = classify_round(&inputs, &current, &LoopPolicy::default());
    assert_eq!((got.class, got.period), (Cycle, Some(6)));
}

// stalled and thrashing

#[test]
fn stalled_once_continues() {
    let got = check(&[("a", &[X, Y]), ("b", &[Y, X, W1])], Stalled, Continue);
    assert_eq!(got.outcome, Outcome::Stuck);
    assert_eq!(got.consecutive, 1);
    assert_eq!(
        got.reason,
        "state b is new but the same 2 blocking findings remain; 1 round in a row without progress (threshold 2)"
    );
}

#[test]
fn stalled_twice_in_a_row_stops() {
    let got = check(&[("a", &[X]), ("b", &[X]), ("c", &[X])], Stalled, Stop);
    assert_eq!(got.outcome, Outcome::Stuck);
    assert_eq!(got.consecutive, 2);
    assert_eq!(got.bound, None);
}

#[test]
fn stalled_even_when_warnings_fall() {
    // Only blocking findings decide stalled; fewer warnings alone are not
    // progress towards done.
    check(&[("a", &[X, W1, W2]), ("b", &[X, W1])], Stalled, Continue);
}

#[test]
fn thrashing_once_continues() {
    let got = check(&[("a", &[X, Y]), ("b", &[X, Z])], Thrashing, Continue);
    assert_eq!(got.consecutive, 1);
    assert_eq!(
        got.reason,
        "blocking findings went from 2 to 2 with 1 new and 1 resolved; 1 round in a row without progress (threshold 2)"
    );
}

#[test]
fn thrashing_twice_in_a_row_stops() {
    let got = check(&[("a", &[X, Y]), ("b", &[Z, V]), ("c", &[X, Z])], Thrashing, Stop);
    assert_eq!(got.consecutive, 2);
    assert_eq!(got.outcome, Outcome::Stuck);
}

#[test]
fn stalled_and_thrashing_share_the_streak() {
    let got = check(&[("a", &[X]), ("b", &[X]), ("c", &[Y])], Thrashing, Stop);
    assert_eq!(got.consecutive, 2);
}

#[test]
fn a_fixed_point_consumes_the_stall_budget() {
    // With a threshold of 3: stalled (1), fixed point (2), stalled (3).
    // Had the fixed point reset the count, round 4 would continue.
    let got = check_with(threshold(3), &[("a", &[X]), ("b", &[X]), ("b", &[X]), ("c", &[X])], Stalled, Stop);
    assert_eq!(got.consecutive, 3);
}

#[test]
fn a_cycle_consumes_the_stall_budget() {
    check(&[("a", &[X]), ("b", &[X]), ("a", &[X]), ("c", &[X])], Stalled, Stop);
}

#[test]
fn progress_resets_the_streak() {
    let got = check(&[("a", &[X, Y]), ("b", &[X, Y]), ("c", &[X]), ("d", &[X])], Stalled, Continue);
    assert_eq!(got.consecutive, 1);
}

#[test]
fn regressing_resets_the_streak() {
    check(&[("a", &[X]), ("b", &[X]), ("c", &[X, Y]), ("d", &[X, Y])], Stalled, Continue);
}

#[test]
fn threshold_of_one_stops_at_the_first_stall() {
    check_with(threshold(1), &[("a", &[X]), ("b", &[X])], Stalled, Stop);
}

#[test]
fn threshold_of_zero_counts_as_one() {
    check_with(threshold(0), &[("a", &[X]), ("b", &[Y])], Thrashing, Stop);
}

#[test]
fn a_higher_threshold_lets_the_loop_try_longer() {
    check_with(threshold(3), &[("a", &[X]), ("b", &[X]), ("c", &[X])], Stalled, Continue);
}

// converging and regressing

#[test]
fn converging_with_blocking_findings_left() {
    let got = check(&[("a", &[X, Y, W1]), ("b", &[X, W1])], Converging, Continue);
    assert_eq!(got.outcome, Outcome::Progressing);
    assert_eq!(got.consecutive, 0);
    assert_eq!(got.reason, "findings went from 3 to 2 and blocking findings from 2 to 1 with none new");
}

#[test]
fn regressing_with_a_new_blocking_finding_though_the_count_fell() {
    let got = check(&[("a", &[X, Y, Z]), ("b", &[V])], Regressing, Continue);
    assert_eq!(got.outcome, Outcome::Regressed);
    assert_eq!(
        got.reason,
        "1 new blocking finding appeared: blocking findings went from 3 to 1 with 1 new and 3 resolved"
    );
}

#[test]
fn regressing_when_blocking_findings_grow() {
    check(&[("a", &[X]), ("b", &[X, Y])], Regressing, Continue);
}

#[test]
fn regressing_when_findings_grow_while_blocking_ones_fall() {
    let got = check(&[("a", &[X, Y]), ("b", &[X, W1, W2])], Regressing, Continue);
    assert_eq!(
        got.reason,
        "findings went from 2 to 3 while blocking findings went from 2 to 1 with none new"
    );
}

// finding lists: order, duplicates, targets

#[test]
fn order_of_findings_does_not_matter() {
    check(&[("a", &[X, Y, Z]), ("b", &[Z, X, Y])], Stalled, Continue);
    let forward = run(&[("a", &[X, Y, Z]), ("b", &[X, W1])]);
    let backward = run(&[("a", &[Z, Y, X]), ("b", &[W1, X])]);
    let policy = LoopPolicy::default();
    assert_eq!(
        classify_round(&forward[..1], &forward[1], &policy),
        classify_round(&backward[..1], &backward[1], &policy),
    );
}

#[test]
fn duplicate_findings_collapse_into_one_key() {
    let got = check(&[("a", &[X, X, Y, W1, W1])], First, Continue);
    assert_eq!(got.reason, "first round of the run, with 2 blocking findings among 3 findings");
    check(&[("a", &[X, X, Y]), ("b", &[Y, X])], Stalled, Continue);
}

#[test]
fn a_missing_end_line_is_the_start_line() {
    check(&[("a", &["B a.rs:4 c"]), ("b", &["B a.rs:4-4 c"])], Stalled, Continue);
    check(&[("a", &["B a.rs:4 c"]), ("b", &["B a.rs:4-5 c"])], Thrashing, Continue);
}

#[test]
fn findings_with_only_non_code_targets() {
    check(&[("a", &[Z, V]), ("b", &[V, Z])], Stalled, Continue);
    check(&[("a", &[Z, V]), ("b", &[Z])], Converging, Continue);
    check(&[("a", &[Z]), ("b", &["W #budget:tokens over-budget"])], Done, Stop);
}

#[test]
fn a_code_target_and_an_id_never_match() {
    check(&[("a", &["B budget:1 c"]), ("b", &["B #budget:1 c"])], Thrashing, Continue);
}

// the ceiling

#[test]
fn the_ceiling_stops_a_converging_loop_as_bounded() {
    let got = check_with(ceiling(3), &[("a", &[X, Y, Z]), ("b", &[X, Y]), ("c", &[X])], Converging, Stop);
    assert_eq!(got.outcome, Outcome::Bounded);
    assert_eq!(got.bound, Some(Bound { max_rounds: 3, round: 3 }));
    assert_eq!(
        got.reason,
        "findings went from 2 to 1 and blocking findings from 2 to 1 with none new; round 3 reached the ceiling of 3 rounds, so the loop stops bounded, not converged"
    );
}

#[test]
fn the_ceiling_is_not_reached_before_its_round() {
    let got = check_with(ceiling(3), &[("a", &[X, Y]), ("b", &[X])], Converging, Continue);
    assert_eq!(got.bound, None);
}

#[test]
fn the_ceiling_stops_the_first_round_when_it_is_one() {
    let got = check_with(ceiling(1), &[("a", &[X])], First, Stop);
    assert_eq!(got.outcome, Outcome::Bounded);
}

#[test]
fn the_ceiling_stops_a_stall_below_its_threshold() {
    let got = check_with(ceiling(2), &[("a", &[X]), ("b", &[X])], Stalled, Stop);
    assert_eq!(got.outcome, Outcome::Bounded);
    assert!(got.bound.is_some());
}

#[test]
fn the_ceiling_stops_rounds_past_it_too() {
    let got = check_with(ceiling(2), &[("a", &[X]), ("b", &[X, Y]), ("c", &[X, Y, Z])], Regressing, Stop);
    assert_eq!(got.bound.map(|bound| bound.round), Some(3));
}

#[test]
fn the_ceiling_never_relabels_convergence() {
    let got = check_with(ceiling(2), &[("a", &[X]), ("b", &[])], Done, Stop);
    assert_eq!((got.outcome, got.bound), (Outcome::Converged, None));
}

#[test]
fn the_stall_threshold_wins_over_the_ceiling() {
    let got = check_with(ceiling(3), &[("a", &[X]), ("b", &[X]), ("c", &[X])], Stalled, Stop);
    assert_eq!((got.outcome, got.bound), (Outcome::Stuck, None));
}

// history handling and determinism

#[test]
fn history_in_any_order_and_with_later_rounds_gives_the_same_answer() {
    let inputs = run(&[("a", &[X, Y]), ("b", &[X]), ("c", &[X]), ("d", &[])]);
    let policy = LoopPolicy::default();
    let clean = classify_round(&inputs[..2], &inputs[2], &policy);
    // The whole stored run, shuffled, including round 3 itself and round 4.
    let messy = [inputs[3].clone(), inputs[1].clone(), inputs[2].clone(), inputs[0].clone()];
    assert_eq!(classify_round(&messy, &inputs[2], &policy), clean);
    assert_eq!((clean.class, clean.advice), (Stalled, Continue));
}

#[test]
fn classify_run_sorts_by_round() {
    let mut inputs = run(&[("a", &[X, Y]), ("b", &[X]), ("b", &[X])]);
    inputs.reverse();
    let classes: Vec<(u32, Class)> =
        classify_run(&inputs, &LoopPolicy::default()).into_iter().map(|c| (c.round, c.class)).collect();
    assert_eq!(classes, vec![(1, First), (2, Converging), (3, FixedPoint)]);
}

#[test]
fn a_long_run_classifies_the_same_each_time() {
    let rounds: &[(&str, &[&str])] = &[
        ("s1", &[X, Y, Z, W1]),
        ("s2", &[X, Y, W1]),
        // More warnings but the same blocking set: stalled, not regressing.
        ("s3", &[X, Y, W1, W2]),
        ("s4", &[X, V]),
        ("s5", &[X, V]),
        ("s2", &[X, Y, W1]),
        ("s6", &[X]),
        ("s6", &[X]),
        ("s7", &[W2]),
    ];
    let got = check(rounds, Done, Stop);
    let again = check(rounds, Done, Stop);
    assert_eq!(got, again);
    let classes: Vec<Class> =
        classify_run(&run(rounds), &LoopPolicy::default()).into_iter().map(|c| c.class).collect();
    assert_eq!(
        classes,
        vec![First, Converging, Stalled, Thrashing, Stalled, Cycle, Converging, FixedPoint, Done]
    );
}

#[test]
fn a_long_state_is_shortened_in_the_reason_only() {
    let digest = "0123456789abcdef0123456789abcdef";
    let got = check(&[(digest, &[X]), (digest, &[X])], FixedPoint, Stop);
    assert_eq!(got.reason, "state 0123456789ab… judged 2 times with the same 1 blocking finding");
}

// diff_rounds

#[test]
fn diff_sorts_new_resolved_and_persisting_findings() {
    let before: Vec<FindingKey> = [X, Y, W1, "B a.rs:4 c"].map(finding).to_vec();
    let after: Vec<FindingKey> = [Z, "B a.rs:4-4 c", X, X, "W draft.md:4-9 word-floor"].map(finding).to_vec();
    let diff = diff_rounds(&before, &after);
    assert_eq!(diff.new, vec![finding("W draft.md:4-9 word-floor"), finding(Z),]);
    assert_eq!(diff.resolved, vec![finding(Y), finding("W draft.md:20-20 passive-voice")]);
    assert_eq!(diff.persisting, vec![finding("B a.rs:4-4 c"), finding(X)]);
    // The end line is spelled out, so the wire form is the same whichever
    // spelling a round used.
    let wire = serde_json::to_value(&diff.persisting[0]).expect("serialise");
    assert_eq!(wire["target"]["end_line"], 4);
}

#[test]
fn diff_of_identical_rounds_only_persists() {
    let findings: Vec<FindingKey> = [X, W1].map(finding).to_vec();
    let mut shuffled = findings.clone();
    shuffled.reverse();
    let diff = diff_rounds(&findings, &shuffled);
    assert!(diff.new.is_empty() && diff.resolved.is_empty());
    assert_eq!(diff.persisting.len(), 2);
}

// the ratchet

/// A run written as `(state, findings, ratchet value)`, numbered from 1.
fn ratcheted(rounds: &[(&str, &[&str], f64)]) -> Vec<Classification> {
    let inputs: Vec<RoundInput> = rounds
        .iter()
        .zip(1..)
        .map(|((state, findings, value), round)| RoundInput {
            round,
            state: (*state).to_owned(),
            findings: findings.iter().map(|spec| finding(spec)).collect(),
            judged: true,
            ratchet: Some(Ratchet { value: *value, best: None, stall_count: None }),
        })
        .collect();
    let whole = classify_run(&inputs, &LoopPolicy::default());
    for (n, classification) in whole.iter().enumerate() {
        assert_eq!(classification, &classify_round(&inputs[..n], &inputs[n], &LoopPolicy::default()));
    }
    whole
}

const AUDIT: &str = "B #test:audit verify";
const PUSH: &str = "B #test:push verify";
const IMPORT: &str = "B #test:import verify";

#[test]
fn a_round_that_moved_the_ratchet_is_never_a_stall() {
    // The issue's journal: "missing: audit, push, import" (ratchet 5 -> 6),
    // then "missing: push, import" (6 -> 7), then the same checks missing
    // twice more while the ratchet climbs, then it stops moving.
    let got = ratcheted(&[
        ("i1", &[AUDIT, PUSH, IMPORT], 6.0),
        ("i2", &[PUSH, IMPORT], 7.0),
        ("i3", &[PUSH, IMPORT], 8.0),
        ("i4", &[PUSH, IMPORT], 9.0),
        ("i5", &[PUSH, IMPORT], 9.0),
        ("i6", &[PUSH, IMPORT], 9.0),
    ]);
    let classes: Vec<Class> = got.iter().map(|round| round.class).collect();
    assert_eq!(classes, [First, Converging, Ratcheting, Ratcheting, Stalled, Stalled]);
    assert_eq!((got[2].outcome, got[2].advice, got[2].consecutive), (Outcome::Progressing, Continue, 0));
    assert_eq!(
        got[2].reason,
        "the ratchet moved from 7 to 8 while the same 2 blocking findings remain, so the round made progress"
    );
    // The stall budget starts again after the ratchet last moved.
    assert_eq!((got[4].advice, got[4].consecutive), (Continue, 1));
    assert_eq!((got[5].advice, got[5].consecutive), (Stop, 2));
}

#[test]
fn a_moved_ratchet_takes_a_round_from_thrashing_too() {
    let got = ratcheted(&[("a", &[X, Y], 1.0), ("b", &[X, Z], 2.0), ("c", &[X, Y], 2.0)]);
    assert_eq!(got[1].class, Ratcheting);
    assert_eq!(
        got[1].reason,
        "the ratchet moved from 1 to 2 while blocking findings stayed at 2 with 1 new and 1 resolved, \
         so the round made progress"
    );
    assert_eq!(got[2].class, Thrashing, "a ratchet that stood still does not excuse it");
}

#[test]
fn the_ratchet_never_overrides_a_repeat_a_regression_or_done() {
    // The same state again is a fixed point whatever the ratchet says; more
    // blocking findings are a regression; none left is done.
    let got = ratcheted(&[("a", &[X], 1.0), ("a", &[X], 2.0), ("b", &[X, Y], 3.0), ("c", &[], 4.0)]);
    let classes: Vec<Class> = got.iter().map(|round| round.class).collect();
    assert_eq!(classes, [First, FixedPoint, Regressing, Done]);
}

#[test]
fn a_ratchet_that_fell_is_no_excuse() {
    let got = ratcheted(&[("a", &[X], 5.0), ("b", &[X], 4.0)]);
    assert_eq!(got[1].class, Stalled);
}

#[test]
fn a_loop_that_starts_sending_its_ratchet_is_compared_from_then_on() {
    let mut inputs = run(&[("a", &[X]), ("b", &[X]), ("c", &[X])]);
    inputs[1].ratchet = Some(Ratchet { value: 3.0, best: Some(3.0), stall_count: Some(0) });
    inputs[2].ratchet = Some(Ratchet { value: 3.0, best: Some(4.0), stall_count: Some(0) });
    let got = classify_run(&inputs, &LoopPolicy::default());
    assert_eq!(got[1].class, Stalled, "nothing to compare the first ratchet with");
    assert_eq!(got[2].class, Ratcheting);
    assert_eq!(
        got[2].reason,
        "the ratchet's best moved from 3 to 4 while the same 1 blocking finding remains, so the round made progress"
    );
}

// rounds nobody judged (traces without finding events)

/// A run of unjudged rounds, written as its states.
fn unjudged(states: &[&str]) -> Vec<Classification> {
    let inputs: Vec<RoundInput> = states
        .iter()
        .zip(1..)
        .map(|(state, round)| RoundInput {
            round,
            state: (*state).to_owned(),
            findings: vec![],
            judged: false,
            ratchet: None,
        })
        .collect();
    let whole = classify_run(&inputs, &LoopPolicy::default());
    for (n, classification) in whole.iter().enumerate() {
        assert_eq!(classification, &classify_round(&inputs[..n], &inputs[n], &LoopPolicy::default()));
    }
    whole
}

#[test]
fn an_unjudged_round_is_never_done() {
    let got = unjudged(&["search:a"]);
    assert_eq!((got[0].class, got[0].outcome, got[0].advice), (First, Outcome::Started, Continue));
    assert!(got[0].reason.contains("nothing was judged"), "{}", got[0].reason);
    let got = unjudged(&["search:a", "read:b"]);
    assert_eq!((got[1].class, got[1].outcome, got[1].advice), (Acting, Outcome::Acting, Continue));
    assert_eq!(got[1].consecutive, 0);
}

#[test]
fn the_same_actions_again_are_a_wedged_fixed_point() {
    let got = unjudged(&["search:a", "search:a", "search:a"]);
    for round in &got[1..] {
        assert_eq!((round.class, round.outcome, round.advice), (FixedPoint, Outcome::Wedged, Stop));
    }
    assert_eq!(got[2].seen_at, [1, 2]);
    assert_eq!(got[2].consecutive, 2);
    assert!(got[2].reason.contains("the same actions again"), "{}", got[2].reason);
}

#[test]
fn unjudged_actions_that_come_back_are_a_cycle() {
    let got = unjudged(&["a", "b", "a"]);
    assert_eq!((got[2].class, got[2].outcome, got[2].advice), (Cycle, Outcome::Cycling, Stop));
    assert_eq!(got[2].period, Some(2));
}

#[test]
fn a_judged_round_after_unjudged_ones_is_classified_on_its_findings() {
    let mut inputs =
        vec![RoundInput { round: 1, state: "a".into(), findings: vec![], judged: false, ratchet: None }];
    inputs.push(RoundInput { round: 2, state: "b".into(), findings: vec![], judged: true, ratchet: None });
    let got = classify_run(&inputs, &LoopPolicy::default());
    assert_eq!((got[1].class, got[1].outcome), (Done, Outcome::Converged));
}

#[test]
fn an_unjudged_round_at_the_ceiling_stops_bounded() {
    let inputs: Vec<RoundInput> = ["a", "b"]
        .iter()
        .zip(1..)
        .map(|(state, round)| RoundInput {
            round,
            state: (*state).to_owned(),
            findings: vec![],
            judged: false,
            ratchet: None,
        })
        .collect();
    let got = classify_round(&inputs[..1], &inputs[1], &ceiling(2));
    assert_eq!((got.class, got.outcome, got.advice), (Acting, Outcome::Bounded, Stop));
}

// the wire

#[test]
fn classes_outcomes_and_advice_use_the_contract_spelling() {
    for class in Class::ALL {
        let wire = serde_json::to_string(&class).expect("serialise");
        assert_eq!(wire, format!("\"{}\"", class.as_str()));
        assert_eq!(class.as_str().parse::<Class>(), Ok(class));
    }
    for outcome in Outcome::ALL {
        let wire = serde_json::to_string(&outcome).expect("serialise");
        assert_eq!(wire, format!("\"{}\"", outcome.as_str()));
        assert_eq!(outcome.as_str().parse::<Outcome>(), Ok(outcome));
    }
    for advice in Advice::ALL {
        let wire = serde_json::to_string(&advice).expect("serialise");
        assert_eq!(wire, format!("\"{}\"", advice.as_str()));
        assert_eq!(advice.as_str().parse::<Advice>(), Ok(advice));
    }
    assert_eq!(serde_json::to_string(&Class::FixedPoint).expect("serialise"), "\"fixed_point\"");
    assert_eq!(serde_json::to_string(&Advice::Stop).expect("serialise"), "\"stop\"");
    assert!("FixedPoint".parse::<Class>().is_err());
}

#[test]
fn a_classification_round_trips_through_json() {
    let got = check(&[("b740d1b7", &[X, Y]), ("b740d1b7", &[X, Y]), ("b740d1b7", &[X, Y])], FixedPoint, Stop);
    let wire = serde_json::to_value(&got).expect("serialise");
    assert_eq!(
        wire,
        serde_json::json!({
            "round": 3, "class": "fixed_point", "outcome": "wedged", "advice": "stop",
            "seen_at": [1, 2], "period": null, "consecutive": 2, "bound": null,
            "reason": "state b740d1b7 judged 3 times with the same 2 blocking findings"
        })
    );
    let back: Classification = serde_json::from_value(wire).expect("deserialise");
    assert_eq!(back, got);
}

#[test]
fn a_contract_round_body_deserialises_into_its_keys() {
    let body = r#"{
        "round": 3, "run": "2026-07-29a", "state": "b740d1b7",
        "findings": [
            {"target": {"path": "draft.md", "start_line": 4, "end_line": 9},
             "severity": "blocking", "criterion": "word-floor", "message": "too short"},
            {"target": {"id": "budget:tokens", "note": "ignored"},
             "severity": "warning", "criterion": "spend", "message": "80% used"},
            {"target": {"path": "draft.md", "start_line": 12},
             "severity": "info", "criterion": "style"}
        ],
        "spent": {"tokens": 1234}, "exit": null, "error": null, "extra": true
    }"#;
    let round: RoundInput = serde_json::from_str(body).expect("deserialise");
    assert_eq!(round.round, 3);
    assert_eq!(
        round.findings,
        vec![
            finding("B draft.md:4-9 word-floor"),
            finding("W #budget:tokens spend"),
            finding("I draft.md:12 style"),
        ]
    );
    // A target without an end line keeps it absent on the way back out.
    let target = serde_json::to_value(&round.findings[2].target).expect("serialise");
    assert_eq!(target, serde_json::json!({"path": "draft.md", "start_line": 12}));
    let target = serde_json::to_value(&round.findings[1].target).expect("serialise");
    assert_eq!(target, serde_json::json!({"id": "budget:tokens"}));
}

#[test]
fn a_round_without_findings_deserialises() {
    let round: RoundInput = serde_json::from_str(r#"{"round": 1, "state": "a"}"#).expect("deserialise");
    assert!(round.findings.is_empty());
}

#[test]
fn malformed_targets_are_refused_with_the_field_named() {
    let cases = [
        (r#"{"path": "a.rs", "id": "x"}"#, "target has an id and also a path or lines"),
        (r#"{"id": "x", "start_line": 3}"#, "target has an id and also a path or lines"),
        (r#"{}"#, "target needs a path with a start_line, or an id"),
        (r#"{"path": "a.rs"}"#, "target.start_line is required with target.path"),
        (r#"{"start_line": 2}"#, "target has lines but no target.path"),
        (r#"{"path": "", "start_line": 2}"#, "target.path is empty"),
        (r#"{"id": ""}"#, "target.id is empty"),
        (
            r#"{"path": "a.rs", "start_line": 5, "end_line": 3}"#,
            "target.end_line 3 is before target.start_line 5",
        ),
    ];
    for (json, message) in cases {
        let error = serde_json::from_str::<Target>(json).expect_err(json);
        assert!(error.to_string().starts_with(message), "{json} gave {error}");
    }
}

#[test]
fn severity_is_lowercase_on_the_wire() {
    assert_eq!(serde_json::to_string(&Severity::Blocking).expect("serialise"), "\"blocking\"");
    assert!(serde_json::from_str::<Severity>("\"Blocking\"").is_err());
}

#[test]
fn the_policy_defaults_to_a_threshold_of_two_and_no_ceiling() {
    let policy: LoopPolicy = serde_json::from_str("{}").expect("deserialise");
    assert_eq!(policy, LoopPolicy::default());
    assert_eq!(policy.stall_threshold, DEFAULT_STALL_THRESHOLD);
    assert_eq!(policy.max_rounds, None);
}

/// The incremental classification (what the store remembers: the previous
/// round and the rounds of the same state) agrees with the reference replay
/// of the whole history, round by round, over 10,000 random runs whose
/// states come from a small alphabet (so fixed points and cycles occur) and
/// whose findings are random subsets of a small pool, with random gaps in
/// the round numbers and random policies.
#[test]
fn incremental_classification_matches_the_replay_on_random_runs() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed_f1ed);
    let pool: Vec<FindingKey> = [
        "B a.md:1 words",
        "B a.md:2-4 links",
        "B #budget:tokens spend",
        "W a.md:9 style",
        "W #tone voice",
        "I b.md:3 note",
        "B b.md:7 tests",
    ]
    .iter()
    .map(|spec| finding(spec))
    .collect();
    let mut rounds_checked = 0;
    for _ in 0..10_000 {
        let policy = LoopPolicy {
            stall_threshold: rng.random_range(0..4),
            max_rounds: if rng.random_bool(0.3) { Some(rng.random_range(1..30)) } else { None },
        };
        let alphabet = rng.random_range(1..5);
        let length = rng.random_range(1..25);
        let mut history: Vec<RoundInput> = Vec::new();
        let mut memory_previous: Option<PreviousRound> = None;
        let mut states: std::collections::HashMap<String, Vec<u32>> = std::collections::HashMap::new();
        let mut number = 0;
        for _ in 0..length {
            number += rng.random_range(1..3);
            let state = format!("s{}", rng.random_range(0..alphabet));
            // Some rounds come from traces without a judgement.
            let judged = rng.random_bool(0.8);
            let findings: Vec<FindingKey> =
                pool.iter().filter(|_| judged && rng.random_bool(0.35)).cloned().collect();
            // Some loops keep a ratchet: a value that wanders, sometimes
            // with a best.
            let ratchet = rng.random_bool(0.6).then(|| Ratchet {
                value: f64::from(rng.random_range(0..4_u8)),
                best: rng.random_bool(0.5).then(|| f64::from(rng.random_range(0..4_u8))),
                stall_count: None,
            });
            let current = RoundInput { round: number, state: state.clone(), findings, judged, ratchet };
            let expected = classify_round(&history, &current, &policy);
            let memory = RunMemory {
                previous: memory_previous.clone(),
                seen_at: states.get(&state).cloned().unwrap_or_default(),
            };
            let got = classify_next(&memory, &current, &policy);
            assert_eq!(got, expected, "round {number} of {history:?}\nthen {current:?}\npolicy {policy:?}");
            states.entry(state.clone()).or_default().push(number);
            memory_previous = Some(PreviousRound {
                round: number,
                state,
                findings: current.findings.clone(),
                consecutive: got.consecutive,
                ratchet: current.ratchet,
            });
            history.push(current);
            rounds_checked += 1;
        }
    }
    assert!(rounds_checked > 100_000, "{rounds_checked} rounds checked");
}
