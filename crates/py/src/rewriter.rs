//! `Rewriter` and `Session`: the core's `Rewriter` with a small lifecycle state, and the
//! session that registers sources in rounds and keeps the numbering between answers.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};

use citeflow_core as core;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::convert::Chunk;
use crate::errors::{raise, restore_err, rewrite_err, source_err, NumberingError, RewriteError};
use crate::events::{event_to_py, TextEvent};
use crate::provider::{EndHook, Link, ProviderStream, SyncHook};
use crate::settings::{Settings, SettingsArgs};
use crate::types::{
    from_json, sources_from_iter, to_json, ListedSource, Numbering, Round, Sources,
};

/// Kept here too for the modules that import it from here.
pub(crate) use crate::types::sources_arg;

/// Moves the events released now to `out`, adjacent texts merged into one event (the text
/// of the last ones stays in `buf`).
fn collect_merged(rw: &mut core::Rewriter, buf: &mut String, out: &mut Vec<core::Event>) {
    while let Some(e) = rw.poll_event_into(buf) {
        if !buf.is_empty() {
            match out.last_mut() {
                Some(core::Event::Text { text }) => {
                    text.push_str(buf);
                    buf.clear();
                }
                _ => out.push(core::Event::Text {
                    text: std::mem::take(buf),
                }),
            }
        }
        out.push(e);
    }
}

/// Joined `str` chunks are written once they reach this many bytes (and at the end of a batch).
const JOIN_BYTES: usize = 64 * 1024;

/// `feed_many` reads a list this many items at a time (then writes if `JOIN_BYTES` is reached).
const JOIN_ITEMS: usize = 4096;

/// Appends the UTF-8 text of the items `start..end` of `list` to `out` while they are exact
/// `str` objects; returns the index of the first item it did not append (`end` for all).
fn push_str_items(list: &Bound<'_, PyList>, start: usize, end: usize, out: &mut Vec<u8>) -> usize {
    for i in start..end {
        // SAFETY: the thread is attached (`list` is bound to it) and no Python code runs in
        // this loop, so the list keeps its items; `i < end <= len`, so `PyList_GetItem`
        // returns a borrowed reference that the list keeps alive.
        let item = unsafe { ffi::PyList_GetItem(list.as_ptr(), i as ffi::Py_ssize_t) };
        // SAFETY: `item` is null or a live object.
        if item.is_null() || unsafe { ffi::PyUnicode_CheckExact(item) } == 0 {
            return i;
        }
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: `item` is a live exact `str`; the returned buffer lives as long as it.
        let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(item, &mut size) };
        if data.is_null() {
            // A lone surrogate: the item-by-item loop of `feed_many` meets it and raises.
            // SAFETY: clears the error `PyUnicode_AsUTF8AndSize` set.
            unsafe { ffi::PyErr_Clear() };
            return i;
        }
        // SAFETY: CPython's UTF-8 buffer of `item`: `size` bytes at `data`, alive while the list
        // holds `item` (the core validates them again in `write`).
        out.extend_from_slice(unsafe {
            std::slice::from_raw_parts(data.cast::<u8>(), size as usize)
        });
    }
    end
}

/// A run of `str` chunks of one `feed_many` batch, written to the core as one chunk.
struct Joined<'a> {
    text: &'a mut Vec<u8>,
    /// Whether a chunk (even an empty one) was pushed since the last write: an empty chunk
    /// is still a write (after `end` it raises).
    pending: bool,
}

impl Joined<'_> {
    fn push(
        &mut self,
        rw: &mut core::Rewriter,
        chunk: &[u8],
        buf: &mut String,
        out: &mut Vec<core::Event>,
    ) -> Result<(), core::RewriteError> {
        self.text.extend_from_slice(chunk);
        self.pending = true;
        if self.text.len() >= JOIN_BYTES {
            self.flush(rw, buf, out)?;
        }
        Ok(())
    }

    /// Writes the run (if any) and moves the events it released to `out`.
    fn flush(
        &mut self,
        rw: &mut core::Rewriter,
        buf: &mut String,
        out: &mut Vec<core::Event>,
    ) -> Result<(), core::RewriteError> {
        if !self.pending {
            return Ok(());
        }
        self.pending = false;
        let written = rw.write(&self.text[..]);
        self.text.clear();
        collect_merged(rw, buf, out);
        written
    }
}

