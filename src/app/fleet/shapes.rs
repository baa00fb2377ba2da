//! Hosts that look alike to a query score alike, so each look is scored once.
//!
//! A fleet is mostly a few shapes: `web-eu-west-000123 10.0.1.123 eu-west prod web` and a hundred
//! thousand hosts like it differ in digits and letters that a query such as `we` does not hold.
//! The first keystrokes of a query keep most of a 200,000-host fleet, and scoring each of them
//! with nucleo's matrix was the slowest keystroke (35–45 ms, issue 25).
//!
//! What nucleo's fuzzy score of one atom can depend on, for ASCII text: every alignment starts at
//! or after the first place the atom's first character occurs and ends at or before the last place
//! its last character occurs, so only that window counts, with the class of the character just
//! before it (the first match's bonus); inside it, which characters are the atom's, and the class
//! of the others (lower, upper, digit, or the character itself for anything else), which gives the
//! bonuses and the gaps. No bonus depends on where the window sits (`prefer_prefix` is off). So the
//! window written with every other letter and digit replaced by its class is a key: two hosts with
//! the same key get the same score for that atom (a pattern's score is the sum of its atoms'). The
//! scan computes it with nucleo the first time a key is seen and reuses it after; the tests
//! `keyed_scores_are_nucleo_scores` and `texts_alike_but_for_letters_and_digits_score_as_nucleo_scores`
//! check the claim against nucleo on text made to share windows.
//!
//! Not keyed (scored by nucleo every time): text that is not ASCII, atoms with operators (`!`, `^`,
//! `'`, `$`, which match on the whole text), one-character atoms (a `memchr` for nucleo, cheaper
//! than a key), text no longer than an atom, and scans whose hosts rarely share a key (an address
//! typed digit by digit), where keying would only add its cost.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};

use nucleo_matcher::pattern::{Atom, AtomKind, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// Keys remembered per atom and scan, at most (~100 bytes each).
const MEMO_CAP: usize = 1 << 14;
/// Hosts keyed before deciding whether keying pays for an atom in this scan.
const SAMPLE: usize = 4096;

/// What stands for a lower-case letter, an upper-case letter or a digit that is not the atom's, and
/// the key's own marks: all above ASCII, so none is a character of the text.
const LOWER: u8 = 0x80;
const UPPER: u8 = 0x81;
const DIGIT: u8 = 0x82;
/// The window starts the text (nucleo treats what is before it as whitespace).
const START: u8 = 0x83;
/// The atom's first or last character is missing, or the last comes before the first: no match.
const ABSENT: u8 = 0x84;

/// Scores hosts with one pattern, in one scan, remembering each atom's score per shape.
pub(super) struct Scorer<'p> {
    matcher: Matcher,
    parts: Vec<Part<'p>>,
    /// The key being built (one buffer for the scan).
    key: Vec<u8>,
}

/// One atom of the pattern, with what is remembered of it.
struct Part<'p> {
    atom: &'p Atom,
    /// How its window is written; `None`: scored by nucleo every time (not a plain fuzzy ASCII
    /// atom of two characters or more, or keying did not pay).
    shape: Option<Shape>,
    memo: HashMap<Box<[u8]>, Option<u16>, KeyHash>,
    /// The key of the host scored last, and its score.
    last: Option<(Vec<u8>, Option<u16>)>,
    looked: usize,
    found: usize,
}

/// One fuzzy atom: where its window starts and ends, and how a character of the text is written.
struct Shape {
    first: u8,
    last: u8,
    len: usize,
    /// Per ASCII character: itself when the atom holds it (either case) or it is neither a letter
    /// nor a digit; else its class.
    write: [u8; 128],
}

impl Shape {
    /// The shape of a fuzzy atom whose needle is `needle` (ASCII, lower case as nucleo stores it).
    /// Not for one character: nucleo finds its best place with a `memchr`, cheaper than a key.
    fn new(needle: &[u8]) -> Option<Self> {
        let (&first, &last) = (needle.first()?, needle.last()?);
        if needle.len() < 2 {
            return None;
        }
        let mut write = [0u8; 128];
        for (c, w) in (0u8..128).zip(write.iter_mut()) {
            *w = match c {
                _ if needle.contains(&c.to_ascii_lowercase()) => c,
                b'a'..=b'z' => LOWER,
                b'A'..=b'Z' => UPPER,
                b'0'..=b'9' => DIGIT,
                _ => c,
            };
        }
        Some(Self { first, last, len: needle.len(), write })
    }

