//! The Loop Exit Auditor.
//!
//! A pure library: no IO, no async runtime, no web framework. It builds for the
//! host and for `wasm32-unknown-unknown`, so the browser, the server and the
//! command line all run the same code.
//!
//! The entry point is [`audit`]: source text in, a [`FileReport`] out. It never
//! panics and never fails on input: an unknown language, a file that does not
//! parse or a pathological nesting all still give a report, with warnings.
//! [`audit_with`] is the same with a typed error for the one case a caller may
//! want to refuse up front (a language that cannot be recognised).
//!
//! Inside, it parses with tree-sitter, collects facts in one iterative walk
//! (`facts.rs`), judges them with one rule per exit (`rules/`), and converts
//! byte ranges to lines only when it builds the report.

use serde::{Deserialize, Serialize};

#[cfg(feature = "parser")]
mod engine;
mod explain;
#[cfg(feature = "parser")]
mod facts;
#[cfg(feature = "parser")]
mod fixes;
#[cfg(feature = "highlight")]
mod highlight;
mod language;
mod render;
mod report;
#[cfg(feature = "parser")]
mod rules;
#[cfg(feature = "parser")]
mod session;
#[cfg(feature = "parser")]
mod words;

pub use explain::explain_verdict;
#[cfg(feature = "highlight")]
pub use highlight::{highlight_classes, highlight_html};
pub use language::{detect_language, likely_language, Language};
#[cfg(feature = "parser")]
pub use language::{detect_language_at_hand, detect_language_with, Detection};
pub use render::{render_markdown, render_sarif, render_text, uri_reference};
pub use report::{Edit, Evidence, ExitReport, FileReport, Fix, LoopReport, Report, Warning};
#[cfg(feature = "parser")]
pub use session::Session;

/// Why [`audit_with`] refused a source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    #[error("the language of {path} could not be recognised; name it (python, javascript, typescript, tsx, bash, go, rust)")]
    UnknownLanguage { path: String },
}

#[cfg(feature = "parser")]
/// Audits one source. `language` wins when given; otherwise it is detected
/// from `path` and the content. When no language can be recognised the report
/// has the verdict UNDEFINED and an `unknown-language` warning.
pub fn audit(source: &str, path: Option<&str>, language: Option<Language>) -> FileReport {
    match language.or_else(|| detect_language(path, source)) {
        Some(language) => engine::audit_source(source, path, language),
        None => {
            let lines = engine::Lines::new(source);
            let warning = engine::warning(
                "unknown-language",
                "the language could not be recognised; name it (python, javascript, typescript, tsx, bash, go, rust)",
                None,
                &lines,
            );
            engine::finish(path, None, Vec::new(), engine::empty_exits(), vec![warning])
        }
    }
}

#[cfg(feature = "parser")]
/// Like [`audit`], but an unrecognisable language is an error rather than an
/// UNDEFINED report: for callers that answer it with a usage error (the CLI's
/// exit code 3, the API's 422).
pub fn audit_with(
    source: &str,
    path: Option<&str>,
    language: Option<Language>,
) -> Result<FileReport, AuditError> {
    match language.or_else(|| detect_language(path, source)) {
        Some(language) => Ok(engine::audit_source(source, path, language)),
        None => Err(AuditError::UnknownLanguage { path: path.unwrap_or("<stdin>").to_string() }),
    }
}

#[cfg(feature = "parser")]
/// Whether this build carries the grammar of `language` (every build with
/// the `engine` feature carries them all).
pub fn carries_grammar(language: Language) -> bool {
    language.grammar().is_some()
}

#[cfg(feature = "parser")]
#[doc(hidden)]
/// One line per exit link of `source`: its clause, role and classification.
/// A tool for working on the rules (the `report` example's `--links`), not
/// part of the auditor's contract.
pub fn trace_links(source: &str, language: Language) -> Vec<String> {
    engine::trace_links(source, language)
}

/// How an exit ends a loop, which decides what it says about convergence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum ExitKind {
    /// The loop can tell that it has finished.
    Detect,
    /// The loop stops because it ran out of something, finished or not.
    Bound,
    /// Something outside the loop stops it; says nothing about convergence.
    External,
}

impl ExitKind {
    /// The kind as written in reports: `"DETECT"`, `"BOUND"`, `"EXTERNAL"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitKind::Detect => "DETECT",
            ExitKind::Bound => "BOUND",
            ExitKind::External => "EXTERNAL",
        }
    }

    /// The kind in lowercase, for CSS classes.
    pub fn css_class(self) -> &'static str {
        match self {
            ExitKind::Detect => "detect",
            ExitKind::Bound => "bound",
            ExitKind::External => "external",
        }
    }
}

/// One of the eight exits of the taxonomy. The ids `E1`..`E8` are a public
/// contract: other tools key on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub enum ExitId {
    E1,
    E2,
    E3,
    E4,
    E5,
    E6,
    E7,
    E8,
}

