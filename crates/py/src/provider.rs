//! `ProviderStream`: a provider API's stream (SSE or JSONL bytes, or one event object at a
//! time) in, the rewriter's events out, with the provider's citations numbered in the same
//! table as the markers the model writes.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};

use citeflow_core as core;
use core::provider::{Dialect, Framing, ProviderError as CoreProviderError};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::convert::{py_to_value, Chunk};
use crate::errors::{provider_err, raise, settings_err, RewriteError};
use crate::events::event_to_py;
use crate::settings::{Settings, SettingsArgs};
use crate::types::{sources_arg, Numbering, Sources};

/// A provider event as the core reads it.
enum Payload {
    /// Its JSON text, read by the dialect into borrowed structs (no tree).
    Text(String),
    /// A tree made from Python objects.
    Tree(Value),
}

/// The binding's lifecycle around the core stream.
enum State {
    /// Reading.
    Open,
    /// A call failed (or the core panicked): later calls raise `RewriteError` `failed`; the
    /// events before the failure stay available from `poll_events()`.
    Failed(String),
}

/// Called with the numbering after every call (a session-scope answer copies it to its session).
pub(crate) type SyncHook =
    Box<dyn FnMut(Python<'_>, &core::Numbering) -> PyResult<()> + Send + Sync>;
/// Called with the final state when the stream ends (the rewriter it continued takes it).
pub(crate) type EndHook = Box<dyn FnMut(Python<'_>, &core::Rewriter) + Send + Sync>;

/// What a stream made by `Session.provider_stream` or `Rewriter.provider_stream` continues; the
/// hooks are made by the `rewriter` module, so this one knows neither sessions nor rewriters.
#[derive(Default)]
pub(crate) struct Link {
    pub(crate) sync: Option<SyncHook>,
    pub(crate) end: Option<EndHook>,
    /// Events the rewriter had released and not returned: returned first.
    pub(crate) kept: VecDeque<core::Event>,
}

/// Reads a provider API's stream and yields the rewriter's events, with every provider
/// citation registered as a source and numbered in the same append-only table as the markers
/// the model writes.
///
/// Dialects: `openai-chat`, `openai-responses`, `anthropic`, `bedrock`, `cohere`, `gemini`,
/// `gemini-interactions`, or `auto` (detected from the first payload). Framing of the bytes
/// given to `feed_bytes`: `sse`, `jsonl`, `text` (the bytes are the answer) or `auto`.
///
/// Call protocol: `feed_bytes(data)` for raw stream bytes (cut anywhere), or `feed_event(obj)`
/// for one parsed event at a time (a dict, JSON text, or an SDK event object with
/// `model_dump()`/`to_dict()`); both return the events they released. Then `finish()` once,
/// whose last event is the `DoneEvent`; its `text` is the final answer when a citation was bound
/// after its text was shown. `end()` plus `poll_event()`/`poll_events()` (or iterating the
/// stream) are the core's own calls.
///
/// Raises `ProviderError` (bad JSON, unknown or malformed payloads, an error the provider
/// reported, no answer text), `SseError`, `RewriteError` or `SourceError`; after one of them,
/// every later call raises `RewriteError` with code `failed`.
#[pyclass(module = "citeflow._citeflow")]
pub(crate) struct ProviderStream {
    stream: Box<core::provider::ProviderStream>,
    state: State,
    /// Payloads given to `feed_event` (their line numbers in errors).
    payloads: u64,
    /// What the stream started with, for the getters before the first payload.
    settings: core::Settings,
    sources: core::Sources,
    numbering: core::Numbering,
    link: Link,
}

impl ProviderStream {
    /// A stream over `stream` (made by the caller: new, or continuing a rewriter) with this
    /// dialect and framing; `init` answers the getters before the core makes its rewriter.
    pub(crate) fn continuing(
        py: Python<'_>,
        stream: core::provider::ProviderStream,
        init: (core::Settings, core::Sources, core::Numbering),
        dialect: &str,
        framing: &str,
        link: Link,
    ) -> PyResult<Self> {
        let framing: Framing = framing.parse().map_err(|e| settings_err(py, e))?;
        let mut stream = stream.with_framing(framing);
        if dialect != "auto" {
            let d: Dialect = dialect.parse().map_err(|e| settings_err(py, e))?;
            stream = stream.with_dialect(d);
        }
        let (settings, sources, numbering) = init;
        Ok(ProviderStream {
            stream: Box::new(stream),
            state: State::Open,
            payloads: 0,
            settings,
            sources,
            numbering,
            link,
        })
    }

    /// Runs the sync hook (session scope: the numbering copied to the session).
    fn sync(&mut self, py: Python<'_>) -> PyResult<()> {
        match (self.link.sync.as_mut(), self.stream.rewriter()) {
            (Some(sync), Some(rw)) => sync(py, rw.numbering()),
            _ => Ok(()),
        }
    }

    /// Runs the end hook (the rewriter this stream continued takes the final state).
    fn give_back(&mut self, py: Python<'_>) {
        if let (Some(end), Some(rw)) = (self.link.end.as_mut(), self.stream.rewriter()) {
            end(py, rw);
        }
    }

    /// Runs `f` on the core stream; an error marks the stream failed, a panic too instead of
    /// crossing FFI.
    fn call<T>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut core::provider::ProviderStream) -> Result<T, CoreProviderError>,
    ) -> PyResult<T> {
        if let State::Failed(m) = &self.state {
            return Err(raise::<RewriteError>(py, "failed", m.clone()));
        }
        let r = catch_unwind(AssertUnwindSafe(|| f(&mut self.stream)));
        if r.is_ok() {
            self.sync(py)?;
        }
        match r {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                let recoverable = matches!(
                    &e,
                    CoreProviderError::Rewrite(core::RewriteError::NotAwaiting { .. })
                );
                if !recoverable {
                    self.state = State::Failed(format!("the provider stream failed earlier: {e}"));
                }
                Err(provider_err(py, e))
            }
            Err(_) => {
                let msg =
                    "the provider stream failed earlier: internal error (a panic in citeflow-core)";
                self.state = State::Failed(msg.to_owned());
                Err(raise::<RewriteError>(py, "internal", msg.to_owned()))
            }
        }
    }

    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        while let Some(e) = self.link.kept.pop_front() {
            list.append(event_to_py(py, e)?)?;
        }
        while let Some(e) = self.stream.poll_event() {
            list.append(event_to_py(py, e)?)?;
        }
        Ok(list)
    }

    /// One event object as the JSON payload the core reads: JSON text (read by the dialect
    /// without a tree) or a tree.
    fn payload(&self, obj: &Bound<'_, PyAny>, line: u64) -> PyResult<Payload> {
        let py = obj.py();
        let text = if let Ok(s) = obj.cast::<PyString>() {
            Some(s.to_cow()?.into_owned())
        } else if let Ok(b) = obj.cast::<PyBytes>() {
            Some(String::from_utf8_lossy(b.as_bytes()).into_owned())
        } else {
            None
        };
        if let Some(text) = text {
            // Checked here (a scan, no tree), so that text that is not JSON is an error of
            // this call alone, as it always was, and does not end the stream.
            return match serde_json::from_str::<IgnoredAny>(&text) {
                Ok(_) => Ok(Payload::Text(text)),
                Err(e) => Err(provider_err(
                    py,
                    CoreProviderError::Json {
                        line,
                        sse: false,
                        message: e.to_string(),
                    },
                )),
            };
        }
        if obj.cast::<PyDict>().is_ok() {
            return py_to_value(obj).map(Payload::Tree);
        }
        // Pydantic models (the `anthropic` and `openai` SDKs' event types): their JSON form,
        // API names as keys. (`model_dump_json` read as text was measured slower on the SDKs'
        // stream events: 4.9 against 4.2 µs an event.)
        if obj.hasattr(pyo3::intern!(py, "model_dump"))? {
            let kwargs = PyDict::new(py);
            kwargs.set_item("mode", "json")?;
            kwargs.set_item("by_alias", true)?;
            kwargs.set_item("exclude_none", false)?;
            let d = obj.call_method(pyo3::intern!(py, "model_dump"), (), Some(&kwargs))?;
            return py_to_value(&d).map(Payload::Tree);
        }
        if obj.hasattr(pyo3::intern!(py, "to_dict"))? {
            return py_to_value(&obj.call_method0(pyo3::intern!(py, "to_dict"))?)
                .map(Payload::Tree);
        }
        if let Ok(m) = obj.cast::<pyo3::types::PyMapping>() {
            let d = PyDict::new(py);
            for item in m.items()?.iter() {
                let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
                d.set_item(k, v)?;
            }
            return py_to_value(d.as_any()).map(Payload::Tree);
        }
        Err(PyTypeError::new_err(format!(
            "an event must be a dict, JSON text or a model with model_dump()/to_dict(), not {}",
            obj.get_type().name()?
        )))
    }
}

