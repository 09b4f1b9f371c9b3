//! The append-only numbering table: canonical key → number.

use rustc_hash::FxHashMap as HashMap;

use crate::error::NumberingError;

/// One row of the numbering table.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NumberEntry {
    /// The readable number, from 1.
    pub number: u32,
    /// The canonical key the number belongs to (see [`Sources::key_of`](crate::Sources::key_of)).
    pub key: String,
    /// The id of the source that first took the number.
    pub source_id: String,
}

/// The numbering table of an answer or of a whole session.
///
/// It only grows: a key, once numbered, keeps its number, and a number never moves to another
/// key. Load it from your store before a stream and save it after (or after every
/// [`Event::Source`](crate::Event::Source) with `is_new`); the core never calls a store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Numbering {
    entries: Vec<NumberEntry>,
    #[cfg_attr(feature = "serde", serde(skip))]
    by_key: HashMap<String, u32>,
}

impl Numbering {
    /// An empty table: the first citation gets 1.
    pub fn new() -> Self {
        Numbering::default()
    }

    /// A table from saved rows.
    ///
    /// # Errors
    /// [`NumberingError::Conflict`] when two rows share a key or a number.
    pub fn from_entries(entries: Vec<NumberEntry>) -> Result<Self, NumberingError> {
        let mut n = Numbering::new();
        for e in entries {
            n.insert(e.number, e.key, e.source_id)?;
        }
        Ok(n)
    }

    fn reindex(&mut self) {
        if self.by_key.len() != self.entries.len() {
            self.by_key = self
                .entries
                .iter()
                .map(|e| (e.key.clone(), e.number))
                .collect();
        }
    }

    /// The number of `key`, if it has one.
    pub fn get(&self, key: &str) -> Option<u32> {
        if self.by_key.len() == self.entries.len() {
            self.by_key.get(key).copied()
        } else {
            self.entries.iter().find(|e| e.key == key).map(|e| e.number)
        }
    }

    /// The row holding `number`.
    pub fn entry(&self, number: u32) -> Option<&NumberEntry> {
        self.entries.iter().find(|e| e.number == number)
    }

    /// The number `key` has, or the next free one, recorded now. Returns the number and whether
    /// it was new.
    pub fn allocate(&mut self, key: &str, source_id: &str) -> (u32, bool) {
        self.reindex();
        if let Some(&n) = self.by_key.get(key) {
            return (n, false);
        }
        let n = self.next_number();
        self.entries.push(NumberEntry {
            number: n,
            key: key.to_owned(),
            source_id: source_id.to_owned(),
        });
        self.by_key.insert(key.to_owned(), n);
        (n, true)
    }

    /// Records a number handed out elsewhere (a shared store). Recording the same pair twice is
    /// fine.
    ///
    /// # Errors
    /// [`NumberingError::Conflict`] when the key has another number or the number another key.
    pub fn insert(
        &mut self,
        number: u32,
        key: String,
        source_id: String,
    ) -> Result<(), NumberingError> {
        self.reindex();
        if number == 0 {
            return Err(NumberingError::Zero { key });
        }
        if let Some(&n) = self.by_key.get(&key) {
            if n == number {
                return Ok(());
            }
            return Err(NumberingError::Conflict {
                key,
                number,
                existing: format!("number {n}"),
            });
        }
        if let Some(e) = self.entry(number) {
            return Err(NumberingError::Conflict {
                existing: format!("key {}", e.key),
                key,
                number,
            });
        }
        self.by_key.insert(key.clone(), number);
        self.entries.push(NumberEntry {
            number,
            key,
            source_id,
        });
        Ok(())
    }

    /// The number the next new key gets: one more than the largest so far.
    pub fn next_number(&self) -> u32 {
        self.entries.iter().map(|e| e.number).max().unwrap_or(0) + 1
    }

    /// All rows in the order they were numbered.
    pub fn entries(&self) -> &[NumberEntry] {
        &self.entries
    }

    /// How many numbers were handed out.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no number was handed out.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `earlier` is a prefix of this table: nothing was renumbered or dropped.
    pub fn extends(&self, earlier: &Numbering) -> bool {
        earlier.entries.len() <= self.entries.len()
            && earlier
                .entries
                .iter()
                .zip(&self.entries)
                .all(|(a, b)| a == b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_is_dense_and_stable() {
        let mut n = Numbering::new();
        assert_eq!(n.allocate("a", "s1"), (1, true));
        assert_eq!(n.allocate("b", "s2"), (2, true));
        assert_eq!(n.allocate("a", "s3"), (1, false));
        assert_eq!(n.len(), 2);
    }

    #[test]
    fn external_numbers_must_not_conflict() {
        let mut n = Numbering::new();
        n.insert(5, "a".into(), "s".into()).unwrap();
        n.insert(5, "a".into(), "s".into()).unwrap();
        assert!(n.insert(6, "a".into(), "s".into()).is_err());
        assert!(n.insert(5, "b".into(), "s".into()).is_err());
        assert!(n.insert(0, "c".into(), "s".into()).is_err());
        assert_eq!(n.next_number(), 6);
        assert!(Numbering::from_entries(n.entries().to_vec()).unwrap() == n);
    }
}
