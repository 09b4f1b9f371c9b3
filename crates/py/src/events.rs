//! The events a `Rewriter` emits, one small class per kind.
//!
//! Each class has a `type` (the core's `type` field in JSON), its fields as read-only
//! attributes, `repr()`, equality, `__match_args__` and `to_dict()` (the core's JSON form).
//! Offsets are UTF-8 byte offsets, as in the core.

use citeflow_core as core;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString};

use crate::convert::{repr_opt, repr_str, serde_name};
use crate::detail::CitationDetail;
use crate::errors::{raise, CiteflowError};
use crate::types::{to_py, ListedSource, Report, Source};

/// Rendered text. Concatenated, the texts are the whole rendered answer.
///
/// `type` and `text` are plain slots (struct members), the fastest attribute reads Python has:
/// a token stream reads them once per token.
#[pyclass(frozen, module = "citeflow._citeflow")]
pub(crate) struct TextEvent {
    /// Always `"text"`.
    #[pyo3(get, name = "type")]
    kind: Py<PyString>,
    /// The text.
    #[pyo3(get)]
    text: Py<PyString>,
}

impl TextEvent {
    /// A text event holding `text` (an exact `str`) as it is, without copying it.
    pub(crate) fn from_py<'py>(text: Bound<'py, PyString>) -> PyResult<Bound<'py, TextEvent>> {
        let py = text.py();
        Bound::new(
            py,
            TextEvent {
                kind: pyo3::intern!(py, "text").clone().unbind(),
                text: text.unbind(),
            },
        )
    }
}

#[pymethods]
impl TextEvent {
    #[new]
    fn new(py: Python<'_>, text: &str) -> Self {
        TextEvent {
            kind: pyo3::intern!(py, "text").clone().unbind(),
            text: PyString::new(py, text).unbind(),
        }
    }

    #[classattr]
    fn __match_args__() -> (&'static str,) {
        ("text",)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<TextEvent>() {
            Ok(o) => {
                let same = PyAnyMethods::eq(self.text.bind(py).as_any(), o.get().text.bind(py))?;
                Ok(PyBool::new(py, same).to_owned().into_any().unbind())
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    /// The core's JSON form: `{"type": "text", "text": ...}`.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &core::Event::Text {
                text: self.text.bind(py).to_str()?.to_owned(),
            },
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "TextEvent(text={})",
            repr_str(self.text.bind(py).to_str()?)
        ))
    }
}

/// A number shown for the first time in this stream, with its source. It comes before the
/// citation and the text that show the number.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(PartialEq)]
pub(crate) struct SourceEvent {
    number: u32,
    source: core::Source,
    round: Option<u32>,
    is_new: bool,
}

#[pymethods]
impl SourceEvent {
    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str, &'static str) {
        ("number", "source", "round", "is_new")
    }

    /// Always `"source"`.
    #[getter(r#type)]
    fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        pyo3::intern!(py, "source")
    }

    /// The number.
    #[getter]
    fn number(&self) -> u32 {
        self.number
    }

    /// The source record.
    #[getter]
    fn source(&self) -> Source {
        Source {
            inner: self.source.clone(),
        }
    }

    /// The round that registered the source.
    #[getter]
    fn round(&self) -> Option<u32> {
        self.round
    }

    /// Whether the number was handed out just now (False: an earlier answer of the session
    /// gave it out).
    #[getter]
    fn is_new(&self) -> bool {
        self.is_new
    }

    /// The core's JSON form.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &core::Event::Source {
                number: self.number,
                source: self.source.clone().into(),
                round: self.round,
                is_new: self.is_new,
            },
        )
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "SourceEvent(number={}, source={}, round={}, is_new={})",
            self.number,
            self.source().__repr__(),
            self.round
                .map_or_else(|| "None".to_owned(), |r| r.to_string()),
            py_bool(self.is_new)
        )
    }
}

/// A resolved citation. `byte_offset` is where the number's rendering starts in the rendered
/// output and `input_byte_offset` where the marker started in the decoded input, both in
/// UTF-8 bytes; `char_offset` is the output position as a `str` index (code points) and
/// `utf16_offset` in UTF-16 code units. `provider` is what a provider said about the citation
/// (`ProviderStream`), None for a marker the model wrote.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(PartialEq)]
pub(crate) struct CitationEvent {
    number: u32,
    source_id: String,
    byte_offset: u64,
    input_byte_offset: u64,
    char_offset: u64,
    utf16_offset: u64,
    provider: Option<core::CitationDetail>,
}

