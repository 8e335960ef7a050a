//! Scores the auditor against the labelled evaluation sets in `eval/`:
//! per-exit precision, recall and F1, micro F1 and verdict accuracy.
//!
//! - `loops/` (labels in `labels.json`) and `holdout/` (`holdout.json`):
//!   loops written for this project, the first while the rules were
//!   developed, the second after them.
//! - `real/`: excerpts of real agent loops from public repositories, labelled
//!   by reading them before the auditor ran on them (`real/LABELLING.md`). Its
//!   manifest is `real/parts/*.json`; the code is cut out of local copies of
//!   the repositories by `real/materialise.py` into `real/cache/`. It has two
//!   parts: the held-out part (`parts/heldout-*.json`, labelled after the
//!   rules were written, from repositories no other excerpt uses) and the
//!   development part (everything else: the rules may be written from it).
//!
//! `cargo run -p auditor --example eval` prints every table. Options:
//! `-v` lists the mismatches of the hand-written sets and of the real-world
//! development part; `--held-out-details` lists the held-out part's too (for
//! closing notes, never for writing rules); `--lang` adds a table per
//! language of the real-world set; `--show ID` prints one development
//! excerpt's labels beside the auditor's report and nothing else.
#![allow(clippy::print_stdout)] // A command-line report: printing is its job.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use auditor::{
    audit, detect_language, detect_language_with, likely_language, render_text, Detection, ExitId, Language,
    Report,
};

/// One labelled source.
struct Case {
    name: String,
    language: Option<Language>,
    /// The name the source is audited under (its extension gives the language).
    path: String,
    source: String,
    exits: Vec<String>,
    verdict: String,
}

/// True and false positives and negatives of one exit.
#[derive(Default, Clone, Copy)]
struct Counts {
    tp: u32,
    fp: u32,
    fneg: u32,
}

