//! One rule for text that is stored, whichever database stores it.
//!
//! Every text a request, a command or a file hands to either database passes
//! [`check`] first:
//!
//! - it is UTF-8: a `&str` is by construction; bytes read from a file or a
//!   form are checked by [`utf8`];
//! - it holds no NUL: PostgreSQL's `text` cannot hold one (it answered 500
//!   with `invalid byte sequence for encoding "UTF8": 0x00`) while SQLite
//!   stored it, and both must answer the same;
//! - it is at most its field's number of characters;
//! - a one-line field (a name, a title, an id: [`Rule::line`]) holds no
//!   control character at all.
//!
//! Lone surrogates cannot reach it: JSON's `"\ud800"` is refused by the JSON
//! parser and Rust strings cannot hold one. Bidirectional and other
//! formatting characters are text like any other here (a finding may quote
//! Hebrew); email addresses, which must not hold them, have their own parser
//! (`accounts::normalize_email`).
//!
//! A refusal names the field; the API turns it into a 400 with `field`, the
//! commands into `FILE:LINE: FIELD ...`.

use std::fmt;

/// What one field may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The most characters (Unicode scalar values) the field may hold.
    pub max_chars: usize,
    /// A one-line field holds no control characters (newlines included);
    /// other text may hold newlines and tabs, never NUL.
    pub one_line: bool,
}

impl Rule {
    /// Text that may span lines: messages, bodies, stack traces.
    pub const fn text(max_chars: usize) -> Rule {
        Rule { max_chars, one_line: false }
    }

    /// A name, a title or an id: one line, no control characters.
    pub const fn line(max_chars: usize) -> Rule {
        Rule { max_chars, one_line: true }
    }
}

/// The limits of the fields that have no older rule of their own (the
/// ingest contract's fields keep theirs in `loops::wire`).
pub mod limits {
    use super::Rule;

    /// A finding's message.
    pub const FINDING_MESSAGE: Rule = Rule::text(65_536);
    /// A round's raw error body (`error.body`): kept whole, within the body
    /// cap of the request that carries it.
    pub const ERROR_BODY: Rule = Rule::text(262_144);
    /// The operator's STEER note to a loop.
    pub const STEER_NOTE: Rule = Rule::text(4000);
    /// An issue's front matter.
    pub const ISSUE_TITLE: Rule = Rule::line(200);
    pub const ISSUE_SUMMARY: Rule = Rule::line(500);
    /// A line of an issue's Markdown body (the file as a whole is capped by
    /// its size).
    pub const ISSUE_BODY: Rule = Rule::text(usize::MAX);
    /// A Stripe event's id and type.
    pub const STRIPE_ID: Rule = Rule::line(255);
    /// What the webhook reads of an event's object (ids, metadata): events
    /// are a few kilobytes, so the body cap is the real limit.
    pub const STRIPE_TEXT: Rule = Rule::text(usize::MAX);
}

/// Why a text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    NotUtf8,
    Nul,
    Control,
    TooLong(usize),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NotUtf8 => f.write_str("must be valid UTF-8"),
            Problem::Nul => f.write_str("must not contain NUL characters"),
            Problem::Control => f.write_str("must not contain control characters"),
            Problem::TooLong(max) => write!(f, "must be at most {max} characters"),
        }
    }
}

/// A refused text: the field it was for and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextError {
    pub field: String,
    pub problem: Problem,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.field, self.problem)
    }
}

impl std::error::Error for TextError {}

/// Checks `text` for `field` against `rule`.
pub fn check(field: &str, text: &str, rule: Rule) -> Result<(), TextError> {
    problem(text, rule).map_or(Ok(()), |problem| Err(TextError { field: field.to_string(), problem }))
}