/// The binding's lifecycle around the core rewriter.
enum State {
    /// The core rewriter; it tracks streaming, ended and failed itself.
    Ready(Box<core::Rewriter>),
    /// The core panicked during a call (a bug); the rewriter cannot be used again.
    Poisoned(String),
}

/// Copies a grown `numbering` to the session whose numbering an answer continues; `synced` is
/// the length last copied.
///
/// Raises `NumberingError` `numbering_conflict` when the session's numbering changed meanwhile.
pub(crate) fn sync_numbering(
    py: Python<'_>,
    session: &Py<Session>,
    numbering: &core::Numbering,
    synced: &mut usize,
) -> PyResult<()> {
    if numbering.len() == *synced {
        return Ok(());
    }
    let mut s = session.borrow_mut(py);
    if !numbering.extends(&s.numbering) {
        return Err(raise::<NumberingError>(
            py,
            "numbering_conflict",
            "the session's numbering changed while this answer streamed; answers that continue a session's numbering must stream one at a time".to_owned(),
        ));
    }
    s.numbering = numbering.clone();
    *synced = numbering.len();
    Ok(())
}

/// The hook that copies a `ProviderStream`'s numbering to `session` (session scope).
fn session_sync(session: Option<Py<Session>>, mut synced: usize) -> Option<SyncHook> {
    let session = session?;
    Some(Box::new(
        move |py: Python<'_>, numbering: &core::Numbering| {
            sync_numbering(py, &session, numbering, &mut synced)
        },
    ))
}

/// Rewrites one streamed answer: citation markers become stable numbers.
///
/// Call protocol: `feed(chunk)` for each chunk (str or bytes; a marker or a UTF-8 character
/// may be cut anywhere) and use the events it returns, then `finish()` once, whose last event
/// is a `DoneEvent`. The lower-level `write`/`end` plus `poll_event`/`poll_events` are the
/// core's own calls. After an error (other than a chunk gap or `not_awaiting`), every call
/// raises `RewriteError`; events emitted before the error stay available from `poll_events()`.
///
/// Offsets in events are UTF-8 byte offsets (see `CitationEvent`).
#[pyclass(module = "citeflow._citeflow")]
pub(crate) struct Rewriter {
    state: State,
    /// The session whose numbering this answer continues (session scope only).
    session: Option<Py<Session>>,
    /// The numbering length last copied to the session.
    synced: usize,
    /// Events other than text released during `feed_text`/`finish_text`, returned first by
    /// the next `poll_event(s)`/`feed`.
    kept: VecDeque<core::Event>,
    /// The text buffer `feed_text` and `feed_many` poll into (kept to reuse its capacity).
    buf: String,
    /// The `str` chunks `feed_many` joins into one write (kept to reuse its capacity).
    joined: Vec<u8>,
}

impl Rewriter {
    fn from_core(rw: core::Rewriter, session: Option<Py<Session>>) -> Self {
        let synced = rw.numbering().len();
        Rewriter {
            state: State::Ready(Box::new(rw)),
            session,
            synced,
            kept: VecDeque::new(),
            buf: String::new(),
            joined: Vec::new(),
        }
    }

