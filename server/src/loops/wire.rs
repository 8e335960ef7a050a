//! The ingest contract's request bodies, read and validated by hand from a
//! JSON value so that every refusal names the field it concerns
//! (`findings[2].severity`), which derived deserialisers cannot do. Unknown
//! fields are ignored everywhere, as the contract promises.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::web::json::strict_json;
use sha2::{Digest, Sha256};

use super::LoopsError;
use crate::convergence::{FindingKey, Fingerprint, Ratchet, RoundInput, Severity, Target};
use crate::stored_text::{self, limits, Rule};

/// Limits on the text fields. They keep one round's row a sensible size; the
/// body cap bounds the whole request.
pub const MAX_STATE_CHARS: usize = 256;
pub const MAX_RUN_CHARS: usize = 128;
pub const MAX_LOOP_NAME_CHARS: usize = 128;
/// And at most this many bytes (128 characters of a script outside ASCII
/// take up to 512).
pub const MAX_LOOP_NAME_BYTES: usize = 200;
const MAX_CRITERION_CHARS: usize = 256;
const MAX_TARGET_CHARS: usize = 1024;
const MAX_ERROR_CODE_CHARS: usize = 256;
const MAX_BLOCKED_REASON_CHARS: usize = 64;
const MAX_BLOCKED_SUBJECT_CHARS: usize = 512;
/// The most bytes of `text` a round may send to be fingerprinted: the
/// SimHash hashes every 4-character shingle of it in the request's task,
/// and the text is never kept.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// One of the taxonomy's exits, E1 to E8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExitId(u8);

impl ExitId {
    pub fn parse(text: &str) -> Option<ExitId> {
        let digit = text.strip_prefix('E')?;
        match digit.parse::<u8>() {
            Ok(number @ 1..=8) if digit.len() == 1 => Some(ExitId(number)),
            _ => None,
        }
    }

    pub fn as_string(self) -> String {
        format!("E{}", self.0)
    }

    /// E1 (goal met) and E5 (no progress) are the taxonomy's DETECT exits:
    /// the loop itself judged that it had finished.
    pub fn is_detect(self) -> bool {
        matches!(self.0, 1 | 5)
    }

    /// E6, a person interrupted the loop.
    pub fn is_human_interrupt(self) -> bool {
        self.0 == 6
    }
}

/// A finding as sent: its key and its message.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub key: FindingKey,
    pub message: String,
}

/// What the round cost, each part optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub tokens: Option<i64>,
    pub usd: Option<f64>,
    pub seconds: Option<f64>,
}

/// The raw error a round reports, kept exactly as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundError {
    pub code: String,
    /// The body as sent: a string is kept verbatim, any other JSON value as
    /// its JSON text.
    pub body: String,
}

/// Where a round came from: the ingest API, the connector (`fixedpoint
/// push`, which speaks the ingest API) or OpenTelemetry traces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundSource {
    #[default]
    Api,
    Connector,
    Traces,
}

impl RoundSource {
    /// The stored spelling (`rounds.source`).
    pub fn as_str(self) -> &'static str {
        match self {
            RoundSource::Api => "api",
            RoundSource::Connector => "connector",
            RoundSource::Traces => "traces",
        }
    }
}

/// One tool call of a round from traces, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub name: String,
    /// The arguments as the exporter recorded them (JSON text, usually),
    /// or none when it records no arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// Whether the tool's span ended with status ERROR.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

/// A validated `POST .../rounds` body.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundReport {
    pub round: u32,
    pub run: Option<String>,
    pub state: String,
    pub findings: Vec<Finding>,
    pub spent: Spent,
    pub exit: Option<ExitId>,
    pub error: Option<RoundError>,
    /// Whether a judge looked at the round: always for the ingest API; for
    /// traces, only when a span carried a `fixedpoint.finding` event.
    pub judged: bool,
    /// Where the round came from (not part of its body: a round sent again
    /// from elsewhere is the same round).
    pub source: RoundSource,
    /// The tool calls of a round from traces, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The loop's ratchet after the round, when it sent one.
    pub ratchet: Option<Ratchet>,
    /// The SimHash of what was judged: as sent, or computed from the
    /// round's `text`, which is dropped once read.
    pub fingerprint: Option<Fingerprint>,
}

