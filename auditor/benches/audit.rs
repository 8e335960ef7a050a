//! Audit throughput per language on generated ~2,000-line files, and one pass
//! over the whole evaluation set. The target is interactive speed: a
//! 2,000-line file well under 16 ms natively.

use std::path::Path;

use auditor::{audit, Language};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

// The allocator of the `fixedpoint` binary, which runs `fixedpoint audit`
// and the audit API.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A realistic agent-loop snippet per language, repeated to about 2,000 lines.
fn generated(language: Language) -> String {
    let chunk = match language {
        Language::Python => "def run(client, messages):\n    turn = 0\n    while True:\n        turn += 1\n        reply = client.create(messages=messages, max_tokens=1024)  # call\n        if not reply.tool_calls:\n            return reply\n        if turn >= MAX_TURNS:\n            break\n        messages.append(f\"{reply.text} done\")\n\n",
        Language::JavaScript | Language::TypeScript | Language::Tsx => "async function run(client, messages) {\n  for (let step = 0; step < maxSteps; step++) {\n    const reply = await client.create({ messages, max_tokens: 1024 });\n    /* if (done) break; */\n    if (!reply.toolCalls.length) return reply;\n    messages.push(`${reply.text} done`);\n  }\n}\n\n",
        Language::Bash => "run() {\n  for i in $(seq 1 \"$MAX_ITER\"); do\n    claude -p \"$(cat PROMPT.md)\" > out.log\n    if grep -q DONE out.log; then\n      break\n    fi\n    [ -f STOP ] && break\n  done\n}\n\n",
        Language::Go => "func run(ctx context.Context) error {\n\tfor turn := 0; turn < maxTurns; turn++ {\n\t\tselect {\n\t\tcase <-ctx.Done():\n\t\t\treturn ctx.Err()\n\t\tdefault:\n\t\t}\n\t\tif resp.StopReason == \"end_turn\" {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n\n",
        Language::Rust => "fn run(client: &Client) -> Result<()> {\n    let mut turns = 0;\n    loop {\n        let resp = client.send()?;\n        if resp.stop_reason == StopReason::EndTurn { return Ok(()); }\n        turns += 1;\n        if turns >= MAX_TURNS { break; }\n    }\n    Ok(())\n}\n\n",
    };
    let lines = chunk.lines().count();
    let mut source = if language == Language::Go { String::from("package bench\n\n") } else { String::new() };
    source.push_str(&chunk.repeat(2_000 / lines + 1));
    source
}

fn per_language(c: &mut Criterion) {
    let mut group = c.benchmark_group("audit_2000_lines");
    for language in Language::ALL {
        let source = generated(language);
        group.throughput(Throughput::Elements(source.lines().count() as u64));
        group.bench_function(language.name(), |b| b.iter(|| audit(&source, None, Some(language))));
    }
    group.finish();
}

/// Parsing alone, for comparison: what the audit adds on top of tree-sitter.
fn parse_only(c: &mut Criterion) {
    let source = generated(Language::Python);
    let mut group = c.benchmark_group("parse_only_2000_lines");
    group.throughput(Throughput::Elements(source.lines().count() as u64));
    group.bench_function("python", |b| {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&tree_sitter_python::LANGUAGE.into()).expect("the Python grammar loads");
        b.iter(|| parser.parse(&source, None).map(|tree| tree.root_node().child_count()))
    });
    group.finish();
}

fn evaluation_set(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/loops");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("eval/loops exists")
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let source = std::fs::read_to_string(entry.path()).unwrap_or_default();
            (name, source)
        })
        .collect();
    files.sort();
    let lines: usize = files.iter().map(|(_, s)| s.lines().count()).sum();
    let mut group = c.benchmark_group("evaluation_set");
    group.throughput(Throughput::Elements(lines as u64));
    group.bench_function("all_files", |b| {
        b.iter(|| {
            files.iter().map(|(name, source)| audit(source, Some(name), None).verdict.exit_code()).max()
        })
    });
    group.finish();
}

/// What the audit page does on a keystroke: re-audit a 2,000-line file after
/// a one-character edit, fresh (the baseline) and through a `Session` that
/// reparses only the edit. Both alternate between two texts so every
/// iteration is a real edit.
fn reaudit_after_edit(c: &mut Criterion) {
    let source = generated(Language::Python);
    let middle = source.len() / 2;
    let edited = format!("{}x{}", &source[..middle], &source[middle..]);
    let mut group = c.benchmark_group("reaudit_after_one_char_edit_2000_lines");
    group.bench_function("fresh", |b| {
        let mut flip = false;
        b.iter(|| {
            flip = !flip;
            audit(if flip { &edited } else { &source }, None, Some(Language::Python))
        })
    });
    group.bench_function("session", |b| {
        let mut session = auditor::Session::new();
        session.audit(&source, None, Some(Language::Python));
        let mut flip = false;
        b.iter(|| {
            flip = !flip;
            session.audit(if flip { &edited } else { &source }, None, Some(Language::Python))
        })
    });
    group.finish();
}

criterion_group!(benches, per_language, parse_only, reaudit_after_edit, evaluation_set);
criterion_main!(benches);
