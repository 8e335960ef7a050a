//! From OTLP spans to what a round needs of them (PRODUCT.md section 2, "The
//! second way in"). Pure: no IO, no clock. Each span either maps to a
//! [`MappedSpan`] or is refused with a sentence that names it and what was
//! wrong, for the response's `partial_success`.

use std::collections::HashSet;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{status, Span};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::loops::{validate_loop_name, RoundError};
use crate::stored_text::{self, limits, Rule};

/// The operation names of a model call (`gen_ai.operation.name`).
const MODEL_OPERATIONS: [&str; 3] = ["chat", "text_completion", "generate_content"];
/// The span event that carries a finding.
pub const FINDING_EVENT: &str = "fixedpoint.finding";
/// What an error code may hold (the ingest contract's `error.code` limit).
const MAX_ERROR_CODE_CHARS: usize = 256;
/// What a tool's name may hold: one line of this many characters.
const MAX_TOOL_NAME_CHARS: usize = 256;
/// What a run id may hold (the ingest contract's `run` limit).
const MAX_RUN_CHARS: usize = crate::loops::wire::MAX_RUN_CHARS;
/// At most this many refusals are spelled out in `partial_success`.
const PROBLEMS_SHOWN: usize = 3;

/// What a span is to a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanRole {
    /// A model call: one round begins.
    Model,
    /// A tool call of the round before it.
    Tool,
    /// The agent's own span (`invoke_agent`): its end ends its trace's
    /// rounds.
    Agent,
    /// A span without a parent that is no GenAI span (a request, a job):
    /// its end, too, ends its trace's rounds.
    Root,
}

impl SpanRole {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanRole::Model => "model",
            SpanRole::Tool => "tool",
            SpanRole::Agent => "agent",
            SpanRole::Root => "root",
        }
    }

    pub fn from_column(text: &str) -> SpanRole {
        match text {
            "model" => SpanRole::Model,
            "tool" => SpanRole::Tool,
            "agent" => SpanRole::Agent,
            _ => SpanRole::Root,
        }
    }
}

/// What a round needs of one span, kept (as JSON) while the span waits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpanDetail {
    /// A tool call's `gen_ai.tool.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A tool call's `gen_ai.tool.call.arguments`, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// The SHA-256 of a model call's recorded output (`gen_ai.output.messages`,
    /// or the older `gen_ai.completion`), when the exporter records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<i64>,
    /// The span's status ERROR: `error.type` (else `ERROR`) and the status
    /// description, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RoundError>,
    /// `fixedpoint.finding` events as findings of the ingest contract,
    /// already validated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Value>,
}

/// A span that maps to part of a round.
#[derive(Debug, Clone, PartialEq)]
pub struct MappedSpan {
    /// Lowercase hex, as OTLP/JSON writes them.
    pub trace_id: String,
    pub span_id: String,
    pub role: SpanRole,
    /// Whether the span has no parent.
    pub root: bool,
    pub start_ns: i64,
    pub end_ns: i64,
    /// `gen_ai.agent.name`, when the span carries it.
    pub agent_name: Option<String>,
    /// `gen_ai.conversation.id`, when the span carries it.
    pub conversation_id: Option<String>,
    /// The resource's `service.name`.
    pub service_name: String,
    pub detail: SpanDetail,
}

/// An export, mapped.
#[derive(Debug, Default)]
pub struct MappedExport {
    pub spans: Vec<MappedSpan>,
    /// Spans that map to nothing, or that were malformed.
    pub rejected: u64,
    /// The first few reasons, one sentence each.
    pub problems: Vec<String>,
}

impl MappedExport {
    fn refuse(&mut self, problem: String) {
        self.rejected += 1;
        if self.problems.len() < PROBLEMS_SHOWN {
            self.problems.push(problem);
        }
    }

