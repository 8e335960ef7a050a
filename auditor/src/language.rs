//! The languages the auditor reads, their names, and how a file's language is
//! recognised when nobody says what it is.

use serde::{Deserialize, Serialize};

/// A language with a tree-sitter grammar compiled into the auditor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Bash,
    Go,
    Rust,
}

impl Language {
    /// Every supported language, in a stable order.
    pub const ALL: [Language; 7] = [
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Bash,
        Language::Go,
        Language::Rust,
    ];

    /// Parses a language name or a common alias, case-insensitively.
    pub fn from_name(name: &str) -> Option<Language> {
        match name.trim().to_ascii_lowercase().as_str() {
            "python" | "py" | "python3" => Some(Language::Python),
            "javascript" | "js" | "node" | "jsx" | "mjs" | "cjs" => Some(Language::JavaScript),
            "typescript" | "ts" => Some(Language::TypeScript),
            "tsx" => Some(Language::Tsx),
            "bash" | "sh" | "shell" => Some(Language::Bash),
            "go" | "golang" => Some(Language::Go),
            "rust" | "rs" => Some(Language::Rust),
            _ => None,
        }
    }

    /// The canonical lowercase name, as written in reports.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Bash => "bash",
            Language::Go => "go",
            Language::Rust => "rust",
        }
    }

    #[cfg(feature = "engine")]
    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Bash => tree_sitter_bash::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }

    /// The syntax family: TypeScript and TSX share JavaScript's node kinds for
    /// everything the rules look at.
    #[cfg(feature = "engine")]
    pub(crate) fn family(self) -> Family {
        match self {
            Language::Python => Family::Python,
            Language::JavaScript | Language::TypeScript | Language::Tsx => Family::Js,
            Language::Bash => Family::Bash,
            Language::Go => Family::Go,
            Language::Rust => Family::Rust,
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "engine")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Python,
    Js,
    Bash,
    Go,
    Rust,
}

/// Recognises a file's language: by its extension, then by a shebang line,
/// then by the shape of its content. `None` when nothing is convincing.
pub fn detect_language(path: Option<&str>, source: &str) -> Option<Language> {
    if let Some(language) = path.and_then(language_of_path) {
        return Some(language);
    }
    if let Some(language) = language_of_shebang(source) {
        return Some(language);
    }
    language_of_content(source)
}

fn language_of_path(path: &str) -> Option<Language> {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let extension = file.rsplit_once('.')?.1.to_ascii_lowercase();
    match extension.as_str() {
        "py" | "pyw" | "pyi" => Some(Language::Python),
        "js" | "mjs" | "cjs" | "jsx" => Some(Language::JavaScript),
        "ts" | "mts" | "cts" => Some(Language::TypeScript),
        "tsx" => Some(Language::Tsx),
        "sh" | "bash" => Some(Language::Bash),
        "go" => Some(Language::Go),
        "rs" => Some(Language::Rust),
        _ => None,
    }
}

fn language_of_shebang(source: &str) -> Option<Language> {
    let first = source.lines().next()?;
    let interpreter = first.strip_prefix("#!")?;
    if interpreter.contains("python") {
        Some(Language::Python)
    } else if ["node", "deno", "bun"].iter().any(|name| interpreter.contains(name)) {
        Some(Language::JavaScript)
    } else if ["bash", "/sh", " sh", "zsh", "dash", "ksh"].iter().any(|name| interpreter.contains(name)) {
        Some(Language::Bash)
    } else {
        None
    }
}