#[pymethods]
impl CitationEvent {
    #[classattr]
    fn __match_args__() -> (
        &'static str,
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
            "byte_offset",
            "input_byte_offset",
            "char_offset",
            "utf16_offset",
            "provider",
        )
    }

    /// Always `"citation"`.
    #[getter(r#type)]
    fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        pyo3::intern!(py, "citation")
    }

    /// The number shown.
    #[getter]
    fn number(&self) -> u32 {
        self.number
    }

    /// The id the model wrote (for a rank, the id of that source).
    #[getter]
    fn source_id(&self) -> &str {
        &self.source_id
    }

    /// Where the number's rendering starts in the rendered output (UTF-8 bytes).
    #[getter]
    fn byte_offset(&self) -> u64 {
        self.byte_offset
    }

    /// Where the marker started in the decoded input (UTF-8 bytes).
    #[getter]
    fn input_byte_offset(&self) -> u64 {
        self.input_byte_offset
    }

    /// Where the number's rendering starts in the rendered output, in code points (a `str`
    /// index).
    #[getter]
    fn char_offset(&self) -> u64 {
        self.char_offset
    }

    /// Where the number's rendering starts in the rendered output, in UTF-16 code units (a
    /// JavaScript index).
    #[getter]
    fn utf16_offset(&self) -> u64 {
        self.utf16_offset
    }

    /// What the provider said about this citation; None for a marker the model wrote.
    #[getter]
    fn provider(&self) -> Option<CitationDetail> {
        self.provider.clone().map(|inner| CitationDetail { inner })
    }

    /// The core's JSON form.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &core::Event::Citation {
                number: self.number,
                source_id: self.source_id.clone(),
                byte_offset: self.byte_offset,
                input_byte_offset: self.input_byte_offset,
                char_offset: self.char_offset,
                utf16_offset: self.utf16_offset,
                provider: self.provider.clone().map(Box::new),
            },
        )
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "CitationEvent(number={}, source_id={}, byte_offset={}, input_byte_offset={}, char_offset={}, utf16_offset={}, provider={})",
            self.number,
            repr_str(&self.source_id),
            self.byte_offset,
            self.input_byte_offset,
            self.char_offset,
            self.utf16_offset,
            self.provider()
                .map_or_else(|| "None".to_owned(), |d| d.__repr__())
        )
    }
}

/// A marker, or one id in it, that did not resolve. It used no number. `reason` is
/// `"unknown_id"` or `"rank_out_of_range"`; offsets are UTF-8 bytes as in `CitationEvent`.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(PartialEq)]
pub(crate) struct UnresolvedEvent {
    raw: String,
    reference: String,
    reason: core::UnresolvedReason,
    byte_offset: u64,
    input_byte_offset: u64,
}

#[pymethods]
impl UnresolvedEvent {
    #[classattr]
    fn __match_args__() -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ) {
        (
            "raw",
            "reference",
            "reason",
            "byte_offset",
            "input_byte_offset",
        )
    }

    /// Always `"unresolved"`.
    #[getter(r#type)]
    fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        pyo3::intern!(py, "unresolved")
    }

    /// The whole marker as written.
    #[getter]
    fn raw(&self) -> &str {
        &self.raw
    }

    /// The id or rank that failed.
    #[getter]
    fn reference(&self) -> &str {
        &self.reference
    }

    /// Why: `"unknown_id"` or `"rank_out_of_range"`.
    #[getter]
    fn reason(&self) -> &'static str {
        self.reason.as_str()
    }

    /// Where its rendering (if any) starts in the rendered output (UTF-8 bytes).
    #[getter]
    fn byte_offset(&self) -> u64 {
        self.byte_offset
    }

    /// Where the marker started in the decoded input (UTF-8 bytes).
    #[getter]
    fn input_byte_offset(&self) -> u64 {
        self.input_byte_offset
    }

    /// The core's JSON form.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &core::Event::Unresolved {
                raw: self.raw.clone(),
                reference: self.reference.clone(),
                reason: self.reason,
                byte_offset: self.byte_offset,
                input_byte_offset: self.input_byte_offset,
            },
        )
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "UnresolvedEvent(raw={}, reference={}, reason={}, byte_offset={}, input_byte_offset={})",
            repr_str(&self.raw),
            repr_str(&self.reference),
            repr_str(&serde_name(&self.reason)),
            self.byte_offset,
            self.input_byte_offset
        )
    }
}

/// `number_source="external"` only: allocate a number for `key` in the shared store and answer
/// with `Rewriter.provide_number(key, number)`. Nothing more is emitted until then.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(PartialEq)]
pub(crate) struct NumberNeededEvent {
    key: String,
    source_id: String,
}

#[pymethods]
impl NumberNeededEvent {
    #[classattr]
    fn __match_args__() -> (&'static str, &'static str) {
        ("key", "source_id")
    }

