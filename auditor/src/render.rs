//! Renderers at the edge: the text format of the first auditor (kept so that
//! scripts written for it keep working), SARIF 2.1.0 for code scanning, and
//! Markdown for pasting a report into a review or an issue.

use serde_json::{json, Value};

use crate::report::{FileReport, Report};
use crate::{ExitId, ExitKind, Verdict};

/// The text report: per file, a line per exit, evidence beneath found exits,
/// warnings, the two counts and the verdict.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    for file in &report.files {
        render_file(file, &mut out);
    }
    if report.files.len() > 1 {
        out.push_str(&format!("OVERALL VERDICT: {}\n", report.verdict.as_str()));
    }
    out
}

fn render_file(file: &FileReport, out: &mut String) {
    let path = file.path.as_deref().unwrap_or("<stdin>");
    let language = file.language.as_deref().unwrap_or("unknown");
    out.push_str(&format!("{path} ({language})\n"));
    for found in &file.loops {
        out.push_str(&format!(
            "  loop L{}-{} {}: {}\n",
            found.start_line, found.end_line, found.kind, found.code
        ));
    }
    for exit in &file.exits {
        let kind = exit.kind.as_str();
        let yes = if exit.found { "yes" } else { "no " };
        out.push_str(&format!("  {}  {}  {:<16} [{}]\n", exit.id.as_str(), yes, exit.label, kind));
        for evidence in &exit.evidence {
            for (offset, line) in evidence.code.lines().enumerate() {
                out.push_str(&format!("      L{}: {}\n", evidence.start_line + offset, line));
            }
        }
    }
    for warning in &file.warnings {
        match warning.start_line {
            Some(line) => {
                out.push_str(&format!("  warning[{}] L{}: {}\n", warning.code, line, warning.message))
            }
            None => out.push_str(&format!("  warning[{}]: {}\n", warning.code, warning.message)),
        }
    }
    for fix in &file.fixes {
        out.push_str(&format!("  fix[{}] L{}: {}\n", fix.exit.as_str(), fix.line, fix.title));
        for line in fix.diff.lines() {
            out.push_str(&format!("      {line}\n"));
        }
    }
    let count = |kind: ExitKind| file.exits.iter().filter(|e| e.found && e.kind == kind).count();
    out.push_str(&format!(
        "DETECT exits: {}  BOUND exits: {}\n",
        count(ExitKind::Detect),
        count(ExitKind::Bound)
    ));
    out.push_str(&format!("VERDICT: {}\n", file.verdict.as_str()));
}

/// The report as Markdown: per file, the verdict and why, a table of the
/// eight exits with their evidence lines, the loops found and the warnings.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    for (index, file) in report.files.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        markdown_file(file, &mut out);
    }
    out
}

fn markdown_file(file: &FileReport, out: &mut String) {
    let path = file.path.as_deref().unwrap_or("pasted source");
    let language = file.language.as_deref().unwrap_or("unknown language");
    out.push_str(&format!(
        "### Loop exit audit of {} ({language}): **{}**\n\n",
        inline_code(path),
        file.verdict.as_str()
    ));
    out.push_str(&format!("{}\n\n", crate::explain_verdict(file)));
    out.push_str("| exit | found | kind | evidence |\n| --- | --- | --- | --- |\n");
    for exit in &file.exits {
        let evidence: Vec<String> = exit
            .evidence
            .iter()
            .map(|evidence| {
                let first = evidence.code.lines().next().unwrap_or("");
                format!("{} {}", line_range(evidence.start_line, evidence.end_line), inline_code(first))
            })
            .collect();
        out.push_str(&format!(
            "| {} {} | {} | {} | {} |\n",
            exit.id.as_str(),
            exit.label,
            if exit.found { "yes" } else { "no" },
            exit.kind.as_str(),
            evidence.join("<br>").replace('|', "\\|")
        ));
    }
    if !file.loops.is_empty() {
        out.push_str("\nLoops found:\n\n");
        for found in &file.loops {
            out.push_str(&format!(
                "- {} `{}`: {}\n",
                line_range(found.start_line, found.end_line),
                found.kind,
                inline_code(&found.code)
            ));
        }
    }
    if !file.warnings.is_empty() {
        out.push_str("\nWarnings:\n\n");
        for warning in &file.warnings {
            let at = warning.start_line.map(|line| format!(" (L{line})")).unwrap_or_default();
            out.push_str(&format!("- `{}`{at}: {}\n", warning.code, warning.message));
        }
    }
    for fix in &file.fixes {
        let longest = fix.diff.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat((longest + 1).max(3));
        out.push_str(&format!(
            "\nSuggested fix ({}, L{}): {}\n\n{fence}diff\n{}{fence}\n",
            fix.exit.as_str(),
            fix.line,
            fix.title,
            fix.diff
        ));
    }
}

fn line_range(start: usize, end: usize) -> String {
    if start == end {
        format!("L{start}")
    } else {
        format!("L{start}-{end}")
    }
}

/// Code as a Markdown code span that survives backticks inside it.
fn inline_code(code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if code.starts_with('`') || code.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{code}{pad}{fence}")
}

