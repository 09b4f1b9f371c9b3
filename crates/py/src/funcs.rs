//! Free functions (one-shot rewrite, source lists, prompt text) and the SSE decoder.

use citeflow_core as core;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::{raise, rewrite_err, settings_err, sse_err, RestoreError};
use crate::events::events_to_list;
use crate::rewriter::sources_arg;
use crate::settings::Settings;
use crate::types::{ListedSource, Numbering, Round};

/// The result of `rewrite_str`: the rendered text, every event (adjacent texts merged) and the
/// numbering after the answer.
#[pyclass(frozen, module = "citeflow._citeflow")]
pub(crate) struct Rewritten {
    text: String,
    events: Py<PyList>,
    numbering: core::Numbering,
}

#[pymethods]
impl Rewritten {
    /// The rendered answer.
    #[getter]
    fn text(&self) -> &str {
        &self.text
    }

    /// Every event, with adjacent texts merged.
    #[getter]
    fn events(&self, py: Python<'_>) -> Py<PyList> {
        self.events.clone_ref(py)
    }

    /// The numbering after the answer.
    #[getter]
    fn numbering(&self) -> Numbering {
        Numbering {
            inner: self.numbering.clone(),
        }
    }

    fn __repr__(&self) -> String {
        format!("Rewritten(text={})", crate::convert::repr_str(&self.text))
    }
}

/// Rewrites a whole answer at once (same arguments as `Rewriter`).
///
/// Raises `SourceError` for bad sources and `RewriteError` as `Rewriter.feed`/`finish` do.
#[pyfunction]
#[pyo3(signature = (text, sources=None, *, settings=None, numbering=None))]
pub(crate) fn rewrite_str(
    py: Python<'_>,
    text: &str,
    sources: Option<&Bound<'_, PyAny>>,
    settings: Option<&Settings>,
    numbering: Option<&Numbering>,
) -> PyResult<Rewritten> {
    let sources = sources_arg(py, sources)?;
    let settings = settings.map(|s| s.inner.clone()).unwrap_or_default();
    let numbering = numbering.map(|n| n.inner.clone()).unwrap_or_default();
    let out =
        core::rewrite_str(text, settings, sources, numbering).map_err(|e| rewrite_err(py, e))?;
    Ok(Rewritten {
        text: out.text,
        events: events_to_list(py, out.events)?.unbind(),
        numbering: out.numbering,
    })
}

/// Renders a source list (e.g. `DoneEvent.sources`) as `text`, `markdown`, `footnotes`,
/// `html` or `json`; with `rounds`, grouped under each round's query.
///
/// Raises `SettingsError` for an unknown format.
#[pyfunction]
#[pyo3(signature = (listed, format="text", rounds=None))]
pub(crate) fn render_list(
    py: Python<'_>,
    listed: Vec<Bound<'_, ListedSource>>,
    format: &str,
    rounds: Option<Vec<Bound<'_, Round>>>,
) -> PyResult<String> {
    let fmt = format
        .parse::<core::ListFormat>()
        .map_err(|e| settings_err(py, e))?;
    let list: Vec<core::ListedSource> = listed.iter().map(|l| l.get().inner.clone()).collect();
    let rounds: Option<Vec<core::Round>> =
        rounds.map(|r| r.iter().map(|x| x.get().inner.clone()).collect());
    Ok(core::render_list(&list, fmt, rounds.as_deref()))
}

fn prompt_marker(py: Python<'_>, name: &str) -> PyResult<core::PromptMarker> {
    name.parse::<core::PromptMarker>()
        .map_err(|e| settings_err(py, e))
}

/// The sources block for the prompt: one line a source, labelled with `marker`
/// (`double_bracket`, `cite_colon`, `cite_tag`, `single_bracket`, `rank`, `rank_full_width`),
/// texts cut to `max_chars_per_source` characters.
#[pyfunction]
#[pyo3(signature = (sources, marker="double_bracket", *, max_chars_per_source=1000))]
pub(crate) fn context_block(
    py: Python<'_>,
    sources: &Bound<'_, PyAny>,
    marker: &str,
    max_chars_per_source: usize,
) -> PyResult<String> {
    let s = sources_arg(py, Some(sources))?;
    Ok(core::context_block(
        &s,
        prompt_marker(py, marker)?,
        max_chars_per_source,
    ))
}