impl Counts {
    fn precision(self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }
    fn recall(self) -> f64 {
        ratio(self.tp, self.tp + self.fneg)
    }
    fn f1(self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let verbose = args.iter().any(|a| a == "-v");
    let held_out_details = args.iter().any(|a| a == "--held-out-details");
    let by_language = args.iter().any(|a| a == "--lang");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    if let Some(id) = args.iter().position(|a| a == "--show").and_then(|i| args.get(i + 1)) {
        show(&root.join("real"), id);
        return;
    }

    score("hand-written development set (eval/loops)", &written_set(&root, "loops", "labels.json"), verbose);
    println!();
    score(
        "hand-written held-out set (eval/holdout)",
        &written_set(&root, "holdout", "holdout.json"),
        verbose,
    );

    let written: Vec<Case> = written_set(&root, "loops", "labels.json")
        .into_iter()
        .chain(written_set(&root, "holdout", "holdout.json"))
        .collect();
    let (development, held_out, missing) = real_set(&root.join("real"));
    if missing > 0 {
        println!();
        println!(
            "real-world set: {missing} excerpts have no local copy; run auditor/eval/real/materialise.py (README.md there)"
        );
    }
    for (title, cases, details) in [
        ("real-world set, development part", &development, verbose),
        ("real-world set, held-out part", &held_out, held_out_details),
    ] {
        println!();
        score(title, cases, details);
        if by_language {
            for language in Language::ALL {
                let subset: Vec<&Case> = cases.iter().filter(|c| c.language == Some(language)).collect();
                if !subset.is_empty() {
                    println!();
                    score_refs(&format!("  {title}: {language}"), &subset, false);
                }
            }
        }
    }
    agreement(&root.join("real"));
    let everything: Vec<&Case> = development.iter().chain(&held_out).collect();
    if !everything.is_empty() {
        println!();
        score_refs("real-world set, both parts", &everything, false);
        println!();
        detection(&everything, None);
        if verbose {
            let development: Vec<&Case> = development.iter().collect();
            detection(&development, Some("development part"));
        }
    }
    println!();
    let every: Vec<&Case> = written.iter().chain(&development).chain(&held_out).collect();
    suggested_fixes(&every, verbose, &held_out);
}

/// The suggested fixes, applied: of every source whose verdict lacks a
/// bound or a completion check, how many get a fix that, applied, parses
/// and is read as the exit it promises without losing one.
/// `verbose` lists the failures, never those of the held-out part.
fn suggested_fixes(cases: &[&Case], verbose: bool, held_out: &[Case]) {
    let mut lacking = 0u32;
    let mut offered = 0u32;
    let mut kept = 0u32;
    for case in cases {
        let report = audit(&case.source, Some(&case.path), case.language);
        let Some(language) = case.language else { continue };
        let lacks = report
            .warnings
            .iter()
            .filter(|w| matches!(w.code.as_str(), "no-backstop" | "no-completion-check"));
        let lacks = lacks.count() as u32;
        lacking += lacks;
        let listed = verbose && !held_out.iter().any(|h| h.name == case.name);
        if listed && lacks as usize > report.fixes.len() {
            let kinds: Vec<&str> = report.loops.iter().map(|l| l.kind.as_str()).collect();
            println!(
                "  fix miss {}: no fix offered (loops {kinds:?}, verdict {})",
                case.name,
                report.verdict.as_str()
            );
        }
        for fix in &report.fixes {
            offered += 1;
            let fixed = fix.apply(&case.source);
            let again = audit(&fixed, Some(&case.path), Some(language));
            let found = again.found();
            let errors =
                |r: &auditor::FileReport| r.warnings.iter().filter(|w| w.code == "parse-error").count();
            let promised = found.contains(&fix.exit);
            let lost: Vec<ExitId> = report.found().into_iter().filter(|id| !found.contains(id)).collect();
            let parses = errors(&again) <= errors(&report);
            if promised && lost.is_empty() && parses {
                kept += 1;
            } else if listed {
                println!(
                    "  fix miss {}: {} promised {}, found {:?}, lost {lost:?}, parses {parses}",
                    case.name,
                    fix.title,
                    fix.exit.as_str(),
                    found
                );
            }
        }
    }
    println!(
        "suggested fixes: {lacking} sources lack a bound or a completion check; {offered} fixes offered; {kept} re-audit with the promised exit and none lost = {:.3} of those lacking",
        ratio(kept, lacking)
    );
}

/// One development excerpt: its labels (exits, reasons, notes) and the
/// auditor's text report, for reading a mismatch. Held-out excerpts are
/// never shown.
fn show(root: &Path, id: &str) {
    let (development, _, _) = real_set(root);
    let Some(case) = development.iter().find(|c| c.name == id) else {
        println!("{id}: no development excerpt with a local copy has this id");
        return;
    };
    for part in std::fs::read_dir(root.join("parts")).into_iter().flatten().flatten() {
        let Ok(text) = std::fs::read_to_string(part.path()) else { continue };
        let Ok(excerpts) = serde_json::from_str::<Vec<serde_json::Value>>(&text) else { continue };
        if let Some(entry) = excerpts.iter().find(|e| e["id"] == id) {
            println!("labels: {:?} {}", case.exits, case.verdict);
            for (exit, reason) in entry["reasons"].as_object().into_iter().flatten() {
                println!("  {exit}: {}", reason.as_str().unwrap_or_default());
            }
            println!("  notes: {}", entry["notes"].as_str().unwrap_or_default());
        }
    }
    let report = audit(&case.source, Some(&case.path), None);
    print!("{}", render_text(&Report::from_files(vec![report])));
}

/// A hand-written set: a directory of sources and a labels file.
fn written_set(root: &Path, dir: &str, labels_file: &str) -> Vec<Case> {
    let labels: BTreeMap<String, serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(root.join(labels_file)).expect("labels file is readable"),
    )
    .expect("labels file is valid JSON");
    labels
        .into_iter()
        .map(|(file, label)| Case {
            source: std::fs::read_to_string(root.join(dir).join(&file)).expect("labelled file exists"),
            language: detect_language(Some(&file), ""),
            path: file.clone(),
            name: file,
            exits: strings(&label["exits"]),
            verdict: label["verdict"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

/// The real-world set's two parts and the number of excerpts without a copy.
fn real_set(root: &Path) -> (Vec<Case>, Vec<Case>, usize) {
    let mut development = Vec::new();
    let mut held_out = Vec::new();
    let mut missing = 0;
    let Ok(entries) = std::fs::read_dir(root.join("parts")) else {
        return (development, held_out, missing);
    };
    let mut parts: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    parts.sort();
    for part in parts {
        let text = std::fs::read_to_string(&part).expect("part is readable");
        let excerpts: Vec<serde_json::Value> = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("{}: not a JSON array of excerpts: {error}", part.display()));
        for excerpt in excerpts {
            let id = excerpt["id"].as_str().unwrap_or_default().to_string();
            let language = excerpt["language"].as_str().and_then(Language::from_name);
            let Some(language) = language else { continue };
            let path = format!("{id}.{}", extension(language));
            let Ok(source) = std::fs::read_to_string(root.join("cache").join(&path)) else {
                missing += 1;
                continue;
            };
            let case = Case {
                name: id,
                language: Some(language),
                path,
                source,
                exits: strings(&excerpt["exits"]),
                verdict: excerpt["verdict"].as_str().unwrap_or_default().to_string(),
            };
            let held_out_part =
                part.file_name().is_some_and(|name| name.to_string_lossy().starts_with("heldout-"));
            if !held_out_part {
                development.push(case);
            } else {
                held_out.push(case);
            }
        }
    }
    (development, held_out, missing)
}

fn extension(language: Language) -> &'static str {
    match language {
        Language::Python => "py",
        Language::JavaScript => "js",
        Language::TypeScript => "ts",
        Language::Tsx => "tsx",
        Language::Bash => "sh",
        Language::Go => "go",
        Language::Rust => "rs",
    }
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)).collect()
}

