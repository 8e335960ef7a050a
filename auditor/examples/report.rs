//! Prints the auditor's text report of each file named on the command line,
//! with the evidence and warnings: `cargo run -p auditor --example report -- FILE...`.
//! `--links` adds every exit link the rules judged (the clause, its role,
//! its words and the exit it gave), for working on the rules. The
//! `fixedpoint audit` command is the user's way to the same reports.
#![allow(clippy::print_stdout)] // A command-line report: printing is its job.

use auditor::{audit, detect_language, render_text, trace_links, Report};

fn main() {
    let links = std::env::args().any(|a| a == "--links");
    for path in std::env::args().skip(1).filter(|a| a != "--links") {
        match std::fs::read_to_string(&path) {
            Ok(source) => {
                let report = audit(&source, Some(&path), None);
                println!("{}", render_text(&Report::from(report)));
                if let Some(language) = detect_language(Some(&path), &source).filter(|_| links) {
                    for line in trace_links(&source, language) {
                        println!("  {line}");
                    }
                }
            }
            Err(error) => println!("{path}: {error}"),
        }
    }
}
