//! The auditor for the browser. The audit page runs this module in a Web
//! Worker (`audit-worker.js`, beside this crate), so neither the grammars nor
//! the parser are ever part of the site-wide bundle and typing never waits
//! for a parse.
//!
//! Strings cross the boundary as they are: the source in, the report out as
//! the JSON of PRODUCT.md section 1. Nothing here does IO; everything is a
//! call into the `auditor` crate, which never fails on input.

use std::cell::RefCell;

use auditor::{Detection, FileReport, Language, Report, Session};
use wasm_bindgen::prelude::wasm_bindgen;

thread_local! {
    /// The worker audits one pane's text over and over as it is edited: the
    /// session reparses only what changed since the last audit.
    static SESSION: RefCell<Session> = RefCell::new(Session::new());
}

/// Audits one source and returns its file report as JSON.
///
/// `language` is a language name or alias; empty or `auto` detects it from
/// `path` (a file name, possibly empty) and the content.
#[wasm_bindgen]
pub fn audit(source: &str, language: &str, path: &str) -> String {
    let path = (!path.is_empty()).then_some(path);
    let report =
        SESSION.with(|session| session.borrow_mut().audit(source, path, Language::from_name(language)));
    to_json(&report)
}

/// What this module's grammars say of the language of `source`, for the
/// worker to choose the module that audits it: a language's name (given
/// one, or none and detected), `-` when every grammar together would
/// recognise no language in it, and an empty string when only a grammar
/// this module lacks could tell (or `language` names one it lacks).
#[wasm_bindgen]
pub fn language_at_hand(source: &str, language: &str, path: &str) -> String {
    if let Some(named) = Language::from_name(language) {
        return if auditor::carries_grammar(named) { named.name().to_string() } else { String::new() };
    }
    let path = (!path.is_empty()).then_some(path);
    match SESSION.with(|session| session.borrow_mut().language_at_hand(path, source)) {
        Detection::Decided(Some(found)) if auditor::carries_grammar(found) => found.name().to_string(),
        Detection::Decided(Some(_)) | Detection::NeedsOtherGrammars => String::new(),
        Detection::Decided(None) => "-".to_string(),
    }
}

/// The same audit rendered for export: `markdown`, `sarif` or `json` (the
/// whole report of the contract, `{"files": [...], "verdict", "exit_code"}`).
/// An unknown format gives the JSON.
#[wasm_bindgen]
pub fn render(format: &str, source: &str, language: &str, path: &str) -> String {
    let report = Report::from_files(vec![file_report(source, language, path)]);
    match format {
        "markdown" => auditor::render_markdown(&report),
        "sarif" => serde_json::to_string_pretty(&auditor::render_sarif(&report)).unwrap_or_default(),
        _ => serde_json::to_string_pretty(&report).unwrap_or_default(),
    }
}

/// The canonical name of a language alias, or an empty string when the
/// auditor does not know it: lets the page show what it will parse.
#[wasm_bindgen]
pub fn language_name(alias: &str) -> String {
    Language::from_name(alias).map(|language| language.name().to_string()).unwrap_or_default()
}

fn file_report(source: &str, language: &str, path: &str) -> FileReport {
    let path = (!path.is_empty()).then_some(path);
    auditor::audit(source, path, Language::from_name(language))
}

fn to_json(report: &FileReport) -> String {
    // Serialising plain structs of strings and numbers cannot fail; an empty
    // object keeps the promise of never throwing into the page all the same.
    serde_json::to_string(report).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_returns_the_contract_json() {
        let json = audit("for _ in range(3):\n    step()\n", "", "loop.py");
        let report: FileReport = serde_json::from_str(&json).expect("a file report");
        assert_eq!(report.language.as_deref(), Some("python"));
        assert_eq!(report.verdict.as_str(), "DIVERGES");
        assert_eq!(report.exits.len(), 8);
    }

    #[test]
    fn the_language_override_wins_and_auto_detects() {
        let source = "while true; do\n  sleep 1\ndone\n";
        let named: FileReport = serde_json::from_str(&audit(source, "bash", "")).unwrap();
        assert_eq!(named.language.as_deref(), Some("bash"));
        let auto: FileReport = serde_json::from_str(&audit(source, "auto", "run.sh")).unwrap();
        assert_eq!(auto.language.as_deref(), Some("bash"));
    }

    #[test]
    fn exports_render_each_format() {
        let source = "for _ in range(3):\n    step()\n";
        assert!(render("markdown", source, "python", "").contains("**DIVERGES**"));
        let sarif: serde_json::Value = serde_json::from_str(&render("sarif", source, "python", "")).unwrap();
        assert_eq!(sarif["version"], "2.1.0");
        let json: serde_json::Value = serde_json::from_str(&render("json", source, "python", "")).unwrap();
        assert_eq!(json["verdict"], "DIVERGES");
        assert_eq!(json["exit_code"], 1);
    }

    #[test]
    fn the_module_with_every_grammar_always_tells_the_language() {
        assert_eq!(language_at_hand("def run():\n    while True:\n        step()\n", "auto", ""), "python");
        assert_eq!(language_at_hand("for turn in range(40):  # note\n    step()\n", "", ""), "python");
        assert_eq!(language_at_hand("the agent keeps going until it is told to stop\n", "", ""), "-");
        assert_eq!(language_at_hand("anything", "golang", ""), "go");
        assert_eq!(language_at_hand("anything", "", "loop.rs"), "rust");
    }

    #[test]
    fn language_names_resolve_aliases() {
        assert_eq!(language_name("py"), "python");
        assert_eq!(language_name("cobol"), "");
    }
}
