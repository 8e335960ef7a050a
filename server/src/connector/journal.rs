//! Reading a loop directory: `state.json`, `journal.md` and `STOP` files.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::ConnectorError;

/// Something in the directory that could not be read, named by file and
/// line (line 0 when the whole file is concerned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// One journal entry: an iteration's labelled lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalEntry {
    /// The iteration number from the entry's heading.
    pub iteration: u32,
    /// The heading's text without the `#` marks.
    pub heading: String,
    /// The line of the heading in `journal.md`, 1-based.
    pub line: usize,
    pub unit: Option<String>,
    pub did: Option<String>,
    pub verify: Option<String>,
    pub ratchet: Option<String>,
    pub next: Option<String>,
    pub flags: Option<String>,
    pub spent: Option<String>,
    pub commit: Option<String>,
}

/// A loop directory as read: what could be read, and what could not.
#[derive(Debug, Clone, Default)]
pub struct LoopDir {
    pub path: PathBuf,
    /// The loop's name: the directory's own name.
    pub name: String,
    /// `state.json` with every field, known or not; `None` when the file is
    /// missing or unreadable (then a problem says why).
    pub state: Option<Map<String, Value>>,
    /// The entries in journal order, malformed ones left out.
    pub entries: Vec<JournalEntry>,
    /// `STOP` in the directory or in its parent `.loop/`, if present.
    pub stop_file: Option<PathBuf>,
    pub problems: Vec<Problem>,
}

impl LoopDir {
    /// Reads the directory at `path`. Fails only when it is not a loop
    /// directory at all; everything else becomes a [`Problem`].
    pub fn read(path: &Path) -> Result<LoopDir, ConnectorError> {
        if !path.is_dir() {
            return Err(ConnectorError::NotALoopDir {
                path: path.to_path_buf(),
                reason: "no such directory".to_string(),
            });
        }
        let name = path
            .canonicalize()
            .ok()
            .and_then(|full| full.file_name().map(|name| name.to_string_lossy().into_owned()))
            .filter(|name| !name.is_empty())
            .ok_or_else(|| ConnectorError::NotALoopDir {
                path: path.to_path_buf(),
                reason: "the directory has no name to use as the loop's name".to_string(),
            })?;
        let journal_path = path.join("journal.md");
        let state_path = path.join("state.json");
        if !journal_path.is_file() && !state_path.is_file() {
            return Err(ConnectorError::NotALoopDir {
                path: path.to_path_buf(),
                reason: "it has neither journal.md nor state.json".to_string(),
            });
        }
        let mut dir = LoopDir { path: path.to_path_buf(), name, ..LoopDir::default() };

        if state_path.is_file() {
            let text = std::fs::read_to_string(&state_path)
                .map_err(|source| ConnectorError::Read { path: state_path.clone(), source })?;
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(state)) => dir.state = Some(state),
                Ok(_) => dir.problems.push(Problem {
                    file: "state.json".to_string(),
                    line: 1,
                    message: "is not a JSON object; ignored".to_string(),
                }),
                Err(error) => dir.problems.push(Problem {
                    file: "state.json".to_string(),
                    // At the end of the file serde points past the last
                    // line; the last line is where a reader should look.
                    line: error.line().clamp(1, text.lines().count().max(1)),
                    message: format!("is not valid JSON ({error}); ignored"),
                }),
            }
        }
        if journal_path.is_file() {
            let text = std::fs::read_to_string(&journal_path)
                .map_err(|source| ConnectorError::Read { path: journal_path.clone(), source })?;
            let (entries, problems) = parse_journal(&text);
            dir.entries = entries;
            dir.problems.extend(problems);
        }
        dir.stop_file =
            [path.join("STOP"), path.parent().map(|parent| parent.join("STOP")).unwrap_or_default()]
                .into_iter()
                .find(|candidate| candidate.is_file());
        Ok(dir)
    }

    /// A top-level field of `state.json` as text.
    pub fn state_text(&self, field: &str) -> Option<String> {
        self.state.as_ref()?.get(field).and_then(|value| match value {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        })
    }

    /// A nested number of `state.json`, such as `budget.max_iterations`.
    pub fn state_number(&self, path: &[&str]) -> Option<f64> {
        let mut value = self.state.as_ref()?.get(*path.first()?)?;
        for key in &path[1..] {
            value = value.get(key)?;
        }
        value.as_f64().or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
    }
}

