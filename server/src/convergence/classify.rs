//! The classification of a round against the earlier rounds of its run.
//!
//! The engine walks a run's rounds in order, remembering only what the next
//! round is compared with: every state seen and the rounds that judged it,
//! the previous round's finding sets, and the length of the current streak of
//! rounds without progress. `classify_round` replays a round's history (the
//! reference), `classify_next` starts the walk from what the store remembers
//! of the run, and the same walk classifies a whole run for the dashboard.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::finding::FindingKey;
use super::ratchet::Ratchet;
use super::reason;

/// The stall threshold a loop gets when it has not configured one.
pub const DEFAULT_STALL_THRESHOLD: u32 = 2;

/// One round as the engine sees it: its number, the digest of what was
/// judged, and the keys of what the judge found. Deserialising the ingest
/// body yields this, with the contract's other fields ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundInput {
    /// 1-based and strictly increasing within a run; gaps are allowed.
    pub round: u32,
    /// An opaque digest; equal strings mean the same thing was judged.
    pub state: String,
    /// The findings of the round. Duplicates collapse into one key and the
    /// order carries no meaning.
    #[serde(default)]
    pub findings: Vec<FindingKey>,
    /// Whether a judge looked at this round. A round from traces that
    /// carries no finding event was not judged: its empty finding set says
    /// nothing about whether the work is done, so it is classified on its
    /// states alone (`fixed_point`, `cycle`, `first` or `acting`).
    #[serde(default = "judged_by_default")]
    pub judged: bool,
    /// The loop's ratchet after the round, when it keeps one: a round that
    /// moved it is never a stall (see [`Class::Ratcheting`]).
    #[serde(default)]
    pub ratchet: Option<Ratchet>,
}

fn judged_by_default() -> bool {
    true
}

/// What a loop has configured about when to give up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopPolicy {
    /// After this many rounds in a row without progress, a `stalled` or
    /// `thrashing` round advises `stop`. Zero is treated as one: a threshold
    /// that could never be reached would silently switch the check off.
    pub stall_threshold: u32,
    /// The hard ceiling: a round numbered at or above it is told to stop
    /// whatever its class, and the stop is recorded as a bound.
    pub max_rounds: Option<u32>,
}

impl Default for LoopPolicy {
    fn default() -> Self {
        LoopPolicy { stall_threshold: DEFAULT_STALL_THRESHOLD, max_rounds: None }
    }
}

/// The kind of round, in the order PRODUCT.md checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The same state as the previous round was judged again.
    FixedPoint,
    /// The state of an earlier round (not the previous one) came back.
    Cycle,
    /// No blocking findings are left.
    Done,
    /// The first round of the run, with blocking findings.
    First,
    /// As many blocking findings as before (the same or others), but the
    /// loop's ratchet moved: progress the findings do not show, so neither
    /// `stalled` nor `thrashing`. An added class, checked before those two;
    /// a client that does not know it reads it as `continue`.
    Ratcheting,
    /// The state moved but the blocking set did not.
    Stalled,
    /// As many blocking findings as before, but not the same ones.
    Thrashing,
    /// Fewer findings, and no blocking finding that was not there before.
    Converging,
    /// Anything else: more findings, or new blocking ones.
    Regressing,
    /// A round nobody judged (no findings reported) whose state is new: the
    /// run goes on. A client that does not know this class reads it as
    /// `continue`.
    Acting,
}

/// Where the run stands after this round. `class` says what happened
/// between two rounds; `outcome` is the diagnosis a person reads, and the
/// one a run ends with when the advice is `stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Nothing blocking is left (`done`, or a fixed point or cycle whose
    /// state has no blocking findings).
    Converged,
    /// A fixed point with blocking findings: judging it again changes nothing.
    Wedged,
    /// A cycle with blocking findings: the loop is going round in circles.
    Cycling,
    /// The first round of a run with work left; nothing to compare yet.
    Started,
    /// The round made progress (`converging`).
    Progressing,
    /// No progress on the blocking findings (`stalled` or `thrashing`),
    /// whether or not the threshold has been reached yet.
    Stuck,
    /// The round made things worse (`regressing`).
    Regressed,
    /// The hard ceiling on rounds stopped a loop that would have gone on.
    /// This is a bound, never a convergence.
    Bounded,
    /// An `acting` round: the run did something new, and nobody judged it.
    Acting,
}

