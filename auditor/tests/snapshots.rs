//! Snapshots of the text report (the annotated output a reader sees) for one
//! evaluation loop per language and style, and of the JSON contract.

use std::path::Path;

use auditor::{audit, render_sarif, render_text, Report};

fn eval_source(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval/loops").join(file);
    std::fs::read_to_string(path).expect("evaluation file exists")
}

fn text_of(file: &str) -> String {
    render_text(&Report::from(audit(&eval_source(file), Some(file), None)))
}

#[test]
fn text_reports() {
    for file in [
        "py_openai_tool_loop.py",
        "py_stale_prev.py",
        "lg_router_recursion_limit.py",
        "aisdk_hastoolcall.ts",
        "js_raw_loop.js",
        "bash_ralph.sh",
        "go_agent_ctx.go",
        "rs_agent_loop.rs",
    ] {
        insta::assert_snapshot!(file, text_of(file));
    }
}

#[test]
fn json_contract() {
    let report = Report::from(audit(&eval_source("py_anthropic_stop_reason.py"), Some("agent.py"), None));
    let json = serde_json::to_string_pretty(&report).expect("a report serialises");
    insta::assert_snapshot!("json_contract", json);
    let value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    // The shape PRODUCT.md fixes: every key present, all eight exits in order.
    for key in ["files", "verdict", "exit_code"] {
        assert!(value.get(key).is_some(), "missing {key}");
    }
    let file = &value["files"][0];
    for key in ["path", "language", "loops", "exits", "verdict", "warnings"] {
        assert!(file.get(key).is_some(), "missing files[0].{key}");
    }
    let ids: Vec<&str> =
        file["exits"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8"]);
    for exit in file["exits"].as_array().unwrap() {
        for key in ["id", "label", "kind", "found", "evidence"] {
            assert!(exit.get(key).is_some(), "missing exit.{key}");
        }
    }
    let evidence = &file["exits"][0]["evidence"][0];
    for key in ["start_line", "end_line", "code"] {
        assert!(evidence.get(key).is_some(), "missing evidence.{key}");
    }
}

#[test]
fn sarif_has_the_required_shape() {
    let report = Report::from_files(vec![
        audit(&eval_source("py_openai_tool_loop.py"), Some("a.py"), None),
        audit(&eval_source("py_unbounded_while.py"), Some("b.py"), None),
    ]);
    let sarif = render_sarif(&report);
    assert_eq!(sarif["version"], "2.1.0");
    assert!(sarif["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let rule_ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for id in ["E1", "E8", "verdict", "infinite-loop-without-exit"] {
        assert!(rule_ids.contains(&id), "rule {id} missing from {rule_ids:?}");
    }
    let results = run["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for result in results {
        assert!(rule_ids.contains(&result["ruleId"].as_str().unwrap()));
        assert!(["note", "warning", "error"].contains(&result["level"].as_str().unwrap()));
        assert!(result["message"]["text"].is_string());
        let region = &result["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().unwrap() >= 1);
        assert!(region["endLine"].as_u64().unwrap() >= region["startLine"].as_u64().unwrap());
    }
    assert!(results.iter().any(|r| r["level"] == "error"
        && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "b.py"));
}

#[test]
fn report_takes_the_worst_verdict() {
    let good = audit(&eval_source("py_openai_tool_loop.py"), Some("a.py"), None);
    let bounded = audit(&eval_source("oa_runner_max_turns.py"), Some("b.py"), None);
    let report = Report::from_files(vec![good.clone(), bounded]);
    assert_eq!(report.verdict.as_str(), "DIVERGES");
    assert_eq!(report.exit_code, 1);
    assert_eq!(Report::from(good).exit_code, 0);
    assert_eq!(Report::from_files(Vec::new()).exit_code, 2);
}

#[test]
fn sarif_uris_are_percent_encoded_uri_references() {
    use auditor::uri_reference;
    assert_eq!(uri_reference("src/agent loop.py"), "src/agent%20loop.py");
    assert_eq!(uri_reference("a#b%c.py"), "a%23b%25c.py");
    assert_eq!(uri_reference("Schleife/übung.py"), "Schleife/%C3%BCbung.py");
    assert_eq!(uri_reference("C:\\work\\loop.py"), "C%3A/work/loop.py");
    let file = audit("while True:\n    if done():\n        break\n", Some("my loop #2.py"), None);
    let sarif = render_sarif(&Report::from_files(vec![file]));
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for result in results {
        let uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].as_str().unwrap();
        assert_eq!(uri, "my%20loop%20%232.py");
    }
}