    /// The text released so far (other events kept for `poll_events`); with `input`, a text
    /// equal to the input is returned as the input object itself.
    fn take_text<'py>(
        &mut self,
        py: Python<'py>,
        input: Option<(&Bound<'py, PyString>, &str)>,
    ) -> Bound<'py, PyString> {
        let State::Ready(rw) = &mut self.state else {
            return PyString::new(py, "");
        };
        self.buf.clear();
        while let Some(e) = rw.poll_event_into(&mut self.buf) {
            self.kept.push_back(e);
        }
        match input {
            Some((s, t)) if self.buf == t => s.clone(),
            _ => PyString::new(py, &self.buf),
        }
    }

    /// The text in `buf` as one event at the end of `out` (merged with a text there).
    fn push_buf(&mut self, out: &mut Vec<core::Event>) {
        if self.buf.is_empty() {
            return;
        }
        if let Some(core::Event::Text { text }) = out.last_mut() {
            text.push_str(&self.buf);
            self.buf.clear();
        } else {
            out.push(core::Event::Text {
                text: std::mem::take(&mut self.buf),
            });
        }
    }

    fn core(&self, py: Python<'_>) -> PyResult<&core::Rewriter> {
        match &self.state {
            State::Ready(rw) => Ok(rw),
            State::Poisoned(m) => Err(raise::<RewriteError>(py, "failed", m.clone())),
        }
    }

    /// Runs `f` on the core rewriter; a panic poisons the rewriter instead of crossing FFI.
    fn call<T>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut core::Rewriter) -> Result<T, core::RewriteError>,
    ) -> PyResult<T> {
        let rw = match &mut self.state {
            State::Ready(rw) => rw,
            State::Poisoned(m) => return Err(raise::<RewriteError>(py, "failed", m.clone())),
        };
        let result = match catch_unwind(AssertUnwindSafe(|| f(rw))) {
            Ok(r) => r,
            Err(_) => {
                let msg = "the rewriter failed earlier: internal error (a panic in citeflow-core)";
                self.state = State::Poisoned(msg.to_owned());
                return Err(raise::<RewriteError>(py, "internal", msg.to_owned()));
            }
        };
        self.sync(py)?;
        result.map_err(|e| rewrite_err(py, e))
    }

    /// Copies a grown numbering to the session (session scope).
    #[inline]
    fn sync(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.session.is_none() {
            return Ok(());
        }
        self.sync_session(py)
    }

    fn sync_session(&mut self, py: Python<'_>) -> PyResult<()> {
        let (Some(session), State::Ready(rw)) = (&self.session, &self.state) else {
            return Ok(());
        };
        sync_numbering(py, session, rw.numbering(), &mut self.synced)
    }

    /// Takes back the state a `ProviderStream` continued this answer to (its events already
    /// returned by the stream).
    fn take_back(&mut self, rw: core::Rewriter) {
        // The stream copied every number to the session (session scope) as it went.
        self.synced = rw.numbering().len();
        self.state = State::Ready(Box::new(rw));
        self.kept.clear();
    }

    /// `drain` after `feed(input)`: a lone text event equal to the input reuses the input.
    fn drain_fed<'py>(
        &mut self,
        py: Python<'py>,
        input: &Bound<'py, PyString>,
        input_text: &str,
    ) -> PyResult<Bound<'py, PyList>> {
        if !self.kept.is_empty() {
            return self.drain(py);
        }
        let State::Ready(rw) = &mut self.state else {
            return Ok(PyList::empty(py));
        };
        let Some(first) = rw.poll_event() else {
            return Ok(PyList::empty(py));
        };
        let Some(second) = rw.poll_event() else {
            let event = match first {
                core::Event::Text { text } if text == input_text => {
                    TextEvent::from_py(input.clone())?.into_any()
                }
                other => event_to_py(py, other)?,
            };
            return PyList::new(py, [event]);
        };
        let list = PyList::new(py, [event_to_py(py, first)?, event_to_py(py, second)?])?;
        while let Some(e) = rw.poll_event() {
            list.append(event_to_py(py, e)?)?;
        }
        Ok(list)
    }

    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        while let Some(e) = self.kept.pop_front() {
            list.append(event_to_py(py, e)?)?;
        }
        if let State::Ready(rw) = &mut self.state {
            while let Some(e) = rw.poll_event() {
                list.append(event_to_py(py, e)?)?;
            }
        }
        Ok(list)
    }
}

#[pymethods]
impl Rewriter {
    /// A rewriter for one stream: the sources the model was shown (a `Sources` or an iterable
    /// of `Source`/dict), the settings, and the numbering to continue (a fresh one by default:
    /// the first citation gets 1).
    ///
    /// Raises `SourceError` for an empty or duplicate source id.
    #[new]
    #[pyo3(signature = (sources=None, *, settings=None, numbering=None))]
    fn new(
        py: Python<'_>,
        sources: Option<&Bound<'_, PyAny>>,
        settings: Option<&Settings>,
        numbering: Option<&Numbering>,
    ) -> PyResult<Self> {
        let sources = sources_arg(py, sources)?;
        let settings = settings.map(|s| s.inner.clone()).unwrap_or_default();
        let numbering = numbering.map(|n| n.inner.clone()).unwrap_or_default();
        Ok(Rewriter::from_core(
            core::Rewriter::new(settings, sources, numbering),
            None,
        ))
    }

