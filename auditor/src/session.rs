//! Re-auditing as someone types. A [`Session`] keeps the last source and its
//! syntax tree; the next audit tells tree-sitter what changed (the span
//! between the common prefix and the common suffix of the two texts) and
//! reparses only that, then judges the new tree as [`crate::audit`] would.
//! The report is always the same as a fresh audit's: only the parse is reused.

use crate::engine;
use crate::language::{detect_language_at_hand, Detection};
use crate::report::FileReport;
use crate::Language;

/// An auditor that remembers its last source, for fast re-audits of edits.
pub struct Session {
    parser: tree_sitter::Parser,
    last: Option<Last>,
    /// The language detected for a source that began with these bytes:
    /// detection parses the paste with every grammar, so it runs again only
    /// when the start of the paste changes, not on every keystroke below it.
    detected: Option<(String, Detection)>,
}

/// How many bytes of a source's start key its detected language.
const DETECTION_KEY_BYTES: usize = 512;

struct Last {
    /// The text the parser read ([`engine::parsed_text`] of the source).
    source: String,
    language: Language,
    tree: tree_sitter::Tree,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    pub fn new() -> Session {
        Session { parser: tree_sitter::Parser::new(), last: None, detected: None }
    }

    /// Audits `source` like [`crate::audit`], reusing the previous parse when
    /// the language is the same.
    pub fn audit(&mut self, source: &str, path: Option<&str>, language: Option<Language>) -> FileReport {
        let Some(language) = language.or_else(|| self.detect(path, source)) else {
            self.last = None;
            return crate::audit(source, path, None);
        };
        let mut old = match self.last.take() {
            Some(last) if last.language == language => Some(last),
            _ => None,
        };
        // (The tree is of the text the parser read: edits are measured on it.)
        let parsed = engine::parsed_text(source, language);
        if let Some(last) = old.as_mut() {
            last.tree.edit(&edit_between(&last.source, &parsed));
        }
        match engine::parse(&mut self.parser, &parsed, language, old.as_ref().map(|last| &last.tree)) {
            Ok(tree) => {
                let report = engine::audit_tree(&tree, source, path, language);
                self.last = Some(Last { source: parsed.into_owned(), language, tree });
                report
            }
            Err(unparsed) => unparsed.report(path, language),
        }
    }
}

impl Session {
    /// What the grammars of this build say of the language of `source`
    /// ([`detect_language_at_hand`]), as the next [`Session::audit`] without
    /// a language would detect it: the audit page's worker asks this of the
    /// module it has before it fetches the one with every grammar.
    pub fn language_at_hand(&mut self, path: Option<&str>, source: &str) -> Detection {
        if path.is_some() {
            if let Detection::Decided(Some(language)) = detect_language_at_hand(path, "") {
                return Detection::Decided(Some(language));
            }
        }
        let mut end = DETECTION_KEY_BYTES.min(source.len());
        while !source.is_char_boundary(end) {
            end -= 1;
        }
        let key = &source[..end];
        // A short paste is its own key; a longer one keeps its language while
        // its first lines stay.
        let reusable = source.len() > DETECTION_KEY_BYTES;
        if let Some((known, detection)) = &self.detected {
            if reusable && known == key {
                return *detection;
            }
        }
        let detection = detect_language_at_hand(path, source);
        self.detected = Some((key.to_string(), detection));
        detection
    }

    /// [`crate::detect_language`], remembered for the start of the source.
    fn detect(&mut self, path: Option<&str>, source: &str) -> Option<Language> {
        self.language_at_hand(path, source).decided()
    }
}

