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
    give_memory_back_promptly();
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

/// mimalloc reads its options from the environment once, as the process
/// starts, before `main`. Two of its defaults keep an idle server's memory
/// long after a burst of audits: freed pages are purged a second later, on
/// the thread's next allocation (an idle thread never makes one), and on a
/// machine whose transparent huge pages are `always`, a purged 4 KiB page
/// inside a huge page stays resident. So, unless the operator chose
/// otherwise, the binary starts itself again at once with
/// `MIMALLOC_PURGE_DELAY=0` and `MIMALLOC_ALLOW_THP=0` (same process id,
/// arguments and descriptors). `end2end/bench/audit_storm.py`: a minute after
/// the storm, +25 to +45% of the baseline before, +18 to +19% with these and
/// `mi_collect` after each audit (baseline 64 -> 37 MB). If the binary cannot
/// be started again, it runs with the defaults.
fn give_memory_back_promptly() {
    use std::os::unix::process::CommandExt;
    const CHOSEN: [(&str, &str); 2] = [("MIMALLOC_PURGE_DELAY", "0"), ("MIMALLOC_ALLOW_THP", "0")];
    if CHOSEN.iter().any(|(name, _)| std::env::var_os(name).is_some()) {
        return;
    }
    let Ok(binary) = std::env::current_exe() else { return };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(binary);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    // `exec` returns only if it failed.
    let _failed = command.args(args).envs(CHOSEN).exec();
}
