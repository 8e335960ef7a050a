//! Which of a run's waiting spans make complete rounds, and those rounds as
//! ingest rounds. Pure: the store reads the waiting spans and the clock and
//! hands them here, so the same spans at the same time give the same plan
//! whatever order they arrived in.
//!
//! A round is a model call and the tool calls that start after it and
//! before the next model call, in start order across the run. It is
//! complete when the run's next model call has arrived, when an agent or
//! root span of its trace has arrived that ended after the model call
//! began, or when the run has been silent for its heartbeat window. It is
//! stored once the span that completed it has been here for the settle
//! time, so spans that an exporter sent in another order, or in another
//! export, still find their round. Rounds are stored in order: the first
//! round that is not ready holds back the ones after it.

use std::collections::HashMap;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::mapping::{SpanDetail, SpanRole};
use crate::loops::{RoundReport, RoundSource, ToolCall};

/// A span of a run that waits for its round.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingSpan {
    pub trace_id: String,
    pub span_id: String,
    pub role: SpanRole,
    pub start_ns: i64,
    pub end_ns: i64,
    /// When it arrived (Unix milliseconds, the server's clock).
    pub arrived_at: i64,
    pub detail: SpanDetail,
}

/// The latest end of a trace's agent or root spans, and when the first of
/// them arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEnd {
    pub end_ns: i64,
    pub arrived_at: i64,
}

/// What planning needs of the run and the clock.
#[derive(Debug, Clone)]
pub struct RunClock {
    pub run_key: String,
    /// Spans that start before this were too late: their rounds are stored.
    pub sealed_ns: i64,
    /// When the run's latest span arrived.
    pub last_span_at: i64,
    pub now: i64,
    pub settle_ms: i64,
    /// The loop's heartbeat window: a run silent this long has ended.
    pub window_ms: i64,
}

/// A round ready to store.
#[derive(Debug, Clone)]
pub struct PlannedRound {
    /// The round, numbered 1 (the store numbers it after the run's last),
    /// or why its spans make no valid round.
    pub report: Result<RoundReport, String>,
    /// `(trace_id, span_id)` of its spans.
    pub spans: Vec<(String, String)>,
    /// The run's seal once it is stored.
    pub sealed_ns: i64,
}

/// The rounds to store now, and the spans to drop.
#[derive(Debug, Default)]
pub struct Plan {
    pub rounds: Vec<PlannedRound>,
    /// `(trace_id, span_id)` of spans that can join no round: they start
    /// before a stored round's end (too late), or the run ended without a
    /// model call for them.
    pub dropped: Vec<(String, String)>,
    /// When time alone may let more of the run be stored: the settling of a
    /// complete round, else the end of the heartbeat window. `None` when no
    /// span is left waiting.
    pub due_at: Option<i64>,
}

