//! `fixedpoint audit [--format text|json|sarif] [--lang L] PATH... | -`
//!
//! Exit codes are a contract: 0 CONVERGES, 1 DIVERGES, 2 UNDEFINED, 3 usage
//! or read error; over several files the worst (highest) code wins. A file
//! that cannot be read or whose language cannot be recognised is named on
//! standard error and the other files are still reported.

use std::io::{Read, Write};
use std::path::PathBuf;

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

    let mut files: Vec<FileReport> = Vec::new();
    let mut worst_error = false;
    let mut stdin_used = false;
    for path in &args.paths {
        let (label, source) = if path.as_os_str() == "-" {
            if stdin_used {
                let _ = writeln!(err, "error: `-` (standard input) given more than once");
                worst_error = true;
                continue;
            }
            stdin_used = true;
            let mut bytes = Vec::new();
            if let Err(error) = stdin.read_to_end(&mut bytes) {
                let _ = writeln!(err, "error: cannot read standard input: {error}");
                worst_error = true;
                continue;
            }
            ("-".to_string(), String::from_utf8_lossy(&bytes).into_owned())
        } else {
            let label = path.display().to_string();
            match std::fs::read(path) {
                Ok(bytes) => (label, String::from_utf8_lossy(&bytes).into_owned()),
                Err(error) => {
                    let _ = writeln!(err, "error: cannot read {label}: {error}");
                    worst_error = true;
                    continue;
                }
            }
        };
        let path_hint = (label != "-").then_some(label.as_str());
        match audit_with(&source, path_hint, language) {
            Ok(mut report) => {
                report.path = Some(label);
                files.push(report);
            }
            Err(error) => {
                let _ = writeln!(err, "error: {label}: {error}");
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
