//! Identifier words: `maxIterations`, `MAX_ITERS` and `max_iterations` are one
//! name. Identifiers are split at underscores, digits-to-letters boundaries and
//! camelCase humps, lowercased, and then mapped onto a small canonical
//! vocabulary so that the rules can ask "is there a turn-like word here?"
//! without listing every spelling.

/// Whether `text` holds `part`, ASCII case aside, without allocating.
pub(crate) fn contains_ignoring_case(text: &str, part: &str) -> bool {
    // (Asked of most names a file holds, most often for a part they lack:
    // the rest of a window is compared only where its first byte matches.)
    let (text, part) = (text.as_bytes(), part.as_bytes());
    let Some((first, rest)) = part.split_first() else { return true };
    let first = first.to_ascii_lowercase();
    text.len() >= part.len()
        && (0..=text.len() - part.len()).any(|at| {
            text[at].to_ascii_lowercase() == first && text[at + 1..at + part.len()].eq_ignore_ascii_case(rest)
        })
}

/// Whether a counted loop's condition holds its index against the length
/// or count of a collection (`i < len(g.Files)`, `i < items.length`, `i <
/// PROJECT_COUNT`), not against a maximum of turns: the loop walks a list.
/// (Asked of every counted loop's condition: the words are split only when
/// the text names a length at all.)
pub(crate) fn counts_to_a_length(condition: &str) -> bool {
    if condition.len() > 120
        || !["len", "count", "size"].iter().any(|part| contains_ignoring_case(condition, part))
    {
        return false;
    }
    let words = split_identifier(condition);
    let counts_items = words.iter().any(|w| matches!(w.as_str(), "length" | "len" | "count" | "size"));
    let counts_turns = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "max"
                | "maximum"
                | "limit"
                | "iter"
                | "iters"
                | "iteration"
                | "iterations"
                | "turn"
                | "turns"
                | "step"
                | "steps"
                | "round"
                | "rounds"
                | "attempt"
                | "attempts"
                | "retry"
                | "retries"
                | "try"
                | "tries"
        )
    });
    counts_items && !counts_turns
}

/// Splits one identifier (or any code token) into lowercase words.
pub(crate) fn split_identifier(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    // The character before `ch` in the text, whatever it is.
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if !ch.is_alphanumeric() {
            flush(&mut current, &mut words);
            previous = Some(ch);
            continue;
        }
        if ch.is_uppercase() && !current.is_empty() {
            // `current` holds a character, so there was one before this.
            let previous = previous.unwrap_or(' ');
            let next_is_lower = chars.peek().is_some_and(|c| c.is_lowercase());
            if previous.is_lowercase()
                || previous.is_ascii_digit()
                || (previous.is_uppercase() && next_is_lower)
            {
                flush(&mut current, &mut words);
            }
        }
        if ch.is_ascii() {
            current.push(ch.to_ascii_lowercase());
        } else {
            current.extend(ch.to_lowercase());
        }
        previous = Some(ch);
    }
    flush(&mut current, &mut words);
    words
}

fn flush(current: &mut String, words: &mut Vec<String>) {
    if !current.is_empty() {
        words.push(std::mem::take(current));
    }
}