/// What the loop should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Advice {
    Continue,
    Stop,
}

/// The ceiling that stopped a loop, recorded so that running out of rounds
/// is never mistaken for convergence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bound {
    /// The loop's configured ceiling.
    pub max_rounds: u32,
    /// The round that reached it.
    pub round: u32,
}

/// The engine's answer for one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    pub round: u32,
    pub class: Class,
    pub outcome: Outcome,
    pub advice: Advice,
    /// The earlier rounds of the run that judged the same state, ascending.
    pub seen_at: Vec<u32>,
    /// For a `cycle`: the smallest `n - k` over earlier rounds `k` with the
    /// same state, in round numbers.
    pub period: Option<u32>,
    /// How many rounds in a row, ending with this one, made no progress
    /// (`fixed_point`, `cycle`, `stalled` or `thrashing`); zero otherwise.
    pub consecutive: u32,
    /// Set when the ceiling turned a `continue` into a `stop`.
    pub bound: Option<Bound>,
    /// One plain sentence with the numbers in it.
    pub reason: String,
}

/// Classifies `current` against `history`, the earlier rounds of its run.
///
/// Only rounds numbered below `current.round` count as history, and they are
/// taken in round order whatever order they come in. So a caller may pass
/// the whole stored run, including `current` itself when a round is sent
/// again, and still get the answer the first sending got.
pub fn classify_round(history: &[RoundInput], current: &RoundInput, policy: &LoopPolicy) -> Classification {
    let earlier = in_round_order(history.iter().filter(|round| round.round < current.round));
    let mut memory = Walk::default();
    for round in earlier {
        memory.observe(round);
    }
    explain(&memory.observe(current), policy)
}

/// Classifies every round of a run, in round order: the answer for each
/// round is the one `classify_round` gives it against the rounds before it.
/// The dashboard uses this to mark where the class changed.
pub fn classify_run(rounds: &[RoundInput], policy: &LoopPolicy) -> Vec<Classification> {
    let mut memory = Walk::default();
    in_round_order(rounds.iter()).into_iter().map(|round| explain(&memory.observe(round), policy)).collect()
}

/// What classifying the next round of a run needs to know of the rounds
/// before it: the previous round (its number, state, finding keys and
/// streak) and the earlier rounds that judged the new round's state. A store
/// reads these with two indexed lookups, so a round costs the same at round
/// 10,000 as at round 10; [`classify_round`] over the whole history stays the
/// reference that this must agree with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunMemory {
    pub previous: Option<PreviousRound>,
    /// The earlier rounds (below the new one) whose state equals the new
    /// round's, in any order.
    pub seen_at: Vec<u32>,
}

/// The round before the one being classified, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousRound {
    pub round: u32,
    pub state: String,
    pub findings: Vec<FindingKey>,
    /// The previous round's `consecutive`: rounds in a row without progress,
    /// ending with it.
    pub consecutive: u32,
    /// The previous round's ratchet, if it sent one.
    pub ratchet: Option<Ratchet>,
}

