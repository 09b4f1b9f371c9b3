//! Value types: sources, locators, rounds, the numbering table, listed sources and reports.

use std::collections::BTreeMap;

use citeflow_core as core;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

pub(crate) use crate::convert::to_py;
use crate::convert::{py_to_value, repr_opt, repr_str};
use crate::errors::{numbering_err, raise, source_err, RestoreError, SourceError};

/// Deserialises a core value from a Python dict through its serde form.
fn from_py<T: serde::de::DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let value = py_to_value(obj)?;
    serde_json::from_value(value).map_err(|e| {
        raise::<SourceError>(obj.py(), "invalid_source", format!("invalid {what}: {e}"))
    })
}

/// Parses JSON text of a core value; errors are [`RestoreError`]s.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    py: Python<'_>,
    json: &str,
    what: &str,
) -> PyResult<T> {
    serde_json::from_str(json)
        .map_err(|e| raise::<RestoreError>(py, "invalid_json", format!("invalid {what} json: {e}")))
}

/// Writes a core value as compact JSON.
pub(crate) fn to_json<T: serde::Serialize>(py: Python<'_>, v: &T) -> PyResult<String> {
    serde_json::to_string(v)
        .map_err(|e| raise::<crate::errors::CiteflowError>(py, "serialize", e.to_string()))
}

/// Where in a document a source is: a book chapter, a CFI, a page.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Locator {
    pub(crate) inner: core::Locator,
}

#[pymethods]
impl Locator {
    #[new]
    #[pyo3(signature = (*, chapter_index=None, chapter_title=None, cfi=None, page=None))]
    fn new(
        chapter_index: Option<u32>,
        chapter_title: Option<String>,
        cfi: Option<String>,
        page: Option<String>,
    ) -> Self {
        Locator {
            inner: core::Locator {
                chapter_index,
                chapter_title,
                cfi,
                page,
            },
        }
    }

    /// Index of the chapter in the book's table of contents (0-based).
    #[getter]
    fn chapter_index(&self) -> Option<u32> {
        self.inner.chapter_index
    }

    /// Title of the chapter.
    #[getter]
    fn chapter_title(&self) -> Option<&str> {
        self.inner.chapter_title.as_deref()
    }

    /// EPUB Canonical Fragment Identifier of the passage.
    #[getter]
    fn cfi(&self) -> Option<&str> {
        self.inner.cfi.as_deref()
    }

    /// A page label.
    #[getter]
    fn page(&self) -> Option<&str> {
        self.inner.page.as_deref()
    }

    /// The JSON form as a dict (absent fields left out).
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        let l = &self.inner;
        let mut parts = Vec::new();
        if let Some(i) = l.chapter_index {
            parts.push(format!("chapter_index={i}"));
        }
        if let Some(t) = &l.chapter_title {
            parts.push(format!("chapter_title={}", repr_str(t)));
        }
        if let Some(c) = &l.cfi {
            parts.push(format!("cfi={}", repr_str(c)));
        }
        if let Some(p) = &l.page {
            parts.push(format!("page={}", repr_str(p)));
        }
        format!("Locator({})", parts.join(", "))
    }
}

/// A retrieved source the model may cite.
///
/// `id` is what the model writes in its markers; `key` (or, with dedupe, the url plus the
/// locator's CFI or page) decides which sources share a number.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Source {
    pub(crate) inner: core::Source,
}

#[pymethods]
impl Source {
    #[new]
    #[pyo3(signature = (id, *, title=None, url=None, text=None, snippet=None, locator=None, key=None, metadata=None, label=None))]
    #[expect(clippy::too_many_arguments, reason = "one keyword per field")]
    fn new(
        id: String,
        title: Option<String>,
        url: Option<String>,
        text: Option<String>,
        snippet: Option<String>,
        locator: Option<Bound<'_, Locator>>,
        key: Option<String>,
        metadata: Option<BTreeMap<String, String>>,
        label: Option<u32>,
    ) -> Self {
        let mut s = core::Source::new(id);
        s.title = title;
        s.url = url;
        s.text = text;
        s.snippet = snippet;
        if let Some(l) = locator {
            s = s.with_locator(l.get().inner.clone());
        }
        s.key = key;
        s.metadata = metadata.unwrap_or_default();
        s.label = label;
        Source { inner: s }
    }

