//! Syntax highlighting with the auditor's own grammars, for code shown on
//! the site (the newsletter's code blocks). The output is HTML: the source
//! escaped, with `<span class="hl-…">` around what the grammar's highlight
//! query names (`hl-keyword`, `hl-string`, `hl-function-builtin`, …).
//!
//! Each language's query is compiled once per process, on first use.

use std::sync::OnceLock;

use tree_sitter_highlight::{HighlightConfiguration, HighlightEvent, Highlighter};

use crate::Language;

/// The highlight names we style, most specific first is not needed: the
/// highlighter picks the longest recognised prefix of a capture's name.
const NAMES: [&str; 24] = [
    "attribute",
    "comment",
    "constant",
    "constant.builtin",
    "constructor",
    "embedded",
    "escape",
    "function",
    "function.builtin",
    "function.method",
    "keyword",
    "label",
    "module",
    "number",
    "operator",
    "property",
    "punctuation",
    "punctuation.bracket",
    "punctuation.delimiter",
    "string",
    "string.special",
    "tag",
    "type",
    "variable.builtin",
];

/// The class a highlight name gets: `function.builtin` is `hl-function-builtin`.
fn class_of(name: &str) -> String {
    format!("hl-{}", name.replace('.', "-"))
}

/// Every class [`highlight_html`] can emit, for sanitisers that allow
/// classes by name.
pub fn highlight_classes() -> Vec<String> {
    NAMES.iter().map(|name| class_of(name)).collect()
}

fn configuration(language: Language) -> Option<&'static HighlightConfiguration> {
    static CONFIGS: [OnceLock<Option<HighlightConfiguration>>; 7] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let index = Language::ALL.iter().position(|candidate| *candidate == language)?;
    CONFIGS[index]
        .get_or_init(|| {
            let typescript_query;
            let query: &str = match language {
                Language::Python => tree_sitter_python::HIGHLIGHTS_QUERY,
                Language::JavaScript => tree_sitter_javascript::HIGHLIGHT_QUERY,
                // TypeScript's query extends JavaScript's.
                Language::TypeScript | Language::Tsx => {
                    typescript_query = format!(
                        "{}\n{}",
                        tree_sitter_typescript::HIGHLIGHTS_QUERY,
                        tree_sitter_javascript::HIGHLIGHT_QUERY
                    );
                    &typescript_query
                }
                Language::Bash => tree_sitter_bash::HIGHLIGHT_QUERY,
                Language::Go => tree_sitter_go::HIGHLIGHTS_QUERY,
                Language::Rust => tree_sitter_rust::HIGHLIGHTS_QUERY,
            };
            let mut config =
                HighlightConfiguration::new(language.grammar()?, language.name(), query, "", "").ok()?;
            config.configure(&NAMES);
            Some(config)
        })
        .as_ref()
}

/// The source as highlighted HTML (escaped, with spans), or `None` when the
/// highlighter gives up (the caller shows the code plain).
pub fn highlight_html(language: Language, source: &str) -> Option<String> {
    let config = configuration(language)?;
    let mut highlighter = Highlighter::new();
    let events = highlighter.highlight(config, source.as_bytes(), None, None, |_| None).ok()?;
    let mut html = String::with_capacity(source.len() * 2);
    let mut open = 0usize;
    for event in events {
        match event.ok()? {
            HighlightEvent::Source { start, end } => escape_into(&mut html, source.get(start..end)?),
            HighlightEvent::HighlightStart(highlight) => {
                let name = NAMES.get(highlight.0)?;
                html.push_str("<span class=\"");
                html.push_str(&class_of(name));
                html.push_str("\">");
                open += 1;
            }
            HighlightEvent::HighlightEnd => {
                if open > 0 {
                    html.push_str("</span>");
                    open -= 1;
                }
            }
        }
    }
    for _ in 0..open {
        html.push_str("</span>");
    }
    Some(html)
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_keywords_strings_and_comments_get_classes() {
        let html = highlight_html(Language::Python, "while True:\n    x = \"<done>\"  # stop\n").unwrap();
        assert!(html.contains(r#"<span class="hl-keyword">while</span>"#), "{html}");
        assert!(html.contains("hl-string"), "{html}");
        assert!(html.contains("&lt;done&gt;"), "escaped: {html}");
        assert!(html.contains(r#"<span class="hl-comment"># stop</span>"#), "{html}");
    }

    #[test]
    fn every_language_highlights_and_keeps_the_text() {
        let samples = [
            (Language::Python, "for i in range(3):\n    break\n"),
            (Language::JavaScript, "for (;;) { if (done) break; }"),
            (Language::TypeScript, "let n: number = 0; while (n < 3) n++;"),
            (Language::Tsx, "const a = <div>{x}</div>;"),
            (Language::Bash, "timeout 600 ./agent.sh || exit 1"),
            (Language::Go, "for i := 0; i < 3; i++ { break }"),
            (Language::Rust, "loop { if done() { break; } }"),
        ];
        for (language, source) in samples {
            let html = highlight_html(language, source).unwrap();
            assert!(html.contains("<span class=\"hl-"), "{language:?}: {html}");
            let text = html
                .split('<')
                .map(|piece| piece.split_once('>').map_or(piece, |(_, rest)| rest))
                .collect::<String>()
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&amp;", "&");
            assert_eq!(text, source, "{language:?} lost text");
        }
    }

    #[test]
    fn broken_code_still_comes_back_whole() {
        let html = highlight_html(Language::Rust, "fn main( { loop { \"unterminated").unwrap();
        assert!(html.contains("unterminated"));
    }
}