impl RoundReport {
    /// Reads a request body. Every refusal names its field.
    pub fn from_json(bytes: &[u8]) -> Result<RoundReport, LoopsError> {
        let value: Value = strict_json(bytes).map_err(|error| LoopsError::Invalid {
            field: None,
            message: format!("body is not valid JSON: {error}"),
        })?;
        let Value::Object(body) = value else {
            return Err(LoopsError::invalid(None, "body must be a JSON object"));
        };
        let round = positive_u32(body.get("round"), "round")?;
        let run = optional_text(&body, "run", MAX_RUN_CHARS)?;
        let state = required_text(body.get("state"), "state", MAX_STATE_CHARS)?;
        let findings = match body.get("findings") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(index, item)| finding(item, index))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(LoopsError::invalid(Some("findings"), "findings must be an array")),
        };
        let spent = match body.get("spent") {
            None | Some(Value::Null) => Spent::default(),
            Some(Value::Object(spent)) => Spent {
                tokens: match spent.get("tokens") {
                    None | Some(Value::Null) => None,
                    Some(value) => Some(
                        value.as_u64().and_then(|tokens| i64::try_from(tokens).ok()).ok_or_else(|| {
                            LoopsError::invalid(
                                Some("spent.tokens"),
                                "spent.tokens must be a non-negative integer",
                            )
                        })?,
                    ),
                },
                usd: non_negative_number(spent.get("usd"), "spent.usd")?,
                seconds: non_negative_number(spent.get("seconds"), "spent.seconds")?,
            },
            Some(_) => return Err(LoopsError::invalid(Some("spent"), "spent must be an object")),
        };
        let exit = match body.get("exit") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => {
                Some(ExitId::parse(text).ok_or_else(|| {
                    LoopsError::invalid(Some("exit"), "exit must be null or one of E1 to E8")
                })?)
            }
            Some(_) => return Err(LoopsError::invalid(Some("exit"), "exit must be null or one of E1 to E8")),
        };
        let error = match body.get("error") {
            None | Some(Value::Null) => None,
            Some(Value::Object(error)) => {
                let code = required_text(error.get("code"), "error.code", MAX_ERROR_CODE_CHARS)?;
                let body = match error.get("body") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(text)) => {
                        stored(text, "error.body", limits::ERROR_BODY)?;
                        text.clone()
                    }
                    // JSON text escapes a NUL as \u0000: nothing to refuse
                    // but its length.
                    Some(other) => {
                        let text = other.to_string();
                        stored(&text, "error.body", limits::ERROR_BODY)?;
                        text
                    }
                };
                Some(RoundError { code, body })
            }
            Some(_) => return Err(LoopsError::invalid(Some("error"), "error must be null or an object")),
        };
        let ratchet = match body.get("ratchet") {
            None | Some(Value::Null) => None,
            Some(Value::Object(ratchet)) => Some(Ratchet {
                value: finite_number(ratchet.get("value"), "ratchet.value")?.ok_or_else(|| {
                    LoopsError::invalid(Some("ratchet.value"), "ratchet.value must be a number")
                })?,
                best: finite_number(ratchet.get("best"), "ratchet.best")?,
                stall_count: match ratchet.get("stall_count") {
                    None | Some(Value::Null) => None,
                    Some(value) => {
                        Some(value.as_u64().and_then(|count| u32::try_from(count).ok()).ok_or_else(|| {
                            LoopsError::invalid(
                                Some("ratchet.stall_count"),
                                "ratchet.stall_count must be a non-negative integer",
                            )
                        })?)
                    }
                },
            }),
            Some(_) => return Err(LoopsError::invalid(Some("ratchet"), "ratchet must be null or an object")),
        };
        let fingerprint = fingerprint(&body)?;
        Ok(RoundReport {
            round,
            run,
            state,
            findings,
            spent,
            exit,
            error,
            judged: true,
            source: RoundSource::Api,
            tool_calls: Vec::new(),
            ratchet,
            fingerprint,
        })
    }

    /// How many distinct blocking findings the round has (a key sent twice
    /// counts once, as the engine counts it).
    pub fn blocking_count(&self) -> usize {
        let keys: std::collections::BTreeSet<&FindingKey> =
            self.findings.iter().map(|finding| &finding.key).filter(|key| key.is_blocking()).collect();
        keys.len()
    }

    /// What the convergence engine needs of this round.
    pub fn engine_input(&self) -> RoundInput {
        RoundInput {
            round: self.round,
            state: self.state.clone(),
            findings: self.findings.iter().map(|finding| finding.key.clone()).collect(),
            judged: self.judged,
            ratchet: self.ratchet,
        }
    }

    /// The digest that decides whether a round sent again is "the same
    /// body". It covers what the round says, in a fixed layout, and leaves
    /// out what it does not: unknown fields (ignored by the contract),
    /// whitespace and key order (not content), and `run`, which only says
    /// where the round goes.
    pub fn body_hash(&self) -> String {
        let findings: Vec<Value> = self
            .findings
            .iter()
            .map(|finding| {
                serde_json::json!([
                    finding.key.target.normalized(),
                    finding.key.severity,
                    finding.key.criterion,
                    finding.message,
                ])
            })
            .collect();
        let mut canonical = serde_json::json!([
            self.round,
            self.state,
            findings,
            [self.spent.tokens, self.spent.usd, self.spent.seconds],
            self.exit.map(ExitId::as_string),
            self.error.as_ref().map(|error| [&error.code, &error.body]),
        ]);
        // An unjudged round (from traces) differs from a judged one with no
        // findings, and a round with a ratchet from one without; rounds
        // without these keep the layout their stored hashes have.
        if let Value::Array(parts) = &mut canonical {
            if !self.judged {
                parts.push(Value::String("unjudged".to_string()));
            }
            if let Some(ratchet) = &self.ratchet {
                parts.push(serde_json::json!(["ratchet", ratchet.value, ratchet.best, ratchet.stall_count]));
            }
            // The fingerprint, whether sent or computed from a text: the
            // text itself is not kept, not even in this digest.
            if let Some(fingerprint) = self.fingerprint {
                parts.push(serde_json::json!(["fingerprint", fingerprint.hex()]));
            }
        }
        hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
    }
}

