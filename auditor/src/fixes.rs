//! Suggested changes for what a verdict says is missing.
//!
//! A loop that can tell it is done but has nothing that bounds it gets a
//! turn cap; a loop that only runs out gets a no-progress check on a value
//! it already computes each pass (the first thing its body assigns). Each
//! suggestion is written in the loop's language and placed where a reader
//! would put it: the cap's names just before the loop's header and its check
//! as the body's first statement, the progress check right after the
//! assignment it watches. Every edit is an insertion of whole lines, so the
//! suggestion applies to the source as pasted and reads as a small diff.
//!
//! What is suggested is checked against the auditor itself (the eval example
//! and `tests/fixes.rs` apply every suggestion and audit again): a fix that
//! the rules would not read as the exit it promises is a bug here.

use tree_sitter::{Node, Tree};

use crate::engine::Lines;
use crate::facts::{LoopFact, LoopKind};
use crate::report::{Edit, Fix};
use crate::{ExitId, Language};

/// How many turns the suggested cap allows: a round number a reader will
/// change, large enough not to cut a healthy run short.
const TURN_CAP: u32 = 25;

/// What the verdict lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// No BOUND exit: suggest a turn cap (E2).
    Bound,
    /// No DETECT exit: suggest a no-progress check (E5).
    Detect,
}

/// The suggestion for `missing` on `fact`, if the loop's shape allows one
/// (a body of its own lines; for a progress check, a value it assigns).
pub(crate) fn suggest(
    tree: &Tree,
    source: &str,
    language: Language,
    fact: &LoopFact,
    missing: Missing,
    lines: &Lines<'_>,
) -> Option<Fix> {
    if !matches!(fact.kind, LoopKind::While | LoopKind::Until | LoopKind::For | LoopKind::Loop) {
        return None;
    }
    let node = loop_node(tree, fact)?;
    let body = node.child_by_field_name("body")?;
    let statements = body_statements(body);
    let first = *statements.first()?;
    let header_line = node.start_position().row;
    // The body must start on a line of its own: the edits are whole lines.
    if first.start_position().row <= header_line || !starts_its_line(source, first.start_byte()) {
        return None;
    }
    let outer = indentation_of_line(source, line_start(source, node.start_byte()));
    let inner = indentation_of_line(source, line_start(source, first.start_byte()));
    let style = Style::of(language);
    let (exit, title, edits) = match missing {
        Missing::Bound => {
            let counter = fresh_name(source, &style.names(&["turns", "agent_turns", "loop_turns"]));
            let cap = fresh_name(source, &style.names(&["max_turns", "max_agent_turns", "max_loop_turns"]));
            let before = style.cap_declarations(&cap, &counter, outer);
            let check = style.cap_check(&cap, &counter, inner, &style.unit(inner, outer));
            (
                ExitId::E2,
                format!("Cap the turns: stop after {TURN_CAP} even if the loop never decides it is done"),
                vec![
                    insertion(source, line_start(source, node.start_byte()), before),
                    insertion(source, line_start(source, first.start_byte()), check),
                ],
            )
        }
        Missing::Detect
            if language == Language::Bash && first_assignment(body, source, language).is_none() =>
        {
            // A shell loop that keeps nothing in a variable still leaves the
            // repository it works on: a round that moved neither HEAD nor any
            // file changed nothing.
            let done = body.child(body.child_count().checked_sub(1)?).filter(|n| n.kind() == "done")?;
            if !starts_its_line(source, done.start_byte()) {
                return None;
            }
            let state = fresh_name(source, &style.names(&["repo_state"]));
            let previous = fresh_name(source, &style.names(&["previous_repo_state"]));
            let unit = style.unit(inner, outer);
            let check = format!(
                "{inner}{state}=$(git rev-parse HEAD 2>/dev/null; git status --porcelain 2>/dev/null)\n{inner}if [ \"${state}\" = \"${previous}\" ]; then\n{inner}{unit}break  # the last round changed no file\n{inner}fi\n{inner}{previous}=\"${state}\"\n"
            );
            (
                ExitId::E5,
                "Stop when a round changes nothing: compare the repository's state with the last round's"
                    .to_string(),
                vec![
                    insertion(
                        source,
                        line_start(source, node.start_byte()),
                        style.previous_declaration(&previous, outer),
                    ),
                    insertion(source, line_start(source, done.start_byte()), check),
                ],
            )
        }
        Missing::Detect => {
            let (statement, watched) = first_assignment(body, source, language)?;
            let previous = fresh_name(source, &style.names(&[&format!("previous_{watched}")]));
            let before = style.previous_declaration(&previous, outer);
            let at = indentation_of_line(source, line_start(source, statement.start_byte()));
            if !starts_its_line(source, statement.start_byte()) {
                return None;
            }
            let check = style.progress_check(&watched, &previous, at, &style.unit(inner, outer));
            let after = next_line_start(source, statement.end_byte());
            // (At the end of a source without a final newline the check
            // starts a line of its own.)
            let check =
                if after == source.len() && !source.ends_with('\n') { format!("\n{check}") } else { check };
            (
                ExitId::E5,
                format!("Stop when a round changes nothing: compare `{watched}` with the last round's"),
                vec![
                    insertion(source, line_start(source, node.start_byte()), before),
                    insertion(source, after, check),
                ],
            )
        }
    };
    let line = lines.line_of(node.start_byte());
    let diff = unified_diff(source, &edits);
    Some(Fix { exit, title, line, edits, diff })
}

