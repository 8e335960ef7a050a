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

    /// The tree-sitter grammar, when this build carries it (the `engine`
    /// feature carries every one; a module of the audit page may carry one
    /// family).
    #[cfg(feature = "parser")]
    pub(crate) fn grammar(self) -> Option<tree_sitter::Language> {
        // Without every language feature some arms are compiled out and the
        // last one answers for them.
        #[allow(unreachable_patterns)]
        match self {
            #[cfg(feature = "python")]
            Language::Python => Some(tree_sitter_python::LANGUAGE.into()),
            #[cfg(feature = "javascript")]
            Language::JavaScript => Some(tree_sitter_javascript::LANGUAGE.into()),
            #[cfg(feature = "javascript")]
            Language::TypeScript => Some(tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()),
            #[cfg(feature = "javascript")]
            Language::Tsx => Some(tree_sitter_typescript::LANGUAGE_TSX.into()),
            #[cfg(feature = "bash")]
            Language::Bash => Some(tree_sitter_bash::LANGUAGE.into()),
            #[cfg(feature = "go")]
            Language::Go => Some(tree_sitter_go::LANGUAGE.into()),
            #[cfg(feature = "rust")]
            Language::Rust => Some(tree_sitter_rust::LANGUAGE.into()),
            _ => None,
        }
    }

    /// The syntax family: TypeScript and TSX share JavaScript's node kinds for
    /// everything the rules look at.
    #[cfg(feature = "parser")]
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

#[cfg(feature = "parser")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Python,
    Js,
    Bash,
    Go,
    Rust,
}

/// Recognises a file's language: by its extension, then by a shebang line,
/// then by parsing its content with every grammar (the one that leaves the
/// fewest bytes in error nodes wins, and the lines only one language would
/// write break ties). `None` when nothing is convincing: then every surface
/// asks for the language rather than audit a guess.
///
/// A build that lacks some grammars answers `None` where only those could
/// tell; [`detect_language_at_hand`] says which of the two it is.
pub fn detect_language(path: Option<&str>, source: &str) -> Option<Language> {
    #[cfg(feature = "parser")]
    {
        detect_language_at_hand(path, source).decided()
    }
    #[cfg(not(feature = "parser"))]
    {
        path.and_then(language_of_path)
            .or_else(|| language_of_shebang(source))
            .or_else(|| language_of_content(source))
    }
}

/// What the grammars of this build can say of a paste's language.
#[cfg(feature = "parser")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// What every grammar together would say: the language, or `None` when
    /// the paste is not convincingly any of them.
    Decided(Option<Language>),
    /// Only a grammar this build lacks could tell.
    NeedsOtherGrammars,
}

#[cfg(feature = "parser")]
impl Detection {
    /// The language decided, `None` both when none was recognised and when
    /// this build could not tell.
    pub fn decided(self) -> Option<Language> {
        match self {
            Detection::Decided(language) => language,
            Detection::NeedsOtherGrammars => None,
        }
    }
}

/// [`detect_language`] with the grammars this build carries, saying when
/// they are not enough: the answer is `Decided` only when every grammar
/// together would give the same one, whatever the missing grammars would
/// read (a missing grammar could read the paste without a single error).
/// With every grammar (the `engine` feature) it always decides.
#[cfg(feature = "parser")]
pub fn detect_language_at_hand(path: Option<&str>, source: &str) -> Detection {
    detect_language_with(&Language::ALL, path, source)
}

/// [`detect_language_at_hand`] as a build carrying only `grammars` (of those
/// it has) would answer it, for measuring how often the audit page's first
/// module decides alone (the eval example). Not part of the auditor's
/// contract.
#[cfg(feature = "parser")]
#[doc(hidden)]
pub fn detect_language_with(grammars: &[Language], path: Option<&str>, source: &str) -> Detection {
    if let Some(language) = path.and_then(language_of_path).or_else(|| language_of_shebang(source)) {
        return Detection::Decided(Some(language));
    }
    let decision = decide_from_start(grammars, source, SAMPLE_BYTES);
    // A start that reads as no language at all may have been cut inside a
    // string or a heredoc that spans lines: a longer start decides. (Only
    // then: a build lacking grammars reads no language only where all of
    // them would, so every build that takes the longer look takes it
    // where all of them would.)
    if decision == Detection::Decided(None) && source.len() > SAMPLE_BYTES {
        return decide_from_start(grammars, source, LONG_SAMPLE_BYTES);
    }
    decision
}

/// What `grammars` decide from the first `limit` bytes of `source`.
#[cfg(feature = "parser")]
fn decide_from_start(grammars: &[Language], source: &str, limit: usize) -> Detection {
    let Some((mut errors, hints)) = readings_at_hand(source, limit) else { return Detection::Decided(None) };
    for language in Language::ALL {
        if !grammars.contains(&language) {
            errors[index_of(language)] = None;
        }
    }
    decide(&errors, &hints)
}

/// The language a paste most likely is, from its path, shebang and the
/// lines only one language writes, without parsing it: which grammar to
/// fetch first. `None` when nothing hints at one.
pub fn likely_language(path: Option<&str>, source: &str) -> Option<Language> {
    if let Some(language) = path.and_then(language_of_path).or_else(|| language_of_shebang(source)) {
        return Some(language);
    }
    let scores = content_scores(source);
    let score = |language: Language| scores[Language::ALL.iter().position(|l| *l == language).unwrap_or(0)];
    [
        Language::Python,
        Language::TypeScript,
        Language::JavaScript,
        Language::Bash,
        Language::Go,
        Language::Rust,
    ]
    .into_iter()
    .map(|language| match language {
        Language::TypeScript if score(language) > 0 => {
            (language, score(language) + score(Language::JavaScript))
        }
        other => (other, score(other)),
    })
    .filter(|(_, score)| *score > 0)
    .fold(None, |best: Option<(Language, u32)>, (language, score)| match best {
        Some((_, top)) if top >= score => best,
        _ => Some((language, score)),
    })
    .map(|(language, _)| language)
}

/// How much of a paste the parsers read to recognise it: enough to show its
/// character (the real-world set's excerpts and their first 15 lines are
/// recognised as well from 16 KB as from 64 KB), and a bounded cost on a
/// long paste. The cost grows faster than the sample: the shell and Rust
/// grammars take long to read a long paste in another language (a
/// 2,000-line Python file took 0.7 s natively from 64 KB, 0.09 s from 16).
#[cfg(feature = "parser")]
const SAMPLE_BYTES: usize = 16 * 1024;