/// A round's fingerprint: `fingerprint` as sent (16 hex digits), or the
/// SimHash of `text`; when both come they must agree.
fn fingerprint(body: &Map<String, Value>) -> Result<Option<Fingerprint>, LoopsError> {
    let sent = match body.get("fingerprint") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_str().and_then(Fingerprint::parse_hex).ok_or_else(|| {
            LoopsError::invalid(Some("fingerprint"), "fingerprint must be 16 hex digits (a 64-bit SimHash)")
        })?),
    };
    let computed = match body.get("text") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.len() <= MAX_TEXT_BYTES => Some(Fingerprint::of_text(text)),
        Some(Value::String(_)) => {
            return Err(LoopsError::invalid(
                Some("text"),
                format!(
                    "text must be at most {MAX_TEXT_BYTES} bytes of UTF-8 (send its fingerprint instead)"
                ),
            ))
        }
        Some(_) => return Err(LoopsError::invalid(Some("text"), "text must be a string")),
    };
    match (sent, computed) {
        (Some(sent), Some(computed)) if sent != computed => Err(LoopsError::invalid(
            Some("fingerprint"),
            format!(
                "fingerprint {} is not the SimHash of text ({}): send one of them, or both agreeing",
                sent.hex(),
                computed.hex()
            ),
        )),
        (sent, computed) => Ok(sent.or(computed)),
    }
}

/// A validated `POST .../heartbeat` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    pub run: Option<String>,
    pub blocked: Option<Blocked>,
}

/// Why a run is blocked and on what: a reason that names nothing is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocked {
    /// A short identifier such as `awaiting_approval` or `stop_file`:
    /// lowercase letters, digits and underscores, so dashboards can group by
    /// it.
    pub reason: String,
    /// What the run waits on, in words: a person, a file, a pull request.
    pub subject: String,
}