    /// The `error_message` of `partial_success`: how many spans were
    /// refused and why, or nothing when none was.
    pub fn error_message(&self, late: u64, late_problems: &[String]) -> String {
        let total = self.rejected + late;
        if total == 0 {
            return String::new();
        }
        let mut reasons: Vec<&str> = self.problems.iter().map(String::as_str).collect();
        reasons.extend(late_problems.iter().map(String::as_str));
        reasons.truncate(PROBLEMS_SHOWN);
        let shown = reasons.len() as u64;
        let more = if total > shown { format!("; and {} more", total - shown) } else { String::new() };
        let noun = if total == 1 { "span was" } else { "spans were" };
        format!("{total} {noun} not accepted: {}{more}", reasons.join("; "))
    }
}

/// Maps every span of `request`. A span sent twice in one export counts
/// once.
pub fn map_export(request: &ExportTraceServiceRequest) -> MappedExport {
    let mut export = MappedExport::default();
    let mut seen: HashSet<(Vec<u8>, Vec<u8>)> = HashSet::new();
    for resource_spans in &request.resource_spans {
        let resource_attributes =
            resource_spans.resource.as_ref().map(|resource| resource.attributes.as_slice()).unwrap_or(&[]);
        let service_name = text(resource_attributes, "service.name")
            .filter(|name| !name.trim().is_empty())
            .unwrap_or("unknown_service")
            .to_string();
        for scope_spans in &resource_spans.scope_spans {
            for span in &scope_spans.spans {
                if !seen.insert((span.trace_id.clone(), span.span_id.clone())) {
                    continue;
                }
                match map_span(span, &service_name) {
                    Ok(Some(mapped)) => export.spans.push(mapped),
                    Ok(None) => export.refuse(format!(
                        "span {} is not a GenAI model call, tool call or agent span (gen_ai.operation.name {})",
                        name_of(span),
                        text(&span.attributes, "gen_ai.operation.name")
                            .map_or_else(|| "absent".to_string(), |operation| format!("{operation:?}"))
                    )),
                    Err(problem) => export.refuse(format!("span {}: {problem}", name_of(span))),
                }
            }
        }
    }
    export
}

/// A span as a refusal names it: its name and id.
fn name_of(span: &Span) -> String {
    let name: String = span.name.chars().take(80).collect();
    format!("{name:?} ({})", hex::encode(&span.span_id))
}