/// Plans the rounds of one run from its waiting spans.
pub fn plan_rounds(waiting: &[WaitingSpan], ends: &HashMap<String, TraceEnd>, clock: &RunClock) -> Plan {
    let mut spans: Vec<&WaitingSpan> = waiting.iter().collect();
    // A model call sorts before a tool call that starts at the same time.
    spans.sort_by(|a, b| {
        (a.start_ns, a.role != SpanRole::Model, &a.span_id).cmp(&(
            b.start_ns,
            b.role != SpanRole::Model,
            &b.span_id,
        ))
    });
    let mut plan = Plan::default();
    let (late, live): (Vec<&WaitingSpan>, Vec<&WaitingSpan>) =
        spans.into_iter().partition(|span| span.start_ns < clock.sealed_ns);
    plan.dropped.extend(late.iter().map(|span| key(span)));

    let models: Vec<usize> =
        live.iter().enumerate().filter(|(_, span)| span.role == SpanRole::Model).map(|(at, _)| at).collect();
    let silent = clock.now - clock.last_span_at >= clock.window_ms;
    let mut sealed_ns = clock.sealed_ns;
    let mut taken = vec![false; live.len()];
    for (index, &at) in models.iter().enumerate() {
        let model = live[at];
        let next = models.get(index + 1).map(|&next| live[next]);
        let trace_end = ends.get(&model.trace_id).filter(|end| end.end_ns >= model.start_ns);
        // The span that completed the round, and when it arrived.
        let completed_at = match (next, trace_end) {
            (Some(next), _) => Some(next.arrived_at),
            (None, Some(end)) => Some(end.arrived_at),
            (None, None) if silent => Some(clock.now - clock.settle_ms),
            (None, None) => None,
        };
        if completed_at.is_none_or(|at| clock.now - at < clock.settle_ms) {
            plan.due_at = Some(match completed_at {
                Some(at) => at + clock.settle_ms,
                None => clock.last_span_at + clock.window_ms,
            });
            break;
        }
        let until = next.map_or(i64::MAX, |next| next.start_ns);
        let members: Vec<usize> = (at..live.len())
            .filter(|&member| {
                member == at
                    || (live[member].role == SpanRole::Tool
                        && live[member].start_ns < until
                        && (next.is_some()
                            || trace_end.is_none_or(|end| live[member].start_ns <= end.end_ns)))
            })
            .collect();
        for &member in &members {
            taken[member] = true;
        }
        let round_spans: Vec<&WaitingSpan> = members.iter().map(|&member| live[member]).collect();
        sealed_ns = match (next, trace_end) {
            (Some(next), _) => next.start_ns,
            (None, Some(end)) => end.end_ns.saturating_add(1),
            (None, None) => {
                round_spans.iter().map(|span| span.end_ns).max().unwrap_or(model.end_ns).saturating_add(1)
            }
        };
        plan.rounds.push(PlannedRound {
            report: report_of(&round_spans, &clock.run_key),
            spans: round_spans.iter().map(|span| key(span)).collect(),
            sealed_ns,
        });
    }
    // What starts before the new seal and joined no round is too late; a
    // run that went silent takes its leftovers with it.
    let mut left = false;
    for (at, span) in live.iter().enumerate() {
        if !taken[at] && (span.start_ns < sealed_ns || (silent && models.is_empty())) {
            plan.dropped.push(key(span));
        } else if !taken[at] {
            left = true;
        }
    }
    if left && plan.due_at.is_none() {
        // Tool calls that wait for a model call before them.
        plan.due_at = Some(clock.last_span_at + clock.window_ms);
    }
    plan
}

fn key(span: &WaitingSpan) -> (String, String) {
    (span.trace_id.clone(), span.span_id.clone())
}

/// The ingest round that a model call and its tool calls make, validated
/// as the ingest API validates a body.
fn report_of(spans: &[&WaitingSpan], run_key: &str) -> Result<RoundReport, String> {
    let tools: Vec<&WaitingSpan> = spans.iter().copied().filter(|span| span.role == SpanRole::Tool).collect();
    let tool_calls: Vec<ToolCall> = tools
        .iter()
        .map(|span| ToolCall {
            name: span.detail.tool.clone().unwrap_or_default(),
            arguments: span.detail.arguments.clone(),
            failed: span.detail.error.is_some(),
        })
        .collect();
    let tokens: Option<i64> = spans
        .iter()
        .flat_map(|span| [span.detail.input_tokens, span.detail.output_tokens])
        .flatten()
        .reduce(|sum, tokens| sum.saturating_add(tokens));
    let start = spans.iter().map(|span| span.start_ns).min().unwrap_or_default();
    let end = spans.iter().map(|span| span.end_ns).max().unwrap_or_default();
    let findings: Vec<Value> = spans.iter().flat_map(|span| span.detail.findings.iter().cloned()).collect();
    let error = spans.iter().find_map(|span| span.detail.error.clone());
    let model_output =
        spans.iter().find(|span| span.role == SpanRole::Model).and_then(|span| span.detail.output.clone());
    let body = json!({
        "round": 1,
        "run": run_key,
        "state": state_of(&tool_calls, model_output.as_deref()),
        "findings": findings,
        "spent": {"tokens": tokens, "seconds": (end - start).max(0) as f64 / 1e9},
        "error": error,
    });
    // The same validation as a body sent to the ingest API.
    let mut report =
        RoundReport::from_json(body.to_string().as_bytes()).map_err(|error| error.to_string())?;
    report.judged = !report.findings.is_empty();
    report.source = RoundSource::Traces;
    report.tool_calls = tool_calls;
    Ok(report)
}

