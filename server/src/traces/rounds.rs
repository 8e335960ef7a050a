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
    /// The run's `sealed_ns` once it is stored.
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
    for (at, span) in live.iter().enumerate() {
        if !taken[at] && (span.start_ns < sealed_ns || (silent && models.is_empty())) {
            plan.dropped.push(key(span));
        }
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