impl ExitId {
    /// Every exit, in taxonomy order.
    pub const ALL: [ExitId; 8] =
        [ExitId::E1, ExitId::E2, ExitId::E3, ExitId::E4, ExitId::E5, ExitId::E6, ExitId::E7, ExitId::E8];

    /// The short label used in every report.
    pub fn label(self) -> &'static str {
        match self {
            ExitId::E1 => "goal met",
            ExitId::E2 => "turn cap",
            ExitId::E3 => "budget cap",
            ExitId::E4 => "wall clock",
            ExitId::E5 => "no progress",
            ExitId::E6 => "human interrupt",
            ExitId::E7 => "error threshold",
            ExitId::E8 => "external event",
        }
    }

    /// Whether this exit detects completion, bounds the loop, or comes from outside.
    pub fn kind(self) -> ExitKind {
        match self {
            ExitId::E1 | ExitId::E5 => ExitKind::Detect,
            ExitId::E2 | ExitId::E3 | ExitId::E4 | ExitId::E7 => ExitKind::Bound,
            ExitId::E6 | ExitId::E8 => ExitKind::External,
        }
    }

    /// The id as written in reports: `"E1"`..`"E8"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitId::E1 => "E1",
            ExitId::E2 => "E2",
            ExitId::E3 => "E3",
            ExitId::E4 => "E4",
            ExitId::E5 => "E5",
            ExitId::E6 => "E6",
            ExitId::E7 => "E7",
            ExitId::E8 => "E8",
        }
    }

    /// One sentence on what counts as this exit, for readers.
    pub fn description(self) -> &'static str {
        match self {
            ExitId::E1 => "The loop leaves because the work is judged done: tests pass, the goal is reached, no tool calls are left.",
            ExitId::E2 => "A bounded number of iterations, turns, steps or retries.",
            ExitId::E3 => "Spend compared with a limit: tokens, cost, credits.",
            ExitId::E4 => "Elapsed time compared with a deadline that ends the loop.",
            ExitId::E5 => "The loop compares this pass with an earlier one and stops when nothing moved.",
            ExitId::E6 => "A person can stop it: an interrupt, an approval or an escalation step.",
            ExitId::E7 => "Failures counted against a threshold, a circuit breaker.",
            ExitId::E8 => "Something outside ends it: a signal, a STOP file, a cancellation token.",
        }
    }
}

/// The overall judgement over the exits a loop implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    /// At least one DETECT exit: the loop can tell that it has finished.
    Converges,
    /// No DETECT exit but at least one BOUND exit: it stops, without knowing why.
    Diverges,
    /// Neither: nothing in the code ends the loop on its own.
    Undefined,
}

impl Verdict {
    /// The verdict of a set of found exits. EXTERNAL exits never decide it.
    pub fn of(found: impl IntoIterator<Item = ExitId>) -> Verdict {
        let mut verdict = Verdict::Undefined;
        for exit in found {
            match exit.kind() {
                ExitKind::Detect => return Verdict::Converges,
                ExitKind::Bound => verdict = Verdict::Diverges,
                ExitKind::External => {}
            }
        }
        verdict
    }

    /// The command line's exit code for this verdict: 0, 1 or 2.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Converges => 0,
            Verdict::Diverges => 1,
            Verdict::Undefined => 2,
        }
    }

    /// The verdict as written in reports: `"CONVERGES"`, `"DIVERGES"`, `"UNDEFINED"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Converges => "CONVERGES",
            Verdict::Diverges => "DIVERGES",
            Verdict::Undefined => "UNDEFINED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(found: &[ExitId], expected: Verdict) {
        assert_eq!(Verdict::of(found.iter().copied()), expected, "exits {found:?}");
    }

    #[test]
    fn verdict_follows_the_strongest_kind() {
        check(&[], Verdict::Undefined);
        check(&[ExitId::E6, ExitId::E8], Verdict::Undefined);
        check(&[ExitId::E2], Verdict::Diverges);
        check(&[ExitId::E8, ExitId::E4, ExitId::E7], Verdict::Diverges);
        check(&[ExitId::E2, ExitId::E5], Verdict::Converges);
        check(&[ExitId::E1], Verdict::Converges);
    }

    #[test]
    fn exit_codes_are_the_contract() {
        assert_eq!(Verdict::Converges.exit_code(), 0);
        assert_eq!(Verdict::Diverges.exit_code(), 1);
        assert_eq!(Verdict::Undefined.exit_code(), 2);
    }

    #[test]
    fn kinds_serialise_as_the_report_spells_them() {
        assert_eq!(serde_json::to_string(&ExitKind::Detect).unwrap(), "\"DETECT\"");
        assert_eq!(serde_json::to_string(&Verdict::Diverges).unwrap(), "\"DIVERGES\"");
        assert_eq!(serde_json::to_string(&ExitId::E7).unwrap(), "\"E7\"");
    }
}