impl Heartbeat {
    /// Reads a heartbeat body; an empty body means "still running".
    pub fn from_json(bytes: &[u8]) -> Result<Heartbeat, LoopsError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Heartbeat { run: None, blocked: None });
        }
        let value: Value = strict_json(bytes).map_err(|error| LoopsError::Invalid {
            field: None,
            message: format!("body is not valid JSON: {error}"),
        })?;
        let Value::Object(body) = value else {
            return Err(LoopsError::invalid(None, "body must be a JSON object"));
        };
        let run = optional_text(&body, "run", MAX_RUN_CHARS)?;
        let status = optional_text(&body, "status", 32)?;
        let blocked = match status.as_deref() {
            None | Some("running") => None,
            Some("blocked") => {
                let reason = required_text(body.get("reason"), "reason", MAX_BLOCKED_REASON_CHARS)?;
                if !reason
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
                {
                    return Err(LoopsError::invalid(
                        Some("reason"),
                        "reason must be an identifier of lowercase letters, digits and underscores",
                    ));
                }
                let subject = match body.get("subject") {
                    Some(Value::String(text)) if !text.trim().is_empty() => {
                        required_text(body.get("subject"), "subject", MAX_BLOCKED_SUBJECT_CHARS)?
                    }
                    _ => {
                        return Err(LoopsError::invalid(
                            Some("subject"),
                            "a blocked run must name its subject: what it is waiting on",
                        ))
                    }
                };
                Some(Blocked { reason, subject })
            }
            Some(_) => return Err(LoopsError::invalid(Some("status"), "status must be running or blocked")),
        };
        Ok(Heartbeat { run, blocked })
    }
}

/// A loop's name as it appears in the path: visible text without slashes.
pub fn validate_loop_name(name: &str) -> Result<(), LoopsError> {
    let length = name.chars().count();
    if length == 0 || length > MAX_LOOP_NAME_CHARS || name.trim() != name {
        return Err(LoopsError::invalid(
            Some("loop"),
            format!("the loop name must be 1 to {MAX_LOOP_NAME_CHARS} characters without surrounding spaces"),
        ));
    }
    if name.chars().any(|character| character.is_control() || character == '/') {
        return Err(LoopsError::invalid(
            Some("loop"),
            "the loop name must not contain control characters or /",
        ));
    }
    // `.` and `..` are path segments to a browser: `/loops/..` would open
    // another page. Bytes too, for what travels in an address.
    if name == "." || name == ".." {
        return Err(LoopsError::invalid(Some("loop"), "the loop name must not be . or .."));
    }
    if name.len() > MAX_LOOP_NAME_BYTES {
        return Err(LoopsError::invalid(
            Some("loop"),
            format!("the loop name must be at most {MAX_LOOP_NAME_BYTES} bytes of UTF-8"),
        ));
    }
    Ok(())
}

/// A finding of the ingest contract's shape, validated as the ingest API
/// does; refusals name `findings[index].FIELD`.
pub(crate) fn finding(item: &Value, index: usize) -> Result<Finding, LoopsError> {
    let field = |name: &str| format!("findings[{index}].{name}");
    let Value::Object(object) = item else {
        return Err(LoopsError::Invalid {
            field: Some(format!("findings[{index}]")),
            message: format!("findings[{index}] must be an object"),
        });
    };
    let target_value = object.get("target").ok_or_else(|| LoopsError::Invalid {
        field: Some(field("target")),
        message: format!("{} is required", field("target")),
    })?;
    let target: Target =
        serde_json::from_value(target_value.clone()).map_err(|error| LoopsError::Invalid {
            field: Some(field("target")),
            message: format!("{}: {}", field("target"), strip_serde_position(&error.to_string())),
        })?;
    let target_text = match &target {
        Target::Code { path, .. } => path,
        Target::Other { id } => id,
    };
    stored(target_text, &field("target"), Rule::text(MAX_TARGET_CHARS))?;
    let severity = match object.get("severity").and_then(Value::as_str) {
        Some("blocking") => Severity::Blocking,
        Some("warning") => Severity::Warning,
        Some("info") => Severity::Info,
        _ => {
            return Err(LoopsError::Invalid {
                field: Some(field("severity")),
                message: format!("{} must be one of blocking, warning, info", field("severity")),
            })
        }
    };
    let criterion = required_text(object.get("criterion"), &field("criterion"), MAX_CRITERION_CHARS)?;
    let message = match object.get("message") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => {
            stored(text, &field("message"), limits::FINDING_MESSAGE)?;
            text.clone()
        }
        Some(_) => {
            return Err(LoopsError::Invalid {
                field: Some(field("message")),
                message: format!("{} must be a string", field("message")),
            })
        }
    };
    Ok(Finding { key: FindingKey::new(target, severity, criterion), message })
}

