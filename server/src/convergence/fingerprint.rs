//! Near repeats: a round's fingerprint is a 64-bit SimHash of what was
//! judged, so two drafts that differ by a word get fingerprints a few bits
//! apart where their digests (`state`) differ completely. An earlier round
//! whose fingerprint is within [`NEAR_BITS`] bits is "been here before"
//! (the answer's `near_seen_at`).
//!
//! The SimHash is the one of PyPI's `simhash` package (2.1.2), so a loop
//! written in Python can compute the same fingerprint itself:
//! - the text is lower-cased, and only its word characters are kept
//!   (Python's `\w`: letters, digits and numbers of any script, and `_`);
//! - its features are the shingles of 4 characters (the whole text when it
//!   is shorter), each counted as often as it occurs;
//! - each feature's hash is the last 8 bytes of its UTF-8 MD5, read
//!   big-endian;
//! - bit `b` of the fingerprint is set when the features whose hash has
//!   bit `b` set weigh more than half of all features.
//!
//! A test (`server/tests/it/near_repeats.rs`) holds this to the package's
//! own values on a table of texts.

use md5::{Digest, Md5};
use unicode_general_category::{get_general_category, GeneralCategory};

/// Fingerprints at most this many bits apart are near repeats.
pub const NEAR_BITS: u32 = 3;

/// A 64-bit SimHash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub u64);

/// How many characters a feature holds.
const SHINGLE: usize = 4;

impl Fingerprint {
    /// The SimHash of `text`, as PyPI's `simhash` computes it.
    pub fn of_text(text: &str) -> Fingerprint {
        let content: Vec<char> = text.to_lowercase().chars().filter(|&c| is_word(c)).collect();
        let mut weights = [0_u64; 64];
        let mut total = 0_u64;
        let mut add = |feature: &[char]| {
            let mut bytes = [0_u8; SHINGLE * 4];
            let mut length = 0;
            for character in feature {
                length += character.encode_utf8(&mut bytes[length..]).len();
            }
            let digest = Md5::digest(&bytes[..length]);
            let mut last = [0_u8; 8];
            last.copy_from_slice(&digest[8..16]);
            let hash = u64::from_be_bytes(last);
            for (bit, weight) in weights.iter_mut().enumerate() {
                *weight += (hash >> bit) & 1;
            }
            total += 1;
        };
        if content.len() < SHINGLE {
            add(&content);
        } else {
            content.windows(SHINGLE).for_each(add);
        }
        let value = weights
            .iter()
            .enumerate()
            .filter(|(_, &weight)| 2 * weight > total)
            .fold(0_u64, |value, (bit, _)| value | (1 << bit));
        Fingerprint(value)
    }

    /// Exactly 16 hex digits, either case.
    pub fn parse_hex(text: &str) -> Option<Fingerprint> {
        if text.len() != 16 || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(text, 16).ok().map(Fingerprint)
    }

    /// 16 lowercase hex digits, as `format(value, "016x")` writes them.
    pub fn hex(self) -> String {
        format!("{:016x}", self.0)
    }

    /// How many bits the two fingerprints differ in.
    pub fn distance(self, other: Fingerprint) -> u32 {
        (self.0 ^ other.0).count_ones()
    }

    /// Whether `other` is within [`NEAR_BITS`] bits.
    pub fn is_near(self, other: Fingerprint) -> bool {
        self.distance(other) <= NEAR_BITS
    }

    /// The four 16-bit quarters. Two fingerprints within 3 bits of each
    /// other differ in at most 3 quarters, so they share at least one:
    /// looking up each quarter by index finds every near candidate without
    /// reading the rest of the run.
    pub fn quarters(self) -> [i64; 4] {
        [48, 32, 16, 0].map(|shift| i64::from((self.0 >> shift) as u16))
    }

    /// The fingerprint as a signed 64-bit column (the same bits).
    pub fn stored(self) -> i64 {
        self.0 as i64
    }

    /// A fingerprint back from its column.
    pub fn from_stored(value: i64) -> Fingerprint {
        Fingerprint(value as u64)
    }
}

/// Python's `\w` in a `str` pattern: a letter or number of any script
/// (general category L* or N*), or `_`.
fn is_word(character: char) -> bool {
    use GeneralCategory::*;
    character == '_'
        || matches!(
            get_general_category(character),
            UppercaseLetter
                | LowercaseLetter
                | TitlecaseLetter
                | ModifierLetter
                | OtherLetter
                | DecimalNumber
                | LetterNumber
                | OtherNumber
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_changed_is_a_few_bits_away_and_another_text_is_not() {
        let draft = "A loop that only stops at its budget cannot tell that it has finished. Give it a \
                     check that compares this pass with the last, and a number that must move, and it \
                     can. We keep the last digest of the draft, the blocking findings of the judge and \
                     the ratchet, and stop when two passes agree or when the ratchet has not moved for \
                     three rounds. The operator can always press STOP, and the loop reads it before the \
                     next round begins, so nothing is lost when a person steps in. ";
        let edited = draft.replace("three rounds", "four rounds");
        let other = "Budget caps bound a loop, but only a check for progress can tell it has finished.";
        let (a, b, c) =
            (Fingerprint::of_text(draft), Fingerprint::of_text(&edited), Fingerprint::of_text(other));
        assert!(a.is_near(b), "{} bits", a.distance(b));
        assert!(a.distance(c) > 10, "{} bits", a.distance(c));
        // Case, punctuation and spacing are not what was judged.
        assert_eq!(a, Fingerprint::of_text(&draft.to_uppercase().replace([';', ','], " ")));
    }

    #[test]
    fn fingerprints_travel_as_sixteen_hex_digits() {
        let fingerprint = Fingerprint(0x9f3a_0c00_0000_00ff);
        assert_eq!(fingerprint.hex(), "9f3a0c00000000ff");
        assert_eq!(Fingerprint::parse_hex("9F3A0C00000000FF"), Some(fingerprint));
        for bad in ["9f3a0c", "9f3a0c00000000ff0", "9f3a0c00000000fg", "+f3a0c00000000ff", ""] {
            assert_eq!(Fingerprint::parse_hex(bad), None, "{bad:?}");
        }
        assert_eq!(Fingerprint::from_stored(fingerprint.stored()), fingerprint);
        assert_eq!(Fingerprint(u64::MAX).stored(), -1);
    }

    #[test]
    fn near_fingerprints_share_a_quarter() {
        let base = Fingerprint(0x0123_4567_89ab_cdef);
        assert_eq!(base.quarters(), [0x0123, 0x4567, 0x89ab, 0xcdef]);
        // Three bits flipped, one in each of three quarters: the fourth is
        // shared.
        let near = Fingerprint(base.0 ^ (1 << 63) ^ (1 << 40) ^ (1 << 20));
        assert!(base.is_near(near));
        let shared = base.quarters().iter().zip(near.quarters()).filter(|(a, b)| *a == b).count();
        assert_eq!(shared, 1);
        assert!(!base.is_near(Fingerprint(base.0 ^ 0b1111)));
    }
}