/// Classifies `current` from what the store remembers of its run: the same
/// answer [`classify_round`] gives from the whole history.
pub fn classify_next(memory: &RunMemory, current: &RoundInput, policy: &LoopPolicy) -> Classification {
    let mut walk = Walk::default();
    let mut seen_at: Vec<u32> =
        memory.seen_at.iter().copied().filter(|&round| round < current.round).collect();
    seen_at.sort_unstable();
    seen_at.dedup();
    if !seen_at.is_empty() {
        walk.seen.insert(current.state.as_str(), seen_at);
    }
    if let Some(previous) = memory.previous.as_ref().filter(|previous| previous.round < current.round) {
        walk.previous = Some(Previous {
            state: previous.state.as_str(),
            findings: FindingSets::of_keys(&previous.findings),
            ratchet: previous.ratchet,
        });
        walk.streak = previous.consecutive;
    }
    explain(&walk.observe(current), policy)
}

/// A stable sort, so rounds that (against the contract) share a number keep
/// the order they were given in and the result stays deterministic.
fn in_round_order<'a>(rounds: impl Iterator<Item = &'a RoundInput>) -> Vec<&'a RoundInput> {
    let mut ordered: Vec<&RoundInput> = rounds.collect();
    ordered.sort_by_key(|round| round.round);
    ordered
}

/// A round's findings as sets of keys. Sets are what make the engine blind
/// to the order of findings and to duplicates among them.
struct FindingSets<'a> {
    blocking: BTreeSet<&'a FindingKey>,
    all: BTreeSet<&'a FindingKey>,
}

impl<'a> FindingSets<'a> {
    fn of(round: &'a RoundInput) -> Self {
        Self::of_keys(&round.findings)
    }

    fn of_keys(keys: &'a [FindingKey]) -> Self {
        let all: BTreeSet<&FindingKey> = keys.iter().collect();
        let blocking = all.iter().copied().filter(|key| key.is_blocking()).collect();
        FindingSets { blocking, all }
    }
}

struct Previous<'a> {
    state: &'a str,
    findings: FindingSets<'a>,
    ratchet: Option<Ratchet>,
}

/// What the walk over a run keeps between rounds.
#[derive(Default)]
struct Walk<'a> {
    /// Every state seen so far and the rounds that judged it, ascending.
    seen: HashMap<&'a str, Vec<u32>>,
    previous: Option<Previous<'a>>,
    /// Rounds in a row without progress, ending with the previous round.
    streak: u32,
}

/// Everything about one round that does not depend on the policy. Advice,
/// outcome and reason all follow from these facts and the policy.
pub(super) struct Facts<'a> {
    pub(super) round: u32,
    pub(super) state: &'a str,
    pub(super) class: Class,
    pub(super) seen_at: Vec<u32>,
    pub(super) period: Option<u32>,
    /// Rounds in a row without progress, ending with this one.
    pub(super) streak: u32,
    pub(super) blocking: usize,
    pub(super) all: usize,
    /// Whether a judge looked at the round (see [`RoundInput::judged`]).
    pub(super) judged: bool,
    /// The previous round's counts and how the blocking set moved from it.
    pub(super) change: Option<Change>,
    /// The ratchet before and after a round that moved it.
    pub(super) ratchet_move: Option<(Ratchet, Ratchet)>,
}

pub(super) struct Change {
    pub(super) blocking_before: usize,
    pub(super) all_before: usize,
    pub(super) new_blocking: usize,
    pub(super) resolved_blocking: usize,
}

