//! Chapters and passages: the records `citeflow ingest` writes, field for field.

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

/// A passage of a book: its text, chapter, range CFI and the ids `citeflow ingest` gives it.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Passage {
    pub(super) record: epub::BookPassage,
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
        crate::types::Source {
            inner: self.record.to_source(),
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
