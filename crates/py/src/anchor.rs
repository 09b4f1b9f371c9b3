//! Claim anchors: `AnchorEvent` (a citation's claim, the quote of its source that supports it,
//! the support score and its verdict), with its `Quote` and the `TextRange`s of both.
//!
//! Every range carries the three units users index strings with: `char_*` (code points, a
//! Python `str` index: `source.text[q.char_start:q.char_end] == q.text`), `byte_*` (UTF-8, the
//! core's unit) and `utf16_*` (a JavaScript index).

use citeflow_core::anchor as core;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::{repr_opt, repr_str, serde_name, to_py};

/// A range of a text in three units: `char_start`/`char_end` (code points: a Python `str`
/// slice), `byte_start`/`byte_end` (UTF-8 bytes) and `utf16_start`/`utf16_end` (UTF-16 code
/// units).
#[pyclass(frozen, eq, hash, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct TextRange {
    pub(crate) inner: core::TextRange,
}

#[pymethods]
impl TextRange {
    #[classattr]
    fn __match_args__() -> (&'static str, &'static str) {
        ("char_start", "char_end")
    }

    /// First code point (a `str` index).
    #[getter]
    fn char_start(&self) -> u64 {
        self.inner.char_start
    }

    /// Code point after the last.
    #[getter]
    fn char_end(&self) -> u64 {
        self.inner.char_end
    }

    /// First UTF-8 byte.
    #[getter]
    fn byte_start(&self) -> u64 {
        self.inner.byte_start
    }

    /// UTF-8 byte after the last.
    #[getter]
    fn byte_end(&self) -> u64 {
        self.inner.byte_end
    }

    /// First UTF-16 code unit (a JavaScript index).
    #[getter]
    fn utf16_start(&self) -> u64 {
        self.inner.utf16_start
    }

    /// UTF-16 code unit after the last.
    #[getter]
    fn utf16_end(&self) -> u64 {
        self.inner.utf16_end
    }

    /// The core's JSON form: the six offsets.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        let r = &self.inner;
        format!(
            "TextRange(char_start={}, char_end={}, byte_start={}, byte_end={}, utf16_start={}, utf16_end={})",
            r.char_start, r.char_end, r.byte_start, r.byte_end, r.utf16_start, r.utf16_end
        )
    }
}

/// The part of the cited source that a claim stands on: its `text`, where it is in the
/// source's `text` (`char_start`/`char_end`, a `str` slice; `byte_*`, `utf16_*`; all None for
/// a provider's quote that the source's text does not hold), who chose it (`origin`:
/// `"source"` or `"provider"`), its EPUB CFI range when the source is a book passage, and
/// `truncated` when the source's text was longer than `max_anchor_source_bytes` and only its
/// first part was searched.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Quote {
    pub(crate) inner: core::Quote,
}

impl Quote {
    fn at(&self, f: impl Fn(&core::TextRange) -> u64) -> Option<u64> {
        self.inner.range.as_ref().map(f)
    }
}

