//! The `fixedpoint` command: the site and its operator tools in one binary.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: an audit and an ingested round are many small allocations, and
/// it serves them faster than glibc's allocator (the benchmarks use it too).
/// With its `override` feature it also stands in for the C allocator, so
/// tree-sitter's parser and trees and SQLite use it as well.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = server::cli::Cli::parse();
    server::telemetry::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: could not start the async runtime: {error}");
            return ExitCode::from(3);
        }
    };
    match runtime.block_on(server::cli::run(cli)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