    /// A source from its JSON form (a dict with at least `id`), as in the core's serde format.
    ///
    /// Raises `SourceError` when the dict is not a source.
    #[staticmethod]
    fn from_dict(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Source {
            inner: from_py(data, "source")?,
        })
    }

    /// The internal id the model cites (`source_3`).
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// Title shown in the source list.
    #[getter]
    fn title(&self) -> Option<&str> {
        self.inner.title.as_deref()
    }

    /// Link shown in the source list.
    #[getter]
    fn url(&self) -> Option<&str> {
        self.inner.url.as_deref()
    }

    /// Full text given to the model.
    #[getter]
    fn text(&self) -> Option<&str> {
        self.inner.text.as_deref()
    }

    /// Short excerpt shown on hover.
    #[getter]
    fn snippet(&self) -> Option<&str> {
        self.inner.snippet.as_deref()
    }

    /// Where in a document the source is.
    #[getter]
    fn locator(&self) -> Option<Locator> {
        self.inner.locator.clone().map(|inner| Locator { inner })
    }

    /// Explicit canonical key: sources with equal keys share one number.
    #[getter]
    fn key(&self) -> Option<&str> {
        self.inner.key.as_deref()
    }

    /// Free metadata, passed through untouched.
    /// The number the model was shown for this source, when it is not its position (see the
    /// core's `Source::label`).
    #[getter]
    fn label(&self) -> Option<u32> {
        self.inner.label
    }

    #[getter]
    fn metadata(&self) -> BTreeMap<String, String> {
        self.inner.metadata.clone()
    }

    /// The JSON form as a dict (absent fields left out).
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        let s = &self.inner;
        let mut parts = vec![repr_str(&s.id)];
        for (name, v) in [
            ("title", &s.title),
            ("url", &s.url),
            ("text", &s.text),
            ("snippet", &s.snippet),
        ] {
            if let Some(v) = v {
                parts.push(format!("{name}={}", repr_str(v)));
            }
        }
        if let Some(l) = &s.locator {
            parts.push(format!(
                "locator={}",
                Locator { inner: l.clone() }.__repr__()
            ));
        }
        if let Some(k) = &s.key {
            parts.push(format!("key={}", repr_str(k)));
        }
        if !s.metadata.is_empty() {
            let items: Vec<String> = s
                .metadata
                .iter()
                .map(|(k, v)| format!("{}: {}", repr_str(k), repr_str(v)))
                .collect();
            parts.push(format!("metadata={{{}}}", items.join(", ")));
        }
        format!("Source({})", parts.join(", "))
    }
}

/// A `Source` or a dict in the source JSON form, as a core source.
pub(crate) fn source_from_py(obj: &Bound<'_, PyAny>) -> PyResult<core::Source> {
    if let Ok(s) = obj.cast::<Source>() {
        return Ok(s.get().inner.clone());
    }
    if obj.cast::<PyDict>().is_ok() {
        return from_py(obj, "source");
    }
    Err(PyTypeError::new_err(format!(
        "a source must be a Source or a dict, not {}",
        obj.get_type().name()?
    )))
}

/// An iterable of `Source` or dicts, as core sources.
pub(crate) fn sources_from_iter(obj: &Bound<'_, PyAny>) -> PyResult<Vec<core::Source>> {
    if obj.cast::<PyString>().is_ok() || obj.cast::<PyDict>().is_ok() {
        return Err(PyTypeError::new_err(
            "sources must be an iterable of Source or dict",
        ));
    }
    obj.try_iter()?.map(|item| source_from_py(&item?)).collect()
}

/// One search round of an agent: its query and the ids it returned.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Round {
    pub(crate) inner: core::Round,
}

#[pymethods]
impl Round {
    /// 1-based round number.
    #[getter]
    fn number(&self) -> u32 {
        self.inner.number
    }

    /// The query that found the sources.
    #[getter]
    fn query(&self) -> Option<&str> {
        self.inner.query.as_deref()
    }

    /// The ids registered by this round, in the order given.
    #[getter]
    fn source_ids(&self) -> Vec<String> {
        self.inner.source_ids.clone()
    }

