//! The report types. Their JSON form is the contract of PRODUCT.md section 1:
//! the command line's `--format json` and `POST /api/v1/audit` both return it.
//! Byte offsets ride along for the browser (which highlights evidence) but the
//! contract itself speaks in 1-based lines.

use serde::{Deserialize, Serialize};

use crate::{ExitId, ExitKind, Verdict};

/// A range of source with the code found there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// 1-based first line.
    pub start_line: usize,
    /// 1-based last line (inclusive).
    pub end_line: usize,
    /// The code of those lines, each trimmed, at most a few lines.
    pub code: String,
    /// Byte offset of the evidence's start in the source.
    pub start_byte: usize,
    /// Byte offset just past the evidence's end in the source.
    pub end_byte: usize,
}

/// One exit of the taxonomy and whether the file implements it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ExitReport {
    pub id: ExitId,
    pub label: String,
    pub kind: ExitKind,
    pub found: bool,
    pub evidence: Vec<Evidence>,
}

/// A loop the auditor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct LoopReport {
    /// `while`, `for`, `loop`, `do-while`, `until`, `recursion`,
    /// `retry-decorator` or `framework`.
    pub kind: String,
    pub start_line: usize,
    pub end_line: usize,
    /// The loop's first line (its header), trimmed.
    pub code: String,
    /// For framework loops: which framework runs it (`langgraph`, `crewai`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    pub start_byte: usize,
    pub end_byte: usize,
}

/// Something a reviewer should know that is not an exit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Warning {
    /// A stable kebab-case id, e.g. `infinite-loop-without-exit`.
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
}

/// A suggested change that adds a missing exit: whole lines inserted into
/// the source (or a line rewritten), to copy as a diff or apply as edits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Fix {
    /// The exit the change adds.
    pub exit: ExitId,
    /// What the change does, in a sentence.
    pub title: String,
    /// The 1-based line of the loop it is for.
    pub line: usize,
    /// The insertions, in source order.
    pub edits: Vec<Edit>,
    /// The change as a unified diff.
    pub diff: String,
}

impl Fix {
    /// `source` with the fix applied (edits that do not fit `source` are
    /// left out: the fix was made for another text).
    pub fn apply(&self, source: &str) -> String {
        let mut edits: Vec<&Edit> = self.edits.iter().collect();
        edits.sort_by_key(|e| std::cmp::Reverse(e.start_byte));
        let mut text = source.to_string();
        for edit in edits {
            let fits = edit.start_byte <= edit.end_byte
                && edit.end_byte <= text.len()
                && text.is_char_boundary(edit.start_byte)
                && text.is_char_boundary(edit.end_byte);
            if fits {
                text.replace_range(edit.start_byte..edit.end_byte, &edit.text);
            }
        }
        text
    }
}

/// One edit of a [`Fix`]: whole lines inserted before a line, or one whole
/// line replaced by its changed text (a keyword argument added to a call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Edit {
    /// Byte offsets of the replaced text (equal for an insertion).
    pub start_byte: usize,
    pub end_byte: usize,
    /// The 1-based line the text goes before (for a replacement, the line
    /// it replaces).
    pub line: usize,
    pub text: String,
}

/// The audit of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct FileReport {
    pub path: Option<String>,
    /// The canonical language name, or `None` when it could not be recognised.
    pub language: Option<String>,
    pub loops: Vec<LoopReport>,
    /// All eight exits, always, in taxonomy order.
    pub exits: Vec<ExitReport>,
    pub verdict: Verdict,
    pub warnings: Vec<Warning>,
    /// Suggested changes for what the verdict says is missing (a bound, a
    /// completion check), at most one of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<Fix>,
}

impl FileReport {
    /// The ids of the exits found.
    pub fn found(&self) -> Vec<ExitId> {
        self.exits.iter().filter(|exit| exit.found).map(|exit| exit.id).collect()
    }

    /// The exit of one id (every report lists all eight).
    pub fn exit(&self, id: ExitId) -> Option<&ExitReport> {
        self.exits.iter().find(|exit| exit.id == id)
    }

    pub fn exit_code(&self) -> i32 {
        self.verdict.exit_code()
    }
}

/// The audit of several files: the worst verdict and the highest exit code win.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Report {
    pub files: Vec<FileReport>,
    pub verdict: Verdict,
    pub exit_code: i32,
}

impl Report {
    /// Combines file reports. An empty list is UNDEFINED (exit code 2): nothing
    /// was shown to stop.
    pub fn from_files(files: Vec<FileReport>) -> Report {
        let verdict = files.iter().map(|file| file.verdict).max().unwrap_or(Verdict::Undefined);
        let exit_code = files.iter().map(FileReport::exit_code).max().unwrap_or(verdict.exit_code());
        Report { files, verdict, exit_code }
    }
}

impl From<FileReport> for Report {
    fn from(file: FileReport) -> Report {
        Report::from_files(vec![file])
    }
}
