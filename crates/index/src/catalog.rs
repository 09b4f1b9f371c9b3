//! [`BookInfo`] and [`ChapterInfo`]: what an index holds, book by book.

use std::collections::BTreeMap;

/// One book of an [`Index`](crate::Index), as [`Index::books`](crate::Index::books) lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct BookInfo {
    /// The book key (see [`book_key`](crate::book_key)); passage ids are `<key>#p<n>`.
    pub key: String,
    /// The book's title (empty if it has none).
    pub title: String,
    /// The package's unique identifier (empty if it has none).
    pub book_id: String,
    /// The `book:` url its passages carry.
    pub url: String,
    /// The fingerprint stored with its passages (see [`fingerprint`](crate::fingerprint)).
    pub fingerprint: String,
    /// Number of passages indexed.
    pub passages: usize,
    /// The chapters that have passages, in book order.
    pub chapters: Vec<ChapterInfo>,
}

/// A chapter of a [`BookInfo`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ChapterInfo {
    /// The chapter's index in the book's chapter list.
    pub index: usize,
    /// Its title (`None` for untitled leading content).
    pub title: Option<String>,
    /// Number of passages in it.
    pub passages: usize,
}

/// The fields of a stored passage record that the catalog needs (the text is skipped).
#[derive(serde::Deserialize)]
pub(crate) struct RecordHead {
    book_key: String,
    book_id: String,
    book_title: String,
    url: String,
    chapter_index: usize,
    chapter_title: Option<String>,
}

/// Collects records into books.
#[derive(Default)]
pub(crate) struct Catalog {
    books: BTreeMap<String, (BookInfo, BTreeMap<usize, ChapterInfo>)>,
}

impl Catalog {
    pub(crate) fn add(&mut self, head: RecordHead, fingerprint: &str) {
        let (book, chapters) = self.books.entry(head.book_key.clone()).or_insert_with(|| {
            (
                BookInfo {
                    key: head.book_key,
                    title: head.book_title,
                    book_id: head.book_id,
                    url: head.url,
                    fingerprint: fingerprint.to_owned(),
                    passages: 0,
                    chapters: Vec::new(),
                },
                BTreeMap::new(),
            )
        });
        book.passages += 1;
        chapters
            .entry(head.chapter_index)
            .or_insert_with(|| ChapterInfo {
                index: head.chapter_index,
                title: head.chapter_title,
                passages: 0,
            })
            .passages += 1;
    }

    /// The books, ordered by title, then key.
    pub(crate) fn finish(self) -> Vec<BookInfo> {
        let mut out: Vec<BookInfo> = self
            .books
            .into_values()
            .map(|(mut b, chapters)| {
                b.chapters = chapters.into_values().collect();
                b
            })
            .collect();
        out.sort_by(|a, b| (&a.title, &a.key).cmp(&(&b.title, &b.key)));
        out
    }
}
