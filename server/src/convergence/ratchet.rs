//! The ratchet: the one number a loop must move in one direction (tests
//! passing, coverage, items done), as the file-based loop protocol keeps it
//! in `state.json` and the ingest contract carries it (`ratchet: {value,
//! best, stall_count}`).
//!
//! A round whose blocking findings did not move but whose ratchet did is
//! progress the findings cannot show (a check that got further without
//! passing yet), so the engine never calls it a stall: see
//! [`Ratchet::moved_from`] and the class `ratcheting`.

use serde::{Deserialize, Serialize};

/// A round's ratchet. Every number is finite: the ingest API refuses
/// anything else, which is what makes the equality below an equivalence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratchet {
    /// Where the ratchet stands after the round.
    pub value: f64,
    /// The best value the loop has reached so far, as the loop keeps it.
    #[serde(default)]
    pub best: Option<f64>,
    /// Rounds in a row, ending with this one, that did not move it (the
    /// loop's own count; shown, never used to classify).
    #[serde(default)]
    pub stall_count: Option<u32>,
}

impl Eq for Ratchet {}

/// Which way a ratchet improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

impl Direction {
    fn better(self, new: f64, old: f64) -> bool {
        match self {
            Direction::Up => new > old,
            Direction::Down => new < old,
        }
    }
}

impl Ratchet {
    /// Whether this round moved the ratchet since `previous`, the run's
    /// previous round: its value is better than the previous value, or its
    /// best improved.
    ///
    /// "Better" needs a direction, which the loop does not send. A best
    /// only ever moves when it improves, so a best that changed improved,
    /// whichever way it went. Otherwise the direction is read from where
    /// the best sits: a value above its best (in either round) means lower
    /// is better; a value below it, or no best at all, means higher is
    /// better, as for tests passing, coverage and items done.
    pub fn moved_from(&self, previous: &Ratchet) -> bool {
        if let (Some(best), Some(before)) = (self.best, previous.best) {
            if best != before {
                return true;
            }
        }
        let below_best = |ratchet: &Ratchet| ratchet.best.is_some_and(|best| best < ratchet.value);
        let direction =
            if below_best(self) || below_best(previous) { Direction::Down } else { Direction::Up };
        direction.better(self.value, previous.value)
    }
}

/// A number for a sentence: whole numbers without a decimal point.
pub fn format_value(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratchet(value: f64, best: Option<f64>) -> Ratchet {
        Ratchet { value, best, stall_count: None }
    }

    #[test]
    fn a_value_that_went_up_moved_it() {
        assert!(ratchet(7.0, None).moved_from(&ratchet(6.0, None)));
        assert!(!ratchet(7.0, None).moved_from(&ratchet(7.0, None)));
        assert!(!ratchet(6.0, None).moved_from(&ratchet(7.0, None)), "a drop is not progress");
        // Back towards the best after a drop.
        assert!(ratchet(8.0, Some(9.0)).moved_from(&ratchet(7.0, Some(9.0))));
    }

    #[test]
    fn a_best_that_changed_improved_whichever_way() {
        assert!(ratchet(5.0, Some(5.0)).moved_from(&ratchet(6.0, Some(6.0))), "lower is better here");
        assert!(ratchet(43.0, Some(43.0)).moved_from(&ratchet(41.0, Some(41.0))));
        assert!(!ratchet(43.0, Some(43.0)).moved_from(&ratchet(43.0, Some(43.0))));
    }

    #[test]
    fn a_value_above_its_best_means_lower_is_better() {
        // Errors left: best 3, the value came down from 6 to 5.
        assert!(ratchet(5.0, Some(3.0)).moved_from(&ratchet(6.0, Some(3.0))));
        assert!(!ratchet(6.0, Some(3.0)).moved_from(&ratchet(5.0, Some(3.0))));
    }

    #[test]
    fn values_read_as_numbers_in_sentences() {
        assert_eq!(format_value(7.0), "7");
        assert_eq!(format_value(-2.0), "-2");
        assert_eq!(format_value(87.5), "87.5");
    }
}