    /// Always `"number_needed"`.
    #[getter(r#type)]
    fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        pyo3::intern!(py, "number_needed")
    }

    /// The canonical key.
    #[getter]
    fn key(&self) -> &str {
        &self.key
    }

    /// The source id that needs it.
    #[getter]
    fn source_id(&self) -> &str {
        &self.source_id
    }

    /// The core's JSON form.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &core::Event::NumberNeeded {
                key: self.key.clone(),
                source_id: self.source_id.clone(),
            },
        )
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "NumberNeededEvent(key={}, source_id={})",
            repr_str(&self.key),
            repr_str(&self.source_id)
        )
    }
}

/// The end: the final source list and the report.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(PartialEq)]
pub(crate) struct DoneEvent {
    sources: Vec<core::ListedSource>,
    report: core::Report,
    text: Option<String>,
    uncited: Vec<core::Source>,
}

#[pymethods]
impl DoneEvent {
    #[classattr]
    fn __match_args__() -> (&'static str, &'static str, &'static str, &'static str) {
        ("sources", "report", "text", "uncited")
    }

    /// Always `"done"`.
    #[getter(r#type)]
    fn kind<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        pyo3::intern!(py, "done")
    }

    /// The cited sources by number.
    #[getter]
    fn sources(&self) -> Vec<ListedSource> {
        self.sources
            .iter()
            .cloned()
            .map(|inner| ListedSource { inner })
            .collect()
    }

    /// Counts and checks.
    #[getter]
    fn report(&self) -> Report {
        Report {
            inner: self.report.clone(),
        }
    }

    /// The final answer when provider citations were bound after their text was shown
    /// (`CitationDetail.late`): the streamed text with those numbers placed. None when the
    /// streamed text is final.
    #[getter]
    fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The sources shown to the model that the answer did not cite, in registration order:
    /// the "more sources" a UI lists after the cited ones.
    #[getter]
    fn uncited(&self) -> Vec<Source> {
        self.uncited
            .iter()
            .cloned()
            .map(|inner| Source { inner })
            .collect()
    }

    /// The core's JSON form.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(
            py,
            &core::Event::Done {
                sources: self.sources.clone(),
                report: self.report.clone().into(),
                text: self.text.clone(),
                uncited: self.uncited.clone(),
            },
        )
    }

    pub(crate) fn __repr__(&self) -> String {
        let items: Vec<String> = self.sources().iter().map(|s| s.__repr__()).collect();
        format!(
            "DoneEvent(sources=[{}], report={}, text={})",
            items.join(", "),
            self.report().__repr__(),
            repr_opt(self.text.as_deref())
        )
    }
}

/// The value of a field the core may or may not box (`T` or `Box<T>`).
fn unbox<T>(v: impl Into<Box<T>>) -> T {
    *v.into()
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A core event as its Python class.
pub(crate) fn event_to_py(py: Python<'_>, e: core::Event) -> PyResult<Bound<'_, PyAny>> {
    Ok(match e {
        core::Event::Text { text } => TextEvent::from_py(PyString::new(py, &text))?.into_any(),
        core::Event::Source {
            number,
            source,
            round,
            is_new,
        } => Bound::new(
            py,
            SourceEvent {
                number,
                source: unbox(source),
                round,
                is_new,
            },
        )?
        .into_any(),
        core::Event::Citation {
            number,
            source_id,
            byte_offset,
            input_byte_offset,
            char_offset,
            utf16_offset,
            provider,
        } => Bound::new(
            py,
            CitationEvent {
                number,
                source_id,
                byte_offset,
                input_byte_offset,
                char_offset,
                utf16_offset,
                provider: provider.map(unbox),
            },
        )?
        .into_any(),
        core::Event::Unresolved {
            raw,
            reference,
            reason,
            byte_offset,
            input_byte_offset,
        } => Bound::new(
            py,
            UnresolvedEvent {
                raw,
                reference,
                reason,
                byte_offset,
                input_byte_offset,
            },
        )?
        .into_any(),
        core::Event::NumberNeeded { key, source_id } => {
            Bound::new(py, NumberNeededEvent { key, source_id })?.into_any()
        }
        core::Event::Done {
            sources,
            report,
            text,
            uncited,
        } => Bound::new(
            py,
            DoneEvent {
                sources,
                report: unbox(report),
                text,
                uncited,
            },
        )?
        .into_any(),
        other => {
            return Err(raise::<CiteflowError>(
                py,
                "unsupported_event",
                format!(
                    "event type {} is not supported by this binding",
                    other.kind()
                ),
            ))
        }
    })
}

/// Core events as a Python list.
pub(crate) fn events_to_list(
    py: Python<'_>,
    events: impl IntoIterator<Item = core::Event>,
) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for e in events {
        list.append(event_to_py(py, e)?)?;
    }
    Ok(list)
}