/// Maps a lowercase word onto the canonical vocabulary the rules speak. Words
/// outside the vocabulary are returned unchanged.
pub(crate) fn canonical(word: &str) -> &str {
    match word {
        "iter" | "iters" | "iteration" | "iterations" | "itr" => "iter",
        "turn" | "turns" => "turn",
        "tool" | "tools" => "tool",
        "submit" | "submits" | "submitted" | "submitting" | "submission" => "submit",
        "step" | "steps" => "step",
        "round" | "rounds" | "epoch" | "epochs" | "hop" | "hops" | "generation" | "generations" => "round",
        "attempt" | "attempts" | "tries" | "try" | "retry" | "retries" | "retrying" => "attempt",
        "max" | "maximum" | "limit" | "limits" | "cap" | "ceiling" | "upto" => "max",
        "token" | "tokens" | "tok" | "toks" | "tokenize" | "tokenized" | "tokenizer" | "tiktoken" => "token",
        "cost" | "costs" | "usd" | "dollar" | "dollars" | "spend" | "spent" | "spending" | "price"
        | "money" | "cents" | "credit" | "credits" | "billing" | "funds" | "balance" => "cost",
        "budget" | "budgets" => "budget",
        "time" | "elapsed" | "duration" | "seconds" | "secs" | "sec" | "second" | "minute" | "minutes"
        | "mins" | "hour" | "hours" | "clock" | "monotonic" | "now" | "wall" | "instant" | "since" => "time",
        "deadline" | "deadlines" | "expire" | "expired" | "expires" | "expiry" | "ttl" => "deadline",
        "timeout" | "timeouts" => "timeout",
        "error" | "errors" | "err" | "errs" | "fail" | "fails" | "failure" | "failures" | "failed"
        | "failing" | "exception" | "exceptions" | "crash" | "crashes" | "strike" | "strikes" | "mistake"
        | "mistakes" => "error",
        "breaker" | "circuit" | "tripped" => "breaker",
        "unfinished" | "incomplete" | "undone" | "unresolved" | "unsolved" | "unprocessed" => "unfinished",
        "done" | "finish" | "finished" | "finishes" | "complete" | "completed" | "completion" | "success"
        | "successful" | "succeeded" | "succeed" | "solved" | "converged" | "converge" | "resolved"
        | "accomplished" | "satisfied" | "terminate" | "terminated" | "termination" | "terminating"
        | "terminal" | "sufficient" | "enough" | "winner" | "won" | "consensus" => "done",
        "pass" | "passed" | "passes" | "passing" | "green" | "correct" | "valid" | "asserted" => "pass",
        "stop" | "stops" | "stopped" | "stopping" => "stop",
        "finding" | "findings" | "issue" | "issues" | "problem" | "problems" | "violation" | "violations"
        | "suggestion" | "suggestions" | "complaint" | "complaints" | "critique" | "critiques"
        | "feedback" | "correction" | "corrections" | "notes" | "reflected" | "reflection" | "blocking"
        | "blocker" | "blockers" | "severity" | "defect" | "defects" | "bug" | "bugs" | "diagnostics" => {
            "issue"
        }
        "goal" | "goals" | "objective" => "goal",
        "finalized" | "finalised" | "finalize" | "finalise" => "final",
        "queue" | "queues" | "queued" | "dequeue" | "dequeued" | "todo" | "todos" | "pending" | "backlog"
        | "frontier" | "worklist" | "tasks" | "stack" | "jobs" | "remaining" | "work" => "queue",
        "prev" | "previous" | "last" | "old" | "before" | "prior" | "earlier" => "prev",
        "seen" | "visited" | "history" | "recent" | "recently" => "seen",
        "hash" | "hashes" | "digest" | "digests" | "hexdigest" | "fingerprint" | "checksum" | "sha"
        | "sha1" | "sha256" | "md5" | "blake3" => "hash",
        "stall" | "stalled" | "stalls" | "stagnant" | "stagnation" | "plateau" | "patience" | "stuck"
        | "stuckness" | "unchanged" | "repeat" | "repeated" | "repeats" | "repetition" | "oscillation"
        | "oscillating" | "looping" | "doom" | "repetitive" | "repeating" => "stall",
        "progress" | "changed" | "change" | "changes" | "diff" | "improvement" | "improved" | "improve"
        | "corrected" => "change",
        "approve" | "approved" | "approval" | "approvals" | "approves" | "approving" => "approve",
        "confirm" | "confirmed" | "confirmation" | "consent" | "permission" | "permissions" => "confirm",
        "reject" | "rejected" | "rejects" | "rejection" | "deny" | "denied" | "denies" | "denial"
        | "decline" | "declined" | "declines" => "reject",
        "escalate" | "escalation" | "escalated" => "escalate",
        "human" | "operator" | "user" | "users" => "human",
        "reviewer" | "review" | "reviews" | "critic" | "judge" | "evaluator" | "grader" | "verifier" => {
            "critic"
        }
        "input" | "readline" | "stdin" | "question" => "input",
        "interrupt" | "interrupted" | "interrupts" => "interrupt",
        "detect" | "detects" | "detector" | "detected" | "detection" => "detect",
        "cancel" | "cancelled" | "canceled" | "cancellation" | "abort" | "aborted" | "shutdown"
        | "sigterm" | "sighup" | "sigusr1" | "sigquit" | "kill" | "killed" | "halt" => "cancel",
        "test" | "tests" | "pytest" | "jest" | "vitest" | "mocha" | "lint" | "verify" | "verified"
        | "validate" | "validation" | "ci" => "test",
        "len" | "length" | "size" | "count" => "len",
        "empty" | "isempty" | "drained" => "empty",
        other => other,
    }
}

