//! [`BookPassage`]: a passage of a book as ingested, stored and cited, and [`book_key`], the
//! short key its source id starts with. One definition for `citeflow ingest` (through
//! `citeflow-index`), the Python package and the npm package, so their records are the same
//! byte for byte.

#[cfg(feature = "source")]
use citeflow_core::{Locator, Source};

#[cfg(feature = "source")]
use crate::{Book, Check, ChunkSettings, Passage};

/// A passage of a book with everything a citation needs (feature `source`).
///
/// Its JSON form (one line of `citeflow ingest` output, and what the index stores) carries
/// the passage's own fields *and* the fields of a [`Source`] (`id`, `title`, `url`, `text`,
/// `locator`), so each line also deserialises as a core `Source`:
///
/// ```json
/// {"id":"alice-1f2e3d#p12","title":"Alice's Adventures in Wonderland — Down The Rabbit-Hole",
///  "url":"book:edu.nyu.itp.future-of-publishing.alice-in-wonderland",
///  "text":"…","locator":{"chapter_index":2,"chapter_title":"Down The Rabbit-Hole",
///  "cfi":"epubcfi(/6/8!/4/2,/2/1:0,/6/1:335)"},
///  "book_key":"alice-1f2e3d","book_id":"…","book_title":"…","passage_index":12,
///  "chapter_index":2,"chapter_title":"…","spine_index":3,"href":"chapter_001.xhtml",
///  "cfi":"epubcfi(…)","start_cfi":"epubcfi(…)"}
/// ```
#[cfg(feature = "source")]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct BookPassage {
    /// The source id the model cites: `<book_key>#p<passage_index>`.
    pub id: String,
    /// Book title and chapter title, joined by ` — `.
    pub title: String,
    /// `book:<book id>` (the package's unique identifier, else the book key). Sources are
    /// numbered by url plus CFI, so two passages of one book keep two numbers.
    pub url: String,
    /// The passage text.
    pub text: String,
    /// Chapter index and title and the passage's range CFI, as a core locator.
    pub locator: Locator,
    /// The short key of the book (see [`book_key`]).
    pub book_key: String,
    /// The package's unique identifier (empty if it has none).
    pub book_id: String,
    /// The book's title (empty if it has none).
    pub book_title: String,
    /// Position in the book's passage list.
    pub passage_index: usize,
    /// The chapter's index in the book's chapter list.
    pub chapter_index: usize,
    /// The chapter's title (`None` for untitled leading content).
    pub chapter_title: Option<String>,
    /// The spine document holding the passage.
    pub spine_index: usize,
    /// That document's manifest `href`.
    pub href: String,
    /// Range CFI of the passage.
    pub cfi: String,
    /// CFI of the passage's first character.
    pub start_cfi: String,
}

#[cfg(feature = "source")]
impl BookPassage {
    /// The record of an `epub` passage.
    pub fn from_passage(p: &Passage) -> BookPassage {
        let key = book_key(&p.book_id, &p.book_title);
        let title = match (&p.chapter_title, p.book_title.is_empty()) {
            (Some(c), false) => format!("{} — {c}", p.book_title),
            (Some(c), true) => c.clone(),
            (None, false) => p.book_title.clone(),
            (None, true) => key.clone(),
        };
        let cfi = p.cfi.to_string();
        let url = if p.book_id.trim().is_empty() {
            format!("book:{key}")
        } else {
            format!("book:{}", p.book_id.trim())
        };
        BookPassage {
            id: format!("{key}#p{}", p.index),
            title,
            url,
            text: p.text.clone(),
            locator: Locator {
                chapter_index: u32::try_from(p.chapter_index).ok(),
                chapter_title: p.chapter_title.clone(),
                cfi: Some(cfi.clone()),
                page: None,
            },
            book_key: key,
            book_id: p.book_id.clone(),
            book_title: p.book_title.clone(),
            passage_index: p.index,
            chapter_index: p.chapter_index,
            chapter_title: p.chapter_title.clone(),
            spine_index: p.spine_index,
            href: p.href.clone(),
            cfi,
            start_cfi: p.start_cfi.to_string(),
        }
    }

    /// The records of every passage of `book`.
    pub fn from_book(book: &Book, settings: &ChunkSettings) -> Vec<BookPassage> {
        book.passages(settings)
            .iter()
            .map(BookPassage::from_passage)
            .collect()
    }

    /// [`BookPassage::from_book`] with the caller's check before each spine document (see
    /// [`Book::passages_checked`]); `None` when it stopped the job.
    pub fn from_book_checked(
        book: &Book,
        settings: &ChunkSettings,
        check: &mut Check<'_>,
    ) -> Option<Vec<BookPassage>> {
        let passages = book.passages_checked(settings, check)?;
        Some(passages.iter().map(BookPassage::from_passage).collect())
    }

    /// The passage as a core [`Source`]: id, title, url, text and locator.
    pub fn to_source(&self) -> Source {
        Source::new(&self.id)
            .with_title(&self.title)
            .with_url(&self.url)
            .with_text(&self.text)
            .with_locator(self.locator.clone())
    }
}

/// A short, stable key for a book: up to 12 characters of its title's ASCII letters and
/// digits (lowercase, words joined by `-`), a `-`, and 6 hex digits of an FNV-1a hash of its
/// identifier (or title): `alice-s-adve-1f2e3d`, or `b-9a8b7c` for a title without ASCII
/// letters (`草枕`).
///
/// Source ids are `<book_key>#p<n>`: short enough for a model to copy and for the
/// rewriter's hold-back buffer.
pub fn book_key(book_id: &str, book_title: &str) -> String {
    let mut slug = String::new();
    for word in book_title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !slug.is_empty() {
            if slug.len() + 1 >= 12 {
                break;
            }
            slug.push('-');
        }
        for c in word.chars() {
            if slug.len() >= 12 {
                break;
            }
            slug.push(c.to_ascii_lowercase());
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug = if slug.is_empty() { "b" } else { slug };
    let seed = if book_id.trim().is_empty() {
        book_title
    } else {
        book_id.trim()
    };
    format!("{slug}-{:06x}", fnv1a(seed.as_bytes()) & 0xff_ffff)
}

/// 64-bit FNV-1a of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
