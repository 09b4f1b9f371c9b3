//! What a provider said about a citation: `CitationDetail` (quote, span, late) with its `Span`
//! and `Position`s in the three units users index strings with.

use citeflow_core as core;
use pyo3::prelude::*;

use crate::convert::repr_opt;
use crate::types::to_py;

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A position in the rendered output in three units: `bytes` (UTF-8), `chars` (code points:
/// a Python `str` index) and `utf16` (UTF-16 code units: a JavaScript index).
#[pyclass(frozen, eq, hash, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Position {
    pub(crate) inner: core::Position,
}

#[pymethods]
impl Position {
    #[new]
    #[pyo3(signature = (bytes, chars, utf16))]
    fn new(bytes: u64, chars: u64, utf16: u64) -> Self {
        Position {
            inner: core::Position {
                bytes,
                chars,
                utf16,
            },
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str) {
        ("bytes", "chars", "utf16")
    }

    /// UTF-8 bytes.
    #[getter]
    fn bytes(&self) -> u64 {
        self.inner.bytes
    }

    /// Code points (a Python `str` index).
    #[getter]
    fn chars(&self) -> u64 {
        self.inner.chars
    }

    /// UTF-16 code units (a JavaScript or Java string index).
    #[getter]
    fn utf16(&self) -> u64 {
        self.inner.utf16
    }

    /// The core's JSON form: `{"bytes": ..., "chars": ..., "utf16": ...}`.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "Position(bytes={}, chars={}, utf16={})",
            self.inner.bytes, self.inner.chars, self.inner.utf16
        )
    }
}

/// A range `start..end` of the rendered output.
#[pyclass(frozen, eq, hash, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Span {
    pub(crate) inner: core::Span,
}

#[pymethods]
impl Span {
    #[new]
    fn new(start: &Position, end: &Position) -> Self {
        Span {
            inner: core::Span {
                start: start.inner,
                end: end.inner,
            },
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str) {
        ("start", "end")
    }

    /// The first position.
    #[getter]
    fn start(&self) -> Position {
        Position {
            inner: self.inner.start,
        }
    }

    /// The position after the last.
    #[getter]
    fn end(&self) -> Position {
        Position {
            inner: self.inner.end,
        }
    }

    /// The core's JSON form: `{"start": {...}, "end": {...}}`.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "Span(start={}, end={})",
            self.start().__repr__(),
            self.end().__repr__()
        )
    }
}

/// The provider's side of a citation it reported beside the text (Anthropic
/// `citations_delta`, OpenAI `annotation.added`, Gemini grounding, Cohere `citation-start`,
/// Bedrock `citation`): its `quote` (for a hover), the cited `span` of the rendered output when
/// the provider said which, and `late`: True when the citation arrived after its text was shown
/// (the number is in no `TextEvent`; `DoneEvent.text` has it at the span's end); and
/// `replaces_span`: True when the number stands for the span (the model's own inline link to
/// the cited url) instead of following it.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct CitationDetail {
    pub(crate) inner: core::CitationDetail,
}

#[pymethods]
impl CitationDetail {
    #[new]
    #[pyo3(signature = (quote=None, span=None, late=false, replaces_span=false))]
    fn new(quote: Option<String>, span: Option<&Span>, late: bool, replaces_span: bool) -> Self {
        CitationDetail {
            inner: core::CitationDetail {
                quote,
                span: span.map(|s| s.inner),
                late,
                replaces_span,
            },
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str, &'static str) {
        ("quote", "span", "late", "replaces_span")
    }

    /// The text the provider says supports the answer, if it gave one.
    #[getter]
    fn quote(&self) -> Option<&str> {
        self.inner.quote.as_deref()
    }

    /// The cited part of the rendered output, when the provider said which it is.
    #[getter]
    fn span(&self) -> Option<Span> {
        self.inner.span.map(|inner| Span { inner })
    }

    /// Whether the citation was bound after its text was shown.
    #[getter]
    fn late(&self) -> bool {
        self.inner.late
    }

    /// Whether the number replaces the span (the model's own link to the cited url) rather
    /// than following it.
    #[getter]
    fn replaces_span(&self) -> bool {
        self.inner.replaces_span
    }

    /// The core's JSON form (absent fields left out, as in the core).
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "CitationDetail(quote={}, span={}, late={}, replaces_span={})",
            repr_opt(self.inner.quote.as_deref()),
            self.span()
                .map_or_else(|| "None".to_owned(), |s| s.__repr__()),
            py_bool(self.inner.late),
            py_bool(self.inner.replaces_span)
        )
    }
}
