//! Books: `citeflow-epub` in Python (`citeflow.epub`): a book opened from a path or bytes, its
//! chapters, its passages cut exactly as `citeflow ingest` cuts them (same settings, same ids,
//! same JSON), the reading view at a CFI, and CFIs parsed, compared and resolved.
//!
//! The binding converts and never decides: cutting, CFIs, reading and the passage record
//! (`citeflow_epub::BookPassage`, the one `citeflow ingest` writes) are the epub crate's; the
//! test suite compares every passage of every fixture book with the CLI's `citeflow ingest`
//! output.

mod passage;
mod reading;

use citeflow_epub as epub;
use pyo3::basic::CompareOp;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use pyo3::PyTypeInfo;

use self::passage::{Chapter, Passage};
use self::reading::{Reading, ReadingParagraph};
use crate::convert::repr_str;
use crate::errors::{raise, CiteflowError};

pyo3::create_exception!(
    citeflow._citeflow,
    EpubError,
    CiteflowError,
    "A book that cannot be opened: not a zip, not an EPUB, a missing or broken package, DRM, or \
     past a budget of the reader's limits (then `limit` names the budget, else it is None)."
);
pyo3::create_exception!(
    citeflow._citeflow,
    CfiError,
    CiteflowError,
    "A CFI that cannot be parsed (code 'cfi_parse', `position` the byte of the problem) or does \
     not resolve in the book (codes 'not_spine', 'step_out_of_range', 'missing_document', \
     'unsupported', 'offset_out_of_range', 'cross_document_range')."
);

fn open_err(py: Python<'_>, e: epub::OpenError) -> PyErr {
    let code = e.code();
    let err = raise::<EpubError>(py, code, e.to_string());
    let _ = err.value(py).setattr("limit", e.limit());
    err
}

fn cfi_parse_err(py: Python<'_>, e: epub::CfiParseError) -> PyErr {
    let err = raise::<CfiError>(py, "cfi_parse", e.to_string());
    let _ = err.value(py).setattr("position", e.position());
    err
}

fn resolve_err(py: Python<'_>, e: epub::ResolveError) -> PyErr {
    raise::<CfiError>(py, e.code(), e.to_string())
}

/// An EPUB CFI: parsed, printed canonically, compared in reading order.
#[pyclass(frozen, module = "citeflow._citeflow")]
#[derive(Clone)]
pub(crate) struct Cfi {
    inner: epub::Cfi,
}

/// A `Cfi` or a str, parsed.
pub(super) fn cfi_arg(obj: &Bound<'_, PyAny>) -> PyResult<epub::Cfi> {
    if let Ok(c) = obj.cast::<Cfi>() {
        return Ok(c.get().inner.clone());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return epub::Cfi::parse(&s.to_cow()?).map_err(|e| cfi_parse_err(obj.py(), e));
    }
    Err(PyTypeError::new_err(format!(
        "a cfi must be a Cfi or a str, not {}",
        obj.get_type().name()?
    )))
}

#[pymethods]
impl Cfi {
    /// Parses `epubcfi(…)` (or a bare path starting with `/`).
    ///
    /// Raises `CfiError` (code 'cfi_parse') naming the byte position.
    #[new]
    fn new(py: Python<'_>, cfi: &str) -> PyResult<Self> {
        Self::parse(py, cfi)
    }

    /// Parses `epubcfi(…)` (or a bare path starting with `/`).
    ///
    /// Raises `CfiError` (code 'cfi_parse') naming the byte position.
    #[staticmethod]
    fn parse(py: Python<'_>, cfi: &str) -> PyResult<Self> {
        let inner = epub::Cfi::parse(cfi).map_err(|e| cfi_parse_err(py, e))?;
        Ok(Cfi { inner })
    }

    /// Whether this is a range (`epubcfi(P,S,E)`).
    fn is_range(&self) -> bool {
        self.inner.is_range()
    }

    /// The start point (itself for a point).
    fn start(&self) -> Cfi {
        Cfi {
            inner: self.inner.start(),
        }
    }

    /// The end point (itself for a point).
    fn end(&self) -> Cfi {
        Cfi {
            inner: self.inner.end(),
        }
    }

    /// -1, 0 or 1 by the spec's reading order, None when the two cannot be ordered.
    fn compare(&self, other: &Bound<'_, PyAny>) -> PyResult<Option<i8>> {
        let other = cfi_arg(other)?;
        Ok(self.inner.compare(&other).map(|o| o as i8))
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = cfi_arg(other) else {
            return Ok(py.NotImplemented());
        };
        let ord = self.inner.compare(&other);
        let answer = match op {
            CompareOp::Eq => self.inner.to_string() == other.to_string(),
            CompareOp::Ne => self.inner.to_string() != other.to_string(),
            _ => {
                let Some(ord) = ord else {
                    return Err(PyTypeError::new_err(format!(
                        "{} and {} cannot be ordered",
                        self.inner, other
                    )));
                };
                op.matches(ord)
            }
        };
        Ok(answer.into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.inner.to_string().hash(&mut h);
        h.finish()
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Cfi({})", repr_str(&self.inner.to_string()))
    }
}

/// An opened EPUB.
#[pyclass(frozen, module = "citeflow._citeflow")]
pub(crate) struct Book {
    inner: epub::Book,
}

#[pymethods]
impl Book {
    /// Opens a book from its bytes, or from a file path (str or os.PathLike).
    ///
    /// Raises `EpubError` for a book that cannot be read, `OSError` for a file that cannot.
    #[staticmethod]
    fn open(py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<Self> {
        let bytes: Vec<u8> = if let Ok(b) = source.cast::<PyBytes>() {
            b.as_bytes().to_vec()
        } else if let Ok(b) = source.cast::<PyByteArray>() {
            b.to_vec()
        } else {
            let path: std::path::PathBuf = source.extract()?;
            py.detach(|| std::fs::read(&path))?
        };
        Self::from_bytes(py, &bytes)
    }

    /// Opens a book from the bytes of an `.epub` file.
    ///
    /// Raises `EpubError`.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let inner = py
            .detach(|| epub::Book::open(data, &epub::Limits::default()))
            .map_err(|e| open_err(py, e))?;
        Ok(Book { inner })
    }