/// The single edit that turns `old` into `new`: everything between their
/// common prefix and their common suffix was replaced.
fn edit_between(old: &str, new: &str) -> tree_sitter::InputEdit {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    // Keep offsets on character boundaries: tree-sitter reads UTF-8.
    while prefix > 0 && !(old.is_char_boundary(prefix) && new.is_char_boundary(prefix)) {
        prefix -= 1;
    }
    let limit = a.len().min(b.len()) - prefix;
    let mut suffix = a.iter().rev().zip(b.iter().rev()).take(limit).take_while(|(x, y)| x == y).count();
    while suffix > 0 && !(old.is_char_boundary(a.len() - suffix) && new.is_char_boundary(b.len() - suffix)) {
        suffix -= 1;
    }
    let old_end = a.len() - suffix;
    let new_end = b.len() - suffix;
    tree_sitter::InputEdit {
        start_byte: prefix,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position: point_at(old, prefix),
        old_end_position: point_at(old, old_end),
        new_end_position: point_at(new, new_end),
    }
}

/// The row and byte column of offset `byte` in `text`.
fn point_at(text: &str, byte: usize) -> tree_sitter::Point {
    let before = &text.as_bytes()[..byte];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let column = byte - before.iter().rposition(|&b| b == b'\n').map_or(0, |newline| newline + 1);
    tree_sitter::Point { row, column }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every edit in `steps`, audited incrementally, gives exactly the report
    /// a fresh audit gives.
    fn check(language: Language, steps: &[&str]) {
        let mut session = Session::new();
        for (index, source) in steps.iter().enumerate() {
            let incremental = session.audit(source, None, Some(language));
            let fresh = crate::audit(source, None, Some(language));
            assert_eq!(incremental, fresh, "step {index} of {language}: {source:?}");
        }
    }

    #[test]
    fn incremental_reports_equal_fresh_ones() {
        check(
            Language::Python,
            &[
                "while True:\n    step()\n",
                "while True:\n    step()\n    if done():\n        break\n",
                "for _ in range(10):\n    step()\n    if done():\n        break\n",
                "# ünïcode\nfor _ in range(10):\n    step()  # é\n",
                "# ünïcode\nfor _ in range(10):\n    step()  # éé\n",
                "",
                "while True:\n    pass\n",
            ],
        );
        check(
            Language::Rust,
            &[
                "loop {\n}\n",
                "fn f() {\n    loop {\n        if converged() { break; }\n    }\n}\n",
                "fn f() {\n    loop {}\n}\n",
                // A stream macro's body is read as the async block it runs
                // as; typing its name into being and out of it again.
                "fn f() -> impl Stream {\n    stream! {\n        loop { if done() { break; } yield 1; }\n    }\n}\n",
                "fn f() -> impl Stream {\n    strea! {\n        loop { if done() { break; } yield 1; }\n    }\n}\n",
                "fn f() -> impl Stream {\n    try_stream! {\n        loop { if done() { break; } yield 1; }\n    }\n}\n",
                "fn f() -> impl Stream {\n    try_stream! {\n        loop { if done() { break; } yield 2; }\n    }\n}\n",
            ],
        );
    }

    #[test]
    fn a_language_change_starts_over() {
        let mut session = Session::new();
        let python = session.audit("while True:\n    pass\n", None, Some(Language::Python));
        assert_eq!(python.language.as_deref(), Some("python"));
        let bash = session.audit("while true; do :; done\n", None, Some(Language::Bash));
        assert_eq!(bash, crate::audit("while true; do :; done\n", None, Some(Language::Bash)));
    }

    #[test]
    fn edits_are_the_span_between_common_prefix_and_suffix() {
        let edit = edit_between("abc\ndef\n", "abc\ndXef\n");
        assert_eq!((edit.start_byte, edit.old_end_byte, edit.new_end_byte), (5, 5, 6));
        assert_eq!((edit.start_position.row, edit.start_position.column), (1, 1));
        let edit = edit_between("aaaa", "aa");
        assert_eq!((edit.start_byte, edit.old_end_byte, edit.new_end_byte), (2, 4, 2));
        let edit = edit_between("é", "è");
        assert_eq!(edit.start_byte, 0, "never splits a character");
    }
}