/// The round's state: a digest of what it did. The tool calls in order,
/// each its name and arguments; a round that called no tool is what its
/// model answered, when the exporter records it.
pub fn state_of(tool_calls: &[ToolCall], model_output: Option<&str>) -> String {
    let canonical = if tool_calls.is_empty() {
        json!(["answer", model_output])
    } else {
        json!(tool_calls.iter().map(|call| json!([call.name, call.arguments])).collect::<Vec<_>>())
    };
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    hex::encode(&digest[..8])
}

#[cfg(test)]
mod tests {
    use rand::seq::SliceRandom as _;
    use rand::{Rng as _, SeedableRng as _};

    use super::*;

    fn span(id: u8, role: SpanRole, start_ns: i64, tool: Option<&str>) -> WaitingSpan {
        WaitingSpan {
            trace_id: "t".to_string(),
            span_id: format!("{id:02}"),
            role,
            start_ns,
            end_ns: start_ns + 5,
            arrived_at: 1_000,
            detail: SpanDetail {
                tool: tool.map(str::to_string),
                arguments: tool.map(|_| "{}".to_string()),
                input_tokens: (role == SpanRole::Model).then_some(10),
                ..SpanDetail::default()
            },
        }
    }

    fn clock(now: i64, settle_ms: i64) -> RunClock {
        RunClock {
            run_key: "r".to_string(),
            sealed_ns: 0,
            last_span_at: 1_000,
            now,
            settle_ms,
            window_ms: 600_000,
        }
    }

    fn run() -> Vec<WaitingSpan> {
        vec![
            span(1, SpanRole::Model, 10, None),
            span(2, SpanRole::Tool, 20, Some("search")),
            span(3, SpanRole::Tool, 25, Some("read")),
            span(4, SpanRole::Model, 30, None),
            span(5, SpanRole::Tool, 40, Some("search")),
            span(6, SpanRole::Model, 50, None),
        ]
    }

    fn tools(plan: &Plan) -> Vec<Vec<String>> {
        plan.rounds
            .iter()
            .map(|round| {
                round.report.as_ref().unwrap().tool_calls.iter().map(|call| call.name.clone()).collect()
            })
            .collect()
    }

    #[test]
    fn a_round_is_a_model_call_and_the_tool_calls_before_the_next() {
        let plan = plan_rounds(&run(), &HashMap::new(), &clock(1_000, 0));
        // The last model call waits: nothing has completed it.
        assert_eq!(tools(&plan), [vec!["search", "read"], vec!["search"]]);
        assert_eq!(plan.rounds[0].sealed_ns, 30);
        assert_eq!(plan.rounds[1].sealed_ns, 50);
        assert!(plan.dropped.is_empty());
        let report = plan.rounds[0].report.as_ref().unwrap();
        assert!(!report.judged, "no finding events");
        assert_eq!(report.spent.tokens, Some(10));
        assert_eq!(report.source, RoundSource::Traces);
    }

    #[test]
    fn the_end_of_the_trace_completes_its_last_round() {
        let ends = HashMap::from([("t".to_string(), TraceEnd { end_ns: 100, arrived_at: 1_000 })]);
        let plan = plan_rounds(&run(), &ends, &clock(1_000, 0));
        assert_eq!(plan.rounds.len(), 3);
        assert_eq!(plan.rounds[2].sealed_ns, 101);
    }

