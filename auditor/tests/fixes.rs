//! Suggested fixes: each is written in the loop's language, and once applied
//! the source parses and the auditor finds the exit the fix promises without
//! losing any it had. Checked per language and over every loop of the
//! hand-written evaluation sets (the eval example does the same over the
//! real-world set).

use std::path::Path;

use auditor::{audit, detect_language, ExitId, FileReport, Language};

/// Applies every fix of `report` to `source` and checks the re-audit.
/// Returns a description of what went wrong, if anything did.
fn check_fixes(name: &str, source: &str, language: Language, report: &FileReport) -> Vec<String> {
    let mut problems = Vec::new();
    for fix in &report.fixes {
        let fixed = fix.apply(source);
        let again = audit(&fixed, None, Some(language));
        let found = again.found();
        if !found.contains(&fix.exit) {
            problems.push(format!(
                "{name}: the {0} fix is not read as {0}:\n{1}",
                fix.exit.as_str(),
                fix.diff
            ));
        }
        let lost: Vec<ExitId> = report.found().into_iter().filter(|id| !found.contains(id)).collect();
        if !lost.is_empty() {
            problems.push(format!("{name}: the {} fix loses {lost:?}:\n{}", fix.exit.as_str(), fix.diff));
        }
        let errors = |r: &FileReport| r.warnings.iter().filter(|w| w.code == "parse-error").count();
        if errors(&again) > errors(report) {
            problems.push(format!("{name}: the {} fix does not parse:\n{}", fix.exit.as_str(), fix.diff));
        }
    }
    problems
}

fn fix_of(language: Language, source: &str, exit: ExitId) -> (FileReport, String) {
    let report = audit(source, None, Some(language));
    let fix =
        report.fixes.iter().find(|f| f.exit == exit).unwrap_or_else(|| {
            panic!("no {} fix for\n{source}\nwarnings: {:?}", exit.as_str(), report.warnings)
        });
    let fixed = fix.apply(source);
    (report, fixed)
}

#[test]
fn a_turn_cap_for_a_loop_with_no_bound_in_each_language() {
    let cases: [(Language, &str); 6] = [
        (Language::Python, "def run(agent):\n    while True:\n        reply = agent.step()\n        if not reply.tool_calls:\n            break\n"),
        (Language::JavaScript, "async function run(agent) {\n  while (true) {\n    const reply = await agent.step();\n    if (reply.done) break;\n  }\n}\n"),
        (Language::TypeScript, "async function run(agent: Agent): Promise<void> {\n  for (;;) {\n    const reply: Reply = await agent.step();\n    if (!reply.toolCalls.length) {\n      return;\n    }\n  }\n}\n"),
        (Language::Go, "package a\n\nfunc run(a Agent) {\n\tfor {\n\t\tr := a.Step()\n\t\tif r.Finished {\n\t\t\treturn\n\t\t}\n\t}\n}\n"),
        (Language::Rust, "fn drive(agent: &mut Agent) {\n    loop {\n        let state = agent.step();\n        if state.converged {\n            break;\n        }\n    }\n}\n"),
        (Language::Bash, "#!/usr/bin/env bash\nwhile true; do\n  out=$(claude -p \"$(cat PROMPT.md)\")\n  if grep -q DONE <<<\"$out\"; then break; fi\ndone\n"),
    ];
    for (language, source) in cases {
        let (report, fixed) = fix_of(language, source, ExitId::E2);
        assert!(report.warnings.iter().any(|w| w.code == "no-backstop"), "{language}: warned");
        let again = audit(&fixed, None, Some(language));
        assert!(again.found().contains(&ExitId::E2), "{language}: capped\n{fixed}");
        assert!(again.found().contains(&ExitId::E1), "{language}: still detects\n{fixed}");
        assert!(
            !again.warnings.iter().any(|w| w.code == "no-backstop"),
            "{language}: no warning left\n{fixed}"
        );
        // The suggestion is the loop's own language: its grammar reads it.
        assert_eq!(detect_language(None, &fixed).map(|l| l == language || l.name() == "tsx"), Some(true));
    }
}

