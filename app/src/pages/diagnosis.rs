//! A run's diagnosis in words: what the loop is doing now (converging,
//! done, stalled for N rounds, thrashing, cycling with period P, wedged on
//! a state since round K, regressing, lost), what ended it, what it spent.
//! Shared by the loops list (one line per loop) and the loop page (its
//! first screen); computed from the run's latest rounds, so the server and
//! the browser say the same thing.

use serde::{Deserialize, Serialize};

/// What the diagnosis reads of a run: its latest rounds (oldest first) and
/// its spend so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunGlance {
    pub recent: Vec<GlanceRound>,
    /// Whether rounds older than `recent` exist in the run.
    #[serde(default)]
    pub more_before: bool,
    pub usd: Option<f64>,
    pub tokens: Option<i64>,
}

/// One of a run's latest rounds, as the diagnosis reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlanceRound {
    pub round: u32,
    pub state: String,
    pub class: String,
    pub advice: String,
    pub reason: String,
    pub period: Option<u32>,
    pub blocking: u32,
    /// The round's error code, if it reported an error.
    pub error: Option<String>,
    /// The loop's ratchet after the round, if it sent one.
    #[serde(default)]
    pub ratchet: Option<f64>,
}

/// How a diagnosis reads at a glance: its colour on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tone {
    /// Done or converging.
    Good,
    /// Not moving: stalled, thrashing, regressing.
    Warn,
    /// Going round in circles, wedged, lost, failed.
    Bad,
    /// Nothing to judge yet, or stopped by a person.
    Quiet,
}

impl Tone {
    pub fn css(self) -> &'static str {
        match self {
            Tone::Good => "tone-good",
            Tone::Warn => "tone-warn",
            Tone::Bad => "tone-bad",
            Tone::Quiet => "tone-quiet",
        }
    }
}

/// A run's diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    pub tone: Tone,
    /// One line: "Wedged on state b740d1b7 since round 13".
    pub headline: String,
    /// A short word for lists and filters: `wedged`, `cycling`, `done`, ...
    pub word: &'static str,
    /// What the last round advised, with its reason.
    pub advice: Option<String>,
    /// What ended the run, when it ended.
    pub ended: Option<String>,
    /// What the run spent so far.
    pub spend: Option<String>,
    /// How urgent it is for the operator: lower comes first in the list.
    pub attention: u8,
}

/// Whether an exit id is a detection, a bound or an event from outside, in
/// PRODUCT.md's taxonomy (the page's words).
pub fn exit_words(exit: &str) -> Option<(&'static str, &'static str)> {
    Some(match exit {
        "E1" => ("goal met", "a detection"),
        "E2" => ("turn cap", "a bound"),
        "E3" => ("budget cap", "a bound"),
        "E4" => ("wall clock", "a bound"),
        "E5" => ("no progress", "a detection"),
        "E6" => ("human interrupt", "from outside"),
        "E7" => ("error threshold", "a bound"),
        "E8" => ("external event", "from outside"),
        _ => return None,
    })
}