/// The longer start read when the first [`SAMPLE_BYTES`] read as no
/// language (a sample cut inside a string that spans lines).
#[cfg(feature = "parser")]
const LONG_SAMPLE_BYTES: usize = 64 * 1024;

/// Each grammar's share of the start of `source` in error nodes (`None` for
/// a grammar this build lacks) and the content hints of that start; `None`
/// when it holds nothing but white space.
#[cfg(feature = "parser")]
fn readings_at_hand(source: &str, limit: usize) -> Option<([Option<f64>; 7], [u32; 7])> {
    let sample = detection_sample(source, limit);
    let meaningful = sample.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    if meaningful == 0 {
        return None;
    }
    // A paste cut off inside a function or a string reads as one large
    // error in the right grammar; closing what it left open (the same
    // closers for every grammar) reads it as written. Each grammar keeps
    // the better of its two readings: the closers are a guess.
    let readings = cut_readings(sample);
    let hints = content_scores(sample);
    // A shell script cut inside its `if`, `for` or function also leaves
    // keywords open that no bracket closes: only Bash reads that reading,
    // and only when some line hints at Bash.
    let shell_reading = (hints[index_of(Language::Bash)] > 0).then(|| close_shell_cut(sample)).flatten();
    let mut parser = tree_sitter::Parser::new();
    let mut errors: [Option<f64>; 7] = [None; 7];
    for language in Language::ALL {
        let Some(grammar) = language.grammar() else { continue };
        if parser.set_language(&grammar).is_err() {
            // A grammar that cannot be loaded reads nothing.
            errors[index_of(language)] = Some(f64::INFINITY);
            continue;
        }
        let mut fewest = usize::MAX;
        let shell = shell_reading.as_deref().filter(|_| language == Language::Bash);
        for text in std::iter::once(sample).chain(readings.iter().map(String::as_str)).chain(shell) {
            if let Some(tree) = parser.parse(text, None) {
                fewest = fewest.min(error_bytes(&tree));
            }
        }
        errors[index_of(language)] =
            Some(if fewest == usize::MAX { f64::INFINITY } else { fewest as f64 / meaningful as f64 });
    }
    Some((errors, hints))
}

/// `sample` with the shell constructs it leaves open closed, innermost
/// first: each `if` with `fi`, each `do` with `done`, each `case` with
/// `esac`, each brace that opens a group or a function's body with its
/// brace. `None` when nothing is left open. The scan reads words between
/// blanks and `;` (quoted text and comments rough, as [`close_cut`]).
#[cfg(feature = "parser")]
fn close_shell_cut(sample: &str) -> Option<String> {
    let mut open: Vec<&'static str> = Vec::new();
    for line in sample.lines() {
        let code = line.trim_start();
        if code.starts_with('#') {
            continue;
        }
        let mut quote: Option<char> = None;
        for word in code.split(|c: char| c.is_whitespace() || c == ';') {
            // Words inside a quoted string are no keywords (`echo "if"`,
            // `echo 'run if needed'`).
            let opens = ['"', '\''].into_iter().find(|q| word.matches(*q).count() % 2 == 1);
            match (quote, opens) {
                (None, Some(q)) => {
                    quote = Some(q);
                    continue;
                }
                (Some(open), Some(q)) if open == q => {
                    quote = None;
                    continue;
                }
                (Some(_), _) => continue,
                (None, None) => {}
            }
            // (`name(){` opens a function's body; `done)` closes a loop
            // inside a command substitution.)
            let word = if word.ends_with("(){") { "{" } else { word.trim_end_matches(')') };
            let closer = match word {
                "if" => Some("fi"),
                "do" => Some("done"),
                "case" => Some("esac"),
                "{" => Some("}"),
                "fi" | "done" | "esac" | "}" => {
                    open.pop();
                    None
                }
                _ => None,
            };
            open.extend(closer);
        }
        if open.len() > 64 {
            return None;
        }
    }
    if open.is_empty() {
        return None;
    }
    let mut closed = sample.trim_end().to_string();
    closed.push('\n');
    for closer in open.iter().rev() {
        closed.push_str(closer);
        closed.push('\n');
    }
    Some(closed)
}

/// Picks the language whose parse leaves the smallest share of the paste in
/// error nodes, less a bonus for the lines only its language writes (the
/// content hints of [`content_scores`]), which also decide between grammars
/// that parse it equally well (TypeScript reads JavaScript, Bash reads
/// almost anything). `errors` holds each grammar's share, `None` for a
/// grammar this build lacks: the answer is then given only when no reading
/// of the missing grammars, not even a perfect one, could change it.
#[cfg(feature = "parser")]
fn decide(errors: &[Option<f64>; 7], hints: &[u32; 7]) -> Detection {
    let hint = |language: Language| hints[index_of(language)];
    let error = |language: Language| errors[index_of(language)];
    // JavaScript, TypeScript and TSX read each other's code: TypeScript when
    // it reads the paste better than JavaScript does or there are types,
    // TSX only when it reads it better than TypeScript (JSX in it).
    let script = match (error(Language::JavaScript), error(Language::TypeScript), error(Language::Tsx)) {
        (Some(js), Some(ts), Some(tsx)) => {
            let typed = ts + 0.001 < js || (hint(Language::TypeScript) > 0 && ts <= js);
            Some(if !typed {
                Language::JavaScript
            } else if tsx + 0.001 < ts {
                Language::Tsx
            } else {
                Language::TypeScript
            })
        }
        _ => None,
    };
    let score = |language: Language| match language {
        // TypeScript's lines are JavaScript's too.
        Language::TypeScript | Language::Tsx => hint(Language::TypeScript) + hint(Language::JavaScript),
        other => hint(other),
    };
    let bonus = |score: u32| HINT_WEIGHT * f64::from(score.min(HINT_CAP));
    // Each grammar's share of the paste in error nodes, less a bonus for
    // the lines only its language writes: a cut paste leaves errors in the
    // right grammar too, and Bash reads almost anything without one.
    let known =
        |language: Language| error(language).map(|error| (language, error, error - bonus(score(language))));
    let mut ranked: Vec<(Language, f64, f64)> =
        [Some(Language::Python), script, Some(Language::Bash), Some(Language::Go), Some(Language::Rust)]
            .into_iter()
            .flatten()
            .filter_map(known)
            .collect();
    ranked.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.1.total_cmp(&b.1)));
    // What a missing grammar could score at best: no error at all, and the
    // larger bonus of the scripts when theirs are missing.
    let missing_best: Option<f64> = [
        (script.is_none(), Language::TypeScript),
        (error(Language::Python).is_none(), Language::Python),
        (error(Language::Bash).is_none(), Language::Bash),
        (error(Language::Go).is_none(), Language::Go),
        (error(Language::Rust).is_none(), Language::Rust),
    ]
    .into_iter()
    .filter(|(missing, _)| *missing)
    .map(|(_, language)| -bonus(score(language)))
    .min_by(f64::total_cmp);
    // The first `n` of `ranked` keep their places whatever the missing
    // grammars read.
    let settled = |n: usize| match missing_best {
        None => ranked.len() >= n,
        Some(best) => ranked.len() >= n && ranked[..n].iter().all(|(_, _, adjusted)| *adjusted < best),
    };
    if !settled(1) {
        return Detection::NeedsOtherGrammars;
    }
    let (winner, winner_error, _) = ranked[0];
    // (A paste cut inside a block reads as one large error even in its own
    // grammar: with many lines only its language writes, a little more of
    // it may be in error.)
    let tolerated = if score(winner) >= HINT_CAP { 0.9 } else { 0.7 };
    if winner_error > tolerated {
        return Detection::Decided(None);
    }
    if score(winner) > 0 {
        return Detection::Decided(Some(winner));
    }
    // Nothing only one language writes: the grammar alone decides when it
    // alone reads the paste cleanly. Bash reads prose as commands, so it
    // is never chosen on its grammar alone.
    if winner_error > 0.05 || winner == Language::Bash {
        return Detection::Decided(None);
    }
    if !settled(2) {
        return Detection::NeedsOtherGrammars;
    }
    let (_, runner_up_error, _) = ranked[1];
    Detection::Decided((runner_up_error >= winner_error + 0.05).then_some(winner))
}