/// A SARIF 2.1.0 log: one rule per exit and per warning code; a `note` per
/// piece of evidence, a `warning` per warning, and an `error` result for files
/// whose verdict is DIVERGES or UNDEFINED.
pub fn render_sarif(report: &Report) -> Value {
    let mut rules: Vec<Value> = ExitId::ALL
        .iter()
        .map(|id| {
            json!({
                "id": id.as_str(),
                "name": id.label().replace(' ', "-"),
                "shortDescription": { "text": id.label() },
                "fullDescription": { "text": id.description() },
                "properties": { "kind": format!("{:?}", id.kind()).to_uppercase() },
            })
        })
        .collect();
    let mut warning_codes: Vec<&str> =
        report.files.iter().flat_map(|f| f.warnings.iter().map(|w| w.code.as_str())).collect();
    warning_codes.push("verdict");
    warning_codes.sort();
    warning_codes.dedup();
    for code in &warning_codes {
        rules.push(
            json!({ "id": code, "name": code, "shortDescription": { "text": code.replace('-', " ") } }),
        );
    }
    let mut results = Vec::new();
    for file in &report.files {
        let uri = file.path.as_deref().map_or_else(|| "stdin".to_string(), uri_reference);
        let uri = uri.as_str();
        for exit in file.exits.iter().filter(|e| e.found) {
            for evidence in &exit.evidence {
                results.push(result(
                    exit.id.as_str(),
                    "note",
                    &format!("{} exit ({}): {}", exit.label, exit.id.as_str(), first_line(&evidence.code)),
                    uri,
                    evidence.start_line,
                    evidence.end_line,
                ));
            }
        }
        for warning in &file.warnings {
            let line = warning.start_line.unwrap_or(1);
            // What the verdict leaves unsaid is advice about the design,
            // not a defect in the code: a note.
            let level = if matches!(warning.code.as_str(), "no-backstop" | "no-completion-check") {
                "note"
            } else {
                "warning"
            };
            let mut entry =
                result(&warning.code, level, &warning.message, uri, line, warning.end_line.unwrap_or(line));
            // The suggested change for what the note says is missing.
            let wanted = match warning.code.as_str() {
                "no-backstop" => Some(ExitKind::Bound),
                "no-completion-check" => Some(ExitKind::Detect),
                _ => None,
            };
            let fixes: Vec<Value> = file
                .fixes
                .iter()
                .filter(|fix| Some(fix.exit.kind()) == wanted)
                .map(|fix| sarif_fix(fix, uri))
                .collect();
            if !fixes.is_empty() {
                entry["fixes"] = Value::Array(fixes);
            }
            results.push(entry);
        }
        if file.verdict != Verdict::Converges {
            let message = match file.verdict {
                Verdict::Diverges => "DIVERGES: the loop can stop but cannot tell that it has finished",
                _ => "UNDEFINED: nothing in the code ends the loop on its own",
            };
            let line = file.loops.first().map_or(1, |l| l.start_line);
            results.push(result("verdict", "error", message, uri, line, line));
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "fixedpoint-auditor",
                "informationUri": "https://fixedpoint.dev/audit",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            } },
            "results": results,
        }],
    })
}

/// A file name as a URI reference, as SARIF's `artifactLocation.uri` must
/// be: every byte but the unreserved characters and `/` percent-encoded (a
/// space, `#`, `%`, `:` or a letter outside ASCII would otherwise make the
/// log invalid), Windows separators turned into `/`.
pub fn uri_reference(path: &str) -> String {
    let mut uri = String::with_capacity(path.len());
    for byte in path.replace('\\', "/").bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

fn first_line(code: &str) -> &str {
    code.lines().next().unwrap_or("")
}

/// A SARIF `fix`: each insertion as a replacement of an empty region at
/// the start of the line it goes before; a line rewritten as the
/// replacement of that whole line (its byte range rides along).
fn sarif_fix(fix: &crate::report::Fix, uri: &str) -> Value {
    let replacements: Vec<Value> = fix
        .edits
        .iter()
        .map(|edit| {
            let deleted = if edit.start_byte == edit.end_byte {
                json!({ "startLine": edit.line, "startColumn": 1, "endLine": edit.line, "endColumn": 1 })
            } else {
                json!({
                    "startLine": edit.line, "startColumn": 1, "endLine": edit.line + 1, "endColumn": 1,
                    "byteOffset": edit.start_byte, "byteLength": edit.end_byte - edit.start_byte,
                })
            };
            json!({ "deletedRegion": deleted, "insertedContent": { "text": edit.text } })
        })
        .collect();
    json!({
        "description": { "text": fix.title },
        "artifactChanges": [{ "artifactLocation": { "uri": uri }, "replacements": replacements }],
    })
}

fn result(rule: &str, level: &str, message: &str, uri: &str, start: usize, end: usize) -> Value {
    json!({
        "ruleId": rule,
        "level": level,
        "message": { "text": message },
        "locations": [{ "physicalLocation": {
            "artifactLocation": { "uri": uri },
            "region": { "startLine": start.max(1), "endLine": end.max(start).max(1) },
        } }],
    })
}