fn score(title: &str, cases: &[Case], verbose: bool) {
    let refs: Vec<&Case> = cases.iter().collect();
    score_refs(title, &refs, verbose);
}

fn score_refs(title: &str, cases: &[&Case], verbose: bool) {
    println!("{title}: {} sources", cases.len());
    if cases.is_empty() {
        return;
    }
    let mut counts: BTreeMap<ExitId, Counts> =
        ExitId::ALL.iter().map(|id| (*id, Counts::default())).collect();
    let mut verdicts_right = 0;
    for case in cases {
        let report = audit(&case.source, Some(&case.path), None);
        let found = report.found();
        for id in ExitId::ALL {
            let truth = case.exits.iter().any(|e| e == id.as_str());
            let said = found.contains(&id);
            let entry = counts.get_mut(&id).expect("every exit has a row");
            match (truth, said) {
                (true, true) => entry.tp += 1,
                (false, true) => entry.fp += 1,
                (true, false) => entry.fneg += 1,
                (false, false) => {}
            }
            if verbose && truth != said {
                println!(
                    "  {}: {} {}",
                    case.name,
                    id.as_str(),
                    if said { "false positive" } else { "missed" }
                );
            }
        }
        if case.verdict == report.verdict.as_str() {
            verdicts_right += 1;
        } else if verbose {
            println!("  {}: verdict {} expected {}", case.name, report.verdict.as_str(), case.verdict);
        }
    }
    println!("exit  label            TP  FP  FN  precision  recall  F1");
    let mut total = Counts::default();
    for (id, c) in &counts {
        total.tp += c.tp;
        total.fp += c.fp;
        total.fneg += c.fneg;
        println!(
            "{:<5} {:<16} {:>3} {:>3} {:>3}  {:>9.2}  {:>6.2}  {:.2}",
            id.as_str(),
            id.label(),
            c.tp,
            c.fp,
            c.fneg,
            c.precision(),
            c.recall(),
            c.f1()
        );
    }
    println!(
        "micro {:<16} {:>3} {:>3} {:>3}  {:>9.2}  {:>6.2}  {:.2}",
        "(all exits)",
        total.tp,
        total.fp,
        total.fneg,
        total.precision(),
        total.recall(),
        total.f1()
    );
    println!(
        "verdict accuracy: {}/{} = {:.3}",
        verdicts_right,
        cases.len(),
        ratio(verdicts_right, cases.len() as u32)
    );
}

