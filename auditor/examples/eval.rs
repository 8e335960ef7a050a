//! Scores the auditor against the hand-labelled evaluation sets in `eval/`:
//! per-exit precision, recall and F1, and verdict accuracy.
//!
//! Two sets: `loops/` (labels in `labels.json`) was written while the rules
//! were developed, so it measures coverage of known styles; `holdout/` (labels
//! in `holdout.json`) was written and labelled afterwards and scored once
//! before any rule was changed, so it is the fairer estimate.
//!
//! `cargo run -p auditor --example eval` (add `-- -v` to list every mismatch).
#![allow(clippy::print_stdout)] // A command-line report: printing is its job.

use std::collections::BTreeMap;
use std::path::Path;

use auditor::{audit, ExitId};

fn main() {
    let verbose = std::env::args().any(|a| a == "-v");
    score("development set (eval/loops)", "loops", "labels.json", verbose);
    println!();
    score("held-out set (eval/holdout)", "holdout", "holdout.json", verbose);
}

fn score(title: &str, dir: &str, labels_file: &str, verbose: bool) {
    println!("{title}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let labels: BTreeMap<String, serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(root.join(labels_file)).expect("labels file is readable"),
    )
    .expect("labels file is valid JSON");
    let mut counts: BTreeMap<ExitId, (u32, u32, u32)> =
        ExitId::ALL.iter().map(|id| (*id, (0, 0, 0))).collect();
    let mut verdicts_right = 0;
    for (file, label) in &labels {
        let source = std::fs::read_to_string(root.join(dir).join(file)).expect("labelled file exists");
        let report = audit(&source, Some(file), None);
        let expected: Vec<String> = label["exits"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let found = report.found();
        for id in ExitId::ALL {
            let truth = expected.iter().any(|e| e == id.as_str());
            let said = found.contains(&id);
            let entry = counts.get_mut(&id).expect("every exit has a row");
            match (truth, said) {
                (true, true) => entry.0 += 1,
                (false, true) => entry.1 += 1,
                (true, false) => entry.2 += 1,
                (false, false) => {}
            }
            if verbose && truth != said {
                println!("{file}: {} {}", id.as_str(), if said { "false positive" } else { "missed" });
            }
        }
        let verdict_right = label["verdict"].as_str() == Some(report.verdict.as_str());
        if verdict_right {
            verdicts_right += 1;
        } else if verbose {
            println!("{file}: verdict {} expected {}", report.verdict.as_str(), label["verdict"]);
        }
    }
    println!("exit  label            TP  FP  FN  precision  recall  F1");
    for (id, (tp, fp, fneg)) in &counts {
        let precision = ratio(*tp, tp + fp);
        let recall = ratio(*tp, tp + fneg);
        let f1 = if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 };
        println!(
            "{:<5} {:<16} {:>3} {:>3} {:>3}  {:>9.2}  {:>6.2}  {:.2}",
            id.as_str(),
            id.label(),
            tp,
            fp,
            fneg,
            precision,
            recall,
            f1
        );
    }
    println!(
        "verdict accuracy: {}/{} = {:.3}",
        verdicts_right,
        labels.len(),
        ratio(verdicts_right, labels.len() as u32)
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