/// Scores each language by lines that only it would write. Only the first
/// 400 lines are read: a file's character shows early, and a huge paste must
/// not cost a second scan.
fn language_of_content(source: &str) -> Option<Language> {
    let mut scores = [0u32; 7];
    let mut add = |language: Language, points: u32| {
        let index = Language::ALL.iter().position(|l| *l == language).unwrap_or(0);
        scores[index] += points;
    };
    for line in source.lines().take(400) {
        let line = line.trim();
        let starts = |prefix: &str| line.starts_with(prefix);
        if starts("def ")
            || starts("elif ")
            || starts("from ") && line.contains(" import ")
            || starts("async def ")
        {
            add(Language::Python, 3);
        }
        if (starts("if ") || starts("while ") || starts("for ") || starts("else")) && line.ends_with(':') {
            // `while True:` alone is Python; no other language here ends a
            // loop header with a colon.
            add(Language::Python, if starts("if ") || starts("else") { 2 } else { 3 });
        }
        if starts("package ") || starts("func ") || line.contains(":= ") {
            add(Language::Go, 3);
        }
        let rust_pattern_arm = ["Ok(", "Err(", "Some(", "None =>", "_ =>"].iter().any(|arm| starts(arm));
        let rust_typed_const = (starts("const ") || starts("static "))
            && [": u", ": i", ": f32", ": f64", ": &", ": usize", ": bool", ": Duration"]
                .iter()
                .any(|ty| line.contains(ty));
        if starts("fn ")
            || starts("pub fn ")
            || starts("let mut ")
            || starts("use ") && line.contains("::")
            || starts("impl ")
            || line == "loop {"
            || starts("match ") && line.ends_with('{')
            || rust_typed_const
        {
            add(Language::Rust, 3);
        }
        if rust_pattern_arm && line.contains("=>") {
            add(Language::Rust, 2);
        }
        if (starts("const ") && !rust_typed_const)
            || (starts("let ") && !starts("let mut "))
            || starts("function ")
            || starts("async function ")
            || starts("export ")
            || starts("for (let ")
            || starts("for (const ")
            || starts("await ") && line.ends_with(';')
            || (line.contains("=> {") && !rust_pattern_arm)
            || line.contains("require(")
            || starts("import ") && line.contains(" from '")
            || starts("import ") && line.contains(" from \"")
        {
            add(Language::JavaScript, 2);
        }
        if starts("interface ")
            || starts("type ") && line.contains(" = ")
            || line.contains(": string")
            || line.contains(": number")
            || line.contains(": boolean")
            || line.contains("): Promise<")
        {
            add(Language::TypeScript, 3);
        }
        if line == "fi"
            || line == "done"
            || line == "esac"
            || line.ends_with("; then")
            || line.ends_with("; do")
            || line.contains("; do ") && line.ends_with("done")
            || starts("echo ")
        {
            add(Language::Bash, 3);
        }
    }
    // TypeScript is JavaScript with types: it needs both kinds of evidence.
    let ts = 2;
    let js = 1;
    if scores[ts] > 0 {
        scores[ts] += scores[js];
    }
    let (best, score) = scores.iter().enumerate().max_by_key(|(_, score)| **score)?;
    (*score >= 3).then(|| Language::ALL[best])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: Option<&str>, source: &str, expected: Option<Language>) {
        assert_eq!(detect_language(path, source), expected, "path {path:?}, source {source:?}");
    }

    #[test]
    fn detects_by_extension_shebang_and_content() {
        check(Some("agent.py"), "", Some(Language::Python));
        check(Some("dir/loop.TSX"), "", Some(Language::Tsx));
        check(Some("run.mjs"), "", Some(Language::JavaScript));
        check(None, "#!/usr/bin/env bash\nwhile true; do :; done\n", Some(Language::Bash));
        check(None, "#!/usr/bin/env python3\nprint(1)\n", Some(Language::Python));
        check(None, "package main\n\nfunc main() {\n}\n", Some(Language::Go));
        check(None, "use std::io;\nfn main() {\n    let mut x = 1;\n}\n", Some(Language::Rust));
        check(None, "def run():\n    while True:\n        pass\n", Some(Language::Python));
        check(None, "const x = 1;\nfunction f() {}\n", Some(Language::JavaScript));
        check(None, "interface A { b: string }\nconst x: number = 1;\n", Some(Language::TypeScript));
        check(None, "hello world", None);
        // Tiny pastes still say what they are.
        check(
            None,
            "export async function run(agent, maxTurns) {\n  for (let turn = 0; turn < maxTurns; turn++) {\n    await agent.step();\n  }\n}\n",
            Some(Language::JavaScript),
        );
        check(None, "while True:\n    pass\n", Some(Language::Python));
        check(None, "while true; do ./agent.sh; done\n", Some(Language::Bash));
        // Rust that looks like JavaScript line by line (const, let, `=> {`).
        check(
            None,
            "const LIMIT: u32 = 3;\nconst STALL: u32 = 2;\nfn f() {\n    let x = 1;\n    let y = 2;\n    loop {\n        match g() {\n            Ok(v) => {\n            }\n            Err(_) => {\n            }\n        }\n    }\n}\n",
            Some(Language::Rust),
        );
        check(Some("notes.txt"), "hello", None);
    }

    #[test]
    fn names_round_trip() {
        for language in Language::ALL {
            assert_eq!(Language::from_name(language.name()), Some(language));
        }
        assert_eq!(Language::from_name("golang"), Some(Language::Go));
        assert_eq!(Language::from_name("SH"), Some(Language::Bash));
        assert_eq!(Language::from_name("cobol"), None);
    }
}