    /// The JSON form as a dict.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        let ids: Vec<String> = self.inner.source_ids.iter().map(|i| repr_str(i)).collect();
        format!(
            "Round(number={}, query={}, source_ids=[{}])",
            self.inner.number,
            repr_opt(self.inner.query.as_deref()),
            ids.join(", ")
        )
    }
}

/// The sources of a session, registered in rounds, in the order the model was shown them.
///
/// A later round may list an id an earlier round registered; the first record is kept.
#[pyclass(module = "citeflow._citeflow")]
#[derive(Clone)]
pub(crate) struct Sources {
    pub(crate) inner: core::Sources,
}

#[pymethods]
impl Sources {
    /// A set; with `sources`, their first round (with `query`).
    ///
    /// Raises `SourceError` for an empty or duplicate id.
    #[new]
    #[pyo3(signature = (sources=None, query=None))]
    fn new(
        py: Python<'_>,
        sources: Option<&Bound<'_, PyAny>>,
        query: Option<String>,
    ) -> PyResult<Self> {
        let mut inner = core::Sources::new();
        if let Some(s) = sources {
            let list = sources_from_iter(s)?;
            inner
                .append_round(query, list)
                .map_err(|e| source_err(py, e))?;
        }
        Ok(Sources { inner })
    }

    /// Registers a round of sources and returns its 1-based number.
    ///
    /// Raises `SourceError` for an empty or duplicate id; nothing is registered then.
    #[pyo3(signature = (sources, query=None))]
    fn append_round(
        &mut self,
        py: Python<'_>,
        sources: &Bound<'_, PyAny>,
        query: Option<String>,
    ) -> PyResult<u32> {
        let list = sources_from_iter(sources)?;
        self.inner
            .append_round(query, list)
            .map_err(|e| source_err(py, e))
    }

    /// The source with this id.
    fn get(&self, id: &str) -> Option<Source> {
        self.inner.get(id).cloned().map(|inner| Source { inner })
    }

    /// The n-th source (1-based) in the order the model was shown them.
    fn by_rank(&self, rank: u32) -> Option<Source> {
        self.inner
            .by_rank(rank)
            .cloned()
            .map(|inner| Source { inner })
    }

    /// The round that first registered this id.
    fn round_of(&self, id: &str) -> Option<u32> {
        self.inner.round_of(id)
    }

    /// The rounds in order.
    fn rounds(&self) -> Vec<Round> {
        self.inner
            .rounds()
            .iter()
            .cloned()
            .map(|inner| Round { inner })
            .collect()
    }

    /// All sources in registration order.
    fn to_list(&self) -> Vec<Source> {
        self.inner
            .iter()
            .cloned()
            .map(|inner| Source { inner })
            .collect()
    }

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The canonical key under which `source` is numbered (see the core's `Sources::key_of`).
    #[staticmethod]
    fn key_of(source: &Bound<'_, PyAny>, dedupe: bool) -> PyResult<String> {
        Ok(core::Sources::key_of(&source_from_py(source)?, dedupe))
    }

    /// The JSON form (the core's serde format).
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        to_json(py, &self.inner)
    }

    /// Restores a set from `to_json` output. Raises `RestoreError` for invalid JSON.
    #[staticmethod]
    fn from_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        Ok(Sources {
            inner: from_json(py, json, "sources")?,
        })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let list = PyList::new(py, self.to_list())?;
        Ok(list.try_iter()?.into_any().unbind())
    }

    fn __contains__(&self, id: &str) -> bool {
        self.inner.get(id).is_some()
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "Sources(<{} sources in {} rounds>)",
            self.inner.len(),
            self.inner.rounds().len()
        )
    }
}

/// One row of the numbering table.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct NumberEntry {
    pub(crate) inner: core::NumberEntry,
}

#[pymethods]
impl NumberEntry {
    #[new]
    fn new(number: u32, key: String, source_id: String) -> Self {
        NumberEntry {
            inner: core::NumberEntry {
                number,
                key,
                source_id,
            },
        }
    }

    /// The readable number, from 1.
    #[getter]
    fn number(&self) -> u32 {
        self.inner.number
    }

