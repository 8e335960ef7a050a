//! The auditor never fails on input: pathological nesting, huge files and
//! token soup all produce a report in bounded time, without a stack overflow.

use std::time::{Duration, Instant};

use auditor::{audit, Language, Verdict};

/// Generous for an unoptimised test build on a busy two-core machine; the
/// point is "finishes", not "is fast" (the benchmark measures speed).
const LIMIT: Duration = Duration::from_secs(60);

fn timed(language: Language, source: &str) -> Duration {
    let start = Instant::now();
    let report = audit(source, None, Some(language));
    assert_eq!(report.exits.len(), 8);
    start.elapsed()
}

#[test]
fn hundred_thousand_deep_nesting_finishes() {
    let depth = 100_000;
    let brackets = format!("x = {}1{}\n", "[".repeat(depth), "]".repeat(depth));
    let parens = format!("let x = {}1{};\n", "(".repeat(depth), ")".repeat(depth));
    let subshells = format!("{}true{}\n", "(".repeat(depth), ")".repeat(depth));
    let cases = [
        (Language::Python, brackets.clone()),
        (Language::JavaScript, parens.clone()),
        (Language::TypeScript, parens.clone()),
        (Language::Bash, subshells),
        (Language::Rust, format!("fn f() {{ {parens} }}\n")),
        (Language::Go, format!("package a\nvar x = {}1{}\n", "(".repeat(depth), ")".repeat(depth))),
    ];
    for (language, source) in cases {
        let elapsed = timed(language, &source);
        assert!(elapsed < LIMIT, "{language}: {elapsed:?}");
    }
}

#[test]
fn nesting_past_the_limit_is_read_down_to_it_and_said() {
    let deep = |depth: usize| {
        format!(
            "for turn in range(10):\n    if step().done:\n        break\nx = {}1{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    let shallow = audit(&deep(50), None, Some(Language::Python));
    assert!(shallow.warnings.iter().all(|w| w.code != "nesting-too-deep"), "{:?}", shallow.warnings);
    let report = audit(&deep(5_000), None, Some(Language::Python));
    assert!(report.warnings.iter().any(|w| w.code == "nesting-too-deep"), "{:?}", report.warnings);
    // What lies above the limit is audited as before.
    assert_eq!(report.verdict, shallow.verdict);
    assert_eq!(report.verdict, Verdict::Converges);
}

#[test]
fn deeply_nested_loops_and_conditions_finish() {
    // 20,000 nested `if` blocks inside a loop, each guarding a break: the
    // guard scan per exit is capped, so this stays linear.
    let depth = 20_000;
    let mut source = String::from("fn f() { loop {\n");
    for _ in 0..depth {
        source.push_str("if done { break; }\nif x {\n");
    }
    source.push_str(&"}\n".repeat(depth));
    source.push_str("} }\n");
    let elapsed = timed(Language::Rust, &source);
    assert!(elapsed < LIMIT, "{elapsed:?}");
}

#[test]
fn five_mebibyte_file_finishes() {
    let chunk = "def step(agent):\n    turn = 0\n    while True:\n        turn += 1\n        reply = agent.call(max_tokens=100)\n        if not reply.tool_calls:\n            break\n        if turn >= MAX_TURNS:\n            break\n";
    let source = chunk.repeat(5 * 1024 * 1024 / chunk.len() + 1);
    assert!(source.len() >= 5 * 1024 * 1024);
    let start = Instant::now();
    let report = audit(&source, Some("big.py"), None);
    assert!(start.elapsed() < LIMIT, "{:?}", start.elapsed());
    assert_eq!(report.verdict, Verdict::Converges);
    // Evidence stays bounded however many loops there are.
    assert!(report.exits.iter().all(|e| e.evidence.len() <= 8));
}

#[test]
fn token_soup_never_panics() {
    let tokens = [
        "while",
        "for",
        "loop",
        "if",
        "else",
        "break",
        "return",
        "raise",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        ":",
        ";",
        "\n",
        "    ",
        "\"",
        "'",
        "`",
        "${",
        "$(",
        "#",
        "//",
        "/*",
        "*/",
        "\"\"\"",
        "<<EOF\n",
        "EOF\n",
        "done",
        "fi",
        "then",
        "do",
        "max_turns",
        "=",
        "==",
        "<",
        ">=",
        "not",
        "!",
        "&&",
        "||",
        "ctx.Done()",
        "é",
        "🙂",
        "\r\n",
        "r#\"",
        "\"#",
        "0",
        "range(",
        "x",
        "except",
        "KeyboardInterrupt",
        "select",
        "case",
        "->",
        "=>",
        "fn",
        "def",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for round in 0..300 {
        let mut source = String::new();
        for _ in 0..200 {
            // A xorshift generator: deterministic, no dependency.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            source.push_str(tokens[(state % tokens.len() as u64) as usize]);
            source.push(' ');
        }
        let language = Language::ALL[round % Language::ALL.len()];
        let report = audit(&source, None, Some(language));
        assert_eq!(report.exits.len(), 8);
    }
}

#[test]
fn unknown_language_is_a_report_not_a_failure() {
    let report = audit("hello there", Some("notes.txt"), None);
    assert_eq!(report.verdict, Verdict::Undefined);
    assert_eq!(report.language, None);
    assert!(report.warnings.iter().any(|w| w.code == "unknown-language"));
    assert!(auditor::audit_with("hello there", Some("notes.txt"), None).is_err());
    assert!(auditor::audit_with("while True:\n    pass\n", Some("a.py"), None).is_ok());
}

/// Typing through every file of the evaluation set, one edit at a time,
/// incremental re-audits give exactly the report of a fresh audit: deleting
/// characters here and there, then putting them back.
#[test]
fn incremental_sessions_match_fresh_audits_on_the_evaluation_set() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/loops");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.sort();
    assert!(files.len() > 40);
    for path in files {
        let name = path.to_string_lossy().into_owned();
        let source = std::fs::read_to_string(&path).unwrap();
        let Some(language) = auditor::detect_language(Some(&name), &source) else { continue };
        let mut session = auditor::Session::new();
        let mut text = source.clone();
        // A deterministic spread of positions through the file.
        let positions: Vec<usize> = (1..8).map(|k| source.len() * k / 8).collect();
        for (step, &at) in positions.iter().enumerate() {
            let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let removed = text[at..].chars().next();
            if let Some(c) = removed {
                text.replace_range(at..at + c.len_utf8(), "");
            }
            let incremental = session.audit(&text, Some(&name), Some(language));
            assert_eq!(incremental, audit(&text, Some(&name), Some(language)), "{name}: edit {step}");
            if let Some(c) = removed {
                text.insert(at, c);
            }
            let incremental = session.audit(&text, Some(&name), Some(language));
            assert_eq!(incremental, audit(&text, Some(&name), Some(language)), "{name}: undo {step}");
        }
        assert_eq!(text, source);
    }
}