/// The instruction that asks the model to cite with `marker`.
#[pyfunction]
#[pyo3(signature = (sources, marker="double_bracket"))]
pub(crate) fn citation_instruction(
    py: Python<'_>,
    sources: &Bound<'_, PyAny>,
    marker: &str,
) -> PyResult<String> {
    let s = sources_arg(py, Some(sources))?;
    Ok(core::citation_instruction(&s, prompt_marker(py, marker)?))
}

/// Settings whose scanner recognises `marker` on top of `settings` (rank markers switch rank
/// mode on unless `settings` has one).
#[pyfunction]
#[pyo3(signature = (marker, settings=None))]
pub(crate) fn prompt_settings(
    py: Python<'_>,
    marker: &str,
    settings: Option<&Settings>,
) -> PyResult<Settings> {
    let base = settings.map(|s| s.inner.clone()).unwrap_or_default();
    Ok(Settings {
        inner: prompt_marker(py, marker)?.settings(base),
    })
}

/// The answer text of an OpenAI-style streamed chunk given as JSON text:
/// `choices[0].delta.content` (chat) or `choices[0].text` (completions); None without text.
///
/// Raises `RestoreError` when `payload` is not JSON.
#[pyfunction]
pub(crate) fn chunk_text(py: Python<'_>, payload: &str) -> PyResult<Option<String>> {
    let v: serde_json::Value = serde_json::from_str(payload).map_err(|e| {
        raise::<RestoreError>(py, "invalid_json", format!("invalid chunk json: {e}"))
    })?;
    Ok(core::sse::chunk_text(&v).map(str::to_owned))
}

/// One Server-Sent Event (`data:` lines joined with a newline).
#[pyclass(frozen, eq, module = "citeflow._citeflow")]
#[derive(PartialEq)]
pub(crate) struct SseEvent {
    inner: core::sse::SseEvent,
}

#[pymethods]
impl SseEvent {
    /// The `id:` field, if any.
    #[getter]
    fn id(&self) -> Option<&str> {
        self.inner.id.as_deref()
    }

    /// The `event:` field, if any.
    #[getter]
    fn event(&self) -> Option<&str> {
        self.inner.event.as_deref()
    }

    /// The data.
    #[getter]
    fn data(&self) -> &str {
        &self.inner.data
    }

    fn __repr__(&self) -> String {
        use crate::convert::{repr_opt, repr_str};
        format!(
            "SseEvent(id={}, event={}, data={})",
            repr_opt(self.inner.id.as_deref()),
            repr_opt(self.inner.event.as_deref()),
            repr_str(&self.inner.data)
        )
    }
}

/// Decodes a Server-Sent Events byte stream cut anywhere into events.
///
/// Call protocol: `write` each chunk, then `poll_events`; `end` at the end of the stream
/// dispatches a last unterminated event.
#[pyclass(module = "citeflow._citeflow")]
pub(crate) struct SseDecoder {
    inner: core::sse::SseDecoder,
}

#[pymethods]
impl SseDecoder {
    /// A decoder that rejects lines longer than `max_line_bytes` (default 1 MiB).
    #[new]
    #[pyo3(signature = (max_line_bytes=1048576))]
    fn new(max_line_bytes: usize) -> Self {
        SseDecoder {
            inner: core::sse::SseDecoder::new(max_line_bytes),
        }
    }

    /// Feeds bytes (a str is UTF-8 encoded).
    ///
    /// Raises `SseError` for an over-long or non-UTF-8 line; events before it stay available.
    fn write(&mut self, py: Python<'_>, chunk: crate::convert::Chunk<'_>) -> PyResult<()> {
        self.inner
            .write(chunk.as_bytes())
            .map_err(|e| sse_err(py, e))
    }

    /// Ends the stream.
    fn end(&mut self, py: Python<'_>) -> PyResult<()> {
        self.inner.end().map_err(|e| sse_err(py, e))
    }

    /// The next complete event.
    fn poll_event(&mut self) -> Option<SseEvent> {
        self.inner.poll_event().map(|inner| SseEvent { inner })
    }

    /// Every complete event available now.
    fn poll_events(&mut self) -> Vec<SseEvent> {
        std::iter::from_fn(|| self.inner.poll_event())
            .map(|inner| SseEvent { inner })
            .collect()
    }

    /// Lines read so far.
    #[getter]
    fn line(&self) -> u64 {
        self.inner.line()
    }
}