    /// The canonical key the number belongs to.
    #[getter]
    fn key(&self) -> &str {
        &self.inner.key
    }

    /// The id of the source that first took the number.
    #[getter]
    fn source_id(&self) -> &str {
        &self.inner.source_id
    }

    /// The JSON form as a dict.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "NumberEntry(number={}, key={}, source_id={})",
            self.inner.number,
            repr_str(&self.inner.key),
            repr_str(&self.inner.source_id)
        )
    }
}

/// The append-only numbering table of an answer or a session: canonical key → number.
///
/// Load it from your store before a stream and save it after; citeflow never calls a store.
#[pyclass(module = "citeflow._citeflow")]
#[derive(Clone)]
pub(crate) struct Numbering {
    pub(crate) inner: core::Numbering,
}

#[pymethods]
impl Numbering {
    /// A table from saved rows (empty by default: the first citation gets 1).
    ///
    /// Raises `NumberingError` when two rows share a key or a number.
    #[new]
    #[pyo3(signature = (entries=None))]
    fn new(py: Python<'_>, entries: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(entries) = entries else {
            return Ok(Numbering {
                inner: core::Numbering::new(),
            });
        };
        let mut rows = Vec::new();
        for item in entries.try_iter()? {
            let item = item?;
            let e = item.cast::<NumberEntry>().map_err(|_| {
                PyTypeError::new_err("numbering entries must be NumberEntry objects")
            })?;
            rows.push(e.get().inner.clone());
        }
        let inner = core::Numbering::from_entries(rows).map_err(|e| numbering_err(py, e))?;
        Ok(Numbering { inner })
    }

    /// The number of `key`, if it has one.
    fn get(&self, key: &str) -> Option<u32> {
        self.inner.get(key)
    }

    /// The row holding `number`.
    fn entry(&self, number: u32) -> Option<NumberEntry> {
        self.inner
            .entry(number)
            .cloned()
            .map(|inner| NumberEntry { inner })
    }

    /// The number `key` has, or the next free one, recorded now: `(number, is_new)`.
    fn allocate(&mut self, key: &str, source_id: &str) -> (u32, bool) {
        self.inner.allocate(key, source_id)
    }

    /// Records a number handed out elsewhere (a shared store).
    ///
    /// Raises `NumberingError` when the key has another number or the number another key.
    fn insert(
        &mut self,
        py: Python<'_>,
        number: u32,
        key: String,
        source_id: String,
    ) -> PyResult<()> {
        self.inner
            .insert(number, key, source_id)
            .map_err(|e| numbering_err(py, e))
    }

    /// The number the next new key gets.
    fn next_number(&self) -> u32 {
        self.inner.next_number()
    }

    /// All rows in the order they were numbered.
    fn entries(&self) -> Vec<NumberEntry> {
        self.inner
            .entries()
            .iter()
            .cloned()
            .map(|inner| NumberEntry { inner })
            .collect()
    }

    /// Whether no number was handed out.
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Whether `earlier` is a prefix of this table: nothing was renumbered or dropped.
    fn extends(&self, earlier: &Numbering) -> bool {
        self.inner.extends(&earlier.inner)
    }

    /// The JSON form (the core's serde format).
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        to_json(py, &self.inner)
    }

    /// Restores a table from `to_json` output.
    ///
    /// Raises `RestoreError` for invalid JSON and `NumberingError` for conflicting rows.
    #[staticmethod]
    fn from_json(py: Python<'_>, json: &str) -> PyResult<Self> {
        let raw: core::Numbering = from_json(py, json, "numbering")?;
        let inner = core::Numbering::from_entries(raw.entries().to_vec())
            .map_err(|e| numbering_err(py, e))?;
        Ok(Numbering { inner })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Numbering>()
            .is_ok_and(|o| o.borrow().inner.entries() == self.inner.entries())
    }

    pub(crate) fn __repr__(&self) -> String {
        let rows: Vec<String> = self
            .inner
            .entries()
            .iter()
            .map(|e| format!("{}={}", e.number, repr_str(&e.key)))
            .collect();
        format!("Numbering([{}])", rows.join(", "))
    }
}