/// What is wrong with `text` under `rule`, if anything.
pub fn problem(text: &str, rule: Rule) -> Option<Problem> {
    if text.contains('\u{0}') {
        return Some(Problem::Nul);
    }
    if rule.one_line && text.chars().any(char::is_control) {
        return Some(Problem::Control);
    }
    // Bytes bound characters from above: count only when it can matter.
    if text.len() > rule.max_chars && text.chars().count() > rule.max_chars {
        return Some(Problem::TooLong(rule.max_chars));
    }
    None
}

/// `bytes` as text for `field`, or why they are not.
pub fn utf8<'a>(field: &str, bytes: &'a [u8]) -> Result<&'a str, TextError> {
    std::str::from_utf8(bytes).map_err(|_| TextError { field: field.to_string(), problem: Problem::NotUtf8 })
}

/// Checks every string of a JSON value, object keys included, under `rule`;
/// the refusal names the string's path (`data.object.metadata.note`).
pub fn check_json(field: &str, value: &serde_json::Value, rule: Rule) -> Result<(), TextError> {
    use serde_json::Value;
    // Iterative: a JSON document nests as deep as its parser allows.
    let mut stack: Vec<(String, &Value)> = vec![(field.to_string(), value)];
    while let Some((path, value)) = stack.pop() {
        match value {
            Value::String(text) => check(&path, text, rule)?,
            Value::Array(items) => {
                stack.extend(items.iter().enumerate().map(|(index, item)| (format!("{path}[{index}]"), item)))
            }
            Value::Object(object) => {
                for (key, item) in object {
                    // A bad key is named by where it is, not by itself.
                    let parent = if path.is_empty() { "the body" } else { path.as_str() };
                    check(&format!("a key of {parent}"), key, rule)?;
                    let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    stack.push((child, item));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_refused_in_every_field_and_named() {
        for rule in [Rule::text(100), Rule::line(100)] {
            let error = check("findings[0].message", "a\u{0}b", rule).unwrap_err();
            assert_eq!(error.to_string(), "findings[0].message must not contain NUL characters");
        }
    }

    #[test]
    fn one_line_fields_refuse_control_characters_text_keeps_newlines() {
        assert!(check("body", "line one\nline two\tindented\r\n", Rule::text(100)).is_ok());
        for bad in ["a\nb", "a\u{1b}[31m", "a\u{85}b", "a\u{7f}"] {
            assert_eq!(problem(bad, Rule::line(100)), Some(Problem::Control), "{bad:?}");
        }
    }

    #[test]
    fn length_is_counted_in_characters() {
        assert!(check("title", &"é".repeat(200), Rule::line(200)).is_ok(), "400 bytes, 200 characters");
        assert_eq!(problem(&"é".repeat(201), Rule::line(200)), Some(Problem::TooLong(200)));
        assert_eq!(problem(&"x".repeat(1 << 20), Rule::text(65_536)), Some(Problem::TooLong(65_536)));
    }

    #[test]
    fn formatting_characters_are_text() {
        // U+202E (right-to-left override) and zero-width joiners are
        // legitimate in prose; only addresses refuse them.
        assert!(check("message", "\u{202e}abc\u{200d}", Rule::line(100)).is_ok());
    }

    #[test]
    fn bytes_must_be_utf8() {
        assert_eq!(utf8("email", b"ok").unwrap(), "ok");
        let error = utf8("email", b"\xff\xfe").unwrap_err();
        assert_eq!(error.to_string(), "email must be valid UTF-8");
    }

    #[test]
    fn json_strings_are_checked_by_path() {
        let value = serde_json::json!({"id": "evt_1", "data": {"object": {"items": ["ok", "bad\u{0}"]}}});
        let error = check_json("", &value, Rule::text(1000)).unwrap_err();
        assert_eq!(error.field, "data.object.items[1]");
        let key = serde_json::json!({"data": {"k\u{0}": 1}});
        assert_eq!(check_json("", &key, Rule::text(1000)).unwrap_err().field, "a key of data");
        assert!(check_json("", &serde_json::json!({"a": [1, true, null]}), Rule::text(10)).is_ok());
    }
}