/// The tree node of the loop `fact` describes.
fn loop_node<'t>(tree: &'t Tree, fact: &LoopFact) -> Option<Node<'t>> {
    let mut node = tree.root_node().descendant_for_byte_range(fact.range.start, fact.range.end)?;
    loop {
        if node.byte_range() == fact.range || node.child_by_field_name("body").is_some() {
            return node.child_by_field_name("body").is_some().then_some(node);
        }
        node = node.parent()?;
    }
}

/// The statements of a loop body, comments left out (through Go's
/// statement list). Empty when the body is a single statement, not a block.
fn body_statements(body: Node<'_>) -> Vec<Node<'_>> {
    if !matches!(body.kind(), "block" | "statement_block" | "do_group" | "compound_statement") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cursor = body.walk();
    for child in body.named_children(&mut cursor) {
        if child.kind() == "statement_list" {
            let mut inner = child.walk();
            out.extend(child.named_children(&mut inner).filter(|c| c.kind() != "comment"));
        } else if child.kind() != "comment" && child.kind() != "label" {
            out.push(child);
        }
    }
    out
}

/// The first statement of the loop's own passes that assigns a value from a
/// call to a plain variable: in the body, or in an `if`, `try` or `with`
/// inside it, never in a nested loop, function or `switch` (where a `break`
/// would leave something else).
fn first_assignment<'t>(body: Node<'t>, source: &str, language: Language) -> Option<(Node<'t>, String)> {
    const STATEMENT_HOLDERS: [&str; 9] = [
        "block",
        "statement_block",
        "do_group",
        "statement_list",
        "compound_statement",
        "if_statement",
        "elif_clause",
        "else_clause",
        "try_statement",
    ];
    let mut stack = vec![body];
    while let Some(node) = stack.pop() {
        let kind = node.kind();
        let nested = node.id() != body.id()
            && (node.child_by_field_name("body").is_some() && is_loop_or_function(kind)
                || kind.contains("switch")
                || kind.contains("select")
                || kind.contains("case")
                || kind.contains("match")
                || kind.contains("lambda")
                || kind.contains("closure")
                || kind.contains("arrow_function")
                || kind.contains("function"));
        if nested {
            continue;
        }
        if node.parent().is_some_and(|p| STATEMENT_HOLDERS.contains(&p.kind())) {
            if let Some(found) = assigned_name(node, source, language) {
                return Some(found);
            }
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}

fn is_loop_or_function(kind: &str) -> bool {
    kind.contains("for")
        || kind.contains("while")
        || kind.contains("loop")
        || kind.contains("function")
        || kind.contains("def")
}

/// The name a body statement assigns, when it is a plain variable: the value
/// a progress check can watch. The value must come from a call (the
/// model's reply, the agent's step), not a constant.
fn assigned_name<'t>(statement: Node<'t>, source: &str, language: Language) -> Option<(Node<'t>, String)> {
    let text = |node: Node<'_>| source.get(node.byte_range()).unwrap_or("").to_string();
    let identifier = |node: Option<Node<'_>>| {
        node.filter(|n| matches!(n.kind(), "identifier" | "variable_name")).map(text)
    };
    let has_call =
        |node: Node<'_>| contains_kind(node, &["call", "call_expression", "command_substitution", "await"]);
    let found = match language {
        Language::Python => {
            let assignment = statement.named_child(0).filter(|n| n.kind() == "assignment")?;
            let right = assignment.child_by_field_name("right")?;
            identifier(assignment.child_by_field_name("left")).filter(|_| has_call(right))
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => match statement.kind() {
            "lexical_declaration" | "variable_declaration" => {
                let declarator = statement.named_child(0).filter(|n| n.kind() == "variable_declarator")?;
                let value = declarator.child_by_field_name("value")?;
                identifier(declarator.child_by_field_name("name")).filter(|_| has_call(value))
            }
            "expression_statement" => {
                let assignment = statement.named_child(0).filter(|n| n.kind() == "assignment_expression")?;
                let right = assignment.child_by_field_name("right")?;
                identifier(assignment.child_by_field_name("left")).filter(|_| has_call(right))
            }
            _ => None,
        },
        Language::Go => {
            if !matches!(statement.kind(), "short_var_declaration" | "assignment_statement") {
                return None;
            }
            let right = statement.child_by_field_name("right")?;
            let left = statement.child_by_field_name("left")?;
            let mut cursor = left.walk();
            let name = left
                .named_children(&mut cursor)
                .filter(|n| n.kind() == "identifier")
                .map(text)
                .find(|name| name != "err" && name != "_");
            name.filter(|_| has_call(right))
        }
        Language::Rust => {
            if statement.kind() != "let_declaration" {
                return None;
            }
            let value = statement.child_by_field_name("value")?;
            identifier(statement.child_by_field_name("pattern")).filter(|_| has_call(value))
        }
        Language::Bash => {
            let assignment = if statement.kind() == "variable_assignment" {
                statement
            } else if statement.kind() == "declaration_command" {
                let mut cursor = statement.walk();
                let found = statement.named_children(&mut cursor).find(|n| n.kind() == "variable_assignment");
                found?
            } else {
                return None;
            };
            let value = assignment.child_by_field_name("value")?;
            identifier(assignment.child_by_field_name("name")).filter(|_| has_call(value))
        }
    };
    // What the reader typed is not the loop's progress, and a one-letter
    // name says too little to watch.
    let watchable = |name: &String| {
        let words = crate::words::canonical_words(name);
        name.chars().count() > 1
            && !words.iter().any(|w| {
                matches!(w.as_str(), "input" | "user" | "prompt" | "line" | "cmd" | "command" | "error")
            })
    };
    found.filter(watchable).map(|name| (statement, name))
}

fn contains_kind(node: Node<'_>, kinds: &[&str]) -> bool {
    if kinds.contains(&node.kind()) {
        return true;
    }
    let mut cursor = node.walk();
    let found = node.named_children(&mut cursor).any(|child| contains_kind(child, kinds));
    found
}

/// How each language writes the two suggestions.
struct Style {
    language: Language,
}

impl Style {
    fn of(language: Language) -> Style {
        Style { language }
    }

    fn camel(&self) -> bool {
        matches!(self.language, Language::JavaScript | Language::TypeScript | Language::Tsx | Language::Go)
    }

    /// Names in the language's case.
    fn names(&self, snake: &[&str]) -> Vec<String> {
        snake
            .iter()
            .map(|name| {
                if !self.camel() {
                    return name.to_string();
                }
                let mut out = String::new();
                let mut upper = false;
                for c in name.chars() {
                    if c == '_' {
                        upper = true;
                    } else if upper {
                        out.extend(c.to_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            })
            .collect()
    }

    /// One level of indentation, as the source writes it.
    fn unit(&self, inner: &str, outer: &str) -> String {
        let step = inner.strip_prefix(outer).unwrap_or("");
        if !step.is_empty() {
            step.to_string()
        } else if self.language == Language::Go {
            "\t".to_string()
        } else {
            "    ".to_string()
        }
    }

    fn cap_declarations(&self, cap: &str, counter: &str, at: &str) -> String {
        match self.language {
            Language::Python => format!("{at}{cap} = {TURN_CAP}\n{at}{counter} = 0\n"),
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                format!("{at}const {cap} = {TURN_CAP};\n{at}let {counter} = 0;\n")
            }
            Language::Go => format!("{at}const {cap} = {TURN_CAP}\n{at}{counter} := 0\n"),
            Language::Rust => format!("{at}let {cap} = {TURN_CAP};\n{at}let mut {counter} = 0;\n"),
            Language::Bash => format!("{at}{cap}={TURN_CAP}\n{at}{counter}=0\n"),
        }
    }

    fn cap_check(&self, cap: &str, counter: &str, at: &str, unit: &str) -> String {
        match self.language {
            Language::Python => {
                format!("{at}{counter} += 1\n{at}if {counter} > {cap}:\n{at}{unit}break\n")
            }
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                format!("{at}if (++{counter} > {cap}) break;\n")
            }
            Language::Go => format!("{at}{counter}++\n{at}if {counter} > {cap} {{\n{at}{unit}break\n{at}}}\n"),
            Language::Rust => {
                format!("{at}{counter} += 1;\n{at}if {counter} > {cap} {{\n{at}{unit}break;\n{at}}}\n")
            }
            Language::Bash => format!(
                "{at}{counter}=$(({counter} + 1))\n{at}if [ \"${counter}\" -gt \"${cap}\" ]; then\n{at}{unit}break\n{at}fi\n"
            ),
        }
    }

    fn previous_declaration(&self, previous: &str, at: &str) -> String {
        match self.language {
            Language::Python => format!("{at}{previous} = None\n"),
            Language::JavaScript => format!("{at}let {previous};\n"),
            Language::TypeScript | Language::Tsx => format!("{at}let {previous}: string | undefined;\n"),
            Language::Go => format!("{at}{previous} := \"\"\n"),
            Language::Rust => format!("{at}let mut {previous} = None;\n"),
            Language::Bash => format!("{at}{previous}=\"\"\n"),
        }
    }

    fn progress_check(&self, watched: &str, previous: &str, at: &str, unit: &str) -> String {
        match self.language {
            Language::Python => format!(
                "{at}if {watched} == {previous}:\n{at}{unit}break  # nothing changed since the last round\n{at}{previous} = {watched}\n"
            ),
            Language::JavaScript | Language::TypeScript | Language::Tsx => format!(
                "{at}if (JSON.stringify({watched}) === {previous}) break; // nothing changed since the last round\n{at}{previous} = JSON.stringify({watched});\n"
            ),
            Language::Go => format!(
                "{at}if fmt.Sprint({watched}) == {previous} {{\n{at}{unit}break // nothing changed since the last round\n{at}}}\n{at}{previous} = fmt.Sprint({watched})\n"
            ),
            Language::Rust => format!(
                "{at}if {previous}.as_ref() == Some(&{watched}) {{\n{at}{unit}break; // nothing changed since the last round\n{at}}}\n{at}{previous} = Some({watched}.clone());\n"
            ),
            Language::Bash => format!(
                "{at}if [ \"${watched}\" = \"${previous}\" ]; then\n{at}{unit}break  # nothing changed since the last round\n{at}fi\n{at}{previous}=\"${watched}\"\n"
            ),
        }
    }
}

/// The first candidate that the source does not use as a word.
fn fresh_name(source: &str, candidates: &[String]) -> String {
    let used = |name: &str| {
        source.match_indices(name).any(|(at, _)| {
            let before = source[..at].chars().next_back();
            let after = source[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    };
    for candidate in candidates {
        if !used(candidate) {
            return candidate.clone();
        }
    }
    let base = candidates.first().cloned().unwrap_or_else(|| "turns".into());
    (2..).map(|n| format!("{base}{n}")).find(|name| !used(name)).unwrap_or(base)
}

fn insertion(source: &str, at: usize, text: String) -> Edit {
    let line = source[..at].bytes().filter(|b| *b == b'\n').count() + 1;
    Edit { start_byte: at, end_byte: at, line, text }
}

fn line_start(source: &str, byte: usize) -> usize {
    source[..byte].rfind('\n').map_or(0, |i| i + 1)
}

fn next_line_start(source: &str, byte: usize) -> usize {
    source[byte..].find('\n').map_or(source.len(), |i| byte + i + 1)
}

fn starts_its_line(source: &str, byte: usize) -> bool {
    source[line_start(source, byte)..byte].chars().all(char::is_whitespace)
}

fn indentation_of_line(source: &str, start: usize) -> &str {
    let rest = &source[start..];
    let end = rest.find(|c: char| c != ' ' && c != '\t').unwrap_or(rest.len());
    &rest[..end]
}

/// The edits as a unified diff (`--- a` / `+++ b`, three lines of context),
/// the form readers copy into a patch or read in a review.
fn unified_diff(source: &str, edits: &[Edit]) -> String {
    const CONTEXT: usize = 3;
    let old: Vec<&str> = source.split_inclusive('\n').collect();
    // Each edit inserts whole lines before old line `line` (1-based).
    let mut inserted: Vec<(usize, Vec<String>)> = edits
        .iter()
        .map(|edit| (edit.line - 1, edit.text.split_inclusive('\n').map(str::to_string).collect()))
        .collect();
    inserted.sort_by_key(|(at, _)| *at);
    let mut out = String::from("--- a\n+++ b\n");
    let mut index = 0;
    let mut shift = 0usize;
    while index < inserted.len() {
        // Group the insertions whose contexts touch into one hunk.
        let first_at = inserted[index].0;
        let mut last = index;
        while last + 1 < inserted.len() && inserted[last + 1].0 <= inserted[last].0 + 2 * CONTEXT {
            last += 1;
        }
        let start = first_at.saturating_sub(CONTEXT);
        let end = (inserted[last].0 + CONTEXT).min(old.len());
        let added: usize = inserted[index..=last].iter().map(|(_, lines)| lines.len()).sum();
        let old_count = end - start;
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            if old_count == 0 { start } else { start + 1 },
            old_count,
            start + 1 + shift,
            old_count + added
        ));
        let mut next = index;
        for (line_index, line) in old.iter().enumerate().take(end).skip(start) {
            while next <= last && inserted[next].0 == line_index {
                for added_line in &inserted[next].1 {
                    push_line(&mut out, '+', added_line);
                }
                next += 1;
            }
            push_line(&mut out, ' ', line);
        }
        while next <= last {
            for added_line in &inserted[next].1 {
                push_line(&mut out, '+', added_line);
            }
            next += 1;
        }
        shift += added;
        index = last + 1;
    }
    out
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}
