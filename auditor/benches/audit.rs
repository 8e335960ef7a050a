//! Audit throughput per language on generated ~2,000-line files, and one pass
//! over the whole evaluation set. The target is interactive speed: a
//! 2,000-line file well under 16 ms natively.

use std::path::Path;

use auditor::{audit, Language};
use common::generated;

mod common;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

// The allocator of the `fixedpoint` binary, which runs `fixedpoint audit`
// and the audit API.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn per_language(c: &mut Criterion) {
    let mut group = c.benchmark_group("audit_2000_lines");
    for language in Language::ALL {
        let source = generated(language);
        group.throughput(Throughput::Elements(source.lines().count() as u64));
        group.bench_function(language.name(), |b| b.iter(|| audit(&source, None, Some(language))));
    }
    group.finish();
}

/// Recognising the language of a 2,000-line paste with no file name: each
/// grammar parses the paste's start (`SAMPLE_BYTES` in `language.rs`), and
/// the shell and Rust grammars are slow on a long paste in another
/// language. What a paste to the API, the CLI's stdin or the page's module
/// with every grammar costs before its audit.
fn detect_language(c: &mut Criterion) {
    let mut group = c.benchmark_group("detect_language_2000_lines");
    group.sample_size(10);
    for language in Language::ALL {
        let source = generated(language);
        group.bench_function(language.name(), |b| b.iter(|| auditor::detect_language(None, &source)));
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

criterion_group!(benches, per_language, detect_language, parse_only, reaudit_after_edit, evaluation_set);
criterion_main!(benches);