fn short(state: &str) -> String {
    state.chars().take(8).collect()
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A number as a person writes it: whole numbers without a decimal point.
pub fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

/// What a run spent, in words.
pub fn spend_words(usd: Option<f64>, tokens: Option<i64>) -> Option<String> {
    match (usd, tokens) {
        (Some(usd), Some(tokens)) => Some(format!("${usd:.2} · {} tokens", group(tokens))),
        (Some(usd), None) => Some(format!("${usd:.2}")),
        (None, Some(tokens)) => Some(format!("{} tokens", group(tokens))),
        (None, None) => None,
    }
}

/// 1234567 → "1,234,567".
fn group(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// The latest rounds that share the last round's class, counted from the
/// end (at least one when there is a round).
fn streak(recent: &[GlanceRound]) -> usize {
    let Some(last) = recent.last() else { return 0 };
    recent.iter().rev().take_while(|round| round.class == last.class).count()
}

/// "for 17 rounds", or "for 100+ rounds" when the streak reaches back past
/// the rounds read.
fn for_rounds(count: usize, glance: &RunGlance) -> String {
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    if count as usize == glance.recent.len() && glance.more_before {
        format!("for {count}+ rounds")
    } else {
        format!("for {}", plural(count, "round", "rounds"))
    }
}

/// The diagnosis of a run in `state` (`running`, `blocked`, `done`,
/// `failed`, `stopped`, `lost`), ended by `exit` if it ended, from its
/// latest rounds.
pub fn diagnose(state: Option<&str>, exit: Option<&str>, glance: &RunGlance) -> Diagnosis {
    let spend = spend_words(glance.usd, glance.tokens);
    let Some(last) = glance.recent.last() else {
        return Diagnosis {
            tone: Tone::Quiet,
            headline: if state.is_none() { "No run yet".into() } else { "No rounds yet".into() },
            word: "waiting",
            advice: None,
            ended: None,
            spend,
            attention: 6,
        };
    };
    let advice = Some(if last.reason.is_empty() {
        format!("Advice: {}", last.advice)
    } else {
        format!("Advice: {} ({})", last.advice, last.reason)
    });
    let ended = exit.map(|exit| {
        let what = match exit_words(exit) {
            Some((name, kind)) => format!("Ended by {exit} ({name}, {kind}) at round {}", last.round),
            None => format!("Ended by {exit} at round {}", last.round),
        };
        match &last.error {
            Some(code) => format!("{what}, with the error {code}"),
            None => what,
        }
    });
    let blocking_left = plural(last.blocking, "blocking finding", "blocking findings");
    let run_streak = streak(&glance.recent);
    let (tone, word, headline, attention) = match state {
        Some("lost") => (Tone::Bad, "lost", format!("Lost: silent since round {}", last.round), 0),
        Some("blocked") => (Tone::Warn, "blocked", format!("Blocked at round {}", last.round), 1),
        Some("stopped") => {
            (Tone::Quiet, "stopped", format!("Stopped by the operator at round {}", last.round), 5)
        }
        Some("failed") => {
            let by = match exit.and_then(exit_words) {
                Some((name, _)) => format!("its {name}"),
                None => "a failure".into(),
            };
            (Tone::Bad, "failed", format!("Ended by {by} at round {}, {blocking_left} left", last.round), 3)
        }
        Some("done") => {
            let how = match exit {
                Some(exit) if exit_words(exit).is_some_and(|(_, kind)| kind == "a bound") => {
                    format!("Done at round {}: stopped by a bound with no blocking findings left", last.round)
                }
                _ => format!("Done: converged at round {}", last.round),
            };
            (Tone::Good, "done", how, 7)
        }
        _ => match last.class.as_str() {
            "fixed_point" if last.blocking == 0 => (
                Tone::Good,
                "done",
                format!("Converged: state {} judged again, nothing blocking", short(&last.state)),
                7,
            ),
            "fixed_point" => {
                // The state has been judged since the first round of the
                // trailing streak of rounds with this state.
                let same = glance.recent.iter().rev().take_while(|round| round.state == last.state).count();
                let since = glance.recent[glance.recent.len() - same].round;
                let since = if same == glance.recent.len() && glance.more_before {
                    format!("before round {since}")
                } else {
                    format!("since round {since}")
                };
                (
                    Tone::Bad,
                    "wedged",
                    format!("Wedged on state {} {since}, {blocking_left}", short(&last.state)),
                    1,
                )
            }
            "cycle" => {
                let period = last.period.map(|p| format!(" with period {p}")).unwrap_or_default();
                (Tone::Bad, "cycling", format!("Cycling{period} {}", for_rounds(run_streak, glance)), 1)
            }
            "stalled" => (
                Tone::Warn,
                "stalled",
                format!("Stalled {}: the same {blocking_left}", for_rounds(run_streak, glance)),
                2,
            ),
            "thrashing" => (
                Tone::Warn,
                "thrashing",
                format!(
                    "Thrashing {}: {blocking_left}, different ones each round",
                    for_rounds(run_streak, glance)
                ),
                2,
            ),
            "regressing" => {
                (Tone::Warn, "regressing", format!("Regressing: {blocking_left} at round {}", last.round), 2)
            }
            "converging" => {
                // From the round before the streak, when it was read.
                let len = glance.recent.len();
                let start =
                    glance.recent[len.checked_sub(run_streak + 1).unwrap_or(len - run_streak)].blocking;
                (
                    Tone::Good,
                    "converging",
                    format!(
                        "Converging: blocking findings {start} → {} {}",
                        last.blocking,
                        for_rounds(run_streak, glance)
                    ),
                    4,
                )
            }
            "ratcheting" => {
                // The ratchet moved while the blocking findings stood: from
                // the round before the streak, when it was read.
                let len = glance.recent.len();
                let start =
                    glance.recent[len.checked_sub(run_streak + 1).unwrap_or(len - run_streak)].ratchet;
                let moved = match (start, last.ratchet) {
                    (Some(start), Some(now)) => format!("the ratchet {} → {}", number(start), number(now)),
                    _ => "the ratchet moving".into(),
                };
                (
                    Tone::Good,
                    "converging",
                    format!("Converging: {moved} {}, {blocking_left} to go", for_rounds(run_streak, glance)),
                    4,
                )
            }
            "done" => (Tone::Good, "done", format!("Done: no blocking findings at round {}", last.round), 7),
            "first" => (Tone::Quiet, "started", format!("First round: {blocking_left}"), 4),
            "acting" => {
                (Tone::Quiet, "acting", format!("Acting: round {}, nothing judged yet", last.round), 4)
            }
            other => (Tone::Quiet, "running", format!("Round {}: {other}", last.round), 4),
        },
    };
    Diagnosis { tone, headline, word, advice, ended, spend, attention }
}

/// A small SVG of the blocking findings of the latest rounds: one bar per
/// round, red when the round was a repeat of a state.
pub fn sparkline(recent: &[GlanceRound]) -> String {
    let (width, height) = (96.0_f64, 20.0_f64);
    let most = recent.iter().map(|round| round.blocking).max().unwrap_or(0).max(1);
    let step = width / recent.len().max(1) as f64;
    let mut svg = format!(
        r#"<svg class="sparkline" viewBox="0 0 {width} {height}" width="{width}" height="{height}" aria-hidden="true" xmlns="http://www.w3.org/2000/svg">"#
    );
    svg.push_str(&format!(r##"<line x1="0" y1="{height}" x2="{width}" y2="{height}" stroke="#4a5361"/>"##));
    for (index, round) in recent.iter().enumerate() {
        let h = (f64::from(round.blocking) / f64::from(most) * (height - 2.0)).max(1.0);
        let colour =
            if matches!(round.class.as_str(), "fixed_point" | "cycle") { "#9b1c1c" } else { "#1d4f91" };
        svg.push_str(&format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{colour}"/>"#,
            step * index as f64,
            height - h,
            (step * 0.8).max(1.0)
        ));
    }
    svg.push_str("</svg>");
    svg
}

/// "just now", "5 min ago", "3 h ago", "2 days ago", from two times in
/// milliseconds.
pub fn relative_time(then: i64, now: i64) -> String {
    let seconds = (now - then).max(0) / 1000;
    match seconds {
        0..=44 => "just now".into(),
        45..=3599 => format!("{} min ago", (seconds / 60).max(1)),
        3600..=86_399 => format!("{} h ago", seconds / 3600),
        _ => plural(u32::try_from(seconds / 86_400).unwrap_or(u32::MAX), "day ago", "days ago"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(spec: &[(&str, &str, u32)]) -> Vec<GlanceRound> {
        spec.iter()
            .enumerate()
            .map(|(index, (state, class, blocking))| GlanceRound {
                round: index as u32 + 1,
                state: (*state).into(),
                class: (*class).into(),
                advice: "continue".into(),
                reason: String::new(),
                period: (*class == "cycle").then_some(2),
                blocking: *blocking,
                error: None,
                ratchet: None,
            })
            .collect()
    }

    fn glance(spec: &[(&str, &str, u32)]) -> RunGlance {
        RunGlance { recent: rounds(spec), more_before: false, usd: None, tokens: None }
    }

    #[test]
    fn a_wedged_run_says_on_which_state_and_since_when() {
        let g = glance(&[
            ("a", "first", 3),
            ("b", "converging", 2),
            ("c", "converging", 2),
            ("c", "fixed_point", 2),
            ("c", "fixed_point", 2),
        ]);
        let d = diagnose(Some("running"), None, &g);
        assert_eq!(d.word, "wedged");
        assert_eq!(d.tone, Tone::Bad);
        assert_eq!(d.headline, "Wedged on state c since round 3, 2 blocking findings");
        // Reaching back past the rounds read, it does not claim a start.
        let g =
            RunGlance { more_before: true, ..glance(&[("c", "fixed_point", 1), ("c", "fixed_point", 1)]) };
        assert_eq!(
            diagnose(Some("running"), None, &g).headline,
            "Wedged on state c before round 1, 1 blocking finding"
        );
        // A fixed point with nothing blocking has converged.
        let g = glance(&[("a", "first", 1), ("b", "done", 0), ("b", "fixed_point", 0)]);
        assert_eq!(diagnose(Some("running"), None, &g).word, "done");
    }

    #[test]
    fn streaks_are_counted_and_periods_named() {
        let g = glance(&[
            ("a", "first", 3),
            ("b", "converging", 2),
            ("a", "cycle", 3),
            ("b", "cycle", 2),
            ("a", "cycle", 3),
        ]);
        let d = diagnose(Some("running"), None, &g);
        assert_eq!((d.word, d.headline.as_str()), ("cycling", "Cycling with period 2 for 3 rounds"));
        let g = glance(&[("a", "first", 2), ("b", "stalled", 2), ("c", "stalled", 2)]);
        assert_eq!(
            diagnose(Some("running"), None, &g).headline,
            "Stalled for 2 rounds: the same 2 blocking findings"
        );
        let g = glance(&[("a", "first", 2), ("b", "thrashing", 2)]);
        assert_eq!(
            diagnose(Some("running"), None, &g).headline,
            "Thrashing for 1 round: 2 blocking findings, different ones each round"
        );
        let g = RunGlance { more_before: true, ..glance(&[("b", "stalled", 2), ("c", "stalled", 2)]) };
        assert_eq!(
            diagnose(Some("running"), None, &g).headline,
            "Stalled for 2+ rounds: the same 2 blocking findings"
        );
        let g = glance(&[("a", "first", 5), ("b", "converging", 4), ("c", "converging", 2)]);
        assert_eq!(
            diagnose(Some("running"), None, &g).headline,
            "Converging: blocking findings 5 → 2 for 2 rounds"
        );
    }

    #[test]
    fn a_moving_ratchet_reads_as_converging() {
        let mut g = glance(&[
            ("a", "first", 3),
            ("b", "converging", 2),
            ("c", "ratcheting", 2),
            ("d", "ratcheting", 2),
        ]);
        for (round, value) in g.recent.iter_mut().zip([5.0, 6.0, 7.0, 8.5]) {
            round.ratchet = Some(value);
        }
        let d = diagnose(Some("running"), None, &g);
        assert_eq!((d.word, d.tone), ("converging", Tone::Good));
        assert_eq!(d.headline, "Converging: the ratchet 6 → 8.5 for 2 rounds, 2 blocking findings to go");
    }

    #[test]
    fn a_budget_end_is_not_a_convergence() {
        let mut g = glance(&[("a", "first", 3), ("b", "stalled", 3)]);
        g.recent[1].error = Some("rate_limit".into());
        g.usd = Some(12.5);
        let d = diagnose(Some("failed"), Some("E3"), &g);
        assert_eq!(d.tone, Tone::Bad);
        assert_eq!(d.headline, "Ended by its budget cap at round 2, 3 blocking findings left");
        assert_eq!(
            d.ended.as_deref(),
            Some("Ended by E3 (budget cap, a bound) at round 2, with the error rate_limit")
        );
        assert_eq!(d.spend.as_deref(), Some("$12.50"));
        let g = glance(&[("a", "first", 3), ("b", "done", 0)]);
        let done = diagnose(Some("done"), Some("E1"), &g);
        assert_eq!((done.tone, done.headline.as_str()), (Tone::Good, "Done: converged at round 2"));
        assert!(done.attention > d.attention, "a failed run comes before a done one");
    }

    #[test]
    fn spend_and_times_read_plainly() {
        assert_eq!(spend_words(None, Some(1_234_567)).as_deref(), Some("1,234,567 tokens"));
        assert_eq!(spend_words(None, None), None);
        assert_eq!(relative_time(0, 10_000), "just now");
        assert_eq!(relative_time(0, 5 * 60_000), "5 min ago");
        assert_eq!(relative_time(0, 3 * 3_600_000), "3 h ago");
        assert_eq!(relative_time(0, 86_400_000), "1 day ago");
        assert_eq!(diagnose(None, None, &RunGlance::default()).headline, "No run yet");
        let svg = sparkline(&rounds(&[("a", "first", 2), ("a", "fixed_point", 2)]));
        assert_eq!(svg.matches("<rect").count(), 2);
        assert_eq!(svg.matches("#9b1c1c").count(), 1, "the repeat is marked");
    }
}