    /// Writes the key of `text` (ASCII) for this atom.
    fn key(&self, text: &[u8], key: &mut Vec<u8>) {
        let write = |c: u8| self.write.get(usize::from(c)).copied().unwrap_or(c);
        key.clear();
        // Either case: nucleo lowers the text's letters to compare them.
        let (first, last) = (self.first, self.last);
        let start = match first.to_ascii_uppercase() {
            upper if upper == first => memchr::memchr(first, text),
            upper => memchr::memchr2(first, upper, text),
        };
        let end = match last.to_ascii_uppercase() {
            upper if upper == last => memchr::memrchr(last, text),
            upper => memchr::memrchr2(last, upper, text),
        };
        match (start, end) {
            (Some(start), Some(end)) if end >= start => {
                key.push(start.checked_sub(1).and_then(|i| text.get(i)).map_or(START, |&c| write(c)));
                key.extend(text[start..=end].iter().map(|&c| write(c)));
            }
            _ => key.push(ABSENT),
        }
    }
}

impl Part<'_> {
    /// nucleo's score of this atom for `text`, from the memo when a host of the same shape was
    /// scored before in this scan.
    fn score(&mut self, text: Utf32Str<'_>, matcher: &mut Matcher, key: &mut Vec<u8>) -> Option<u16> {
        let (Some(shape), Utf32Str::Ascii(bytes)) = (&self.shape, text) else {
            return self.atom.score(text, matcher);
        };
        // Text no longer than the atom is matched whole by nucleo, not by window.
        if bytes.len() <= shape.len {
            return self.atom.score(text, matcher);
        }
        shape.key(bytes, key);
        self.looked += 1;
        // Hosts in inventory order often follow one of the same shape: no hash for them.
        if let Some((last, score)) = &self.last
            && last == key
        {
            self.found += 1;
            return *score;
        }
        let score = match self.memo.get(key.as_slice()) {
            Some(&score) => {
                self.found += 1;
                score
            }
            None => {
                let score = self.atom.score(text, matcher);
                if self.memo.len() < MEMO_CAP {
                    self.memo.insert(key.as_slice().into(), score);
                }
                score
            }
        };
        // The key becomes the last one; its buffer is the next key's.
        match &mut self.last {
            Some((last, last_score)) => {
                std::mem::swap(last, key);
                *last_score = score;
            }
            None => self.last = Some((std::mem::take(key), score)),
        }
        // Hosts that rarely share a shape (an address typed digit by digit): a key costs about
        // what nucleo's matrix costs for a short window, so keying must save one in two.
        if self.looked == SAMPLE && self.found * 2 < self.looked {
            self.shape = None;
            self.memo = HashMap::default();
            self.last = None;
        }
        score
    }
}

impl<'p> Scorer<'p> {
    /// A scorer for `pattern` (parsed ignoring case, as the filter parses it).
    pub(super) fn new(pattern: &'p Pattern) -> Self {
        let parts = pattern
            .atoms
            .iter()
            .map(|atom| Part {
                atom,
                shape: match (atom.kind, atom.negative, atom.needle_text()) {
                    (AtomKind::Fuzzy, false, Utf32Str::Ascii(needle)) => Shape::new(needle),
                    _ => None,
                },
                memo: HashMap::default(),
                last: None,
                looked: 0,
                found: 0,
            })
            .collect();
        Self { matcher: Matcher::new(Config::DEFAULT), parts, key: Vec::new() }
    }

    /// The score nucleo's [`Pattern::score`] gives `text` (`None`: no match): the sum of its
    /// atoms' scores, each from the memo when it can be.
    pub(super) fn score(&mut self, text: Utf32Str<'_>) -> Option<u32> {
        let mut score = 0;
        for part in &mut self.parts {
            score += u32::from(part.score(text, &mut self.matcher, &mut self.key)?);
        }
        Some(score)
    }
}

/// Hashes the memo's keys: SipHash would cost as much as the rest of a key. Seeded per scan from
/// the standard library's random keys, so host names cannot be chosen to collide in every console.
#[derive(Clone)]
pub(super) struct KeyHash(u64);

impl Default for KeyHash {
    fn default() -> Self {
        Self(RandomState::new().hash_one(0u8))
    }
}

impl BuildHasher for KeyHash {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0)
    }
}

/// FxHash's multiply-rotate over eight bytes at a time, mixed at the end so the low bits the
/// table indexes with depend on every byte.
pub(super) struct KeyHasher(u64);

impl KeyHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // murmur3's last step.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

#[cfg(test)]
mod tests {
    use nucleo_matcher::Utf32String;
    use nucleo_matcher::pattern::{CaseMatching, Normalization};
    use proptest::prelude::*;

