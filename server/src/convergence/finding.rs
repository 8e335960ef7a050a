//! The key of a finding: what it is about, how serious it is, and which
//! criterion raised it. Two findings with the same key are the same finding,
//! whatever their messages say; the engine compares rounds by these keys only.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

/// What a finding is about: a range of lines in a file, or something that is
/// not code at all (a budget, a page, a test suite), named by an id.
///
/// On the wire a code target is `{"path", "start_line", "end_line"}` with
/// `end_line` optional, and a non-code target is `{"id"}`. A missing
/// `end_line` means the range is the single line `start_line`, so
/// `{"path": "a.rs", "start_line": 4}` and the same with `"end_line": 4` are
/// one target: equality, ordering and hashing all use the effective end line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged, try_from = "TargetWire")]
pub enum Target {
    /// Lines `start_line..=end_line` of the file at `path`.
    Code {
        path: String,
        start_line: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        end_line: Option<u32>,
    },
    /// Something that is not a place in code, such as `budget:tokens`.
    Other { id: String },
}

impl Target {
    /// A code target; `end_line` of `None` means the single line `start_line`.
    pub fn code(path: impl Into<String>, start_line: u32, end_line: Option<u32>) -> Self {
        Target::Code { path: path.into(), start_line, end_line }
    }

    /// A target that is not code, named by `id`.
    pub fn other(id: impl Into<String>) -> Self {
        Target::Other { id: id.into() }
    }

    /// The same target with its end line spelled out, so that two equal
    /// targets also look equal when shown or serialised.
    pub fn normalized(&self) -> Self {
        match self {
            Target::Code { path, start_line, end_line } => Target::Code {
                path: path.clone(),
                start_line: *start_line,
                end_line: Some(end_line.unwrap_or(*start_line)),
            },
            Target::Other { id } => Target::Other { id: id.clone() },
        }
    }

    /// The view every comparison goes through. Keeping equality, ordering and
    /// hashing on one view is what keeps them consistent with each other.
    fn identity(&self) -> TargetIdentity<'_> {
        match self {
            Target::Code { path, start_line, end_line } => {
                TargetIdentity::Code(path, *start_line, end_line.unwrap_or(*start_line))
            }
            Target::Other { id } => TargetIdentity::Other(id),
        }
    }
}

/// A target as compared: code ranges sort before non-code ids, then by path
/// and lines, so sets of keys iterate in an order a reader can follow.
#[derive(PartialEq, Eq, PartialOrd, Ord, Hash)]
enum TargetIdentity<'a> {
    Code(&'a str, u32, u32),
    Other(&'a str),
}

impl PartialEq for Target {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for Target {}

impl Hash for Target {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

impl PartialOrd for Target {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Target {
    fn cmp(&self, other: &Self) -> Ordering {
        self.identity().cmp(&other.identity())
    }
}

/// Every field a target may carry on the wire. Deserialising into this first
/// lets a malformed target be refused with a message that names the field,
/// which an untagged enum alone cannot do ("did not match any variant").
/// Unknown fields are ignored, as the ingest contract promises.
#[derive(Deserialize)]
struct TargetWire {
    path: Option<String>,
    start_line: Option<u32>,
    end_line: Option<u32>,
    id: Option<String>,
}

/// Why a target on the wire was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// The target has an `id` and also a `path` or line numbers.
    Ambiguous,
    /// The target has neither a `path` nor an `id`.
    Missing,
    /// The target has a `path` but no `start_line`.
    MissingStartLine,
    /// The target has line numbers but no `path`.
    MissingPath,
    /// The `path` is the empty string.
    EmptyPath,
    /// The `id` is the empty string.
    EmptyId,
    /// The range ends before it starts.
    EndBeforeStart { start_line: u32, end_line: u32 },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Ambiguous => {
                f.write_str("target has an id and also a path or lines; send one or the other")
            }
            TargetError::Missing => f.write_str("target needs a path with a start_line, or an id"),
            TargetError::MissingStartLine => f.write_str("target.start_line is required with target.path"),
            TargetError::MissingPath => f.write_str("target has lines but no target.path"),
            TargetError::EmptyPath => f.write_str("target.path is empty"),
            TargetError::EmptyId => f.write_str("target.id is empty"),
            TargetError::EndBeforeStart { start_line, end_line } => {
                write!(f, "target.end_line {end_line} is before target.start_line {start_line}")
            }
        }
    }
}

impl std::error::Error for TargetError {}

impl TryFrom<TargetWire> for Target {
    type Error = TargetError;

    fn try_from(wire: TargetWire) -> Result<Self, Self::Error> {
        let has_lines = wire.start_line.is_some() || wire.end_line.is_some();
        match (wire.path, wire.id) {
            (Some(_), Some(_)) => Err(TargetError::Ambiguous),
            (None, Some(_)) if has_lines => Err(TargetError::Ambiguous),
            (None, Some(id)) if id.is_empty() => Err(TargetError::EmptyId),
            (None, Some(id)) => Ok(Target::Other { id }),
            (None, None) if has_lines => Err(TargetError::MissingPath),
            (None, None) => Err(TargetError::Missing),
            (Some(path), None) => {
                if path.is_empty() {
                    return Err(TargetError::EmptyPath);
                }
                let start_line = wire.start_line.ok_or(TargetError::MissingStartLine)?;
                if let Some(end_line) = wire.end_line {
                    if end_line < start_line {
                        return Err(TargetError::EndBeforeStart { start_line, end_line });
                    }
                }
                Ok(Target::Code { path, start_line, end_line: wire.end_line })
            }
        }
    }
}

/// How serious a finding is. Only `blocking` findings decide whether a loop
/// is done; the others count towards the total that `converging` watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Blocking,
    Warning,
    Info,
}

/// The identity of a finding: `(target, severity, criterion)`, as the ingest
/// contract defines it. The message is not part of the key, so rewording a
/// message does not make a finding new; the severity is, so a blocking
/// finding downgraded to a warning counts as one resolved and one new.
///
/// Deserialising a whole finding object from the contract (with its
/// `message` and any unknown fields) yields its key; the rest is ignored.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FindingKey {
    pub target: Target,
    pub severity: Severity,
    pub criterion: String,
}

impl FindingKey {
    pub fn new(target: Target, severity: Severity, criterion: impl Into<String>) -> Self {
        FindingKey { target, severity, criterion: criterion.into() }
    }

    /// Whether this finding blocks the loop from being done.
    pub fn is_blocking(&self) -> bool {
        self.severity == Severity::Blocking
    }

    /// The same key with its target's end line spelled out.
    pub fn normalized(&self) -> Self {
        FindingKey {
            target: self.target.normalized(),
            severity: self.severity,
            criterion: self.criterion.clone(),
        }
    }
}