/// The stored-text rule ([`crate::stored_text`]) for a field of a round:
/// no NUL (PostgreSQL's text cannot hold one while SQLite stored it, and
/// both backends must answer alike) and the field's length.
fn stored(text: &str, field: &str, rule: Rule) -> Result<(), LoopsError> {
    stored_text::check(field, text, rule).map_err(LoopsError::from)
}

/// serde's messages end in "at line 1 column 40", which points into a
/// re-serialised fragment rather than the caller's body; the field name says
/// more.
fn strip_serde_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(position) => message[..position].to_string(),
        None => message.to_string(),
    }
}

fn positive_u32(value: Option<&Value>, field: &str) -> Result<u32, LoopsError> {
    value
        .and_then(Value::as_u64)
        .and_then(|number| u32::try_from(number).ok())
        .filter(|number| *number >= 1)
        .ok_or_else(|| LoopsError::Invalid {
            field: Some(field.to_string()),
            message: format!("{field} must be a positive integer"),
        })
}

fn required_text(value: Option<&Value>, field: &str, max_chars: usize) -> Result<String, LoopsError> {
    match value {
        Some(Value::String(text)) if !text.trim().is_empty() && text.chars().count() <= max_chars => {
            stored(text, field, Rule::text(max_chars))?;
            Ok(text.clone())
        }
        _ => Err(LoopsError::Invalid {
            field: Some(field.to_string()),
            message: format!("{field} must be a non-empty string of at most {max_chars} characters"),
        }),
    }
}

fn optional_text(
    body: &Map<String, Value>,
    field: &str,
    max_chars: usize,
) -> Result<Option<String>, LoopsError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        value => required_text(value, field, max_chars).map(Some),
    }
}

fn finite_number(value: Option<&Value>, field: &str) -> Result<Option<f64>, LoopsError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_f64() {
            Some(number) if number.is_finite() => Ok(Some(number)),
            _ => Err(LoopsError::Invalid {
                field: Some(field.to_string()),
                message: format!("{field} must be a number"),
            }),
        },
    }
}