/// How much a line that only one language writes is worth, as a share of
/// the paste in error nodes, and how many such lines count at most.
#[cfg(feature = "parser")]
const HINT_WEIGHT: f64 = 0.04;
#[cfg(feature = "parser")]
const HINT_CAP: u32 = 15;

/// The start of `source` that detection parses: all of it up to
/// `limit` bytes, else cut at the last line before that which starts a
/// top-level item, so that the sample does not end inside a half-read
/// function (which any grammar reads as one large error).
#[cfg(feature = "parser")]
fn detection_sample(source: &str, limit: usize) -> &str {
    if source.len() <= limit {
        return source;
    }
    let mut end = limit;
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let sample = &source[..end];
    let mut cut = sample.rfind('\n').map_or(sample.len(), |i| i + 1);
    let mut offset = 0;
    for line in sample.split_inclusive('\n') {
        let starts_item = line
            .starts_with(|c: char| !c.is_whitespace() && !matches!(c, '}' | ')' | ']' | '#' | '/'))
            && !line.starts_with("fi")
            && !line.starts_with("done")
            && !line.starts_with("esac")
            && !line.starts_with("else");
        if starts_item && offset >= limit / 4 && line.ends_with('\n') {
            cut = offset;
        }
        offset += line.len();
    }
    &sample[..cut]
}

/// The readings of a paste cut off mid-construct besides the paste itself:
/// what it left open closed ([`close_cut`]), and where the outermost open
/// bracket belongs to a statement that needs more than its bracket (a
/// JavaScript `import {` list, a Python `def f(` signature), that
/// statement finished as its language would. Each grammar keeps its best
/// reading, so a tail written for one language costs the others nothing.
#[cfg(feature = "parser")]
fn cut_readings(sample: &str) -> Vec<String> {
    let (closed, opener) = close_cut(sample);
    if closed == sample {
        return Vec::new();
    }
    let mut readings = vec![closed.clone()];
    let opener = opener.map(str::trim_start).unwrap_or("");
    if opener.starts_with("import ") || opener.trim_end() == "export" {
        readings.push(format!("{} from \"m\";\n", closed.trim_end()));
    }
    if ["def ", "async def ", "class "].iter().any(|p| opener.starts_with(p)) {
        readings.push(format!("{}:\n    pass\n", closed.trim_end()));
    }
    readings
}

/// `sample` with what it leaves open closed: an unfinished triple-quoted or
/// template string or block comment, then the brackets it opened, innermost
/// first; and the line that opened the outermost bracket still open. The
/// scan is rough (strings and comments of every language at once), and the
/// same closers go to every grammar.
#[cfg(feature = "parser")]
fn close_cut(sample: &str) -> (String, Option<&str>) {
    let mut open: Vec<(u8, usize)> = Vec::new();
    let bytes = sample.as_bytes();
    let mut i = 0;
    let mut quote: Option<&'static [u8]> = None;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if let Some(q) = quote {
            if rest.starts_with(q) {
                quote = None;
                i += q.len();
            } else {
                i += if rest[0] == b'\\' { 2 } else { 1 };
            }
            continue;
        }
        match rest[0] {
            b'#' | b'/' if rest[0] == b'#' || rest.starts_with(b"//") => {
                // `#[derive]` and `#{` are code, not comments.
                if rest.starts_with(b"#[") || rest.starts_with(b"#{") {
                    i += 1;
                    continue;
                }
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if rest.starts_with(b"/*") => quote = Some(b"*/"),
            b'"' if rest.starts_with(b"\"\"\"") => quote = Some(b"\"\"\""),
            b'\'' if rest.starts_with(b"'''") => quote = Some(b"'''"),
            b'"' => quote = Some(b"\""),
            b'`' => quote = Some(b"`"),
            b'(' | b'[' | b'{' => open.push((rest[0], i)),
            b')' | b']' | b'}' => {
                open.pop();
            }
            _ => {}
        }
        if let Some(q) = quote {
            i += q.len();
        } else {
            i += 1;
        }
        // A one-line string that never closes is not a string.
        if matches!(quote, Some(b"\"")) && !bytes[i..].iter().take_while(|b| **b != b'\n').any(|b| *b == b'"')
        {
            quote = None;
        }
    }
    if quote.is_none() && open.is_empty() {
        return (sample.to_string(), None);
    }
    let opener = open.first().map(|(_, at)| {
        let start = sample[..*at].rfind('\n').map_or(0, |n| n + 1);
        &sample[start..*at]
    });
    let mut closed = sample.to_string();
    if let Some(q) = quote {
        closed.push_str(std::str::from_utf8(q).unwrap_or(""));
    }
    closed.push('\n');
    for (bracket, _) in open.iter().rev().take(64) {
        closed.push(match bracket {
            b'(' => ')',
            b'[' => ']',
            _ => '}',
        });
    }
    closed.push('\n');
    (closed, opener)
}

