//! Chapters and passages: the records `citeflow ingest` writes, field for field.

use citeflow_core as core;
use citeflow_epub as epub;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{repr_opt, repr_str, value_to_py};
use crate::errors::{raise, CiteflowError};

/// A chapter from the table of contents.
#[pyclass(frozen, eq, get_all, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Chapter {
    /// Position in `Book.chapters`.
    pub(super) index: usize,
    /// The table-of-contents label; None for untitled leading content.
    pub(super) title: Option<String>,
    /// Nesting depth in the table of contents.
    pub(super) depth: usize,
    /// Spine index where the chapter starts.
    pub(super) spine_index: usize,
    /// The entry's link as written.
    pub(super) href: String,
    /// Where the chapter begins (`Book.reading` opens it there); None for an entry that starts
    /// where the next one does.
    pub(super) cfi: Option<String>,
}

#[pymethods]
impl Chapter {
    fn __repr__(&self) -> String {
        format!(
            "Chapter(index={}, title={}, cfi={})",
            self.index,
            repr_opt(self.title.as_deref()),
            repr_opt(self.cfi.as_deref())
        )
    }
}

/// One passage as `citeflow ingest` writes it (the JSON of `citeflow_index::BookPassage`, field
/// for field and in the same order).
#[derive(Clone, PartialEq, serde::Serialize)]
pub(super) struct Record {
    id: String,
    title: String,
    url: String,
    text: String,
    locator: core::Locator,
    book_key: String,
    book_id: String,
    book_title: String,
    passage_index: usize,
    chapter_index: usize,
    chapter_title: Option<String>,
    spine_index: usize,
    href: String,
    cfi: String,
    start_cfi: String,
}

impl Record {
    /// As `citeflow_index::BookPassage::from_passage`.
    pub(super) fn of(p: &epub::Passage) -> Record {
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
        Record {
            id: format!("{key}#p{}", p.index),
            title,
            url,
            text: p.text.clone(),
            locator: core::Locator {
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
}

/// As `citeflow_index::book_key`: up to 12 characters of the title's ASCII letters and digits
/// (lowercase, words joined by `-`), `-`, and 6 hex digits of an FNV-1a hash of the identifier
/// (or title).
pub(super) fn book_key(book_id: &str, book_title: &str) -> String {
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
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in seed.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{slug}-{:06x}", h & 0xff_ffff)
}

/// A passage of a book: its text, chapter, range CFI and the ids `citeflow ingest` gives it.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Passage {
    pub(super) record: Record,
    pub(super) language: Option<String>,
}

#[pymethods]
impl Passage {
    /// The source id the model cites: `<book_key>#p<index>` (as `citeflow ingest`).
    #[getter]
    fn id(&self) -> &str {
        &self.record.id
    }
    /// Position in the book's passage list.
    #[getter]
    fn index(&self) -> usize {
        self.record.passage_index
    }
    /// The text: whitespace runs collapsed, paragraphs separated by a blank line.
    #[getter]
    fn text(&self) -> &str {
        &self.record.text
    }
    /// Book title and chapter title joined by ` — `.
    #[getter]
    fn title(&self) -> &str {
        &self.record.title
    }
    /// `book:<book id>` (else `book:<book key>`).
    #[getter]
    fn url(&self) -> &str {
        &self.record.url
    }
    /// The chapter's index in `Book.chapters`.
    #[getter]
    fn chapter_index(&self) -> usize {
        self.record.chapter_index
    }
    /// The chapter's title (None for untitled leading content).
    #[getter]
    fn chapter_title(&self) -> Option<&str> {
        self.record.chapter_title.as_deref()
    }
    /// Range CFI from the first character to just after the last.
    #[getter]
    fn cfi(&self) -> &str {
        &self.record.cfi
    }
    /// CFI of the first character.
    #[getter]
    fn start_cfi(&self) -> &str {
        &self.record.start_cfi
    }
    /// The spine document holding the passage.
    #[getter]
    fn spine_index(&self) -> usize {
        self.record.spine_index
    }
    /// That document's manifest href.
    #[getter]
    fn href(&self) -> &str {
        &self.record.href
    }
    /// The package's unique identifier (empty if it has none).
    #[getter]
    fn book_id(&self) -> &str {
        &self.record.book_id
    }
    /// The book's short key (`alice-s-adve-1f2e3d`), the prefix of passage ids.
    #[getter]
    fn book_key(&self) -> &str {
        &self.record.book_key
    }
    /// The book's title (empty if it has none).
    #[getter]
    fn book_title(&self) -> &str {
        &self.record.book_title
    }
    /// The book's language (`dc:language`), if it names one.
    #[getter]
    fn language(&self) -> Option<&str> {
        self.language.as_deref()
    }

    /// Flat metadata for a vector store (str and int values only; keys whose value is None are
    /// left out): `passage_id`, `passage_index`, `book_id`, `book_key`, `book_title`, `title`,
    /// `url`, `chapter_index`, `chapter_title`, `cfi`, `start_cfi`, `spine_index`, `href`,
    /// `language`.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.record;
        let d = PyDict::new(py);
        d.set_item("passage_id", &r.id)?;
        d.set_item("passage_index", r.passage_index)?;
        d.set_item("book_id", &r.book_id)?;
        d.set_item("book_key", &r.book_key)?;
        d.set_item("book_title", &r.book_title)?;
        d.set_item("title", &r.title)?;
        d.set_item("url", &r.url)?;
        d.set_item("chapter_index", r.chapter_index)?;
        if let Some(t) = &r.chapter_title {
            d.set_item("chapter_title", t)?;
        }
        d.set_item("cfi", &r.cfi)?;
        d.set_item("start_cfi", &r.start_cfi)?;
        d.set_item("spine_index", r.spine_index)?;
        d.set_item("href", &r.href)?;
        if let Some(l) = &self.language {
            d.set_item("language", l)?;
        }
        Ok(d)
    }

    /// The passage as a citeflow `Source` (id, title, url, text, locator with chapter and CFI),
    /// the source `citeflow ingest`'s line reads as.
    fn to_source(&self) -> crate::types::Source {
        let r = &self.record;
        crate::types::Source {
            inner: core::Source::new(&r.id)
                .with_title(&r.title)
                .with_url(&r.url)
                .with_text(&r.text)
                .with_locator(r.locator.clone()),
        }
    }

    /// The JSON object `citeflow ingest` writes for this passage, as a dict.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let v = serde_json::to_value(&self.record)
            .map_err(|e| raise::<CiteflowError>(py, "serialize", e.to_string()))?;
        value_to_py(py, &v)
    }

    /// The line `citeflow ingest` writes for this passage (compact JSON, no newline).
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        serde_json::to_string(&self.record)
            .map_err(|e| raise::<CiteflowError>(py, "serialize", e.to_string()))
    }

    fn __repr__(&self) -> String {
        let short: String = self.record.text.chars().take(40).collect();
        format!(
            "Passage(id={}, chapter_index={}, cfi={}, text={})",
            repr_str(&self.record.id),
            self.record.chapter_index,
            repr_str(&self.record.cfi),
            repr_str(&short)
        )
    }
}
