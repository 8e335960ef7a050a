//! From journal entries to rounds of the ingest contract, following the
//! mapping LOOP-PROTOCOL.md suggests.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::journal::{JournalEntry, LoopDir};

/// A round ready to send, with the entry it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRound {
    pub round: u32,
    /// The line of the entry's heading in `journal.md`.
    pub line: usize,
    pub body: Value,
}

/// The run id the rounds of this directory go to: `run_id` (or `run`) from
/// `state.json`, else a digest of the first entry's heading, so that the id
/// stays the same across pushes and changes when the journal starts over.
pub fn run_id_of(dir: &LoopDir) -> Option<String> {
    if let Some(run) = dir.state_text("run_id").or_else(|| dir.state_text("run")) {
        let run = run.trim().to_string();
        if !run.is_empty() && run.chars().count() <= 128 {
            return Some(run);
        }
    }
    let first = dir.entries.first()?;
    let digest = hex::encode(Sha256::digest(first.heading.as_bytes()));
    Some(format!("journal-{}", &digest[..12]))
}

/// Every readable entry as a round. Only the last entry can carry the
/// run's exit, because `state.json` describes the loop as it is now.
pub fn rounds_of(dir: &LoopDir) -> Vec<PlannedRound> {
    let run = run_id_of(dir);
    let last = dir.entries.len().saturating_sub(1);
    dir.entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let described = index == last && describes(dir, entry);
            let exit = if described { exit_of(dir, entry) } else { None };
            let mut body = json!({
                "round": entry.iteration,
                "state": state_of(entry),
                "findings": findings_of(entry),
                "exit": exit,
            });
            if let Some(run) = &run {
                body["run"] = json!(run);
            }
            if let Some(spent) = entry.spent.as_deref().and_then(spent_of) {
                body["spent"] = spent;
            }
            let ratchet = described.then(|| ratchet_in_state(dir)).flatten().or_else(|| {
                entry.ratchet.as_deref().and_then(ratchet_moved_to).map(|value| json!({"value": value}))
            });
            if let Some(ratchet) = ratchet {
                body["ratchet"] = ratchet;
            }
            PlannedRound { round: entry.iteration, line: entry.line, body }
        })
        .collect()
}

/// Whether `state.json` describes the loop as it was after `entry` (the
/// last one): its `iteration` is the entry's, or it names none.
fn describes(dir: &LoopDir, entry: &JournalEntry) -> bool {
    dir.state_number(&["iteration"]).is_none_or(|iteration| iteration as u32 == entry.iteration)
}

/// `state.json`'s ratchet as the contract's object: its value, best and
/// stall count, when it has a numeric value.
fn ratchet_in_state(dir: &LoopDir) -> Option<Value> {
    let value = dir.state_number(&["ratchet", "value"])?;
    let mut ratchet = json!({"value": value});
    if let Some(best) = dir.state_number(&["ratchet", "best"]) {
        ratchet["best"] = json!(best);
    }
    if let Some(stalls) =
        dir.state_number(&["ratchet", "stall_count"]).filter(|n| *n >= 0.0 && n.fract() == 0.0)
    {
        ratchet["stall_count"] = json!(stalls as u64);
    }
    Some(ratchet)
}

/// The value a journal's `Ratchet:` line moved to: the number after the
/// last arrow in "41 -> 43" (or "41 → 43"), else the line's first number.
fn ratchet_moved_to(text: &str) -> Option<f64> {
    let after = text.rsplit('→').next().unwrap_or(text);
    let after = after.rsplit("->").next().unwrap_or(after);
    after
        .split(|character: char| !(character.is_ascii_digit() || matches!(character, '.' | '-')))
        .filter_map(|word| word.trim_matches('.').parse::<f64>().ok())
        .find(|number| number.is_finite())
}

/// The exit that ended the loop, when `state.json` says it has ended (for
/// the iteration it describes): done is E1 (goal met), stalled E5 (no
/// progress), an exhausted iteration budget E2 (turn cap).
fn exit_of(dir: &LoopDir, entry: &JournalEntry) -> Option<&'static str> {
    match dir.state_text("status").as_deref().map(str::to_lowercase).as_deref() {
        Some("done") => return Some("E1"),
        Some("stalled") => return Some("E5"),
        _ => {}
    }
    let max = dir.state_number(&["budget", "max_iterations"])?;
    (f64::from(entry.iteration) >= max).then_some("E2")
}

