//! Where a provider citation's number was placed: [`Places`].
//!
//! The same source twice at one place is shown once. A place is an output byte (where the
//! number was written) or a stream place (a count of what was given to the rewriter). A source
//! is named by its numbering key, a string the upstream chose (a url, a document id); each
//! key is stored once and the places hold its index, so a citation hashes two integers, not
//! its key, and clones its key only the first time.

use std::collections::HashMap;

use rustc_hash::FxHashSet;

/// The places each source's number was shown at, by output byte and by stream place.
#[derive(Debug, Clone, Default)]
pub(super) struct Places {
    /// Each key seen, with its index (hashed with std's keyed hasher: the keys come from the
    /// upstream).
    keys: HashMap<String, usize>,
    /// `(key index, output byte)`.
    output: FxHashSet<(usize, u64)>,
    /// `(key index, stream place)`.
    stream: FxHashSet<(usize, u64)>,
}

/// A key's index in [`Places`], for the lookups of one citation.
#[derive(Debug, Clone, Copy)]
pub(super) struct Key(usize);

impl Places {
    /// `key`'s index, stored the first time it is seen.
    pub(super) fn key(&mut self, key: &str) -> Key {
        if let Some(&i) = self.keys.get(key) {
            return Key(i);
        }
        let i = self.keys.len();
        self.keys.insert(key.to_owned(), i);
        Key(i)
    }

    /// Whether `key`'s number was placed at output byte `at` or at stream place `place`.
    pub(super) fn shown(&self, key: Key, at: u64, place: u64) -> bool {
        self.output.contains(&(key.0, at)) || self.stream.contains(&(key.0, place))
    }

    /// Records `key`'s number at output byte `at`; `false` when it was there already.
    pub(super) fn at_output(&mut self, key: Key, at: u64) -> bool {
        self.output.insert((key.0, at))
    }

    /// Records `key`'s number at stream place `place`.
    pub(super) fn at_stream(&mut self, key: Key, place: u64) {
        self.stream.insert((key.0, place));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_index_and_its_places_are_its_own() {
        let mut p = Places::default();
        let (a, b) = (p.key("https://a"), p.key("https://b"));
        assert_eq!(p.key("https://a").0, a.0);
        assert_ne!(a.0, b.0);
        assert!(!p.shown(a, 10, 1));
        assert!(p.at_output(a, 10));
        assert!(!p.at_output(a, 10));
        assert!(p.shown(a, 10, 99));
        assert!(!p.shown(b, 10, 99));
        p.at_stream(b, 3);
        assert!(p.shown(b, 0, 3));
        assert!(!p.shown(a, 0, 3));
        assert_eq!(p.keys.len(), 2);
    }
}