/// `Ok(None)` for a span that maps to nothing.
fn map_span(span: &Span, service_name: &str) -> Result<Option<MappedSpan>, String> {
    if span.trace_id.len() != 16 || span.trace_id.iter().all(|byte| *byte == 0) {
        return Err("traceId must be 16 bytes, not all zero".to_string());
    }
    if span.span_id.len() != 8 || span.span_id.iter().all(|byte| *byte == 0) {
        return Err("spanId must be 8 bytes, not all zero".to_string());
    }
    let root = span.parent_span_id.is_empty();
    let attributes = span.attributes.as_slice();
    let Some(role) = role_of(attributes, root) else { return Ok(None) };
    let start_ns = i64::try_from(span.start_time_unix_nano)
        .map_err(|_| "startTimeUnixNano is out of range".to_string())?;
    let end_ns = i64::try_from(span.end_time_unix_nano)
        .map_err(|_| "endTimeUnixNano is out of range".to_string())?
        .max(start_ns);

    let agent_name = text(attributes, "gen_ai.agent.name").map(str::to_string);
    if let Some(name) = &agent_name {
        validate_loop_name(name)
            .map_err(|error| format!("gen_ai.agent.name {name:?} is no loop name: {error}"))?;
    }
    validate_loop_name(service_name)
        .map_err(|error| format!("service.name {service_name:?} is no loop name: {error}"))?;
    let conversation_id = text(attributes, "gen_ai.conversation.id").map(str::to_string);
    if let Some(id) = &conversation_id {
        if id.trim().is_empty() {
            return Err(format!("gen_ai.conversation.id must be 1 to {MAX_RUN_CHARS} characters"));
        }
        stored_text::check("gen_ai.conversation.id", id, Rule::text(MAX_RUN_CHARS))
            .map_err(|error| error.to_string())?;
    }

    let mut detail = SpanDetail::default();
    match role {
        SpanRole::Model => {
            detail.input_tokens =
                first_int(attributes, &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"]);
            detail.output_tokens =
                first_int(attributes, &["gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"]);
            detail.output = ["gen_ai.output.messages", "gen_ai.completion"]
                .iter()
                .find_map(|key| value(attributes, key))
                .map(|output| hex::encode(Sha256::digest(json_text(output).as_bytes())));
        }
        SpanRole::Tool => {
            let name = text(attributes, "gen_ai.tool.name")
                .map(str::to_string)
                .or_else(|| span.name.strip_prefix("execute_tool ").map(str::to_string))
                .filter(|name| !name.trim().is_empty())
                .ok_or_else(|| "a tool call needs gen_ai.tool.name".to_string())?;
            // The stored-text rule: both are kept with the span until its
            // round is complete, then with the round's tool calls.
            stored_text::check("gen_ai.tool.name", &name, Rule::line(MAX_TOOL_NAME_CHARS))
                .map_err(|error| error.to_string())?;
            detail.tool = Some(name);
            detail.arguments = value(attributes, "gen_ai.tool.call.arguments").map(json_text);
            if let Some(arguments) = &detail.arguments {
                stored_text::check("gen_ai.tool.call.arguments", arguments, Rule::text(usize::MAX))
                    .map_err(|error| error.to_string())?;
            }
            // A tool may run a model of its own and report what it used.
            detail.input_tokens =
                first_int(attributes, &["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"]);
            detail.output_tokens =
                first_int(attributes, &["gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"]);
        }
        SpanRole::Agent | SpanRole::Root => {}
    }
    if matches!(role, SpanRole::Model | SpanRole::Tool) {
        detail.error = error_of(span)?;
        detail.findings = findings_of(span)?;
    }
    Ok(Some(MappedSpan {
        trace_id: hex::encode(&span.trace_id),
        span_id: hex::encode(&span.span_id),
        role,
        root,
        start_ns,
        end_ns,
        agent_name,
        conversation_id,
        service_name: service_name.to_string(),
        detail,
    }))
}

/// The role of a span by its GenAI attributes, current or older: spans
/// written before `gen_ai.operation.name` existed are model calls when they
/// name a provider or model, tool calls when they name a tool.
fn role_of(attributes: &[KeyValue], root: bool) -> Option<SpanRole> {
    match text(attributes, "gen_ai.operation.name") {
        Some(operation) if MODEL_OPERATIONS.contains(&operation) => Some(SpanRole::Model),
        Some("execute_tool") => Some(SpanRole::Tool),
        Some("invoke_agent") => Some(SpanRole::Agent),
        Some(_) => root.then_some(SpanRole::Root),
        None if value(attributes, "gen_ai.tool.name").is_some() => Some(SpanRole::Tool),
        None if ["gen_ai.provider.name", "gen_ai.system", "gen_ai.request.model"]
            .iter()
            .any(|key| value(attributes, key).is_some()) =>
        {
            Some(SpanRole::Model)
        }
        None => root.then_some(SpanRole::Root),
    }
}

/// The round's error, when the span's status is ERROR: `error.type` as its
/// code, the description whole as its body.
fn error_of(span: &Span) -> Result<Option<RoundError>, String> {
    let Some(span_status) = span.status.as_ref() else { return Ok(None) };
    if span_status.code != status::StatusCode::Error as i32 {
        return Ok(None);
    }
    let code: String = text(&span.attributes, "error.type")
        .filter(|code| !code.trim().is_empty())
        .unwrap_or("ERROR")
        .chars()
        .take(MAX_ERROR_CODE_CHARS)
        .collect();
    stored_text::check("error.type", &code, Rule::text(MAX_ERROR_CODE_CHARS))
        .and_then(|()| stored_text::check("the status description", &span_status.message, limits::ERROR_BODY))
        .map_err(|error| error.to_string())?;
    Ok(Some(RoundError { code, body: span_status.message.clone() }))
}

/// The span's `fixedpoint.finding` events as ingest findings, each refused
/// as the ingest API would refuse it.
fn findings_of(span: &Span) -> Result<Vec<Value>, String> {
    let mut findings = Vec::new();
    for (index, event) in span.events.iter().filter(|event| event.name == FINDING_EVENT).enumerate() {
        let attributes = event.attributes.as_slice();
        let line = |key: &str| value(attributes, key).and_then(int_of);
        let target = match (text(attributes, "target.path"), text(attributes, "target.id")) {
            (Some(path), None) => {
                let mut target = json!({"path": path});
                if let Some(start) = line("target.start_line") {
                    target["start_line"] = json!(start);
                }
                if let Some(end) = line("target.end_line") {
                    target["end_line"] = json!(end);
                }
                target
            }
            (None, Some(id)) => json!({"id": id}),
            (Some(path), Some(id)) => json!({"path": path, "id": id}),
            (None, None) => json!({}),
        };
        let mut finding = json!({
            "target": target,
            "severity": text(attributes, "severity").unwrap_or_default(),
            "criterion": text(attributes, "criterion").unwrap_or_default(),
        });
        if let Some(message) = text(attributes, "message") {
            finding["message"] = json!(message);
        }
        crate::loops::wire::finding(&finding, index).map_err(|error| {
            let message = error.to_string().replace(&format!("findings[{index}]."), "");
            format!("event {FINDING_EVENT} {}: {message}", index + 1)
        })?;
        findings.push(finding);
    }
    Ok(findings)
}

fn value<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref())
        .and_then(|value| value.value.as_ref())
}

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match value(attributes, key) {
        Some(any_value::Value::StringValue(text)) => Some(text),
        _ => None,
    }
}