    /// Restores a rewriter from `snapshot()` output (the core's `Snapshot` JSON, also written
    /// by `citeflow render --snapshot-out`); it continues exactly where the snapshot was taken.
    ///
    /// Raises `RestoreError` for invalid JSON or another snapshot format version.
    #[staticmethod]
    fn from_snapshot(py: Python<'_>, snapshot: &str) -> PyResult<Self> {
        let snap: core::Snapshot = from_json(py, snapshot, "snapshot")?;
        let rw = core::Rewriter::from_snapshot(snap).map_err(|e| restore_err(py, e))?;
        Ok(Rewriter::from_core(rw, None))
    }

    /// Same as `from_snapshot`.
    #[staticmethod]
    fn restore(py: Python<'_>, snapshot: &str) -> PyResult<Self> {
        Rewriter::from_snapshot(py, snapshot)
    }

    /// The whole state as JSON (the core's `Snapshot` format): restore it with
    /// `Rewriter.from_snapshot` here or `citeflow render --snapshot-in` in Rust.
    fn snapshot(&self, py: Python<'_>) -> PyResult<String> {
        to_json(py, &self.core(py)?.snapshot())
    }

    /// Feeds the next chunk and returns the events it released.
    ///
    /// Raises `RewriteError` (see the class docs).
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        // Fast path for an exact `str` (what token streams carry): its UTF-8 is read in place,
        // and when the chunk comes out unchanged as the only event, the event holds the same
        // `str` object instead of a copy.
        if let Ok(s) = chunk.cast_exact::<PyString>() {
            if let Ok(text) = s.to_str() {
                if self.call(py, |rw| rw.write_through(text))? {
                    // Plain text with nothing pending: the chunk is the one new event.
                    let event = TextEvent::from_py(s.clone())?.into_any();
                    if self.kept.is_empty() {
                        return PyList::new(py, [event]);
                    }
                    let list = self.drain(py)?;
                    list.append(event)?;
                    return Ok(list);
                }
                return self.drain_fed(py, s, text);
            }
        }
        let chunk = chunk.extract::<Chunk<'_>>().inspect_err(|e| {
            // The note PyO3 adds to an argument it could not convert.
            let _ = e
                .value(py)
                .call_method1("add_note", ("while processing 'chunk'",));
        })?;
        self.call(py, |rw| rw.write(chunk.as_bytes()))?;
        self.drain(py)
    }

    /// Feeds the next chunk and returns only the text it released (often the chunk itself,
    /// then as the same `str` object): the fast path for callers that show text. The other
    /// events (sources, citations, ...) are kept, in order, for `poll_events()` or the next
    /// `feed`; each carries its offsets into the rendered text.
    ///
    /// Raises `RewriteError` as `feed`.
    fn feed_text<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyString>> {
        if let Ok(s) = chunk.cast_exact::<PyString>() {
            if let Ok(text) = s.to_str() {
                // Plain text with nothing pending comes out unchanged at once: the core hands
                // it back and the same `str` object is returned, with no copy.
                if self.call(py, |rw| rw.write_through(text))? {
                    return Ok(s.clone());
                }
                return Ok(self.take_text(py, Some((s, text))));
            }
        }
        let chunk = chunk.extract::<Chunk<'_>>()?;
        self.call(py, |rw| rw.write(chunk.as_bytes()))?;
        Ok(self.take_text(py, None))
    }

    /// Ends the input and returns the rest of the text; the other events, the `DoneEvent`
    /// last, are kept for `poll_events()`.
    fn finish_text<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        self.call(py, |rw| rw.end())?;
        Ok(self.take_text(py, None))
    }

    /// Feeds every chunk of `chunks` (an iterable of str or bytes) in one call and returns
    /// the events released, adjacent texts merged into one `TextEvent`: the batch path for
    /// tokens that are already at hand (a replay, a log, a buffered stream).
    ///
    /// Raises `RewriteError` as `feed`; the events released before the failing chunk stay
    /// available from `poll_events()`.
    fn feed_many<'py>(
        &mut self,
        py: Python<'py>,
        chunks: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut out: Vec<core::Event> = self.kept.drain(..).collect();
        // One `call` (panic guard and session sync) around the whole batch. Runs of `str`
        // chunks are joined and written as one chunk: the core gives the same events for any
        // cut of the input, and one write of a run costs far less than a write per token.
        let mut py_err: Option<PyErr> = None;
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let mut joined = std::mem::take(&mut self.joined);
        joined.clear();
        let list = chunks.cast_exact::<PyList>().ok();
        let iter = match list {
            Some(_) => None,
            None => Some(chunks.try_iter()?),
        };
        let r = self.call(py, |rw| {
            let mut batch = Joined {
                text: &mut joined,
                pending: false,
            };
            // The `str` items of a list are read in place (no new reference per item); the
            // first other item (bytes, a lone surrogate) and the rest go through the loop below.
            let iter = match (iter, list) {
                (Some(iter), _) => iter,
                (None, Some(list)) => {
                    let len = list.len();
                    let mut start = 0;
                    while start < len {
                        let end = len.min(start + JOIN_ITEMS);
                        let reached = push_str_items(list, start, end, batch.text);
                        batch.pending |= reached > start;
                        if batch.text.len() >= JOIN_BYTES || reached < end {
                            batch.flush(rw, &mut buf, &mut out)?;
                        }
                        start = reached;
                        if reached < end {
                            break;
                        }
                    }
                    if start == len {
                        return batch.flush(rw, &mut buf, &mut out);
                    }
                    match list.get_slice(start, len).try_iter() {
                        Ok(iter) => iter,
                        Err(e) => {
                            py_err = Some(e);
                            return Ok(());
                        }
                    }
                }
                (None, None) => return Ok(()),
            };
            for chunk in iter {
                let chunk = match chunk {
                    Ok(c) => c,
                    Err(e) => {
                        py_err = Some(e);
                        break;
                    }
                };
                if let Ok(s) = chunk.cast_exact::<PyString>() {
                    match s.to_str() {
                        Ok(text) => {
                            batch.push(rw, text.as_bytes(), &mut buf, &mut out)?;
                            continue;
                        }
                        Err(e) => {
                            py_err = Some(e);
                            break;
                        }
                    }
                }
                batch.flush(rw, &mut buf, &mut out)?;
                match chunk.extract::<Chunk<'_>>() {
                    Ok(c) => {
                        let written = rw.write(c.as_bytes());
                        collect_merged(rw, &mut buf, &mut out);
                        written?;
                    }
                    Err(e) => {
                        py_err = Some(e);
                        break;
                    }
                }
            }
            // The chunks before a failing one are written, as `feed` would have.
            batch.flush(rw, &mut buf, &mut out)
        });
        if joined.capacity() <= 8192 {
            // Kept for the next batch; a large one gives its memory back.
            self.joined = joined;
        }
        self.buf = buf;
        let r = match (r, py_err) {
            (Err(e), _) | (Ok(()), Some(e)) => Err(e),
            (Ok(()), None) => Ok(()),
        };
        self.push_buf(&mut out);
        if let Err(e) = r {
            // What was released before the error is not lost.
            self.kept.extend(out);
            return Err(e);
        }
        let list = PyList::empty(py);
        for e in out {
            list.append(event_to_py(py, e)?)?;
        }
        Ok(list)
    }

    /// Feeds chunk number `seq` (from 0) and returns the events it released; a chunk seen
    /// before is ignored (no events).
    ///
    /// Raises `RewriteError` with code `chunk_gap` when `seq` skips a chunk (nothing changes).
    fn feed_seq<'py>(
        &mut self,
        py: Python<'py>,
        seq: u64,
        chunk: Chunk<'_>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.call(py, |rw| rw.write_seq(seq, chunk.as_bytes()))?;
        self.drain(py)
    }

    /// Feeds a chunk that starts at raw input byte `byte_offset` and returns the events it
    /// released; bytes seen before are ignored.
    ///
    /// Raises `RewriteError` with code `chunk_gap` when the chunk starts after the input so far.
    fn feed_at<'py>(
        &mut self,
        py: Python<'py>,
        byte_offset: u64,
        chunk: Chunk<'_>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.call(py, |rw| rw.write_at(byte_offset, chunk.as_bytes()))?;
        self.drain(py)
    }

    /// Ends the input and returns the remaining events; the last is the `DoneEvent` (unless a
    /// `NumberNeededEvent` waits for `provide_number`).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.call(py, |rw| rw.end())?;
        self.drain(py)
    }

    /// Feeds the next chunk; take the events with `poll_event`/`poll_events`.
    fn write(&mut self, py: Python<'_>, chunk: Chunk<'_>) -> PyResult<()> {
        self.call(py, |rw| rw.write(chunk.as_bytes()))
    }

    /// Feeds chunk number `seq`; returns False when the chunk was seen before.
    fn write_seq(&mut self, py: Python<'_>, seq: u64, chunk: Chunk<'_>) -> PyResult<bool> {
        self.call(py, |rw| rw.write_seq(seq, chunk.as_bytes()))
            .map(|a| a == core::Accepted::New)
    }

    /// Feeds a chunk starting at raw input byte `byte_offset`; returns False when every byte
    /// was seen before.
    fn write_at(&mut self, py: Python<'_>, byte_offset: u64, chunk: Chunk<'_>) -> PyResult<bool> {
        self.call(py, |rw| rw.write_at(byte_offset, chunk.as_bytes()))
            .map(|a| a == core::Accepted::New)
    }

    /// Ends the input; take the events with `poll_event`/`poll_events`.
    fn end(&mut self, py: Python<'_>) -> PyResult<()> {
        self.call(py, |rw| rw.end())
    }

    /// Answers a `NumberNeededEvent` with the number the shared store gave `key`; take the
    /// released events with `poll_events`.
    ///
    /// Raises `RewriteError` with code `not_awaiting` when no number is awaited for `key`.
    fn provide_number(&mut self, py: Python<'_>, key: &str, number: u32) -> PyResult<()> {
        self.call(py, |rw| rw.provide_number(key, number))
    }

    /// The next event, or None when the rewriter needs more input (or an awaited number).
    fn poll_event<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if let Some(e) = self.kept.pop_front() {
            return event_to_py(py, e).map(Some);
        }
        match &mut self.state {
            State::Ready(rw) => rw.poll_event().map(|e| event_to_py(py, e)).transpose(),
            State::Poisoned(_) => Ok(None),
        }
    }

    /// Every event available now.
    fn poll_events<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.drain(py)
    }

    /// A `ProviderStream` that continues this answer: the provider's own stream (chunks or
    /// events of `dialect`, bytes framed as `framing`) read into this rewriter's sources and
    /// numbering, provider citations numbered in the same table. This rewriter takes the
    /// stream's final state when the stream ends (`finish()`/`end()`); until then, use the
    /// stream, not this rewriter.
    ///
    /// Raises `SettingsError` for an unknown dialect or framing.
    #[pyo3(signature = (*, dialect="auto", framing="auto"))]
    fn provider_stream(
        slf: &Bound<'_, Self>,
        dialect: &str,
        framing: &str,
    ) -> PyResult<ProviderStream> {
        let py = slf.py();
        let (rw, session, synced, kept) = {
            let mut me = slf.borrow_mut();
            let rw = me.core(py)?.clone();
            let session = me.session.as_ref().map(|s| s.clone_ref(py));
            (rw, session, me.synced, std::mem::take(&mut me.kept))
        };
        // The getters read the stream's rewriter, which exists from the start here.
        let init = (
            rw.settings().clone(),
            core::Sources::new(),
            core::Numbering::new(),
        );
        let owner: Py<Rewriter> = slf.clone().unbind();
        let end: EndHook = Box::new(move |py: Python<'_>, rw: &core::Rewriter| {
            if let Ok(mut o) = owner.bind(py).try_borrow_mut() {
                o.take_back(rw.clone());
            }
        });
        let stream = core::provider::ProviderStream::from_rewriter(rw);
        ProviderStream::continuing(
            py,
            stream,
            init,
            dialect,
            framing,
            Link {
                sync: session_sync(session, synced),
                end: Some(end),
                kept,
            },
        )
    }

    /// The cited sources by number; with `all`, every numbered source of the table.
    #[pyo3(signature = (all=false))]
    fn listed_sources(&self, py: Python<'_>, all: bool) -> PyResult<Vec<ListedSource>> {
        Ok(self
            .core(py)?
            .listed_sources(all)
            .into_iter()
            .map(|inner| ListedSource { inner })
            .collect())
    }

    /// The source list rendered as `text`, `markdown`, `footnotes`, `html` or `json`; with
    /// `all`, every numbered source; with `by_round`, grouped under each round's query.
    #[pyo3(signature = (format="text", *, all=false, by_round=false))]
    fn render_sources(
        &self,
        py: Python<'_>,
        format: &str,
        all: bool,
        by_round: bool,
    ) -> PyResult<String> {
        let rw = self.core(py)?;
        let fmt = format
            .parse::<core::ListFormat>()
            .map_err(|e| crate::errors::settings_err(py, e))?;
        let list = rw.listed_sources(all);
        let rounds = by_round.then(|| rw.sources().rounds());
        Ok(core::render_list(&list, fmt, rounds))
    }

    /// The settings.
    #[getter]
    fn settings(&self, py: Python<'_>) -> PyResult<Settings> {
        Ok(Settings {
            inner: self.core(py)?.settings().clone(),
        })
    }

    /// A copy of the sources.
    #[getter]
    fn sources(&self, py: Python<'_>) -> PyResult<Sources> {
        Ok(Sources {
            inner: self.core(py)?.sources().clone(),
        })
    }

    /// A copy of the numbering table as it is now: save it to continue the numbering.
    #[getter]
    fn numbering(&self, py: Python<'_>) -> PyResult<Numbering> {
        Ok(Numbering {
            inner: self.core(py)?.numbering().clone(),
        })
    }

    /// Raw input bytes accepted so far (the next `feed_at` offset).
    #[getter]
    fn input_bytes(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.core(py)?.input_bytes())
    }

    /// The next `feed_seq` sequence number.
    #[getter]
    fn next_seq(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.core(py)?.next_seq())
    }

    /// Input bytes held back: an unfinished character or a possible marker.
    #[getter]
    fn held_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.core(py)?.held_bytes())
    }

    /// Whether a `NumberNeededEvent` waits for its answer.
    fn is_awaiting_number(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.core(py)?.is_awaiting_number())
    }

    /// Whether the `DoneEvent` has been queued.
    fn is_ended(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.core(py)?.is_ended())
    }

    fn __repr__(&self) -> String {
        match &self.state {
            State::Ready(rw) => format!(
                "Rewriter(<{} sources, {} numbers, {} input bytes{}>)",
                rw.sources().len(),
                rw.numbering().len(),
                rw.input_bytes(),
                if rw.is_ended() { ", ended" } else { "" }
            ),
            State::Poisoned(_) => "Rewriter(<failed>)".to_owned(),
        }
    }
}