/// A word written as two with no break between them (`$STOPFILE`,
/// `KILLFILE`): its parts.
fn compound(word: &str) -> Option<&'static [&'static str]> {
    match word {
        "stopfile" => Some(&["stop", "file"]),
        "killfile" => Some(&["kill", "file"]),
        "haltfile" => Some(&["halt", "file"]),
        "pausefile" => Some(&["pause", "file"]),
        _ => None,
    }
}

/// The canonical words of one identifier.
pub(crate) fn canonical_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in split_identifier(text) {
        if let Some(parts) = compound(&word) {
            out.extend(parts.iter().map(|part| canonical(part).to_string()));
            continue;
        }
        // Most words are their own canonical form: keep their allocation.
        let canonical_form = canonical(&word);
        out.push(if canonical_form == word { word } else { canonical_form.to_string() });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &[&str]) {
        assert_eq!(split_identifier(input), expected, "splitting {input:?}");
    }

    #[test]
    fn identifiers_split_into_words() {
        check("maxIterations", &["max", "iterations"]);
        check("MAX_ITERS", &["max", "iters"]);
        check("max_iterations", &["max", "iterations"]);
        check("HTTPServer", &["http", "server"]);
        check("sha256", &["sha256"]);
        check("KeyboardInterrupt", &["keyboard", "interrupt"]);
        check("self.last_digest", &["self", "last", "digest"]);
    }

    #[test]
    fn a_part_is_found_whatever_its_case() {
        assert!(contains_ignoring_case("MaxBudgetUsd", "budget"));
        assert!(contains_ignoring_case("budget", "budget"));
        assert!(contains_ignoring_case("x", ""));
        assert!(!contains_ignoring_case("budge", "budget"));
        assert!(!contains_ignoring_case("", "a"));
        assert!(contains_ignoring_case("USER_CANCELLED", "cancel"));
        assert!(!contains_ignoring_case("naïve", "ive"));
        assert!(contains_ignoring_case("naïveLLM", "llm"));
    }

    #[test]
    fn spellings_share_a_canonical_word() {
        for name in ["maxIterations", "MAX_ITERS", "max_iterations"] {
            assert_eq!(canonical_words(name), ["max", "iter"], "{name}");
        }
        assert_eq!(canonical_words("consecutiveFailures"), ["consecutive", "error"]);
        assert_eq!(canonical_words("$STOPFILE"), canonical_words("STOP_FILE"));
    }

    #[test]
    fn an_index_held_to_a_collections_length_walks_a_list() {
        for walk in ["i < len(g.Files)+1", "i < items.length", "i < PROJECT_COUNT", "i < queue.size()"] {
            assert!(counts_to_a_length(walk), "{walk}");
        }
        // A cap of turns, however it is spelled, and a bare bound.
        for cap in
            ["turn < maxTurns", "sprint <= run.totalSprints", "i < len(history) && i < maxSteps", "i < n"]
        {
            assert!(!counts_to_a_length(cap), "{cap}");
        }
    }
}