impl<'a> Walk<'a> {
    /// Classifies `current` against what has been seen so far, then
    /// remembers it as the latest round.
    fn observe(&mut self, current: &'a RoundInput) -> Facts<'a> {
        let findings = FindingSets::of(current);
        let state = current.state.as_str();
        let seen_at = self.seen.get(state).cloned().unwrap_or_default();

        let change = self.previous.as_ref().map(|previous| Change {
            blocking_before: previous.findings.blocking.len(),
            all_before: previous.findings.all.len(),
            new_blocking: findings.blocking.difference(&previous.findings.blocking).count(),
            resolved_blocking: previous.findings.blocking.difference(&findings.blocking).count(),
        });

        // The ratchet moved since the previous round (both sent one).
        let ratchet_move =
            match (self.previous.as_ref().and_then(|previous| previous.ratchet), current.ratchet) {
                (Some(before), Some(after)) if after.moved_from(&before) => Some((before, after)),
                _ => None,
            };

        let mut period = None;
        let class = match &self.previous {
            Some(previous) if previous.state == state => Class::FixedPoint,
            // The previous round had another state, so the latest earlier
            // round with this state lies before it: that gives the smallest
            // period.
            Some(_) if !seen_at.is_empty() => {
                period = seen_at.last().map(|&earlier| current.round.saturating_sub(earlier));
                Class::Cycle
            }
            // Without a judgement the finding sets say nothing: no `done`,
            // and nothing to compare them with.
            None if !current.judged => Class::First,
            Some(_) if !current.judged => Class::Acting,
            _ if findings.blocking.is_empty() => Class::Done,
            None => Class::First,
            Some(previous) => compare(&previous.findings, &findings, ratchet_move.is_some()),
        };

        // Rounds that change nothing (a fixed point, a return to an earlier
        // state) count towards the streak instead of resetting it: a loop
        // told to stop that carries on must not win a fresh budget by
        // repeating itself.
        let streak = match class {
            Class::FixedPoint | Class::Cycle | Class::Stalled | Class::Thrashing => {
                self.streak.saturating_add(1)
            }
            Class::Done
            | Class::First
            | Class::Ratcheting
            | Class::Converging
            | Class::Regressing
            | Class::Acting => 0,
        };

        self.seen.entry(state).or_default().push(current.round);
        self.streak = streak;
        let facts = Facts {
            round: current.round,
            state,
            class,
            seen_at,
            period,
            streak,
            blocking: findings.blocking.len(),
            all: findings.all.len(),
            judged: current.judged,
            change,
            ratchet_move: ratchet_move.filter(|_| class == Class::Ratcheting),
        };
        self.previous = Some(Previous { state, findings, ratchet: current.ratchet });
        facts
    }
}

/// Rules 5 to 8: how the findings moved between two rounds of different
/// states, when blocking findings remain. Before rules 5 and 6, the added
/// rule: as many blocking findings as before, but the ratchet moved, is
/// `ratcheting`.
fn compare(previous: &FindingSets<'_>, current: &FindingSets<'_>, ratchet_moved: bool) -> Class {
    if ratchet_moved && current.blocking.len() == previous.blocking.len() {
        Class::Ratcheting
    } else if current.blocking == previous.blocking {
        Class::Stalled
    } else if current.blocking.len() == previous.blocking.len() {
        Class::Thrashing
    } else if current.all.len() < previous.all.len() && current.blocking.is_subset(&previous.blocking) {
        Class::Converging
    } else {
        Class::Regressing
    }
}

/// Turns the facts into the answer under the loop's policy.
fn explain(facts: &Facts<'_>, policy: &LoopPolicy) -> Classification {
    let threshold = policy.stall_threshold.max(1);
    let (mut outcome, mut advice) = match facts.class {
        // An unjudged repeat is the same actions again: wedged, never
        // converged, since nobody said the work was done.
        Class::FixedPoint if !facts.judged => (Outcome::Wedged, Advice::Stop),
        Class::Cycle if !facts.judged => (Outcome::Cycling, Advice::Stop),
        Class::FixedPoint if facts.blocking == 0 => (Outcome::Converged, Advice::Stop),
        Class::FixedPoint => (Outcome::Wedged, Advice::Stop),
        Class::Cycle if facts.blocking == 0 => (Outcome::Converged, Advice::Stop),
        Class::Cycle => (Outcome::Cycling, Advice::Stop),
        Class::Done => (Outcome::Converged, Advice::Stop),
        Class::First => (Outcome::Started, Advice::Continue),
        Class::Stalled | Class::Thrashing if facts.streak >= threshold => (Outcome::Stuck, Advice::Stop),
        Class::Stalled | Class::Thrashing => (Outcome::Stuck, Advice::Continue),
        Class::Ratcheting | Class::Converging => (Outcome::Progressing, Advice::Continue),
        Class::Regressing => (Outcome::Regressed, Advice::Continue),
        Class::Acting => (Outcome::Acting, Advice::Continue),
    };
    let mut reason = reason::describe(facts, threshold);

    // The ceiling only ever turns a `continue` into a `stop`. A round that
    // already stops for a reason of its own keeps that reason, so a loop that
    // converged on its last allowed round is recorded as converged.
    let mut bound = None;
    if let Some(max_rounds) = policy.max_rounds {
        if advice == Advice::Continue && facts.round >= max_rounds {
            advice = Advice::Stop;
            outcome = Outcome::Bounded;
            bound = Some(Bound { max_rounds, round: facts.round });
            reason = reason::with_ceiling(&reason, facts.round, max_rounds);
        }
    }

    Classification {
        round: facts.round,
        class: facts.class,
        outcome,
        advice,
        seen_at: facts.seen_at.clone(),
        period: facts.period,
        // The streak is already zero for classes that made progress.
        consecutive: facts.streak,
        bound,
        reason,
    }
}

/// A name that is not one of an enum's wire spellings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownWireName {
    pub kind: &'static str,
    pub name: String,
}