/// The labels an entry's lines may carry, and the field each one fills.
const LABELS: [&str; 8] = ["unit", "did", "verify", "ratchet", "next", "flags", "spent", "commit"];

/// Splits `journal.md` into entries. An entry starts at a heading that
/// carries an iteration number; its level is the level of the first such
/// heading. Shallower headings (a title) are ignored, deeper ones are part
/// of the entry. A malformed entry is reported and skipped up to the next
/// entry heading.
pub fn parse_journal(text: &str) -> (Vec<JournalEntry>, Vec<Problem>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    let problem = |line: usize, message: String| Problem { file: "journal.md".to_string(), line, message };

    let lines: Vec<&str> = text.lines().collect();
    let entry_level = lines
        .iter()
        .filter_map(|line| heading(line))
        .find(|(_, title)| iteration_number(title).is_some())
        .map(|(level, _)| level);
    let Some(entry_level) = entry_level else {
        if lines.iter().any(|line| !line.trim().is_empty() && heading(line).is_none()) {
            problems.push(problem(
                0,
                "has no entry heading with an iteration number; nothing to send".to_string(),
            ));
        }
        return (entries, problems);
    };

    let mut current: Option<JournalEntry> = None;
    let mut skipping = false;
    let mut last_label: Option<usize> = None;
    let mut last_iteration = 0u32;

    let mut finish = |entry: Option<JournalEntry>,
                      entries: &mut Vec<JournalEntry>,
                      problems: &mut Vec<Problem>| {
        let Some(entry) = entry else { return };
        if entry.unit.is_none() && entry.did.is_none() && entry.verify.is_none() {
            problems.push(problem(
                entry.line,
                format!("entry for iteration {} has no Unit, Did or Verify line; skipped", entry.iteration),
            ));
        } else if entry.iteration <= last_iteration {
            problems.push(problem(
                entry.line,
                format!(
                    "iteration {} does not come after iteration {last_iteration}; skipped",
                    entry.iteration
                ),
            ));
        } else {
            last_iteration = entry.iteration;
            entries.push(entry);
        }
    };

    for (index, raw) in lines.iter().enumerate() {
        let number = index + 1;
        if let Some((level, title)) = heading(raw) {
            if level < entry_level {
                continue;
            }
            if level == entry_level {
                finish(current.take(), &mut entries, &mut problems);
                last_label = None;
                match iteration_number(title) {
                    Some(iteration) => {
                        skipping = false;
                        current = Some(JournalEntry {
                            iteration,
                            heading: title.to_string(),
                            line: number,
                            ..JournalEntry::default()
                        });
                    }
                    None => {
                        skipping = true;
                        problems.push(problem(
                            number,
                            format!("entry heading {title:?} has no iteration number; entry skipped"),
                        ));
                    }
                }
                continue;
            }
        }
        if skipping {
            continue;
        }
        let Some(entry) = current.as_mut() else { continue };
        match labelled(raw) {
            Some((label, value)) => {
                set_label(entry, label, value);
                last_label = Some(label);
            }
            None if raw.trim().is_empty() => {}
            None => {
                // A line without a label continues the previous label's
                // value (a multi-line Verify output, a list of flags).
                if let Some(label) = last_label {
                    append_label(entry, label, raw.trim());
                }
            }
        }
    }
    finish(current.take(), &mut entries, &mut problems);
    (entries, problems)
}