/// Numbering scope of a session.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Answer,
    Session,
}

/// A conversation or agent run: sources registered in rounds (each with its query), one
/// settings, and a numbering per answer (`scope="answer"`, each answer starts at 1) or per
/// session (`scope="session"`, numbers continue across answers and never change).
///
/// `rewriter()` starts an answer. In session scope its new numbers are copied to the session
/// as they are handed out; answers of one session stream one at a time.
///
/// Settings come from `settings` and/or the same keywords as `Settings(...)`.
#[pyclass(module = "citeflow._citeflow")]
pub(crate) struct Session {
    settings: core::Settings,
    sources: core::Sources,
    numbering: core::Numbering,
    scope: Scope,
}

#[pymethods]
impl Session {
    #[new]
    #[pyo3(signature = (*, scope="answer", settings=None, numbering=None, syntaxes=None, id_pattern=None, rank=None, unknown=None, style=None, max_pending_bytes=None, invalid_utf8=None, number_source=None, dedupe=None, skip_code=None, anchors=None, max_anchor_source_bytes=None))]
    #[expect(clippy::too_many_arguments, reason = "one keyword per setting")]
    fn new(
        py: Python<'_>,
        scope: &str,
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
        let scope = match scope {
            "answer" => Scope::Answer,
            "session" => Scope::Session,
            other => {
                return Err(crate::errors::settings_err(
                    py,
                    core::SettingsError::UnknownName {
                        what: "numbering scope",
                        value: other.to_owned(),
                        expected: &["answer", "session"],
                    },
                ))
            }
        };
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
        Ok(Session {
            settings: args.apply(py, base)?,
            sources: core::Sources::new(),
            numbering: numbering.map(|n| n.inner.clone()).unwrap_or_default(),
            scope,
        })
    }

