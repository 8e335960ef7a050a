//! The difference between two rounds, for the dashboard: which findings are
//! new, which were resolved, and which persist, compared by key.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::finding::FindingKey;

/// Findings of a later round compared with an earlier one. Each list is
/// sorted by key and free of duplicates, and every key has its end line
/// spelled out, so the same two rounds always give the same difference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundDiff {
    /// In the later round only.
    pub new: Vec<FindingKey>,
    /// In the earlier round only.
    pub resolved: Vec<FindingKey>,
    /// In both rounds.
    pub persisting: Vec<FindingKey>,
}

/// Compares the findings of an earlier round `a` with those of a later round
/// `b`. A finding whose severity changed has another key, so it shows up as
/// one resolved and one new: the dashboard shows a downgrade that way too.
pub fn diff_rounds(a: &[FindingKey], b: &[FindingKey]) -> RoundDiff {
    let before: BTreeSet<&FindingKey> = a.iter().collect();
    let after: BTreeSet<&FindingKey> = b.iter().collect();
    RoundDiff {
        new: spelled_out(after.difference(&before)),
        resolved: spelled_out(before.difference(&after)),
        persisting: spelled_out(after.intersection(&before)),
    }
}

/// Owned keys with their end lines spelled out, in the sets' sorted order.
fn spelled_out<'a>(keys: impl Iterator<Item = &'a &'a FindingKey>) -> Vec<FindingKey> {
    keys.map(|key| key.normalized()).collect()
}
