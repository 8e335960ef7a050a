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
