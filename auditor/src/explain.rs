//! One plain sentence on why a file got its verdict: what the page shows
//! under the verdict and what the Markdown report quotes. A DIVERGES loop is
//! told what it lacks, not only what it has.

use crate::report::FileReport;
use crate::{ExitKind, Verdict};

/// Why `file` got its verdict, in one sentence.
pub fn explain_verdict(file: &FileReport) -> String {
    let labels = |kind: ExitKind| -> Vec<String> {
        file.exits
            .iter()
            .filter(|exit| exit.found && exit.kind == kind)
            .map(|exit| format!("{} ({})", exit.label, exit.id.as_str()))
            .collect()
    };
    let detect = labels(ExitKind::Detect);
    let bound = labels(ExitKind::Bound);
    let external = labels(ExitKind::External);
    let loops = match file.loops.len() {
        0 => "no loop was found, and ".to_string(),
        _ => String::new(),
    };
    match file.verdict {
        Verdict::Converges => format!(
            "It can tell that it has finished: it leaves on {}.",
            join(&detect)
        ),
        Verdict::Diverges => format!(
            "It stops on {} but cannot tell that it has finished: add a goal check (E1) or a no-progress check (E5).",
            join(&bound)
        ),
        Verdict::Undefined if file.language.is_none() => {
            "The language could not be recognised, so nothing was read: pick it from the list.".to_string()
        }
        Verdict::Undefined if !external.is_empty() => format!(
            "Only {} can end it, and those come from outside: {}nothing in the code bounds it or judges it done.",
            join(&external),
            loops
        ),
        Verdict::Undefined => {
            let start = if loops.is_empty() {
                "Nothing in the code bounds it or judges it done"
            } else {
                "No loop was found, and nothing in the code bounds or ends one"
            };
            format!("{start}: it runs until something outside kills it.")
        }
    }
}

fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {}", init.join(", "), last),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ExitReport, LoopReport};
    use crate::ExitId;

    fn file(found: &[ExitId], loops: usize, language: Option<&str>) -> FileReport {
        let exits = ExitId::ALL
            .iter()
            .map(|&id| ExitReport {
                id,
                label: id.label().to_string(),
                kind: id.kind(),
                found: found.contains(&id),
                evidence: Vec::new(),
            })
            .collect();
        let loop_report = LoopReport {
            kind: "while".into(),
            start_line: 1,
            end_line: 2,
            code: "while True:".into(),
            framework: None,
            start_byte: 0,
            end_byte: 10,
        };
        FileReport {
            path: None,
            language: language.map(str::to_string),
            loops: vec![loop_report; loops],
            exits,
            verdict: Verdict::of(found.iter().copied()),
            warnings: Vec::new(),
            fixes: Vec::new(),
        }
    }

    fn check(found: &[ExitId], loops: usize, language: Option<&str>, expected: &str) {
        assert_eq!(explain_verdict(&file(found, loops, language)), expected, "exits {found:?}");
    }

    #[test]
    fn each_verdict_says_why() {
        check(
            &[ExitId::E1, ExitId::E2],
            1,
            Some("python"),
            "It can tell that it has finished: it leaves on goal met (E1).",
        );
        check(
            &[ExitId::E2, ExitId::E4],
            1,
            Some("python"),
            "It stops on turn cap (E2) and wall clock (E4) but cannot tell that it has finished: \
             add a goal check (E1) or a no-progress check (E5).",
        );
        check(
            &[ExitId::E6],
            1,
            Some("go"),
            "Only human interrupt (E6) can end it, and those come from outside: \
             nothing in the code bounds it or judges it done.",
        );
        check(
            &[],
            1,
            Some("bash"),
            "Nothing in the code bounds it or judges it done: it runs until something outside kills it.",
        );
        check(
            &[],
            0,
            Some("bash"),
            "No loop was found, and nothing in the code bounds or ends one: it runs until something outside kills it.",
        );
        check(
            &[],
            0,
            None,
            "The language could not be recognised, so nothing was read: pick it from the list.",
        );
    }
}