#[pymethods]
impl ProviderStream {
    /// A stream over `sources` the caller gave the model (a `Sources` or an iterable of
    /// `Source`/dict; may be omitted: provider citations bring their own), continuing
    /// `numbering`, with settings from `settings` and/or the same keywords as `Settings(...)`.
    ///
    /// Raises `SettingsError` for an unknown dialect or framing, `SourceError` for bad sources.
    #[new]
    #[pyo3(signature = (sources=None, *, dialect="auto", framing="auto", settings=None, numbering=None, syntaxes=None, id_pattern=None, rank=None, unknown=None, style=None, max_pending_bytes=None, invalid_utf8=None, number_source=None, dedupe=None, skip_code=None, anchors=None, max_anchor_source_bytes=None))]
    #[expect(clippy::too_many_arguments, reason = "one keyword per setting")]
    fn new(
        py: Python<'_>,
        sources: Option<&Bound<'_, PyAny>>,
        dialect: &str,
        framing: &str,
        settings: Option<&Settings>,
        numbering: Option<&Numbering>,
        syntaxes: Option<Vec<String>>,
        id_pattern: Option<String>,
        rank: Option<String>,
        unknown: Option<String>,
        style: Option<String>,
        max_pending_bytes: Option<usize>,
        invalid_utf8: Option<String>,
        number_source: Option<String>,
        dedupe: Option<bool>,
        skip_code: Option<bool>,
        anchors: Option<bool>,
        max_anchor_source_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let args = SettingsArgs {
            syntaxes,
            id_pattern,
            rank,
            unknown,
            style,
            max_pending_bytes,
            invalid_utf8,
            number_source,
            dedupe,
            skip_code,
            anchors,
            max_anchor_source_bytes,
        };
        let base = settings.map(|s| s.inner.clone()).unwrap_or_default();
        let settings = args.apply(py, base)?;
        let sources = sources_arg(py, sources)?;
        let numbering = numbering.map(|n| n.inner.clone()).unwrap_or_default();
        let stream = core::provider::ProviderStream::new(
            settings.clone(),
            sources.clone(),
            numbering.clone(),
        );
        ProviderStream::continuing(
            py,
            stream,
            (settings, sources, numbering),
            dialect,
            framing,
            Link::default(),
        )
    }