fn non_negative_number(value: Option<&Value>, field: &str) -> Result<Option<f64>, LoopsError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_f64() {
            Some(number) if number.is_finite() && number >= 0.0 => Ok(Some(number)),
            _ => Err(LoopsError::Invalid {
                field: Some(field.to_string()),
                message: format!("{field} must be a non-negative number"),
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> (Option<String>, String) {
        match RoundReport::from_json(body.as_bytes()) {
            Err(LoopsError::Invalid { field, message }) => (field, message),
            other => panic!("expected a refusal for {body}, got {other:?}"),
        }
    }

    #[test]
    fn each_refusal_names_its_field() {
        let cases = [
            (r#"{"state": "a"}"#, "round"),
            (r#"{"round": 0, "state": "a"}"#, "round"),
            (r#"{"round": -1, "state": "a"}"#, "round"),
            (r#"{"round": 1.5, "state": "a"}"#, "round"),
            (r#"{"round": "1", "state": "a"}"#, "round"),
            (r#"{"round": 1}"#, "state"),
            (r#"{"round": 1, "state": ""}"#, "state"),
            (r#"{"round": 1, "state": 7}"#, "state"),
            (r#"{"round": 1, "state": "a", "run": ""}"#, "run"),
            (r#"{"round": 1, "state": "a", "findings": {}}"#, "findings"),
            (r#"{"round": 1, "state": "a", "findings": [3]}"#, "findings[0]"),
            (
                r#"{"round": 1, "state": "a", "findings": [{"target": {"id": "x"}, "severity": "fatal", "criterion": "c"}]}"#,
                "findings[0].severity",
            ),
            (
                r#"{"round": 1, "state": "a", "findings": [{"severity": "info", "criterion": "c"}]}"#,
                "findings[0].target",
            ),
            (
                r#"{"round": 1, "state": "a", "findings": [{"target": {"path": "a.rs"}, "severity": "info", "criterion": "c"}]}"#,
                "findings[0].target",
            ),
            (
                r#"{"round": 1, "state": "a", "findings": [{"target": {"id": "x"}, "severity": "info"}]}"#,
                "findings[0].criterion",
            ),
            (r#"{"round": 1, "state": "a", "spent": {"tokens": -3}}"#, "spent.tokens"),
            (r#"{"round": 1, "state": "a", "spent": {"usd": -0.5}}"#, "spent.usd"),
            (r#"{"round": 1, "state": "a", "spent": {"seconds": "9"}}"#, "spent.seconds"),
            (r#"{"round": 1, "state": "a", "exit": "E9"}"#, "exit"),
            (r#"{"round": 1, "state": "a", "exit": "e1"}"#, "exit"),
            (r#"{"round": 1, "state": "a", "exit": "E10"}"#, "exit"),
            (r#"{"round": 1, "state": "a", "error": "boom"}"#, "error"),
            (r#"{"round": 1, "state": "a", "error": {"body": "x"}}"#, "error.code"),
            (r#"{"round": 1, "state": "a", "ratchet": 5}"#, "ratchet"),
            (r#"{"round": 1, "state": "a", "ratchet": {"best": 5}}"#, "ratchet.value"),
            (r#"{"round": 1, "state": "a", "ratchet": {"value": "5"}}"#, "ratchet.value"),
            (r#"{"round": 1, "state": "a", "ratchet": {"value": 5, "best": true}}"#, "ratchet.best"),
            (
                r#"{"round": 1, "state": "a", "ratchet": {"value": 5, "stall_count": -1}}"#,
                "ratchet.stall_count",
            ),
            (
                r#"{"round": 1, "state": "a", "ratchet": {"value": 5, "stall_count": 1.5}}"#,
                "ratchet.stall_count",
            ),
            (r#"{"round": 1, "state": "a", "fingerprint": "9f3a0c"}"#, "fingerprint"),
            (r#"{"round": 1, "state": "a", "fingerprint": "9f3a0c00000000zz"}"#, "fingerprint"),
            (r#"{"round": 1, "state": "a", "fingerprint": 12}"#, "fingerprint"),
            (r#"{"round": 1, "state": "a", "text": ["draft"]}"#, "text"),
            (
                r#"{"round": 1, "state": "a", "text": "draft", "fingerprint": "0000000000000000"}"#,
                "fingerprint",
            ),
        ];
        for (body, field) in cases {
            let (got, message) = refusal(body);
            assert_eq!(got.as_deref(), Some(field), "{body}: {message}");
            assert!(message.contains(field), "the message names {field}: {message}");
        }
        let (field, message) = refusal(&format!(r#"{{"round": 1, "state": "{}"}}"#, "s".repeat(257)));
        assert_eq!(field.as_deref(), Some("state"), "{message}");
        assert_eq!(refusal("[1]").0, None);
        assert!(refusal("{").1.contains("not valid JSON"));
    }

    #[test]
    fn unknown_fields_are_ignored_and_do_not_change_the_body_hash() {
        let plain = RoundReport::from_json(br#"{"round": 2, "state": "abc"}"#).unwrap();
        let extended =
            RoundReport::from_json(br#"{"state": "abc", "round": 2, "future": {"x": 1}, "run": "r1"}"#)
                .unwrap();
        assert_eq!(plain.body_hash(), extended.body_hash());
        let other = RoundReport::from_json(br#"{"round": 2, "state": "abd"}"#).unwrap();
        assert_ne!(plain.body_hash(), other.body_hash());
    }

    #[test]
    fn a_full_round_reads_every_field() {
        let report = RoundReport::from_json(
            br#"{"round": 3, "run": "2026-07-29a", "state": "b740d1b7",
                 "findings": [{"target": {"path": "draft.md", "start_line": 4, "end_line": 9},
                               "severity": "blocking", "criterion": "word-floor", "message": "short"},
                              {"target": {"id": "budget:tokens"}, "severity": "info", "criterion": "spend"}],
                 "spent": {"tokens": 1234, "usd": 0.12, "seconds": 31.5},
                 "exit": "E5", "error": {"code": "429", "body": {"raw": true}}}"#,
        )
        .unwrap();
        assert_eq!(report.round, 3);
        assert_eq!(report.run.as_deref(), Some("2026-07-29a"));
        assert_eq!(report.findings.len(), 2);
        assert_eq!(report.findings[0].message, "short");
        assert_eq!(report.spent, Spent { tokens: Some(1234), usd: Some(0.12), seconds: Some(31.5) });
        assert_eq!(report.exit, ExitId::parse("E5"));
        assert!(report.exit.is_some_and(ExitId::is_detect));
        assert_eq!(report.error.unwrap().body, r#"{"raw":true}"#);
        assert_eq!(report.ratchet, None);
        let with_ratchet = RoundReport::from_json(
            br#"{"round": 3, "state": "b740d1b7", "ratchet": {"value": 43, "best": 43.5, "stall_count": 0}}"#,
        )
        .unwrap();
        assert_eq!(
            with_ratchet.ratchet,
            Some(Ratchet { value: 43.0, best: Some(43.5), stall_count: Some(0) })
        );
        let bare = RoundReport::from_json(br#"{"round": 3, "state": "b740d1b7"}"#).unwrap();
        assert_ne!(with_ratchet.body_hash(), bare.body_hash(), "the ratchet is part of what a round says");
    }

    #[test]
    fn a_text_becomes_its_fingerprint_and_is_not_kept() {
        let text = "The loop stops when the tests pass.";
        let from_text = RoundReport::from_json(
            serde_json::json!({"round": 1, "state": "a", "text": text}).to_string().as_bytes(),
        )
        .unwrap();
        let expected = Fingerprint::of_text(text);
        assert_eq!(from_text.fingerprint, Some(expected));
        assert!(!format!("{from_text:?}").contains("tests pass"), "the text is dropped once read");
        // Sending the fingerprint, or both agreeing, is the same round.
        let sent =
            serde_json::json!({"round": 1, "state": "a", "fingerprint": expected.hex().to_uppercase()});
        let sent = RoundReport::from_json(sent.to_string().as_bytes()).unwrap();
        assert_eq!(sent.body_hash(), from_text.body_hash());
        let both = serde_json::json!({"round": 1, "state": "a", "text": text, "fingerprint": expected.hex()});
        assert_eq!(RoundReport::from_json(both.to_string().as_bytes()).unwrap().fingerprint, Some(expected));
        let plain = RoundReport::from_json(br#"{"round": 1, "state": "a"}"#).unwrap();
        assert_ne!(plain.body_hash(), sent.body_hash());
        // A text larger than the cap is refused, naming it.
        let large = serde_json::json!({"round": 1, "state": "a", "text": "x".repeat(MAX_TEXT_BYTES + 1)});
        match RoundReport::from_json(large.to_string().as_bytes()) {
            Err(LoopsError::Invalid { field, message }) => {
                assert_eq!(field.as_deref(), Some("text"));
                assert!(message.contains("at most 65536 bytes"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_blocked_heartbeat_must_name_its_subject() {
        let blocked = Heartbeat::from_json(
            br#"{"status": "blocked", "reason": "awaiting_approval", "subject": "PR 12"}"#,
        )
        .unwrap();
        assert_eq!(blocked.blocked.unwrap().subject, "PR 12");
        for (body, field) in [
            (r#"{"status": "blocked", "reason": "awaiting_approval"}"#, "subject"),
            (r#"{"status": "blocked", "reason": "awaiting_approval", "subject": " "}"#, "subject"),
            (r#"{"status": "blocked", "subject": "x"}"#, "reason"),
            (r#"{"status": "blocked", "reason": "Waiting on Bob", "subject": "x"}"#, "reason"),
            (r#"{"status": "sleeping"}"#, "status"),
        ] {
            match Heartbeat::from_json(body.as_bytes()) {
                Err(LoopsError::Invalid { field: got, .. }) => {
                    assert_eq!(got.as_deref(), Some(field), "{body}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
        assert_eq!(Heartbeat::from_json(b"").unwrap(), Heartbeat { run: None, blocked: None });
    }

    #[test]
    fn loop_names_are_visible_text() {
        assert!(validate_loop_name("nightly-docs").is_ok());
        assert!(validate_loop_name("Schreib Schleife 2").is_ok());
        assert!(validate_loop_name("...").is_ok(), "only the two path segments are refused");
        assert!(validate_loop_name(&"é".repeat(100)).is_ok(), "200 bytes");
        for bad in
            ["", " padded", "a/b", "tab\there", &"x".repeat(129), ".", "..", &"é".repeat(101), "\u{85}next"]
        {
            assert!(validate_loop_name(bad).is_err(), "{bad:?}");
        }
    }
}