    use super::*;

    fn check(query: &str, texts: &[String]) {
        let pattern = Pattern::parse(query, CaseMatching::Ignore, Normalization::Smart);
        let mut scorer = Scorer::new(&pattern);
        let mut matcher = Matcher::new(Config::DEFAULT);
        // Twice: the second pass is answered from the memo.
        for text in texts.iter().chain(texts) {
            let text = Utf32String::from(text.as_str());
            let plain = pattern.score(text.slice(..), &mut matcher);
            assert_eq!(scorer.score(text.slice(..)), plain, "query {query:?} on {text:?}");
        }
    }

    #[test]
    fn hosts_of_one_shape_share_a_score_and_others_do_not() {
        let texts: Vec<String> = [
            "web-eu-west-000123 10.0.1.123 eu-west prod web",
            "web-eu-west-004567 10.0.7.215 eu-west prod web",
            "WEB-EU-WEST-000124 10.0.1.124 eu-west prod web",
            "db-eu-west-000125 10.0.1.125 db eu-west prod",
            "db-us-west-1 10.1.2.3 db us-west dev",
            "Web/West:01 10.0.0.1 Ünïcode",
            "wé 10.0.0.2",
            "w",
            "we",
            "e w",
            "",
        ]
        .map(String::from)
        .to_vec();
        for query in ["w", "we", "web", "web-e", "WE", "10", "10.", "10.1", "10.1.2", "prod 12", "ünï", "e w", "ww"] {
            check(query, &texts);
        }
        let pattern = Pattern::parse("we", CaseMatching::Ignore, Normalization::Smart);
        let mut scorer = Scorer::new(&pattern);
        for text in &texts[..3] {
            scorer.score(Utf32String::from(text.as_str()).slice(..));
        }
        let part = &scorer.parts[0];
        assert_eq!((part.looked, part.found), (3, 1), "other digits share a shape, upper case does not");
    }

    #[test]
    fn only_plain_fuzzy_ascii_atoms_of_two_characters_or_more_are_keyed() {
        let keyed = |query: &str| -> Vec<bool> {
            let pattern = Pattern::parse(query, CaseMatching::Ignore, Normalization::Smart);
            Scorer::new(&pattern).parts.iter().map(|p| p.shape.is_some()).collect()
        };
        for query in ["!web", "^web", "'web", "web$", "ünï", "w"] {
            assert_eq!(keyed(query), [false], "{query:?}");
        }
        assert_eq!(keyed("web !db 1 10"), [true, false, false, true]);
    }

    #[test]
    fn a_scan_whose_hosts_share_no_shape_stops_keying() {
        let pattern = Pattern::parse("10", CaseMatching::Ignore, Normalization::Smart);
        let mut scorer = Scorer::new(&pattern);
        // Every window (from the first 1 to the last 0) its own.
        for i in 0..SAMPLE + 10 {
            let text = Utf32String::from(format!("h {i:b}0"));
            scorer.score(text.slice(..));
        }
        assert!(scorer.parts[0].shape.is_none() && scorer.parts[0].memo.is_empty());
    }

    /// Text from a few characters of every class nucleo tells apart, so that windows repeat.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop::sample::select(vec![
                'a', 'b', 'e', 'w', 'W', 'B', 'x', 'Z', '0', '1', '2', '9', '-', '.', ' ', '/', ':', '_',
            ]),
            0..24,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The claim the memo rests on: hosts with one key have nucleo's one score.
        #[test]
        fn keyed_scores_are_nucleo_scores(
            texts in proptest::collection::vec(text(), 1..40),
            query in "[abewWB019. -]{1,6}",
        ) {
            check(&query, &texts);
        }

        /// The same, on texts that differ only in letters and digits swapped for others of
        /// their class (most share keys, and the ones that hold the query's characters do not).
        #[test]
        fn texts_alike_but_for_letters_and_digits_score_as_nucleo_scores(
            base in text(),
            swaps in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 24), 1..30),
            query in "[abewWB019. -]{1,6}",
        ) {
            let texts: Vec<String> = swaps
                .iter()
                .map(|swap| {
                    base.chars()
                        .zip(swap)
                        .map(|(c, &r)| match c {
                            'a'..='z' => char::from(b'a' + r % 26),
                            'A'..='Z' => char::from(b'A' + r % 26),
                            '0'..='9' => char::from(b'0' + r % 10),
                            _ => c,
                        })
                        .collect()
                })
                .collect();
            check(&query, &texts);
        }
    }
}