    /// Feeds bytes of the stream as the provider sent them (SSE or JSONL, cut anywhere; with
    /// `framing="text"`, answer text) and returns the events they released.
    fn feed_bytes<'py>(
        &mut self,
        py: Python<'py>,
        data: Chunk<'_>,
    ) -> PyResult<Bound<'py, PyList>> {
        let r = self.call(py, |s| s.write(data.as_bytes()));
        let events = self.drain(py)?;
        r.map(|()| events)
    }

    /// Feeds a chunk of answer text that the caller read from a provider event holding text
    /// alone (the core's `ProviderStream::write_text`: what the dialect's reader would have
    /// given for it, without reading the event), and returns the events it released. For
    /// adapters whose SDK objects make the event's JSON form costly (`model_dump`); every other
    /// event goes to `feed_event`.
    fn feed_text<'py>(&mut self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        if let State::Failed(m) = &self.state {
            return Err(raise::<RewriteError>(py, "failed", m.clone()));
        }
        self.payloads += 1;
        let r = self.call(py, |s| s.write_text(text));
        let events = self.drain(py)?;
        r.map(|()| events)
    }

    /// Feeds one provider event (a dict, JSON text, or an SDK event object: pydantic models
    /// are read with `model_dump(mode="json")`, else `to_dict()`) and returns the events it
    /// released. A JSON string (e.g. `'"some text"'`) is a chunk of answer text.
    fn feed_event<'py>(
        &mut self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        if let State::Failed(m) = &self.state {
            return Err(raise::<RewriteError>(py, "failed", m.clone()));
        }
        self.payloads += 1;
        let line = self.payloads;
        let r = match self.payload(event, line)? {
            Payload::Text(json) => self.call(py, |s| s.write_payload_json(&json, line)),
            Payload::Tree(tree) => self.call(py, |s| s.write_payload(&tree, line)),
        };
        let events = self.drain(py)?;
        r.map(|()| events)
    }

    /// Ends the stream and returns the remaining events, the last being the `DoneEvent` (unless
    /// a `NumberNeededEvent` waits for `provide_number`).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let r = self.call(py, |s| s.end());
        let events = self.drain(py)?;
        self.give_back(py);
        r.map(|()| events)
    }

    /// Ends the stream; take the events with `poll_event`/`poll_events`.
    fn end(&mut self, py: Python<'_>) -> PyResult<()> {
        let r = self.call(py, |s| s.end());
        self.give_back(py);
        r
    }

    /// Answers a `NumberNeededEvent` with the number the shared store gave `key`.
    ///
    /// Raises `RewriteError` with code `not_awaiting` when no number is awaited for `key`.
    fn provide_number(&mut self, py: Python<'_>, key: &str, number: u32) -> PyResult<()> {
        self.call(py, |s| s.provide_number(key, number))
    }

    /// The next event, or None when the stream needs more input.
    fn poll_event<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.link
            .kept
            .pop_front()
            .or_else(|| self.stream.poll_event())
            .map(|e| event_to_py(py, e))
            .transpose()
    }

    /// Every event available now.
    fn poll_events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.drain(py)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next event available now (iteration stops when none is).
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.poll_event(py)
    }

    /// The dialect's name once given or detected (`"anthropic"`, `"openai-responses"`, …),
    /// else None.
    #[getter]
    fn dialect(&self) -> Option<&'static str> {
        self.stream.dialect().map(Dialect::name)
    }

    /// The settings.
    #[getter]
    fn settings(&self) -> Settings {
        Settings {
            inner: self
                .stream
                .rewriter()
                .map_or_else(|| self.settings.clone(), |rw| rw.settings().clone()),
        }
    }

    /// A copy of the sources: the caller's and every source a provider cited so far.
    #[getter]
    fn sources(&self) -> Sources {
        Sources {
            inner: self
                .stream
                .rewriter()
                .map_or_else(|| self.sources.clone(), |rw| rw.sources().clone()),
        }
    }

    /// A copy of the numbering table as it is now: save it to continue the numbering.
    #[getter]
    fn numbering(&self) -> Numbering {
        Numbering {
            inner: self
                .stream
                .rewriter()
                .map_or_else(|| self.numbering.clone(), |rw| rw.numbering().clone()),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "ProviderStream(dialect={}{})",
            self.dialect()
                .map_or_else(|| "None".to_owned(), |d| format!("'{d}'")),
            match self.state {
                State::Open => "",
                State::Failed(_) => ", failed",
            }
        )
    }
}