    #[test]
    fn a_round_waits_for_the_settle_time_and_holds_back_the_rest() {
        let mut spans = run();
        spans[3].arrived_at = 5_000;
        let plan = plan_rounds(&spans, &HashMap::new(), &clock(5_500, 1_000));
        assert!(plan.rounds.is_empty(), "round 1's completing span has not settled, so round 2 waits too");
        assert_eq!(plan.due_at, Some(6_000), "it settles a second after it arrived");
        let plan = plan_rounds(&spans, &HashMap::new(), &clock(6_000, 1_000));
        assert_eq!(plan.rounds.len(), 2);
        assert_eq!(plan.due_at, Some(601_000), "the last model call waits for the heartbeat window");
    }

    #[test]
    fn a_silent_run_ends_its_last_round_and_drops_what_no_round_takes() {
        let mut silent = clock(700_000, 0);
        silent.last_span_at = 1_000;
        let plan = plan_rounds(&run(), &HashMap::new(), &silent);
        assert_eq!(plan.rounds.len(), 3);
        let lonely = vec![span(9, SpanRole::Tool, 5, Some("search"))];
        let plan = plan_rounds(&lonely, &HashMap::new(), &silent);
        assert!(plan.rounds.is_empty());
        assert_eq!(plan.dropped.len(), 1);
        assert_eq!(plan.due_at, None, "nothing is left waiting");
    }

    #[test]
    fn spans_before_the_seal_are_too_late() {
        let mut sealed = clock(1_000, 0);
        sealed.sealed_ns = 30;
        let plan = plan_rounds(&run(), &HashMap::new(), &sealed);
        assert_eq!(plan.dropped.iter().map(|(_, id)| id.as_str()).collect::<Vec<_>>(), ["01", "02", "03"]);
        assert_eq!(tools(&plan), [vec!["search"]]);
        // A tool call before the first model call of a new stretch is
        // dropped once that round is stored.
        let mut spans = run();
        spans.push(span(7, SpanRole::Tool, 5, Some("early")));
        let plan = plan_rounds(&spans, &HashMap::new(), &clock(1_000, 0));
        assert_eq!(plan.dropped.iter().map(|(_, id)| id.as_str()).collect::<Vec<_>>(), ["07"]);
    }

    #[test]
    fn the_same_actions_are_the_same_state_and_other_ones_are_not() {
        let call = |name: &str, arguments: &str| ToolCall {
            name: name.to_string(),
            arguments: Some(arguments.to_string()),
            failed: false,
        };
        let state = state_of(&[call("search", r#"{"q":"a"}"#)], None);
        assert_eq!(state, state_of(&[call("search", r#"{"q":"a"}"#)], Some("ignored with tools")));
        assert_ne!(state, state_of(&[call("search", r#"{"q":"b"}"#)], None));
        assert_ne!(state, state_of(&[call("read", r#"{"q":"a"}"#)], None));
        assert_ne!(state_of(&[], Some("one answer")), state_of(&[], Some("another")));
        assert_eq!(state.len(), 16);
    }

    /// However the spans of a run arrive (in which order, split across
    /// which exports), once every one has settled the plan is the same.
    #[test]
    fn the_order_of_arrival_does_not_change_the_rounds() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(20);
        for _ in 0..500 {
            let mut spans = Vec::new();
            let mut at = 0;
            for id in 0..rng.random_range(1..12_u8) {
                at += rng.random_range(1..10);
                let role = if id == 0 || rng.random_bool(0.4) { SpanRole::Model } else { SpanRole::Tool };
                let tool = ["search", "read", "write"][rng.random_range(0..3)];
                spans.push(span(id, role, at, (role == SpanRole::Tool).then_some(tool)));
            }
            let ends = HashMap::from([("t".to_string(), TraceEnd { end_ns: at + 100, arrived_at: 0 })]);
            let expected = plan_rounds(&spans, &ends, &clock(10_000, 1_000));
            for span in &mut spans {
                span.arrived_at = rng.random_range(0..9_000);
            }
            spans.shuffle(&mut rng);
            let got = plan_rounds(&spans, &ends, &clock(10_000, 1_000));
            assert_eq!(format!("{:?}", got.rounds), format!("{:?}", expected.rounds));
            assert_eq!(got.dropped, expected.dropped);
        }
    }
}