#[pymethods]
impl Quote {
    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str) {
        ("text", "char_start", "char_end")
    }

    /// The quoted text.
    #[getter]
    fn text(&self) -> &str {
        &self.inner.text
    }

    /// Where the quote is in the source's `text`; None when it is not there.
    #[getter]
    fn range(&self) -> Option<TextRange> {
        self.inner.range.map(|inner| TextRange { inner })
    }

    /// First code point of the quote in the source's `text` (a `str` index).
    #[getter]
    fn char_start(&self) -> Option<u64> {
        self.at(|r| r.char_start)
    }

    /// Code point after the quote's last in the source's `text`.
    #[getter]
    fn char_end(&self) -> Option<u64> {
        self.at(|r| r.char_end)
    }

    /// First UTF-8 byte of the quote in the source's `text`.
    #[getter]
    fn byte_start(&self) -> Option<u64> {
        self.at(|r| r.byte_start)
    }

    /// UTF-8 byte after the quote's last.
    #[getter]
    fn byte_end(&self) -> Option<u64> {
        self.at(|r| r.byte_end)
    }

    /// First UTF-16 code unit of the quote in the source's `text`.
    #[getter]
    fn utf16_start(&self) -> Option<u64> {
        self.at(|r| r.utf16_start)
    }

    /// UTF-16 code unit after the quote's last.
    #[getter]
    fn utf16_end(&self) -> Option<u64> {
        self.at(|r| r.utf16_end)
    }

    /// Who chose it: `"source"` (citeflow, from the source's text) or `"provider"` (sent with
    /// the provider's citation).
    #[getter]
    fn origin(&self) -> String {
        serde_name(&self.inner.origin)
    }

    /// The EPUB CFI range of the quote in its book, when the source is a book passage.
    #[getter]
    fn cfi(&self) -> Option<&str> {
        self.inner.cfi.as_deref()
    }

    /// Whether the source's text was longer than the indexing cap and only its first part was
    /// searched.
    #[getter]
    fn truncated(&self) -> bool {
        self.inner.truncated
    }

    /// The core's JSON form: `text`, the six offsets (when known), `origin`, `cfi` and
    /// `truncated` (when set).
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        let opt = |v: Option<u64>| v.map_or_else(|| "None".to_owned(), |n| n.to_string());
        format!(
            "Quote(text={}, char_start={}, char_end={}, origin={}, cfi={}, truncated={})",
            repr_str(&self.inner.text),
            opt(self.char_start()),
            opt(self.char_end()),
            repr_str(&self.origin()),
            repr_opt(self.inner.cfi.as_deref()),
            if self.inner.truncated {
                "True"
            } else {
                "False"
            },
        )
    }
}

/// A citation's anchor (with `Settings(anchors=True)`): emitted after the citation's events as
/// soon as the sentence of the answer that holds it is complete in the output. `claim` is that
/// sentence's range of the rendered answer; `quote` the sentence (or few adjacent sentences)
/// of the cited source's text that best supports it, None when no sentence of the source
/// shares a word with the claim; `support` a calibrated score in [0, 1]; `verdict` what the
/// score says: `"supported"` (≥ 0.5), `"weak"` (≥ 0.25) or `"unsupported"` (nothing found in
/// the source says the claim; not that the claim is false).
///
/// `ListedSource.anchors` holds the same objects, so a done event's list can be compared with
/// the events.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct AnchorEvent {
    pub(crate) inner: core::Anchor,
}

impl From<core::Anchor> for AnchorEvent {
    fn from(inner: core::Anchor) -> Self {
        AnchorEvent { inner }
    }
}

#[pymethods]
impl AnchorEvent {
    #[classattr]
    fn __match_args__() -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ) {
        (
            "number",
            "source_id",
            "claim",
            "quote",
            "support",
            "verdict",
        )
    }

    /// Always `"anchor"`.
    #[getter(r#type)]
    fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        pyo3::intern!(py, "anchor")
    }

    /// The citation's number.
    #[getter]
    fn number(&self) -> u32 {
        self.inner.number
    }

    /// The cited source's id.
    #[getter]
    fn source_id(&self) -> &str {
        &self.inner.source_id
    }

    /// The range of the rendered answer that the citation supports (`char_start`/`char_end`
    /// slice the answer's `str`).
    #[getter]
    fn claim(&self) -> TextRange {
        TextRange {
            inner: self.inner.claim,
        }
    }

    /// The supporting part of the source; None when nothing in it shares a word with the claim.
    #[getter]
    fn quote(&self) -> Option<Quote> {
        self.inner.quote.clone().map(|inner| Quote { inner })
    }

    /// The support score in [0, 1] (three decimals).
    #[getter]
    fn support(&self) -> f64 {
        f64::from(self.inner.support.thousandths()) / 1000.0
    }

    /// `"supported"`, `"weak"` or `"unsupported"`.
    #[getter]
    fn verdict(&self) -> &'static str {
        self.inner.verdict.as_str()
    }

    /// The core's JSON form: `{"type": "anchor", "number", "source_id", "claim": {...},
    /// "quote": {...} | None, "support", "verdict"}`.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &citeflow_core::Event::Anchor(Box::new(self.inner.clone())),
        )
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "AnchorEvent(number={}, source_id={}, claim={}, quote={}, support={}, verdict={})",
            self.inner.number,
            repr_str(&self.inner.source_id),
            self.claim().__repr__(),
            self.quote()
                .map_or_else(|| "None".to_owned(), |q| q.__repr__()),
            self.support(),
            repr_str(self.verdict()),
        )
    }
}
