//! `fixedpoint audit [--format text|json|sarif] [--lang L] PATH... | -`
//!
//! Exit codes are a contract: 0 CONVERGES, 1 DIVERGES, 2 UNDEFINED, 3 usage
//! or read error; over several files the worst (highest) code wins. A file
//! that cannot be read or whose language cannot be recognised is named on
//! standard error and the other files are still reported.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use auditor::{audit_with, render_sarif, render_text, FileReport, Language, Report};
use clap::{Args, ValueEnum};

/// The exit code of usage and read errors.
pub const USAGE_ERROR: u8 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One line per exit, evidence beneath, the counts and `VERDICT: X`.
    Text,
    /// The JSON report (the same as `POST /api/v1/audit` returns).
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// The language of every input (python, javascript, typescript, tsx, bash,
    /// go, rust); detected from the extension, a shebang or the content when
    /// absent.
    #[arg(long = "lang", value_name = "L")]
    pub lang: Option<String>,
    /// Files to audit; `-` reads standard input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Runs the command, writing the report to `out` and problems to `err`, and
/// returns the process exit code.
pub fn run_audit_command(
    args: &AuditArgs,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let language = match args.lang.as_deref() {
        None => None,
        Some(name) => match Language::from_name(name) {
            Some(language) => Some(language),
            None => {
                let _ = writeln!(
                    err,
                    "error: --lang {name:?} is not a language the auditor reads \
                     (python, javascript, typescript, tsx, bash, go, rust)"
                );
                return USAGE_ERROR;
            }
        },
    };

    // Standard input is read here, once; the files are read by the workers.
    let mut stdin_used = false;
    let inputs: Vec<Input<'_>> = args
        .paths
        .iter()
        .map(|path| {
            if path.as_os_str() != "-" {
                return Input::File(path);
            }
            if stdin_used {
                return Input::Failed("error: `-` (standard input) given more than once".to_string());
            }
            stdin_used = true;
            let mut bytes = Vec::new();
            match stdin.read_to_end(&mut bytes) {
                Ok(_) => Input::Text(String::from_utf8_lossy(&bytes).into_owned()),
                Err(error) => Input::Failed(format!("error: cannot read standard input: {error}")),
            }
        })
        .collect();

    let mut files: Vec<FileReport> = Vec::new();
    let mut worst_error = false;
    for outcome in audit_all(&inputs, language) {
        match outcome {
            Ok(report) => files.push(report),
            Err(message) => {
                let _ = writeln!(err, "{message}");
                worst_error = true;
            }
        }
    }

    let report = Report::from_files(files);
    if !report.files.is_empty() || !worst_error {
        let written = match args.format {
            OutputFormat::Text => out.write_all(render_text(&report).as_bytes()),
            OutputFormat::Json => serde_json::to_writer_pretty(&mut *out, &report)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n")),
            OutputFormat::Sarif => serde_json::to_writer_pretty(&mut *out, &render_sarif(&report))
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n")),
        };
        match written.and_then(|()| out.flush()) {
            Ok(()) => {}
            // The reader has gone (`fixedpoint audit ... | head`): nothing is
            // wrong with the audit, so its verdict still decides the code.
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(error) => {
                let _ = writeln!(err, "error: cannot write the report: {error}");
                return USAGE_ERROR;
            }
        }
    }
    if worst_error {
        USAGE_ERROR
    } else {
        u8::try_from(report.exit_code).unwrap_or(USAGE_ERROR)
    }
}

/// One input of the command, as the workers take it.
enum Input<'a> {
    /// A path, read by the worker that audits it.
    File(&'a PathBuf),
    /// Standard input, already read.
    Text(String),
    /// An input that cannot be audited, with the message that says why.
    Failed(String),
}

impl Input<'_> {
    fn label(&self) -> String {
        match self {
            Input::File(path) => path.display().to_string(),
            Input::Text(_) | Input::Failed(_) => "-".to_string(),
        }
    }
}

/// An input's report, or the message that names its fault.
type Outcome = Result<FileReport, String>;

fn audit_input(input: &Input<'_>, language: Option<Language>) -> Outcome {
    let label = input.label();
    let read;
    let source = match input {
        Input::Failed(message) => return Err(message.clone()),
        Input::Text(source) => source.as_str(),
        Input::File(path) => match std::fs::read(path) {
            Ok(bytes) => {
                read = String::from_utf8_lossy(&bytes).into_owned();
                read.as_str()
            }
            Err(error) => return Err(format!("error: cannot read {label}: {error}")),
        },
    };
    let path_hint = matches!(input, Input::File(_)).then_some(label.as_str());
    match audit_with(source, path_hint, language) {
        Ok(mut report) => {
            report.path = Some(label);
            Ok(report)
        }
        Err(error) => Err(format!("error: {label}: {error}")),
    }
}

/// Audits every input, on as many threads as the machine has cores (a
/// repository's worth of files at once), and gives the outcomes in the
/// inputs' order, so the output does not depend on which thread was first.
fn audit_all(inputs: &[Input<'_>], language: Option<Language>) -> Vec<Outcome> {
    let workers = std::thread::available_parallelism().map_or(1, usize::from).min(inputs.len());
    if workers <= 1 {
        return inputs.iter().map(|input| audit_input(input, language)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut outcomes: Vec<Option<Outcome>> = std::iter::repeat_with(|| None).take(inputs.len()).collect();
    std::thread::scope(|scope| {
        let worker = || {
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(input) = inputs.get(index) else { break };
                done.push((index, audit_input(input, language)));
            }
            done
        };
        // The main thread's stack size: deeply nested sources stay as safe
        // on a worker as they are without one.
        let handles: Vec<_> = (0..workers)
            .filter_map(|_| std::thread::Builder::new().stack_size(8 << 20).spawn_scoped(scope, worker).ok())
            .collect();
        for handle in handles {
            for (index, outcome) in handle.join().unwrap_or_default() {
                outcomes[index] = Some(outcome);
            }
        }
    });
    // Inputs no worker finished (none could be started, or one panicked) are
    // audited here, in order.
    outcomes
        .into_iter()
        .zip(inputs)
        .map(|(outcome, input)| outcome.unwrap_or_else(|| audit_input(input, language)))
        .collect()
}