#[test]
fn a_progress_check_for_a_loop_that_only_runs_out_in_each_language() {
    let cases: [(Language, &str); 6] = [
        (Language::Python, "def run(agent, max_turns):\n    for turn in range(max_turns):\n        plan = agent.plan()\n        agent.act(plan)\n"),
        (Language::JavaScript, "async function run(agent, maxTurns) {\n  for (let turn = 0; turn < maxTurns; turn++) {\n    const plan = await agent.plan();\n    await agent.act(plan);\n  }\n}\n"),
        (Language::TypeScript, "async function run(agent: Agent, maxTurns: number): Promise<void> {\n  for (let turn = 0; turn < maxTurns; turn++) {\n    const plan: Plan = await agent.plan();\n    await agent.act(plan);\n  }\n}\n"),
        (Language::Go, "package a\n\nfunc run(a Agent) {\n\tfor i := 0; i < maxIterations; i++ {\n\t\tplan, err := a.Plan()\n\t\tif err != nil {\n\t\t\tcontinue\n\t\t}\n\t\ta.Act(plan)\n\t}\n}\n"),
        (Language::Rust, "fn drive(agent: &mut Agent) {\n    for _ in 0..MAX_TURNS {\n        let plan = agent.plan();\n        agent.act(&plan);\n    }\n}\n"),
        (Language::Bash, "for i in $(seq 1 \"$MAX_ITERATIONS\"); do\n  plan=$(claude -p \"$(cat PROMPT.md)\")\n  echo \"$plan\" >> log.md\ndone\n"),
    ];
    for (language, source) in cases {
        let (report, fixed) = fix_of(language, source, ExitId::E5);
        assert!(report.warnings.iter().any(|w| w.code == "no-completion-check"), "{language}: warned");
        let again = audit(&fixed, None, Some(language));
        assert!(again.found().contains(&ExitId::E5), "{language}: detects no progress\n{fixed}");
        assert!(again.found().contains(&ExitId::E2), "{language}: keeps its cap\n{fixed}");
        assert_eq!(again.verdict.as_str(), "CONVERGES", "{language}\n{fixed}");
    }
}

#[test]
fn a_fix_is_a_diff_of_whole_lines_with_fresh_names() {
    // `turns` is taken: the cap uses another name.
    let source = "turns = []\nwhile True:\n    reply = agent.step()\n    turns.append(reply)\n    if reply.done:\n        break\n";
    let (report, fixed) = fix_of(Language::Python, source, ExitId::E2);
    let fix = &report.fixes[0];
    assert!(fixed.contains("agent_turns += 1"), "{fixed}");
    assert!(fix.diff.starts_with("--- a\n+++ b\n@@ "), "{}", fix.diff);
    assert!(fix.diff.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).count() >= 4);
    assert!(fix.edits.iter().all(|e| e.start_byte == e.end_byte && e.text.ends_with('\n')));
    // A loop with nothing to cap (UNDEFINED) and a bounded one get none.
    assert!(audit("while True:\n    step()\n", None, Some(Language::Python)).fixes.is_empty());
    let bounded = "for turn in range(40):\n    reply = agent.step()\n    if reply.done:\n        break\n";
    assert!(audit(bounded, None, Some(Language::Python)).fixes.is_empty());
}

#[test]
fn every_fix_over_the_hand_written_sets_re_audits_as_promised() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let mut problems = Vec::new();
    let mut fixes = 0;
    for folder in ["loops", "holdout"] {
        let mut entries: Vec<_> =
            std::fs::read_dir(root.join(folder)).expect("eval folder").flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().to_string();
            let Ok(source) = std::fs::read_to_string(entry.path()) else { continue };
            let Some(language) = detect_language(Some(&name), &source) else { continue };
            let report = audit(&source, Some(&name), Some(language));
            fixes += report.fixes.len();
            problems.extend(check_fixes(&name, &source, language, &report));
        }
    }
    assert!(fixes >= 10, "only {fixes} fixes suggested over the hand-written sets");
    assert!(problems.is_empty(), "{} of {fixes} fixes fail:\n{}", problems.len(), problems.join("\n"));
}
