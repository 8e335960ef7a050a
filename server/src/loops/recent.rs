//! The histories of runs that were written to a moment ago.
//!
//! Classifying a round needs every earlier round of its run. Reading them
//! back costs a query per round and the parsing of every stored finding
//! key, although the round before was classified by this very process with
//! the same history in hand. So the history, with the round just stored,
//! is kept here once its transaction commits, and the next round of the
//! run takes it instead of reading.
//!
//! Why a kept history can be trusted: the rounds of a run are never changed
//! or deleted once stored, only appended to, so a run's history is known
//! exactly by its id and its last round. An entry is used only when the
//! run's `last_round`, read in the same transaction as the new round, is
//! the one the entry was kept for; a round stored by another instance (on
//! PostgreSQL) moves `last_round` and the entry is ignored. An entry is
//! taken out while in use, so a rolled-back round leaves nothing behind.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::convergence::RoundInput;

/// At most this many runs are remembered; beyond it the memory starts over.
const RUNS: usize = 1024;
/// A run is remembered only while its history holds at most this many
/// finding keys in all, so that the memory stays small (a few MB at most).
const KEYS_PER_RUN: usize = 4096;

/// A run's history after a round, to be kept once that round commits.
#[derive(Debug, Clone)]
pub struct KeptHistory {
    pub(super) run_id: i64,
    pub(super) last_round: i64,
    pub(super) rounds: Vec<RoundInput>,
}

#[derive(Default)]
pub struct RecentHistories {
    runs: Mutex<HashMap<i64, (i64, Vec<RoundInput>)>>,
}

impl RecentHistories {
    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<i64, (i64, Vec<RoundInput>)>> {
        // Plain data: a panic elsewhere cannot have left it half-changed.
        self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops every kept history.
    pub(super) fn clear(&self) {
        self.runs().clear();
    }

    /// Drops whatever is kept of `run_id` (its round did not commit).
    pub(super) fn forget(&self, run_id: i64) {
        self.runs().remove(&run_id);
    }

    /// The history of `run_id` when it was kept at `last_round`, taken out.
    pub(super) fn take(&self, run_id: i64, last_round: i64) -> Option<Vec<RoundInput>> {
        match self.runs().remove(&run_id) {
            Some((kept_at, rounds)) if kept_at == last_round => Some(rounds),
            _ => None,
        }
    }

    /// Keeps a committed round's history for the run's next round.
    pub(super) fn keep(&self, kept: KeptHistory) {
        let keys: usize = kept.rounds.iter().map(|round| round.findings.len()).sum();
        if keys > KEYS_PER_RUN {
            return;
        }
        let mut runs = self.runs();
        if runs.len() >= RUNS && !runs.contains_key(&kept.run_id) {
            runs.clear();
        }
        runs.insert(kept.run_id, (kept.last_round, kept.rounds));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(rounds: u32) -> Vec<RoundInput> {
        (1..=rounds)
            .map(|round| RoundInput { round, state: format!("s{round}"), findings: Vec::new() })
            .collect()
    }

    #[test]
    fn a_history_is_used_only_at_the_round_it_was_kept_for_and_only_once() {
        let recent = RecentHistories::default();
        recent.keep(KeptHistory { run_id: 7, last_round: 2, rounds: history(2) });
        // Another instance stored round 3 meanwhile: the entry is stale.
        assert!(recent.take(7, 3).is_none());
        assert!(recent.take(7, 2).is_none(), "a stale entry is dropped, not kept");
        recent.keep(KeptHistory { run_id: 7, last_round: 2, rounds: history(2) });
        assert_eq!(recent.take(7, 2).map(|rounds| rounds.len()), Some(2));
        assert!(recent.take(7, 2).is_none(), "taken out while in use");
    }

    #[test]
    fn memory_stays_bounded() {
        let recent = RecentHistories::default();
        for run_id in 0..(RUNS as i64 + 10) {
            recent.keep(KeptHistory { run_id, last_round: 1, rounds: history(1) });
        }
        assert!(recent.runs().len() <= RUNS);
    }
}