/// A cited source in the final list.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct ListedSource {
    pub(crate) inner: core::ListedSource,
}

#[pymethods]
impl ListedSource {
    /// Its number.
    #[getter]
    fn number(&self) -> u32 {
        self.inner.number
    }

    /// The source record.
    #[getter]
    fn source(&self) -> Source {
        Source {
            inner: self.inner.source.clone(),
        }
    }

    /// The round that registered it.
    #[getter]
    fn round(&self) -> Option<u32> {
        self.inner.round
    }

    /// How often the body cites it (0 for sources listed with `all`).
    #[getter]
    fn citations(&self) -> u32 {
        self.inner.citations
    }

    /// Its citations' anchors in the order they were emitted (`Settings(anchors=True)`; empty
    /// otherwise): the same `AnchorEvent`s the stream gave.
    #[getter]
    fn anchors(&self) -> Vec<crate::anchor::AnchorEvent> {
        self.inner.anchors.iter().cloned().map(Into::into).collect()
    }

    /// The JSON form as a dict.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "ListedSource(number={}, source={}, round={}, citations={})",
            self.inner.number,
            Source {
                inner: self.inner.source.clone()
            }
            .__repr__(),
            self.inner
                .round
                .map_or_else(|| "None".to_owned(), |r| r.to_string()),
            self.inner.citations
        )
    }
}

/// Counts and checks made when the stream ends. Byte counts are UTF-8 bytes.
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct Report {
    pub(crate) inner: core::Report,
}

#[pymethods]
impl Report {
    /// Resolved citations in the body.
    #[getter]
    fn citations(&self) -> u64 {
        self.inner.citations
    }

    /// Markers (or ids inside markers) that did not resolve.
    #[getter]
    fn unresolved(&self) -> u64 {
        self.inner.unresolved
    }

    /// Possible markers released as text because they outgrew the hold-back cap.
    #[getter]
    fn released_holdbacks(&self) -> u64 {
        self.inner.released_holdbacks
    }

    /// Raw input bytes accepted.
    #[getter]
    fn input_bytes(&self) -> u64 {
        self.inner.input_bytes
    }

    /// Rendered output bytes (UTF-8).
    #[getter]
    fn output_bytes(&self) -> u64 {
        self.inner.output_bytes
    }

    /// Numbers first handed out by this stream.
    #[getter]
    fn new_numbers(&self) -> u32 {
        self.inner.new_numbers
    }

    /// Distinct numbers shown in the body, in order of first appearance.
    #[getter]
    fn numbers_in_body(&self) -> Vec<u32> {
        self.inner.numbers_in_body.clone()
    }

    /// Numbers in the final source list, in list order.
    #[getter]
    fn numbers_listed(&self) -> Vec<u32> {
        self.inner.numbers_listed.clone()
    }

    /// Whether the body and the list agree and no number was reassigned.
    #[getter]
    fn verified(&self) -> bool {
        self.inner.verified
    }

    /// The JSON form as a dict.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_py(py, &self.inner)
    }

    pub(crate) fn __repr__(&self) -> String {
        let r = &self.inner;
        format!(
            "Report(citations={}, unresolved={}, released_holdbacks={}, input_bytes={}, output_bytes={}, new_numbers={}, numbers_in_body={:?}, numbers_listed={:?}, verified={})",
            r.citations,
            r.unresolved,
            r.released_holdbacks,
            r.input_bytes,
            r.output_bytes,
            r.new_numbers,
            r.numbers_in_body,
            r.numbers_listed,
            if r.verified { "True" } else { "False" }
        )
    }
}

/// A `Sources` object or an iterable of `Source`/dict (one round without a query).
pub(crate) fn sources_arg(
    py: Python<'_>,
    obj: Option<&Bound<'_, PyAny>>,
) -> PyResult<core::Sources> {
    match obj {
        None => Ok(core::Sources::new()),
        Some(o) if o.is_none() => Ok(core::Sources::new()),
        Some(o) => {
            if let Ok(s) = o.cast::<Sources>() {
                return Ok(s.borrow().inner.clone());
            }
            core::Sources::from_vec(sources_from_iter(o)?).map_err(|e| source_err(py, e))
        }
    }
}