/// How far a second labeller's labels (`real/agreement.json`, made without
/// seeing the first) agree with the manifest's: verdicts, and exits as F1.
fn agreement(root: &Path) {
    let Ok(text) = std::fs::read_to_string(root.join("agreement.json")) else { return };
    let second: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&text).expect("agreement.json is a JSON object of labels");
    let mut first: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for part in std::fs::read_dir(root.join("parts")).into_iter().flatten().filter_map(Result::ok) {
        if part.path().extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(part.path()).expect("part is readable");
            let excerpts: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
            for excerpt in excerpts {
                first.insert(excerpt["id"].as_str().unwrap_or_default().to_string(), excerpt);
            }
        }
    }
    let (mut same_verdict, mut total, mut counts) = (0, 0, Counts::default());
    for (id, label) in &second {
        let Some(original) = first.get(id) else { continue };
        total += 1;
        same_verdict += u32::from(original["verdict"] == label["verdict"]);
        let (a, b) = (strings(&original["exits"]), strings(&label["exits"]));
        counts.tp += a.iter().filter(|e| b.contains(e)).count() as u32;
        counts.fneg += a.iter().filter(|e| !b.contains(e)).count() as u32;
        counts.fp += b.iter().filter(|e| !a.contains(e)).count() as u32;
    }
    println!();
    println!(
        "a second labeller on {total} excerpts: verdicts agree {same_verdict}/{total}, exits F1 {:.2} ({} shared, {} only second, {} only first)",
        counts.f1(),
        counts.tp,
        counts.fp,
        counts.fneg
    );
}

/// Language detection without a file name: of each excerpt, and of its
/// first 15 lines.
fn detection(cases: &[&Case], list_misses_of: Option<&str>) {
    let mut whole = 0;
    let mut head = 0;
    let mut family_whole = 0;
    let mut family_head = 0;
    // The audit page's worker: the module of the likely language's family
    // first, the one with every grammar when that module cannot tell.
    let mut alone = 0;
    for case in cases {
        if let Some(part) = list_misses_of {
            let first: String = case.source.lines().take(15).map(|line| format!("{line}\n")).collect();
            let (detected, detected_head) =
                (detect_language(None, &case.source), detect_language(None, &first));
            if detected != case.language || detected_head != case.language {
                println!(
                    "  {part}: {} is {:?}, detected {:?}, first 15 lines {:?}",
                    case.name, case.language, detected, detected_head
                );
            }
            continue;
        }
        let first: String = case.source.lines().take(15).map(|line| format!("{line}\n")).collect();
        let same = |detected: Option<Language>| {
            detected == case.language
                || (detected == Some(Language::TypeScript) && case.language == Some(Language::Tsx))
        };
        // TypeScript read as JavaScript (or the reverse) is the right
        // grammar family: the same rules, a grammar that mostly reads it.
        let family = |detected: Option<Language>| {
            let script = |l: Option<Language>| {
                matches!(l, Some(Language::JavaScript | Language::TypeScript | Language::Tsx))
            };
            same(detected) || (script(detected) && script(case.language))
        };
        let (detected, detected_head) = (detect_language(None, &case.source), detect_language(None, &first));
        whole += u32::from(same(detected));
        head += u32::from(same(detected_head));
        family_whole += u32::from(family(detected));
        family_head += u32::from(family(detected_head));
        let hint = likely_language(None, &case.source).unwrap_or(Language::Python);
        let grammars: &[Language] = match hint {
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                &[Language::JavaScript, Language::TypeScript, Language::Tsx]
            }
            _ => &[hint],
        };
        match detect_language_with(grammars, None, &case.source) {
            Detection::Decided(language) => {
                assert_eq!(
                    language, detected,
                    "{}: a module decides only what all grammars would",
                    case.name
                );
                alone += 1;
            }
            Detection::NeedsOtherGrammars => {}
        }
    }
    if list_misses_of.is_some() {
        return;
    }
    let n = cases.len() as u32;
    println!("language detection without a file name: whole excerpts {whole}/{n} = {:.3}", ratio(whole, n));
    println!("language detection without a file name: first 15 lines {head}/{n} = {:.3}", ratio(head, n));
    println!(
        "  the audit page's first module (the likely language's grammars) decides alone: {alone}/{n} = {:.3}; the others need the module with every grammar",
        ratio(alone, n)
    );
    println!(
        "  counting JavaScript and TypeScript as one family: whole {family_whole}/{n} = {:.3}, first 15 lines {family_head}/{n} = {:.3}",
        ratio(family_whole, n),
        ratio(family_head, n)
    );
}

/// A ratio where 0/0 counts as perfect: no claims made, none wrong.
fn ratio(numerator: u32, denominator: u32) -> f64 {
    if denominator == 0 {
        1.0
    } else {
        f64::from(numerator) / f64::from(denominator)
    }
}