/// Bytes of the tree inside error nodes, plus a few for each missing token.
#[cfg(feature = "parser")]
fn error_bytes(tree: &tree_sitter::Tree) -> usize {
    let root = tree.root_node();
    if !root.has_error() {
        return 0;
    }
    let mut total = 0;
    let mut cursor = root.walk();
    let mut visited = 0usize;
    loop {
        let node = cursor.node();
        visited += 1;
        let descend = if node.is_error() {
            total += node.byte_range().len().max(1);
            false
        } else if node.is_missing() {
            total += 4;
            false
        } else {
            node.has_error()
        };
        if visited > 200_000 {
            return total;
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return total;
            }
        }
    }
}

#[cfg(feature = "parser")]
fn index_of(language: Language) -> usize {
    Language::ALL.iter().position(|l| *l == language).unwrap_or(0)
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
    } else if interpreter
        .split(|c: char| c.is_whitespace() || c == '/')
        .any(|word| word.starts_with("ts-node") || matches!(word, "ts-script" | "tsx" | "tsn"))
    {
        // The runners of TypeScript (`#!/usr/bin/env -S npx tsx`,
        // `ts-node-script`, and `tsn`, the usual alias of ts-node's).
        Some(Language::TypeScript)
    } else if ["node", "deno", "bun"].iter().any(|name| interpreter.contains(name)) {
        Some(Language::JavaScript)
    } else if ["bash", "/sh", " sh", "zsh", "dash", "ksh"].iter().any(|name| interpreter.contains(name)) {
        Some(Language::Bash)
    } else {
        None
    }
}

/// The language with the best content score, when it is convincing.
#[cfg(not(feature = "parser"))]
fn language_of_content(source: &str) -> Option<Language> {
    let mut scores = content_scores(source);
    // TypeScript is JavaScript with types: it needs both kinds of evidence.
    let ts = 2;
    let js = 1;
    if scores[ts] > 0 {
        scores[ts] += scores[js];
    }
    let (best, score) = scores.iter().enumerate().max_by_key(|(_, score)| **score)?;
    (*score >= 3).then(|| Language::ALL[best])
}