/// The state judged this iteration: the commit the entry names, else a
/// digest of what it did and what verification said.
pub fn state_of(entry: &JournalEntry) -> String {
    let named = [&entry.commit, &entry.did, &entry.verify]
        .into_iter()
        .flatten()
        .find_map(|text| commit_hash_in(text));
    if let Some(commit) = named {
        return commit;
    }
    let text = format!(
        "{}\n{}",
        entry.did.as_deref().unwrap_or_default(),
        entry.verify.as_deref().unwrap_or_default()
    );
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

/// A word of 7 to 40 hex digits with both a digit and a letter in it, which
/// is how commit hashes look in prose and how ordinary words do not.
fn commit_hash_in(text: &str) -> Option<String> {
    text.split(|character: char| !character.is_ascii_alphanumeric()).find_map(|word| {
        let hex = (7..=40).contains(&word.len())
            && word.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
        let mixed = word.bytes().any(|byte| byte.is_ascii_digit())
            && word.bytes().any(|byte| byte.is_ascii_alphabetic());
        (hex && mixed).then(|| word.to_string())
    })
}

/// Failing tests or checks named in `Verify` become blocking findings; a
/// failure without names becomes one blocking finding on the verification
/// itself; each flag becomes a warning.
pub fn findings_of(entry: &JournalEntry) -> Vec<Value> {
    let mut findings = Vec::new();
    let mut named = Vec::new();
    if let Some(verify) = entry.verify.as_deref() {
        for line in verify.lines() {
            named.extend(failing_names(line));
        }
        // One finding per check, once, in the order named.
        let mut seen = std::collections::HashSet::new();
        named.retain(|(name, _)| seen.insert(name.clone()));
        for (name, how) in &named {
            findings.push(json!({
                "target": {"id": format!("test:{name}")},
                "severity": "blocking",
                "criterion": "verify",
                "message": format!("{name} {how}"),
            }));
        }
        if named.is_empty() && reports_failure(verify) {
            findings.push(json!({
                "target": {"id": "verify"},
                "severity": "blocking",
                "criterion": "verify",
                "message": verify.lines().next().unwrap_or_default(),
            }));
        }
    }
    if let Some(flags) = entry.flags.as_deref() {
        for flag in flags.split([',', ';', '\n']).map(str::trim) {
            let lower = flag.to_lowercase();
            if flag.is_empty() || matches!(lower.as_str(), "none" | "-" | "n/a" | "—") {
                continue;
            }
            findings.push(json!({
                "target": {"id": format!("flag:{}", slug(flag))},
                "severity": "warning",
                "criterion": "flag",
                "message": flag,
            }));
        }
    }
    findings
}

/// Names after `FAILED`, `FAIL`, `failing:`, `failed:`, `missing:` or a
/// cross mark, each with how the line says it failed (`failed`,
/// `missing`). "missing: audit, push, import" is three checks: when one of
/// them passes, the next round is progress, not a stall.
fn failing_names(line: &str) -> Vec<(String, &'static str)> {
    let trimmed = line.trim();
    let failed = |name: String| (name, "failed");
    for mark in ['✗', '❌', '✘'] {
        if let Some(rest) = trimmed.strip_prefix(mark) {
            return first_word(rest).into_iter().map(failed).collect();
        }
    }
    for marker in ["FAILED ", "FAIL "] {
        if let Some(position) = trimmed.find(marker) {
            return first_word(&trimmed[position + marker.len()..]).into_iter().map(failed).collect();
        }
    }
    let lower = trimmed.to_lowercase();
    for (marker, how) in
        [("failing:", "failed"), ("failed:", "failed"), ("failures:", "failed"), ("missing:", "missing")]
    {
        if let Some(position) = lower.find(marker) {
            return trimmed[position + marker.len()..]
                .split([',', ' ', ';'])
                .map(|name| name.trim().trim_matches(['`', '"', '\'', '.', '(', ')']))
                .filter(|name| !name.is_empty() && !name.chars().all(|character| character.is_ascii_digit()))
                .map(|name| (name.to_string(), how))
                .collect();
        }
    }
    Vec::new()
}

fn first_word(text: &str) -> Option<String> {
    let word = text.split_whitespace().next()?.trim_matches(['`', '"', '\'', ',', '.']);
    (!word.is_empty()).then(|| word.to_string())
}

/// Whether a verification output says something failed without naming it:
/// a non-zero exit code, or a positive count of failures or errors.
fn reports_failure(verify: &str) -> bool {
    let lower = verify.to_lowercase();
    let words: Vec<&str> = lower
        .split(|character: char| !character.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    words.windows(2).any(|pair| {
        let count = pair[0].parse::<u64>().ok();
        let (first, second) = (pair[0], pair[1]);
        (count.is_some_and(|count| count > 0)
            && matches!(second, "failed" | "failing" | "failures" | "errors" | "error"))
            || (matches!(first, "exit" | "rc" | "code") && second.parse::<u64>().is_ok_and(|code| code != 0))
    })
}

/// A flag's text as a stable identifier: lowercase words joined by dashes.
fn slug(text: &str) -> String {
    let words: Vec<String> = text
        .split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        // A flag made only of symbols (a lone cross mark) still needs a key.
        "mark".to_string()
    } else {
        words.join("-")
    }
}

/// `Spent:` text such as "12k tokens, $0.40, 95s" as the contract's object.
fn spent_of(text: &str) -> Option<Value> {
    let mut spent = serde_json::Map::new();
    let lower = text.to_lowercase();
    for part in lower.split([',', ';']) {
        let part = part.trim();
        if let Some(usd) = part.strip_prefix('$') {
            if let Ok(usd) = usd.trim().parse::<f64>() {
                spent.insert("usd".into(), json!(usd));
            }
        } else if let Some(tokens) = part.strip_suffix("tokens").or_else(|| part.strip_suffix("tok")) {
            let tokens = tokens.trim();
            let (digits, scale) = match tokens.strip_suffix('k') {
                Some(digits) => (digits, 1000.0),
                None => (tokens, 1.0),
            };
            if let Ok(tokens) = digits.trim().replace('_', "").parse::<f64>() {
                spent.insert("tokens".into(), json!((tokens * scale).round() as u64));
            }
        } else if let Some(minutes) = part.strip_suffix("min") {
            if let Ok(minutes) = minutes.trim().parse::<f64>() {
                spent.insert("seconds".into(), json!(minutes * 60.0));
            }
        } else if let Some(seconds) = part.strip_suffix('s') {
            if let Ok(seconds) = seconds.trim().parse::<f64>() {
                spent.insert("seconds".into(), json!(seconds));
            }
        }
    }
    (!spent.is_empty()).then_some(Value::Object(spent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(did: &str, verify: &str, flags: &str) -> JournalEntry {
        JournalEntry {
            iteration: 1,
            heading: "Iteration 1".into(),
            line: 1,
            did: Some(did.into()),
            verify: Some(verify.into()),
            flags: (!flags.is_empty()).then(|| flags.into()),
            ..JournalEntry::default()
        }
    }

    #[test]
    fn the_state_is_the_named_commit_or_a_digest_of_the_work() {
        assert_eq!(state_of(&entry("committed 3f9c2ab on main", "ok", "")), "3f9c2ab");
        let a = state_of(&entry("added a cache", "12 passed", ""));
        assert_eq!(a.len(), 16);
        assert_eq!(a, state_of(&entry("added a cache", "12 passed", "other flags do not count")));
        assert_ne!(a, state_of(&entry("added a cache", "13 passed", "")));
        // "added" and "decade" are hex letters only: not commits.
        assert_eq!(commit_hash_in("added a decade"), None);
    }

    #[test]
    fn failures_become_blocking_findings_and_flags_warnings() {
        let findings = findings_of(&entry(
            "x",
            "pytest: 2 failed, 10 passed\nFAILED tests/test_io.py::test_read - assert\nfailing: lint, typecheck",
            "❌ unit failed; overran time budget",
        ));
        let ids: Vec<&str> =
            findings.iter().map(|finding| finding["target"]["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [
                "test:tests/test_io.py::test_read",
                "test:lint",
                "test:typecheck",
                "flag:unit-failed",
                "flag:overran-time-budget"
            ]
        );
        // Each missing check is its own finding, named in its message.
        let missing = findings_of(&entry("x", "make gate: exit 2 (missing: audit, push, import)", ""));
        let ids: Vec<&str> =
            missing.iter().map(|finding| finding["target"]["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["test:audit", "test:push", "test:import"]);
        assert_eq!(missing[1]["message"], "push missing");
        let repeated = findings_of(&entry("x", "failing: lint\nFAILED lint", ""));
        assert_eq!(repeated.len(), 1, "a check named twice is one finding");
        let unnamed = findings_of(&entry("x", "cargo test: exit 101", ""));
        assert_eq!(unnamed.len(), 1);
        assert_eq!(unnamed[0]["severity"], "blocking");
        assert!(findings_of(&entry("x", "48 passed, 0 failed, exit 0", "none")).is_empty());
    }

    #[test]
    fn a_journal_ratchet_line_gives_the_value_it_moved_to() {
        assert_eq!(ratchet_moved_to("5 -> 6"), Some(6.0));
        assert_eq!(ratchet_moved_to("41 → 43 (best 43)"), Some(43.0));
        assert_eq!(ratchet_moved_to("-3 -> -1"), Some(-1.0));
        assert_eq!(ratchet_moved_to("87.5"), Some(87.5));
        assert_eq!(ratchet_moved_to("unchanged"), None);
    }

    #[test]
    fn spent_reads_tokens_dollars_and_time() {
        assert_eq!(
            spent_of("12k tokens, $0.40, 95s"),
            Some(json!({"tokens": 12000, "usd": 0.4, "seconds": 95.0}))
        );
        assert_eq!(spent_of("2 min"), Some(json!({"seconds": 120.0})));
        assert_eq!(spent_of("a lot"), None);
    }
}