impl fmt::Display for UnknownWireName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} {:?}", self.kind, self.name)
    }
}

impl std::error::Error for UnknownWireName {}

impl Class {
    pub const ALL: [Class; 10] = [
        Class::FixedPoint,
        Class::Cycle,
        Class::Done,
        Class::First,
        Class::Ratcheting,
        Class::Stalled,
        Class::Thrashing,
        Class::Converging,
        Class::Regressing,
        Class::Acting,
    ];

    /// The wire spelling, the same as serde's; handy for storing in a column.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::FixedPoint => "fixed_point",
            Class::Cycle => "cycle",
            Class::Done => "done",
            Class::First => "first",
            Class::Ratcheting => "ratcheting",
            Class::Stalled => "stalled",
            Class::Thrashing => "thrashing",
            Class::Converging => "converging",
            Class::Regressing => "regressing",
            Class::Acting => "acting",
        }
    }
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::Converged,
        Outcome::Wedged,
        Outcome::Cycling,
        Outcome::Started,
        Outcome::Progressing,
        Outcome::Stuck,
        Outcome::Regressed,
        Outcome::Bounded,
        Outcome::Acting,
    ];

    /// The wire spelling, the same as serde's.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Converged => "converged",
            Outcome::Wedged => "wedged",
            Outcome::Cycling => "cycling",
            Outcome::Started => "started",
            Outcome::Progressing => "progressing",
            Outcome::Stuck => "stuck",
            Outcome::Regressed => "regressed",
            Outcome::Bounded => "bounded",
            Outcome::Acting => "acting",
        }
    }
}

impl Advice {
    pub const ALL: [Advice; 2] = [Advice::Continue, Advice::Stop];

    /// The wire spelling, the same as serde's.
    pub fn as_str(self) -> &'static str {
        match self {
            Advice::Continue => "continue",
            Advice::Stop => "stop",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Advice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Class {
    type Err = UnknownWireName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Class::ALL
            .into_iter()
            .find(|class| class.as_str() == name)
            .ok_or_else(|| UnknownWireName { kind: "class", name: name.to_owned() })
    }
}

impl FromStr for Outcome {
    type Err = UnknownWireName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Outcome::ALL
            .into_iter()
            .find(|outcome| outcome.as_str() == name)
            .ok_or_else(|| UnknownWireName { kind: "outcome", name: name.to_owned() })
    }
}

impl FromStr for Advice {
    type Err = UnknownWireName;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Advice::ALL
            .into_iter()
            .find(|advice| advice.as_str() == name)
            .ok_or_else(|| UnknownWireName { kind: "advice", name: name.to_owned() })
    }
}