/// Scores each language by lines that only it would write. Only the first
/// 400 lines are read: a file's character shows early, and a huge paste must
/// not cost a second scan.
fn content_scores(source: &str) -> [u32; 7] {
    let mut scores = [0u32; 7];
    let mut add = |language: Language, points: u32| {
        let index = Language::ALL.iter().position(|l| *l == language).unwrap_or(0);
        scores[index] += points;
    };
    // TypeScript imports its types by the name: two or more names in the
    // import lists of the kind that only types wear (`MessageParam`,
    // `ToolResultBlockParam`, `AgentOptions`) are TypeScript's, even when the
    // lines below the imports are not in the paste.
    if type_like_imports(source) >= 2 {
        add(Language::TypeScript, 3);
    }
    // `from '../helpers/config'`: Node's own loader needs a relative module's
    // file extension; the TypeScript compiler resolves it without one. (A
    // bundler's JavaScript leaves it out too; it still reads as TypeScript,
    // whose grammar takes JavaScript, while the reverse breaks on types.)
    if source.lines().take(60).any(imports_relative_module_without_extension) {
        add(Language::TypeScript, 1);
    }
    // `/// <reference types="node" />`: a directive of the TypeScript
    // compiler, written as a comment.
    if source.lines().take(20).any(|line| line.trim_start().starts_with("/// <reference ")) {
        add(Language::TypeScript, 3);
    }
    // `import { JsonObject } from "@jaypie/types"`, `from './types.js'`: a
    // module of types, which JavaScript has none of to import (counted once).
    let mut types_module = false;
    for (number, raw) in source.lines().take(400).enumerate() {
        let line = raw.trim();
        if !types_module && number < 60 && imports_a_types_module(line) {
            types_module = true;
            add(Language::TypeScript, 1);
        }
        // Comments say what the code is in any language (`@type {string}`),
        // but types declared or imported in JSDoc (`@typedef {Object}
        // Options`, `@import { Options } from './types.js'`) are how
        // JavaScript spells what TypeScript writes in code.
        if line.starts_with("//") || line.starts_with("/*") || line.starts_with('*') || line.starts_with('#')
        {
            if line.contains("@typedef {") || line.contains("@import {") {
                add(Language::JavaScript, 2);
            }
            continue;
        }
        let starts = |prefix: &str| line.starts_with(prefix);
        if starts("def ")
            || starts("elif ")
            || starts("from ") && line.contains(" import ")
            || starts("async def ")
            || starts("class ") && line.ends_with(':')
            || starts("self.")
            || starts("\"\"\"")
            || starts("raise ")
            || starts("except") && line.ends_with(':')
            || starts("with ") && line.ends_with(':')
            || starts("try:")
        {
            add(Language::Python, 3);
        }
        // `import os`, `import numpy as np`: a plain module list, no quotes,
        // braces or `from` (JavaScript's and Go's imports name a string).
        if starts("import ") && python_module_list(&line["import ".len()..]) {
            add(Language::Python, 3);
        }
        if (starts("if ") || starts("while ") || starts("for ") || starts("else")) && line.ends_with(':') {
            // `while True:` alone is Python; no other language here ends a
            // loop header with a colon.
            add(Language::Python, if starts("if ") || starts("else") { 2 } else { 3 });
        }
        if starts("package ")
            || starts("func ")
            || line.contains(":= ")
            || line == "if err != nil {"
            || starts("defer ")
            || starts("go func(")
            || starts("case <-")
            || starts("select {")
        {
            add(Language::Go, 3);
        }
        let rust_pattern_arm = ["Ok(", "Err(", "Some(", "None =>", "_ =>"].iter().any(|arm| starts(arm));
        let rust_typed_const = (starts("const ") || starts("static "))
            && [": u", ": i", ": f32", ": f64", ": &", ": usize", ": bool", ": Duration"]
                .iter()
                .any(|ty| line.contains(ty));
        if starts("fn ")
            || starts("pub fn ")
            || starts("async fn ")
            || starts("pub async fn ")
            || starts("pub(crate) ")
            || starts("#[derive(")
            || starts("let mut ")
            || (starts("let ") && line.contains(": ") && line.contains("::"))
            || starts("while let ")
            || starts("if let ")
            || starts("use ") && line.contains("::")
            || starts("impl ")
            || starts("impl<")
            || starts("pub struct ")
            || starts("pub enum ")
            || starts("pub trait ")
            || starts("pub mod ")
            || starts("pub use ")
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
            || starts("var ")
            || ["console.log(", "console.error(", "console.warn(", "console.info(", "console.debug("]
                .iter()
                .any(|call| starts(call))
            || starts("} from '")
            || starts("} from \"")
            || starts("this.") && line.ends_with(';')
            || line.contains(" === ")
            || line.contains(" !== ")
            || starts("module.exports")
            || line == "import {"
            || starts("import * as ")
            || line == "\"use strict\";"
            || line == "'use strict';"
        {
            add(Language::JavaScript, 2);
        }
        if starts("interface ")
            || starts("export interface ")
            || starts("type ") && line.contains(" = ")
            || starts("export type ")
            || starts("import type ")
            || line.contains(": string")
            || line.contains(": number")
            || line.contains(": boolean")
            || line.contains("): Promise<")
            || line.contains(": Promise<")
            || starts("private ")
            || starts("public ")
            || starts("protected ")
            || starts("readonly ")
            || starts("private async ")
            || line.contains(" as unknown")
            || is_type_import_name(line)
        {
            add(Language::TypeScript, 3);
        }
        // A function defined at the top of a script (`process_errors() {`;
        // JavaScript's methods of that shape sit indented in a class), and
        // a setting with no space around its `=` (`TIMEOUT=20`), which only
        // the shell requires.
        let at_the_margin = !raw.starts_with(char::is_whitespace);
        let shell_function = at_the_margin
            && line.strip_suffix("() {").is_some_and(|name| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
        let shell_setting = at_the_margin
            && line.starts_with(|c: char| c.is_ascii_uppercase())
            && line.split_once('=').is_some_and(|(name, value)| {
                !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    && !value.starts_with('=')
                    && !value.starts_with(' ')
            });
        if shell_function {
            add(Language::Bash, 3);
        }
        if shell_setting {
            add(Language::Bash, 1);
        }
        if line == "fi"
            || line == "done"
            || line == "esac"
            || line.ends_with("; then")
            || line.ends_with("; do")
            || line.contains("; do ") && line.ends_with("done")
            || starts("echo ")
            || starts("set -e")
            || starts("set -u")
            || starts("local ")
            || starts("[[ ")
            || starts("[ ") && line.contains(" ]")
            || line.contains("=\"$(")
            || line.contains("=$(")
            || line.contains("${") && line.contains(":-")
        {
            add(Language::Bash, 3);
        }
    }
    scores
}

/// `os`, `os.path`, `numpy as np`, `json, sys`: what follows Python's
/// `import` (an identifier, dotted, perhaps renamed, perhaps several).
fn python_module_list(rest: &str) -> bool {
    let rest = rest.trim_end_matches(';').trim();
    !rest.is_empty()
        && rest.split(',').all(|item| {
            let mut words = item.split_whitespace();
            let module = words.next().unwrap_or("");
            let dotted = !module.is_empty()
                && module.split('.').all(|part| {
                    part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                        && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            let renamed = match (words.next(), words.next(), words.next()) {
                (None, _, _) => true,
                (Some("as"), Some(alias), None) => {
                    alias.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                }
                _ => false,
            };
            dotted && renamed
        })
}

/// Endings of the names that import lists bring in as types: a parameter,
/// options or schema type, a block or part of a message. JavaScript imports
/// classes and functions (`HumanMessage`, `createAgent`), which these
/// endings leave out.
const TYPE_NAME_ENDINGS: &[&str] = &[
    "Param",
    "Params",
    "Props",
    "Options",
    "Opts",
    "Config",
    "Configuration",
    "Type",
    "Types",
    "Schema",
    "Block",
    "Part",
    "Interface",
    "Spec",
    "Input",
    "Output",
    "Args",
    "Arguments",
    "Context",
    "Event",
    "Definition",
    "Def",
    "Metadata",
    "Payload",
    "Handler",
    "Callback",
    "Like",
    "Info",
    "Result",
    "Response",
    "Request",
    "Item",
    "Data",
    "Settings",
];

/// How many names of the paste's `import { ... }` lists (one line or
/// several, the last one perhaps cut off) are type-like: a capital first
/// letter and one of [`TYPE_NAME_ENDINGS`] after at least one more hump.
fn type_like_imports(source: &str) -> usize {
    let mut count = 0;
    let mut rest = source;
    while let Some(at) = rest.find("import") {
        // (`/** @import { ToolLoopOptions } from './types.js' */` is JSDoc's
        // import of types into JavaScript.)
        if rest[..at].ends_with('@') {
            rest = &rest[at + "import".len()..];
            continue;
        }
        let after = rest[at + "import".len()..].trim_start();
        let after = after.strip_prefix("type ").unwrap_or(after).trim_start();
        let Some(list) = after.strip_prefix('{') else {
            rest = &rest[at + "import".len()..];
            continue;
        };
        let end = list.find('}').unwrap_or(list.len());
        for name in list[..end].split(',') {
            let name = name.trim();
            let name = name.strip_prefix("type ").unwrap_or(name).split_whitespace().next().unwrap_or("");
            let typed = name.starts_with(|c: char| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric())
                && TYPE_NAME_ENDINGS
                    .iter()
                    .any(|ending| name.strip_suffix(ending).is_some_and(|stem| stem.len() >= 2));
            count += usize::from(typed);
        }
        rest = &list[end..];
    }
    count
}

/// Whether an import line names a relative module with no file extension
/// (`import { x } from "./x"`, `} from '../y/z';`); `require` is left out.
fn imports_relative_module_without_extension(line: &str) -> bool {
    let line = line.trim();
    if !(line.starts_with("import ") || line.starts_with("} from ") || line.starts_with("export ")) {
        return false;
    }
    let Some(at) = line.rfind(" from ") else { return false };
    let target = line[at + " from ".len()..].trim().trim_end_matches(';');
    let Some(path) = target.strip_prefix(['"', '\'']).and_then(|t| t.strip_suffix(['"', '\''])) else {
        return false;
    };
    // `@/ai/prompts`, `~/lib/db`: a path alias of `tsconfig.json`, which
    // Node does not resolve either.
    if path.starts_with("@/") || path.starts_with("~/") {
        return true;
    }
    // (`../tasks/tasks.service` has a dot but no file extension.)
    const EXTENSIONS: &[&str] = &[
        "js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts", "json", "css", "scss", "sass", "less", "svg",
        "png", "jpg", "jpeg", "gif", "webp", "wasm", "node", "html", "md", "txt", "vue", "svelte",
    ];
    (path.starts_with("./") || path.starts_with("../"))
        && path.rsplit('/').next().is_some_and(|last| {
            !last.is_empty()
                && last.rsplit_once('.').is_none_or(|(_, extension)| !EXTENSIONS.contains(&extension))
        })
}

/// Whether an import line names a module of types (`} from
/// "@jaypie/types";`, `import { Task } from './task.types.js'`, `from
/// "../types"`). Not `@types/...`, whose declarations JavaScript can use.
fn imports_a_types_module(line: &str) -> bool {
    let line = line.trim();
    // (`import * as types from './types'` is a Redux module of action
    // names, JavaScript's as much as anyone's.)
    if !(line.starts_with("import ") || line.starts_with("} from ") || line.starts_with("export "))
        || line.contains("* as ")
    {
        return false;
    }
    let Some(at) = line.rfind(" from ") else { return false };
    let target = line[at + " from ".len()..].trim().trim_end_matches(';');
    let Some(path) = target.strip_prefix(['"', '\'']).and_then(|t| t.strip_suffix(['"', '\''])) else {
        return false;
    };
    if path.starts_with("@types/") {
        return false;
    }
    let last = path.rsplit('/').next().unwrap_or(path);
    let stem = ["js", "ts", "mjs", "mts"]
        .iter()
        .find_map(|extension| last.strip_suffix(extension).and_then(|s| s.strip_suffix('.')))
        .unwrap_or(last);
    let stem = stem.strip_suffix(".d").unwrap_or(stem);
    stem == "types" || stem == "type" || [".types", "-types", "_types"].iter().any(|end| stem.ends_with(end))
}

/// A name in a multi-line import list marked as a type (`type Message,`):
/// TypeScript only.
fn is_type_import_name(line: &str) -> bool {
    line.strip_prefix("type ").and_then(|rest| rest.strip_suffix(',')).is_some_and(|name| {
        !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: Option<&str>, source: &str, expected: Option<Language>) {
        assert_eq!(detect_language(path, source), expected, "path {path:?}, source {source:?}");
    }

    #[test]
    fn types_in_jsdoc_are_javascripts() {
        // JSDoc's `@import` of type names is no TypeScript import, and its
        // `@typedef` is JavaScript's way to declare a type.
        let head = "/**\n * A tool-calling loop.\n */\n/** @import { ToolLoopOptions, ToolLoopResult, ChatCompletionResponse } from '../types.js' */\n/**\n * @typedef {Error & { isUserAbort?: boolean }} AbortableError\n */\n\nconst DEFAULT_MAX_ITERATIONS = 10;\nconst DEFAULT_TEMPERATURE = 0;\n";
        check(None, head, Some(Language::JavaScript));
        // The same names imported in code are TypeScript's.
        let imported = "import { ToolLoopOptions, ToolLoopResult, ChatCompletionResponse } from '../types.js';\n\nconst DEFAULT_MAX_ITERATIONS = 10;\nconst DEFAULT_TEMPERATURE = 0;\n";
        check(None, imported, Some(Language::TypeScript));
    }

    #[test]
    fn the_head_of_a_script_says_what_it_is() {
        // Python's plain imports and a few assignments.
        check(
            None,
            "import asyncio\nimport os.path\nimport numpy as np, json\n\n# Put the package on the path\ncurrent_dir = os.path.dirname(os.path.abspath(__file__))\nparent_dir = os.path.dirname(current_dir)\n",
            Some(Language::Python),
        );
        // A shell script's settings and a function at the margin.
        check(
            None,
            "NAME=\"llm-council\"\nVERSION=\"2.19\"\nTIMEOUT=20   # seconds\nrun_with_timeout() {\n  debug \"start\"\n  (\n    ollama run \"${model}\" -- \"${prompt}\" 2>/dev/null\n",
            Some(Language::Bash),
        );
        // Cut inside an `if`: a large error, yet many lines only the shell writes.
        check(
            None,
            "process_errors() {\n  if echo \"$response\" | jq -e '.error' >/dev/null; then\n    echo \"$response\" | jq -r '.error'\n    return 1\n  fi\n  return 0\n}\nprocess_tool_call() {\n  if echo \"$response\" | jq -e '.message.tool_calls' >/dev/null; then\n    local content=$(echo \"$response\" | jq -r '.message.content')\n    if [ -n \"$content\" ]; then\n      echo \"$content\"\n    fi\n    local calls=$(echo \"$response\" | jq -r '.message.tool_calls[]')\n",
            Some(Language::Bash),
        );
        // Cut four constructs deep (a function, an `if`, a `for`, a group):
        // the keywords left open are closed in the shell's words.
        check(
            None,
            "check_outputs() {\n  local n=\"$1\"\n  local path full\n  if ((${#WANTED[@]} > 0)); then\n    for path in \"${WANTED[@]}\"; do\n    if [[ \"$path\" == /* ]]; then\n      full=\"$path\"\n    else\n      full=\"$ROOT/$path\"\n    fi\n    if [[ ! -e \"$full\" ]]; then\n      log \"missing output of step $n: $path\"\n      {\n        echo \"\"\n        echo \"-- missing: $path --\"\n",
            Some(Language::Bash),
        );
        // JavaScript's imports name a string; a class's method is indented.
        check(None, "import fs from 'node:fs'\nimport { run } from './run.js'\n", Some(Language::JavaScript));
        check(
            None,
            "class Agent {\n  step() {\n    return this.model.call(this.messages);\n  }\n}\n",
            Some(Language::JavaScript),
        );
    }

    #[test]
    fn a_cut_shell_script_is_closed_in_its_own_words() {
        let cut = "main(){\n  for f in *.md; do\n    echo 'run if needed'\n    if [ -s \"$f\" ]; then\n      n=$(ls | while read x; do echo \"$x\"; done)\n";
        assert_eq!(
            close_shell_cut(cut).as_deref(),
            Some(format!("{}\nfi\ndone\n}}\n", cut.trim_end()).as_str())
        );
        assert_eq!(close_shell_cut("if true; then\n  echo \"if\"\nfi\n"), None);
    }

    #[test]
    fn detects_by_extension_shebang_and_content() {
        check(Some("agent.py"), "", Some(Language::Python));
        check(Some("dir/loop.TSX"), "", Some(Language::Tsx));
        check(Some("run.mjs"), "", Some(Language::JavaScript));
        check(None, "#!/usr/bin/env bash\nwhile true; do :; done\n", Some(Language::Bash));
        // A TypeScript runner's shebang, though `node` is in its name.
        check(
            None,
            "#!/usr/bin/env -S npx tsx\nimport { run } from './run.js'\n",
            Some(Language::TypeScript),
        );
        check(None, "#!/usr/bin/env ts-node\nconst x = 1\n", Some(Language::TypeScript));
        check(None, "#!/usr/bin/env ts-node-script\nconst x = 1\n", Some(Language::TypeScript));
        check(None, "#!/usr/bin/env -S node --no-warnings\nconst x = 1\n", Some(Language::JavaScript));
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
        // Issue 17: a Python loop with a trailing comment and no `def`.
        check(None, "for turn in range(40):  # note\n    step()\n", Some(Language::Python));
        // Cut pastes: the first lines of a function, a string left open.
        check(
            None,
            "def run(messages: list, max_turns: int,\n        tools: dict):\n    \"\"\"Runs the agent.\n\n    Args:\n",
            Some(Language::Python),
        );
        check(
            None,
            "package agent\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor {\n\t\tresp, err := a.step(ctx)\n",
            Some(Language::Go),
        );
        check(
            None,
            "async fn run(&mut self) -> Result<()> {\n    let mut turns = 0;\n    loop {\n        turns += 1;\n",
            Some(Language::Rust),
        );
        // Prose, and a bare assignment any language could write.
        check(None, "the agent keeps going until it is told to stop\n", None);
        check(None, "x = 1\n", None);
    }

    #[test]
    fn types_make_typescript_and_their_absence_javascript() {
        check(
            None,
            "async function run(agent) {\n  while (true) {\n    await agent.step();\n  }\n}\n",
            Some(Language::JavaScript),
        );
        check(
            None,
            "async function run(agent: Agent): Promise<void> {\n  while (true) {\n    await agent.step();\n  }\n}\n",
            Some(Language::TypeScript),
        );
    }

    #[test]
    fn a_module_of_types_imported_is_typescript() {
        let head = "import {\n  BadGatewayError,\n  TooManyRequestsError,\n} from \"@jaypie/errors\";\nimport { JsonObject } from \"@jaypie/types\";\n\nimport { Toolkit } from \"../tools/Toolkit.class.js\";\n";
        check(None, head, Some(Language::TypeScript));
        check(
            None,
            "import { Task } from './task.types.js';\nimport fs from 'node:fs';\n",
            Some(Language::TypeScript),
        );
        // A Redux module of action names imported whole is JavaScript's.
        check(
            None,
            "import * as types from './types.js';\nimport { createStore } from 'redux';\n",
            Some(Language::JavaScript),
        );
        // The same head without the module of types is JavaScript's.
        let plain = "import {\n  BadGatewayError,\n  TooManyRequestsError,\n} from \"@jaypie/errors\";\n\nimport { Toolkit } from \"../tools/Toolkit.class.js\";\n";
        check(None, plain, Some(Language::JavaScript));
    }

    /// The first lines of a file, cut wherever fifteen lines end: inside a
    /// doc comment, an import list, a signature, a struct.
    #[test]
    fn pastes_cut_mid_construct() {
        let ts = Some(Language::TypeScript);
        check(
            None,
            "import { step } from \"./agent\";\nimport type { Plan } from \"./plan\";\n\n/**\n * Runs the agent until its plan is done.\n *\n * @param {Plan} plan - the plan, see `docs/plan.md` for what's in it\n",
            ts,
        );
        check(None, "import {\n  Agent,\n  type Message,\n  type ToolCall,\n  runTools,\n", ts);
        check(
            None,
            "import {\n  Agent,\n  Message,\n  runTools,\n  summarise,\n",
            Some(Language::JavaScript),
        );
        check(
            None,
            "\"use strict\";\n\n/**\n * The agent loop behind the command line.\n */\n",
            Some(Language::JavaScript),
        );
        check(
            None,
            "@tool\ndef drive(\n    *,\n    model: str | None = None,\n    max_turns: int = 8,\n    tools: list[Tool] | None = None,\n",
            Some(Language::Python),
        );
        check(
            None,
            "pub struct Runner {\n    inbox: Arc<Mutex<Receiver<Message>>>,\n    model: String,\n    max_turns: usize,\n    running: Arc<Mutex<bool>>,\n",
            Some(Language::Rust),
        );
        // A file of comments alone says nothing: no guess.
        check(None, "// The release helper.\n//\n// Reads the log, then drafts the notes.\n", None);
    }

    #[test]
    fn relative_imports_without_an_extension_are_typescript() {
        // Node's loader wants `./agent.js`; `./agent` is the TypeScript
        // compiler's (or a bundler's) to resolve.
        check(
            None,
            "import { command } from 'cleye';\nimport { getConfig } from '../helpers/config';\nimport { runAgent } from './agent';\n\nexport default command({ name: 'chat' }, async () => {\n",
            Some(Language::TypeScript),
        );
        check(
            None,
            "import { command } from 'cleye';\nimport { getConfig } from '../helpers/config.js';\nimport { runAgent } from './agent.js';\n\nexport default command({ name: 'chat' }, async () => {\n",
            Some(Language::JavaScript),
        );
        // A path alias, and a module named with a dot but no extension.
        check(
            None,
            "import { Injectable } from '@nestjs/common';\nimport { TasksService } from '../tasks/tasks.service';\n",
            Some(Language::TypeScript),
        );
        check(
            None,
            "import { SYSTEM_PROMPT } from \"@/ai/prompts\";\nimport { generateText } from \"ai\";\n",
            Some(Language::TypeScript),
        );
        // A compiler directive, then comments alone.
        check(
            None,
            "/// <reference types=\"node\" />\n// The release notes agent.\n//\n// Reads the log.\n",
            Some(Language::TypeScript),
        );
        // `./styles.css` has its extension; a package name is not relative.
        check(
            None,
            "import './styles.css';\nimport { marked } from 'marked';\nimport { step } from 'agent/step';\n\nexport async function run() {\n",
            Some(Language::JavaScript),
        );
    }

    #[test]
    fn import_lists_of_types_are_typescript_and_of_classes_are_not() {
        // Only imports, with no line below them: the type-like names decide.
        check(
            None,
            "import { Anthropic } from \"@anthropic-ai/sdk\";\nimport {\n  ContentBlockParam,\n  MessageParam,\n  Tool,\n  ToolResultBlockParam,\n} from \"@anthropic-ai/sdk/resources/messages\";\nimport readline from \"readline/promises\";\n",
            Some(Language::TypeScript),
        );
        check(
            None,
            "import { AgentOptions, RunResult } from './types';\nimport { callModel } from './model';\n",
            Some(Language::TypeScript),
        );
        // Message classes and functions are what JavaScript imports.
        check(
            None,
            "import { ChatOpenAI } from \"@langchain/openai\";\nimport { HumanMessage, SystemMessage, ToolMessage } from \"@langchain/core/messages\";\nimport { tool } from \"@langchain/core/tools\";\n",
            Some(Language::JavaScript),
        );
        // One such name is not enough (from a module Node itself can load).
        check(
            None,
            "import { runAgent, AgentConfig } from './agent.js';\nimport fs from 'fs';\n",
            Some(Language::JavaScript),
        );
        assert_eq!(type_like_imports("import { Param, XParam, ToolParam, ToolUseBlock } from 'x'"), 2);
    }

    /// The grammars of one module of the audit page, as a mask over
    /// [`Language::ALL`].
    const FAMILIES: [&[Language]; 5] = [
        &[Language::Python],
        &[Language::JavaScript, Language::TypeScript, Language::Tsx],
        &[Language::Bash],
        &[Language::Go],
        &[Language::Rust],
    ];

    /// `errors` with only the grammars of the families in `mask` (a bit per
    /// family of [`FAMILIES`]).
    fn with_families(errors: &[Option<f64>; 7], mask: u32) -> [Option<f64>; 7] {
        let mut kept = [None; 7];
        for (bit, family) in FAMILIES.iter().enumerate() {
            if mask & (1 << bit) != 0 {
                for language in *family {
                    kept[index_of(*language)] = errors[index_of(*language)];
                }
            }
        }
        kept
    }

    fn every_source() -> Vec<(String, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
        let mut sources = Vec::new();
        for dir in ["loops", "holdout"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("the hand-written sets") {
                let path = entry.expect("an entry").path();
                let text = std::fs::read_to_string(&path).expect("a source");
                sources.push((path.display().to_string(), text));
            }
        }
        sources
    }

    /// A long script whose detection sample would end inside a string that
    /// spans lines (its lines at the margin read as the start of items):
    /// the start reads as no language, and the longer start tells.
    #[test]
    fn a_sample_cut_inside_a_long_string_reads_a_longer_start() {
        let mut script = String::from(
            "#!/usr/bin/env bash\nset -euo pipefail\n\nrun_plan() {\n  local round=0\n  while true; do\n",
        );
        let mut n = 0;
        while script.len() < SAMPLE_BYTES + 4_000 {
            script.push_str(&format!(
                "    if [[ -n \"${{PLAN_KEY_{n}:-}}\" ]]; then\n      block_{n}=\"Namespace: PLAN_KEY_{n}=${{PLAN_KEY_{n}:-}}\nUse the namespace-aware paths when writing hand-off files.\"\n    fi\n"
            ));
            n += 1;
        }
        script.push_str("    round=$((round + 1))\n  done\n}\n");
        // (No shebang: what the content says alone.)
        let body = script.split_once('\n').map_or("", |(_, rest)| rest);
        assert_eq!(decide_from_start(&Language::ALL, body, SAMPLE_BYTES), Detection::Decided(None));
        assert_eq!(detect_language(None, body), Some(Language::Bash));
        // A build lacking grammars says the same or that it cannot tell.
        for mask in 0..(1u32 << FAMILIES.len()) {
            let grammars: Vec<Language> = Language::ALL
                .into_iter()
                .filter(|language| {
                    FAMILIES
                        .iter()
                        .enumerate()
                        .any(|(bit, family)| mask & (1 << bit) != 0 && family.contains(language))
                })
                .collect();
            let partial = detect_language_with(&grammars, None, body);
            assert!(
                partial == Detection::Decided(Some(Language::Bash))
                    || partial == Detection::NeedsOtherGrammars,
                "with families {mask:05b}: {partial:?}"
            );
        }
    }

    /// A module that lacks some grammars answers only what every grammar
    /// together answers, whichever grammars it lacks; and the module of a
    /// paste's own language mostly tells it alone.
    #[test]
    fn grammars_at_hand_decide_only_what_all_would() {
        let sources = every_source();
        assert!(sources.len() >= 50, "the hand-written sets: {}", sources.len());
        let mut alone = 0;
        for (name, source) in &sources {
            let Some((errors, hints)) = readings_at_hand(source, SAMPLE_BYTES) else { continue };
            let full = decide(&errors, &hints);
            let Detection::Decided(answer) = full else { panic!("{name}: every grammar always decides") };
            for mask in 0..(1u32 << FAMILIES.len()) {
                let partial = decide(&with_families(&errors, mask), &hints);
                assert!(
                    partial == full || partial == Detection::NeedsOtherGrammars,
                    "{name}: with families {mask:05b} {partial:?}, with all {full:?}"
                );
            }
            if let Some(language) = answer {
                let own = FAMILIES.iter().position(|family| family.contains(&language)).expect("a family");
                alone += u32::from(decide(&with_families(&errors, 1 << own), &hints) == full);
            }
        }
        // Most hand-written loops carry a line only their language writes.
        assert!(
            alone as usize * 10 >= sources.len() * 8,
            "{alone} of {} decided by their own family",
            sources.len()
        );
    }

    #[test]
    fn the_likely_language_is_a_hint_not_a_verdict() {
        assert_eq!(likely_language(Some("a.rs"), "def f(): pass"), Some(Language::Rust));
        assert_eq!(likely_language(None, "#!/bin/bash\nls\n"), Some(Language::Bash));
        assert_eq!(likely_language(None, "def run():\n    pass\n"), Some(Language::Python));
        assert_eq!(
            likely_language(None, "import { A, B } from './x';\nconst x: A = 1;\n"),
            Some(Language::TypeScript)
        );
        assert_eq!(likely_language(None, "x = 1\n"), None);
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