    /// The title (`dc:title`), empty if none.
    #[getter]
    fn title(&self) -> &str {
        self.inner.metadata().title.as_deref().unwrap_or("")
    }
    /// The package's unique identifier, empty if none.
    #[getter]
    fn book_id(&self) -> &str {
        self.inner.metadata().identifier.as_deref().unwrap_or("")
    }
    /// The short key passage ids start with (as `citeflow ingest`).
    #[getter]
    fn book_key(&self) -> String {
        epub::book_key(self.book_id(), self.title())
    }
    /// The language (`dc:language`), if named.
    #[getter]
    fn language(&self) -> Option<&str> {
        self.inner.metadata().language.as_deref()
    }
    /// The creators (`dc:creator`).
    #[getter]
    fn creators(&self) -> Vec<String> {
        self.inner.metadata().creators.clone()
    }
    /// Problems found while reading (`path: message`).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner
            .warnings()
            .iter()
            .map(|w| w.to_string())
            .collect()
    }
    /// The chapters in reading order.
    #[getter]
    fn chapters(&self) -> Vec<Chapter> {
        self.inner
            .chapters()
            .iter()
            .map(|c| Chapter {
                index: c.index,
                title: c.title.clone(),
                depth: c.depth,
                spine_index: c.spine_index,
                href: c.href.clone(),
                cfi: self.inner.chapter_cfi(c.index).map(|x| x.to_string()),
            })
            .collect()
    }

    /// The passages, cut as `citeflow ingest` cuts them with the same options (defaults: 800
    /// characters, 100 of overlap, ruby readings left out).
    #[pyo3(signature = (*, target_chars=800, overlap_chars=100, ruby_text=false))]
    fn passages(
        &self,
        py: Python<'_>,
        target_chars: usize,
        overlap_chars: usize,
        ruby_text: bool,
    ) -> Vec<Passage> {
        let settings = epub::ChunkSettings::new()
            .with_target_chars(target_chars)
            .with_overlap_chars(overlap_chars)
            .with_ruby_text(ruby_text);
        let language = self.inner.metadata().language.clone();
        py.detach(|| {
            self.inner
                .passages(&settings)
                .iter()
                .map(|p| Passage {
                    record: epub::BookPassage::from_passage(p),
                    language: language.clone(),
                })
                .collect()
        })
    }

    /// The chapter that holds `cfi` (a str or `Cfi`), as paragraphs, with what it covers
    /// marked; `Reading.text` is the marked text (a passage's range CFI gives exactly the
    /// passage's text when `ruby_text` is what the passage was cut with).
    ///
    /// Raises `CfiError`.
    #[pyo3(signature = (cfi, *, ruby_text=false))]
    fn reading(
        &self,
        py: Python<'_>,
        cfi: &Bound<'_, PyAny>,
        ruby_text: bool,
    ) -> PyResult<Reading> {
        let cfi = cfi_arg(cfi)?;
        let inner = self
            .inner
            .reading(&cfi, ruby_text)
            .map_err(|e| resolve_err(py, e))?;
        Ok(Reading { inner })
    }

    /// The text a CFI names: a range's text (as written, whitespace kept), or for a point up
    /// to `max_chars` characters after it.
    ///
    /// Raises `CfiError` when the CFI does not resolve in this book.
    #[pyo3(signature = (cfi, *, max_chars=200))]
    fn resolve(
        &self,
        py: Python<'_>,
        cfi: &Bound<'_, PyAny>,
        max_chars: usize,
    ) -> PyResult<String> {
        let cfi = cfi_arg(cfi)?;
        let r = self.inner.resolve(&cfi).map_err(|e| resolve_err(py, e))?;
        Ok(if r.end.is_some() {
            self.inner.text_of(&r)
        } else {
            self.inner.text_after(&r.start, max_chars)
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Book(title={}, chapters={})",
            repr_str(self.title()),
            self.inner.chapters().len()
        )
    }
}

/// Registers the classes and exceptions of books on the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for (name, ty, code, extra) in [
        ("EpubError", EpubError::type_object(py), "epub", "limit"),
        ("CfiError", CfiError::type_object(py), "cfi", "position"),
    ] {
        ty.setattr("code", code)?;
        ty.setattr(extra, py.None())?;
        m.add(name, ty)?;
    }
    m.add_class::<Cfi>()?;
    m.add_class::<Chapter>()?;
    m.add_class::<Passage>()?;
    m.add_class::<ReadingParagraph>()?;
    m.add_class::<Reading>()?;
    m.add_class::<Book>()?;
    Ok(())
}