/// A whole number, as an int, a whole double or a string of digits
/// (exporters differ).
fn int_of(value: &any_value::Value) -> Option<i64> {
    match value {
        any_value::Value::IntValue(number) => Some(*number),
        any_value::Value::DoubleValue(number) if number.fract() == 0.0 && number.is_finite() => {
            Some(*number as i64)
        }
        any_value::Value::StringValue(text) => text.trim().parse().ok(),
        _ => None,
    }
}

fn first_int(attributes: &[KeyValue], keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|key| value(attributes, key).and_then(int_of)).filter(|number| *number >= 0)
}

/// An attribute as text: a string as it is, anything else as JSON.
fn json_text(value: &any_value::Value) -> String {
    match value {
        any_value::Value::StringValue(text) => text.clone(),
        other => json_of(other).to_string(),
    }
}

fn json_of(value: &any_value::Value) -> Value {
    let inner = |value: &AnyValue| value.value.as_ref().map_or(Value::Null, json_of);
    match value {
        any_value::Value::StringValue(text) => Value::String(text.clone()),
        any_value::Value::BoolValue(flag) => Value::Bool(*flag),
        any_value::Value::IntValue(number) => json!(number),
        any_value::Value::DoubleValue(number) => json!(number),
        any_value::Value::ArrayValue(array) => Value::Array(array.values.iter().map(inner).collect()),
        any_value::Value::KvlistValue(list) => Value::Object(
            list.values
                .iter()
                .map(|pair| (pair.key.clone(), pair.value.as_ref().map_or(Value::Null, inner)))
                .collect(),
        ),
        any_value::Value::BytesValue(bytes) => Value::String(hex::encode(bytes)),
        // An index into a dictionary that only profiles carry.
        any_value::Value::StringValueStrindex(_) => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans};

    use super::*;

    fn attribute(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue { key: key.to_string(), value: Some(AnyValue { value: Some(value) }), ..Default::default() }
    }

    fn text_attribute(key: &str, value: &str) -> KeyValue {
        attribute(key, any_value::Value::StringValue(value.to_string()))
    }

    fn span_with(attributes: Vec<KeyValue>) -> Span {
        Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            parent_span_id: vec![3; 8],
            name: "s".to_string(),
            start_time_unix_nano: 10,
            end_time_unix_nano: 20,
            attributes,
            ..Default::default()
        }
    }

    fn mapped(span: Span, service: Option<&str>) -> MappedExport {
        let attributes = service.map(|name| vec![text_attribute("service.name", name)]).unwrap_or_default();
        map_export(&ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource { attributes, ..Default::default() }),
                scope_spans: vec![ScopeSpans { spans: vec![span], ..Default::default() }],
                ..Default::default()
            }],
        })
    }

    #[test]
    fn roles_come_from_the_current_and_the_older_attributes() {
        let role = |attributes: Vec<KeyValue>, root: bool| {
            let mut span = span_with(attributes);
            if root {
                span.parent_span_id.clear();
            }
            mapped(span, Some("svc")).spans.first().map(|span| span.role)
        };
        for operation in ["chat", "text_completion", "generate_content"] {
            assert_eq!(
                role(vec![text_attribute("gen_ai.operation.name", operation)], false),
                Some(SpanRole::Model)
            );
        }
        assert_eq!(role(vec![text_attribute("gen_ai.system", "openai")], false), Some(SpanRole::Model));
        assert_eq!(role(vec![text_attribute("gen_ai.tool.name", "grep")], false), Some(SpanRole::Tool));
        assert_eq!(
            role(vec![text_attribute("gen_ai.operation.name", "invoke_agent")], false),
            Some(SpanRole::Agent)
        );
        assert_eq!(role(vec![text_attribute("http.method", "GET")], true), Some(SpanRole::Root));
        assert_eq!(role(vec![text_attribute("http.method", "GET")], false), None);
        assert_eq!(role(vec![text_attribute("gen_ai.operation.name", "embeddings")], false), None);
    }

    #[test]
    fn usage_arguments_and_errors_are_read_in_either_spelling() {
        let mut tool = span_with(vec![
            text_attribute("gen_ai.operation.name", "execute_tool"),
            text_attribute("gen_ai.tool.name", "search"),
            attribute(
                "gen_ai.tool.call.arguments",
                any_value::Value::KvlistValue(opentelemetry_proto::tonic::common::v1::KeyValueList {
                    values: vec![attribute("q", any_value::Value::IntValue(3))],
                }),
            ),
            attribute("gen_ai.usage.prompt_tokens", any_value::Value::StringValue("12".to_string())),
        ]);
        tool.status = Some(opentelemetry_proto::tonic::trace::v1::Status {
            code: status::StatusCode::Error as i32,
            message: "boom\nwhole".to_string(),
        });
        let export = mapped(tool, None);
        let span = &export.spans[0];
        assert_eq!(span.service_name, "unknown_service", "the SDKs' own default");
        assert_eq!(span.detail.arguments.as_deref(), Some(r#"{"q":3}"#));
        assert_eq!(span.detail.input_tokens, Some(12));
        let error = span.detail.error.as_ref().unwrap();
        assert_eq!((error.code.as_str(), error.body.as_str()), ("ERROR", "boom\nwhole"));
    }

    #[test]
    fn a_bad_finding_event_or_name_refuses_its_span_by_name() {
        let mut tool = span_with(vec![text_attribute("gen_ai.tool.name", "search")]);
        tool.events.push(span::Event {
            name: FINDING_EVENT.to_string(),
            attributes: vec![
                text_attribute("target.path", "a.rs"),
                text_attribute("severity", "blocking"),
                text_attribute("criterion", "c"),
            ],
            ..Default::default()
        });
        let export = mapped(tool, Some("svc"));
        assert_eq!(export.rejected, 1);
        assert!(export.problems[0].contains("event fixedpoint.finding 1"), "{:?}", export.problems);
        assert!(export.problems[0].contains("start_line"), "{:?}", export.problems);
        let export = mapped(span_with(vec![text_attribute("gen_ai.system", "x")]), Some("a/b"));
        assert!(export.problems[0].contains("service.name \"a/b\""), "{:?}", export.problems);
        let mut long = span_with(vec![text_attribute("gen_ai.system", "x")]);
        long.attributes.push(text_attribute("gen_ai.conversation.id", &"c".repeat(129)));
        assert!(mapped(long, Some("svc")).problems[0].contains("gen_ai.conversation.id"));
    }

    #[test]
    fn the_error_message_counts_and_names_what_was_refused() {
        let mut export = MappedExport::default();
        assert_eq!(export.error_message(0, &[]), "");
        for index in 0..5 {
            export.refuse(format!("problem {index}"));
        }
        let message = export.error_message(1, &["late one".to_string()]);
        assert_eq!(message, "6 spans were not accepted: problem 0; problem 1; problem 2; and 3 more");
    }
}
