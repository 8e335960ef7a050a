//! Writes the audit benchmark's generated 2,000-line sources, one file per
//! language, into a directory: `cargo run -p auditor --example bench_sources
//! -- DIR`. `benches/instructions.sh` audits them under cachegrind.

use std::path::PathBuf;
use std::process::ExitCode;

use auditor::Language;

#[path = "../benches/common/mod.rs"]
mod common;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: bench_sources DIR");
        return ExitCode::from(2);
    };
    for language in Language::ALL {
        let extension = match language {
            Language::Python => "py",
            Language::JavaScript => "js",
            Language::TypeScript => "ts",
            Language::Tsx => "tsx",
            Language::Bash => "sh",
            Language::Go => "go",
            Language::Rust => "rs",
        };
        let path = dir.join(format!("{}.{extension}", language.name()));
        if let Err(error) = std::fs::write(&path, common::generated(language)) {
            eprintln!("error: cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
