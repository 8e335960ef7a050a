//! Identifier words: `maxIterations`, `MAX_ITERS` and `max_iterations` are one
//! name. Identifiers are split at underscores, digits-to-letters boundaries and
//! camelCase humps, lowercased, and then mapped onto a small canonical
//! vocabulary so that the rules can ask "is there a turn-like word here?"
//! without listing every spelling.

use std::sync::LazyLock;

use crate::facts::HashMap;

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
    // A hash lookup: matching against every spelling in turn cost more than
    // the rest of splitting an identifier.
    static SPELLINGS: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
        VOCABULARY
            .iter()
            .flat_map(|(canonical, spellings)| spellings.iter().map(move |s| (*s, *canonical)))
            .collect()
    });
    SPELLINGS.get(word).copied().unwrap_or(word)
}

/// The canonical vocabulary: each canonical word and the spellings that map
/// onto it (a spelling appears once in the whole table).
const VOCABULARY: &[(&str, &[&str])] = &[
    ("iter", &["iter", "iters", "iteration", "iterations", "itr"]),
    ("turn", &["turn", "turns"]),
    ("step", &["step", "steps"]),
    ("round", &["round", "rounds", "epoch", "epochs", "hop", "hops", "generation", "generations"]),
    ("attempt", &["attempt", "attempts", "tries", "try", "retry", "retries", "retrying"]),
    ("max", &["max", "maximum", "limit", "limits", "cap", "ceiling", "upto"]),
    ("token", &["token", "tokens", "tok", "toks"]),
    (
        "cost",
        &[
            "cost", "costs", "usd", "dollar", "dollars", "spend", "spent", "spending", "price", "money",
            "cents", "credit", "credits", "billing",
        ],
    ),
    ("budget", &["budget", "budgets"]),
    (
        "time",
        &[
            "time",
            "elapsed",
            "duration",
            "seconds",
            "secs",
            "sec",
            "second",
            "minute",
            "minutes",
            "mins",
            "hour",
            "hours",
            "clock",
            "monotonic",
            "now",
            "wall",
            "runtime",
            "instant",
            "since",
        ],
    ),
    ("deadline", &["deadline", "deadlines", "expire", "expired", "expires", "expiry", "ttl"]),
    ("timeout", &["timeout", "timeouts"]),
    (
        "error",
        &[
            "error",
            "errors",
            "err",
            "errs",
            "fail",
            "fails",
            "failure",
            "failures",
            "failed",
            "failing",
            "exception",
            "exceptions",
            "crash",
            "crashes",
            "strike",
            "strikes",
        ],
    ),
    ("breaker", &["breaker", "circuit", "tripped"]),
    (
        "done",
        &[
            "done",
            "finish",
            "finished",
            "finishes",
            "complete",
            "completed",
            "completion",
            "success",
            "successful",
            "succeeded",
            "succeed",
            "solved",
            "converged",
            "converge",
            "resolved",
            "accomplished",
            "satisfied",
            "terminate",
        ],
    ),
    ("pass", &["pass", "passed", "passes", "passing", "green"]),
    ("goal", &["goal", "goals", "objective"]),
    (
        "queue",
        &[
            "queue",
            "queues",
            "todo",
            "todos",
            "pending",
            "backlog",
            "frontier",
            "worklist",
            "tasks",
            "jobs",
            "remaining",
            "work",
        ],
    ),
    ("prev", &["prev", "previous", "last", "old", "before", "prior", "earlier"]),
    ("seen", &["seen", "visited", "history", "recent", "recently"]),
    (
        "hash",
        &[
            "hash",
            "hashes",
            "digest",
            "digests",
            "hexdigest",
            "fingerprint",
            "checksum",
            "sha",
            "sha1",
            "sha256",
            "md5",
            "blake3",
        ],
    ),
    (
        "stall",
        &[
            "stall",
            "stalled",
            "stalls",
            "stagnant",
            "stagnation",
            "plateau",
            "patience",
            "stuck",
            "unchanged",
            "repeat",
            "repeated",
            "repeats",
            "repetition",
            "cycle",
            "cycles",
            "cycling",
            "oscillation",
            "oscillating",
            "loop_detected",
        ],
    ),
    (
        "change",
        &["progress", "changed", "change", "changes", "diff", "delta", "improvement", "improved", "improve"],
    ),
    (
        "approve",
        &[
            "approve",
            "approved",
            "approval",
            "confirm",
            "confirmed",
            "confirmation",
            "consent",
            "escalate",
            "escalation",
            "escalated",
            "human",
            "operator",
            "reviewer",
        ],
    ),
    ("input", &["input", "readline"]),
    ("interrupt", &["interrupt", "sigint", "interrupted"]),
    (
        "cancel",
        &[
            "cancel",
            "cancelled",
            "canceled",
            "cancellation",
            "abort",
            "aborted",
            "shutdown",
            "sigterm",
            "sighup",
            "sigusr1",
            "sigquit",
            "kill",
            "halt",
        ],
    ),
    (
        "test",
        &[
            "test",
            "tests",
            "pytest",
            "jest",
            "vitest",
            "mocha",
            "lint",
            "verify",
            "verified",
            "validate",
            "validation",
            "ci",
        ],
    ),
    ("len", &["len", "length", "size", "count"]),
    ("empty", &["empty", "isempty"]),
];

/// The canonical words of one identifier.
pub(crate) fn canonical_words(text: &str) -> Vec<String> {
    // Most words are their own canonical form: keep their allocation.
    split_identifier(text)
        .into_iter()
        .map(|word| {
            let canonical_form = canonical(&word);
            if canonical_form == word {
                word
            } else {
                canonical_form.to_string()
            }
        })
        .collect()
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
    fn canonical_words_are_their_own_canonical_form() {
        // A canonical word listed as another word's spelling would make the
        // mapping depend on how many times it is applied.
        for (canonical_form, spellings) in VOCABULARY {
            assert_eq!(canonical(canonical_form), *canonical_form);
            for spelling in *spellings {
                assert_eq!(canonical(spelling), *canonical_form, "{spelling}");
            }
        }
        assert_eq!(canonical("unlisted"), "unlisted");
    }

    #[test]
    fn spellings_share_a_canonical_word() {
        for name in ["maxIterations", "MAX_ITERS", "max_iterations"] {
            assert_eq!(canonical_words(name), ["max", "iter"], "{name}");
        }
        assert_eq!(canonical_words("consecutiveFailures"), ["consecutive", "error"]);
    }
}