/// A Markdown heading's level and text.
fn heading(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start();
    let level = trimmed.bytes().take_while(|byte| *byte == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &trimmed[level..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    Some((level, rest.trim()))
}

/// The iteration number in an entry heading: the number after a word such
/// as "Iteration", "Iter", "Round" or "#", else the first number that is not
/// part of a date or a time.
pub fn iteration_number(title: &str) -> Option<u32> {
    let lower = title.to_lowercase();
    for marker in ["iteration", "iter", "round", "run", "#", "no.", "n°"] {
        if let Some(position) = lower.find(marker) {
            let after = lower[position + marker.len()..].trim_start_matches([' ', '.', ':', '#']);
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(number) = digits.parse::<u32>() {
                return Some(number);
            }
        }
    }
    // Words made of digits, dashes, colons and dots are dates or times
    // ("2026-11-29", "14:05") unless they are a plain number.
    lower
        .split(|character: char| {
            character.is_whitespace() || matches!(character, '(' | ')' | '[' | ']' | ',' | '—' | '–')
        })
        .map(|word| word.trim_matches(|character: char| !character.is_ascii_alphanumeric()))
        .find_map(|word| {
            if word.chars().all(|character| character.is_ascii_digit()) {
                word.parse().ok()
            } else {
                None
            }
        })
}

/// A labelled line (`Unit: ...`, `- **Verify**: ...`, `**Did:** ...`): the
/// label's index in [`LABELS`] and the value.
fn labelled(line: &str) -> Option<(usize, &str)> {
    let mut rest = line.trim_start();
    for bullet in ["- ", "* ", "+ "] {
        if let Some(stripped) = rest.strip_prefix(bullet) {
            rest = stripped.trim_start();
            break;
        }
    }
    let rest = rest.trim_start_matches("**").trim_start_matches('_');
    let colon = rest.find(':')?;
    let label = rest[..colon].trim().trim_end_matches("**").trim_end_matches('_').trim().to_lowercase();
    let index = LABELS.iter().position(|known| *known == label)?;
    let value = rest[colon + 1..].trim_start_matches("**").trim_start_matches('_').trim();
    Some((index, value))
}

fn field(entry: &mut JournalEntry, label: usize) -> &mut Option<String> {
    match LABELS[label] {
        "unit" => &mut entry.unit,
        "did" => &mut entry.did,
        "verify" => &mut entry.verify,
        "ratchet" => &mut entry.ratchet,
        "next" => &mut entry.next,
        "flags" => &mut entry.flags,
        "spent" => &mut entry.spent,
        _ => &mut entry.commit,
    }
}

fn set_label(entry: &mut JournalEntry, label: usize, value: &str) {
    *field(entry, label) = Some(value.to_string());
}

fn append_label(entry: &mut JournalEntry, label: usize, value: &str) {
    let slot = field(entry, label);
    match slot {
        Some(text) if !text.is_empty() => {
            text.push('\n');
            text.push_str(value);
        }
        _ => *slot = Some(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_numbers_skip_dates_and_times() {
        let cases = [
            ("Iteration 3 — 2026-11-29", Some(3)),
            ("2026-11-29 iteration 12", Some(12)),
            ("#7 (2026-11-29 14:05)", Some(7)),
            ("Iter. 4", Some(4)),
            ("2026-11-29 14:05 — 9", Some(9)),
            ("5", Some(5)),
            ("2026-11-29", None),
            ("Notes", None),
        ];
        for (title, expected) in cases {
            assert_eq!(iteration_number(title), expected, "{title}");
        }
    }

    #[test]
    fn labels_are_read_in_their_usual_spellings() {
        assert_eq!(labelled("Unit: fix the parser"), Some((0, "fix the parser")));
        assert_eq!(labelled("- **Verify**: 3 passed"), Some((2, "3 passed")));
        assert_eq!(labelled("**Did:** rewrote"), Some((1, "rewrote")));
        assert_eq!(labelled("* flags: ❌ unit failed"), Some((5, "❌ unit failed")));
        assert_eq!(labelled("Something else: no"), None);
        assert_eq!(labelled("plain text"), None);
    }

    #[test]
    fn malformed_entries_are_named_and_the_rest_kept() {
        let text = "# Journal\n\n## Iteration 1\nUnit: a\nDid: b\n\n## Iteration two\nUnit: x\n\n\
                    ## Iteration 3\nNothing labelled here\n\n## Iteration 1\nDid: late\n\n## Iteration 4\n\
                    Verify: FAILED t1\n  more output\nFlags: overrun\n";
        let (entries, problems) = parse_journal(text);
        let iterations: Vec<u32> = entries.iter().map(|entry| entry.iteration).collect();
        assert_eq!(iterations, [1, 4]);
        let lines: Vec<usize> = problems.iter().map(|problem| problem.line).collect();
        assert_eq!(lines, [7, 10, 13], "{problems:?}");
        assert_eq!(entries[1].verify.as_deref(), Some("FAILED t1\nmore output"));
        assert_eq!(entries[1].flags.as_deref(), Some("overrun"));
    }
}