    /// Registers a round of sources (an iterable of `Source`/dict) found by `query`; returns
    /// its 1-based number. A later round may list an id again; the first record is kept.
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
        self.sources
            .append_round(query, list)
            .map_err(|e| source_err(py, e))
    }

    /// A rewriter for the next answer, over every source registered so far.
    fn rewriter(slf: &Bound<'_, Self>) -> Rewriter {
        let s = slf.borrow();
        let (numbering, link) = match s.scope {
            Scope::Answer => (core::Numbering::new(), None),
            Scope::Session => (s.numbering.clone(), Some(slf.clone().unbind())),
        };
        let rw = core::Rewriter::new(s.settings.clone(), s.sources.clone(), numbering);
        Rewriter::from_core(rw, link)
    }

    /// A `ProviderStream` for the next answer, over every source registered so far: the
    /// provider's own stream (chunks or events of `dialect`, bytes framed as `framing`) with
    /// its citations numbered as `rewriter()` numbers markers (in session scope, continuing
    /// and extending the session's numbering).
    ///
    /// Raises `SettingsError` for an unknown dialect or framing.
    #[pyo3(signature = (*, dialect="auto", framing="auto"))]
    fn provider_stream(
        slf: &Bound<'_, Self>,
        dialect: &str,
        framing: &str,
    ) -> PyResult<ProviderStream> {
        let py = slf.py();
        let s = slf.borrow();
        let (numbering, session) = match s.scope {
            Scope::Answer => (core::Numbering::new(), None),
            Scope::Session => (s.numbering.clone(), Some(slf.clone().unbind())),
        };
        let synced = numbering.len();
        let init = (s.settings.clone(), s.sources.clone(), numbering);
        drop(s);
        let stream =
            core::provider::ProviderStream::new(init.0.clone(), init.1.clone(), init.2.clone());
        ProviderStream::continuing(
            py,
            stream,
            init,
            dialect,
            framing,
            Link {
                sync: session_sync(session, synced),
                ..Link::default()
            },
        )
    }

    /// `"answer"` or `"session"`.
    #[getter]
    fn scope(&self) -> &'static str {
        match self.scope {
            Scope::Answer => "answer",
            Scope::Session => "session",
        }
    }

    /// The settings.
    #[getter]
    fn settings(&self) -> Settings {
        Settings {
            inner: self.settings.clone(),
        }
    }

    /// A copy of the sources.
    #[getter]
    fn sources(&self) -> Sources {
        Sources {
            inner: self.sources.clone(),
        }
    }

    /// A copy of the session's numbering (empty in answer scope).
    #[getter]
    fn numbering(&self) -> Numbering {
        Numbering {
            inner: self.numbering.clone(),
        }
    }

    /// The rounds in order.
    fn rounds(&self) -> Vec<Round> {
        self.sources
            .rounds()
            .iter()
            .cloned()
            .map(|inner| Round { inner })
            .collect()
    }

    /// The sources block for the prompt: one line a source, labelled with the marker the model
    /// should copy (`double_bracket`, `cite_colon`, `cite_tag`, `single_bracket`, `rank`,
    /// `rank_full_width`), texts cut to `max_chars_per_source` characters.
    #[pyo3(signature = (marker="double_bracket", *, max_chars_per_source=1000))]
    fn context_block(
        &self,
        py: Python<'_>,
        marker: &str,
        max_chars_per_source: usize,
    ) -> PyResult<String> {
        let m = marker
            .parse::<core::PromptMarker>()
            .map_err(|e| crate::errors::settings_err(py, e))?;
        Ok(core::context_block(&self.sources, m, max_chars_per_source))
    }

    /// The instruction that asks the model to cite with `marker`.
    #[pyo3(signature = (marker="double_bracket"))]
    fn citation_instruction(&self, py: Python<'_>, marker: &str) -> PyResult<String> {
        let m = marker
            .parse::<core::PromptMarker>()
            .map_err(|e| crate::errors::settings_err(py, e))?;
        Ok(core::citation_instruction(&self.sources, m))
    }

    fn __repr__(&self) -> String {
        format!(
            "Session(scope={:?}, <{} sources in {} rounds, {} numbers>)",
            self.scope(),
            self.sources.len(),
            self.sources.rounds().len(),
            self.numbering.len()
        )
    }
}
