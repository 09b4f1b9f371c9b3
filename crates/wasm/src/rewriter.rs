//! `Rewriter`: chunks in, events out.

use citeflow_core::{Accepted, Event};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::BindingError;
use crate::js::{chunk_bytes, entries_to_js, events_to_js, stringify, to_js, whole_number};
use crate::settings::{options_from_json, SettingsOut};
use crate::sources::Sources;
use crate::types::{
    Chunk, JsAccepted, JsEventArray, JsListedSourceArray, JsMaybeEvent, JsNumberEntryArray,
    JsResolvedSettings, JsRewriterOptions,
};

/// The binding's lifecycle. Everything about the stream (open, ending, ended, failed) is the
/// core's; the binding only knows whether it still holds the engine.
#[derive(Debug)]
enum State {
    /// Holds the engine.
    Live(Box<citeflow_core::Rewriter>),
    /// `close()` dropped the engine; every call throws `code: "closed"`.
    Closed,
}

/// Rewrites one streamed answer: citation markers become stable numbers while it streams.
///
/// # Call protocol
/// 1. `new Rewriter(sources, { settings, numbering })`: omit `numbering` for numbers per
///    answer; pass the session's saved entries (`rewriter.numbering()` of the previous answer)
///    for numbers per session.
/// 2. For each chunk (`string` or `Uint8Array`; a marker or a UTF-8 character may be cut
///    anywhere): `write(chunk)` then `pollEvent()` until `undefined`, or `feed(chunk)`, which
///    does both and returns the events.
/// 3. `end()` then `pollEvent()` until the `done` event, or `finish()`, which does both.
///
/// With `numberSource: "external"`, a `number_needed` event asks for a number from the shared
/// store; nothing more comes out until `provideNumber(key, number)` answers it.
///
/// When a call throws, the events produced before the error stay queued: `pollEvent()` still
/// returns them (after a fatal error, the text before the error and, for `verification`, the
/// `done` event). After `close()`, every method throws `RewriteError` `closed`.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Rewriter {
    state: State,
}

impl Rewriter {
    fn live(&mut self) -> Result<&mut citeflow_core::Rewriter, BindingError> {
        match &mut self.state {
            State::Live(rw) => Ok(rw),
            State::Closed => Err(BindingError::new(
                "RewriteError",
                "closed",
                "the rewriter was closed",
            )),
        }
    }

    fn peek(&self) -> Result<&citeflow_core::Rewriter, BindingError> {
        match &self.state {
            State::Live(rw) => Ok(rw),
            State::Closed => Err(BindingError::new(
                "RewriteError",
                "closed",
                "the rewriter was closed",
            )),
        }
    }

    /// Wraps a core rewriter.
    pub fn from_core(rw: citeflow_core::Rewriter) -> Self {
        Rewriter {
            state: State::Live(Box::new(rw)),
        }
    }

    fn drain(&mut self) -> Result<Vec<Event>, BindingError> {
        let rw = self.live()?;
        let mut events = Vec::new();
        while let Some(e) = rw.poll_event() {
            events.push(e);
        }
        Ok(events)
    }
}

fn accepted(a: Accepted) -> JsAccepted {
    JsValue::from_str(match a {
        Accepted::New => "new",
        Accepted::Duplicate => "duplicate",
    })
    .unchecked_into()
}

#[wasm_bindgen]
impl Rewriter {
    /// A rewriter for one stream over a copy of `sources`.
    ///
    /// # Errors
    /// Throws `SettingsError` for bad settings, `NumberingError` for conflicting entries.
    #[wasm_bindgen(constructor)]
    pub fn new(sources: &Sources, options: Option<JsRewriterOptions>) -> Result<Rewriter, JsValue> {
        let json = match &options {
            Some(o) => stringify(o)?,
            None => None,
        };
        let (settings, numbering) = options_from_json(json.as_deref())?;
        Ok(Rewriter::from_core(citeflow_core::Rewriter::new(
            settings,
            sources.as_core().clone(),
            numbering,
        )))
    }

    /// Restores a rewriter from `snapshot()` JSON (of this package, Python, the CLI or Rust);
    /// it continues exactly where the snapshot was taken.
    ///
    /// # Errors
    /// Throws `RestoreError` (`invalid_snapshot`, `version`).
    pub fn restore(snapshot: &str) -> Result<Rewriter, JsValue> {
        let snap: citeflow_core::Snapshot = serde_json::from_str(snapshot).map_err(|e| {
            BindingError::new(
                "RestoreError",
                "invalid_snapshot",
                format!("not a citeflow snapshot: {e}"),
            )
        })?;
        let rw = citeflow_core::Rewriter::from_snapshot(snap).map_err(BindingError::from)?;
        Ok(Rewriter::from_core(rw))
    }

    /// The whole state as JSON (the core's `Snapshot` format), to continue elsewhere with
    /// `Rewriter.restore`.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    pub fn snapshot(&self) -> Result<String, JsValue> {
        let snap = self.peek()?.snapshot();
        Ok(serde_json::to_string(&snap)
            .map_err(|e| BindingError::new("Error", "internal", e.to_string()))?)
    }

    /// Feeds the next chunk.
    ///
    /// # Errors
    /// Throws `RewriteError` (`invalid_utf8` under `invalidUtf8: "error"`, `ended`, `failed`)
    /// or `TypeError` (`invalid_chunk`).
    pub fn write(&mut self, chunk: &Chunk) -> Result<(), JsValue> {
        let bytes = chunk_bytes(chunk)?;
        self.live()?.write(bytes).map_err(BindingError::from)?;
        Ok(())
    }

    /// Feeds chunk number `seq` (from 0); a chunk already seen is ignored (`"duplicate"`).
    ///
    /// # Errors
    /// Throws as `write`, and `RewriteError` `gap` when `seq` skips a chunk (nothing changes).
    #[wasm_bindgen(js_name = writeSeq)]
    pub fn write_seq(&mut self, seq: f64, chunk: &Chunk) -> Result<JsAccepted, JsValue> {
        let seq = whole_number(seq, "seq")?;
        let bytes = chunk_bytes(chunk)?;
        let a = self
            .live()?
            .write_seq(seq, bytes)
            .map_err(BindingError::from)?;
        Ok(accepted(a))
    }

    /// Feeds a chunk that starts at raw input byte `byteOffset` (UTF-8 bytes of the input so
    /// far); bytes already seen are ignored.
    ///
    /// # Errors
    /// Throws as `write`, and `RewriteError` `gap` when the chunk starts after the input so far.
    #[wasm_bindgen(js_name = writeAt)]
    pub fn write_at(
        &mut self,
        #[wasm_bindgen(js_name = byteOffset)] byte_offset: f64,
        chunk: &Chunk,
    ) -> Result<JsAccepted, JsValue> {
        let at = whole_number(byte_offset, "byteOffset")?;
        let bytes = chunk_bytes(chunk)?;
        let a = self
            .live()?
            .write_at(at, bytes)
            .map_err(BindingError::from)?;
        Ok(accepted(a))
    }

    /// Ends the input: the held-back tail is decided and the `done` event is queued.
    ///
    /// # Errors
    /// Throws `RewriteError` (`invalid_utf8`, `verification` — the `done` event is still
    /// queued —, `ended`, `failed`).
    pub fn end(&mut self) -> Result<(), JsValue> {
        self.live()?.end().map_err(BindingError::from)?;
        Ok(())
    }

    /// The next event, or `undefined` when the rewriter needs more input (or a number).
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> Result<JsMaybeEvent, JsValue> {
        Ok(match self.live()?.poll_event() {
            Some(e) => to_js(&e)?,
            None => JsValue::UNDEFINED,
        }
        .unchecked_into())
    }

    /// `write(chunk)`, then every event it produced.
    ///
    /// # Errors
    /// Throws as `write`.
    pub fn feed(&mut self, chunk: &Chunk) -> Result<JsEventArray, JsValue> {
        self.write(chunk)?;
        Ok(events_to_js(&self.drain()?)?.unchecked_into())
    }

    /// `end()`, then every remaining event, the last being `done` (or a `number_needed` to
    /// answer first).
    ///
    /// # Errors
    /// Throws as `end`.
    pub fn finish(&mut self) -> Result<JsEventArray, JsValue> {
        self.end()?;
        Ok(events_to_js(&self.drain()?)?.unchecked_into())
    }

    /// Answers a `number_needed` event with the number the shared store gave `key`.
    ///
    /// # Errors
    /// Throws `RewriteError` (`not_awaiting`: nothing changes; `numbering`: fatal).
    #[wasm_bindgen(js_name = provideNumber)]
    pub fn provide_number(&mut self, key: &str, number: u32) -> Result<(), JsValue> {
        self.live()?
            .provide_number(key, number)
            .map_err(BindingError::from)?;
        Ok(())
    }

    /// The numbering table as it is now: save it to continue the numbering of a session.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    pub fn numbering(&self) -> Result<JsNumberEntryArray, JsValue> {
        Ok(entries_to_js(self.peek()?.numbering().entries())?.unchecked_into())
    }

    /// The cited sources by number; with `all`, every numbered source of the table.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(js_name = listedSources)]
    pub fn listed_sources(&self, all: Option<bool>) -> Result<JsListedSourceArray, JsValue> {
        let list = self.peek()?.listed_sources(all.unwrap_or(false));
        Ok(to_js(&list)?.unchecked_into())
    }

    /// The settings, every key present.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    pub fn settings(&self) -> Result<JsResolvedSettings, JsValue> {
        Ok(to_js(&SettingsOut::from(self.peek()?.settings()))?.unchecked_into())
    }

    /// A copy of the sources.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    pub fn sources(&self) -> Result<Sources, JsValue> {
        Ok(self.peek()?.sources().clone().into())
    }

    /// Raw input bytes accepted so far (the next `writeAt` offset).
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(getter, js_name = inputBytes)]
    pub fn input_bytes(&self) -> Result<f64, JsValue> {
        Ok(self.peek()?.input_bytes() as f64)
    }

    /// The next `writeSeq` sequence number.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(getter, js_name = nextSeq)]
    pub fn next_seq(&self) -> Result<f64, JsValue> {
        Ok(self.peek()?.next_seq() as f64)
    }

    /// Input bytes held back: an unfinished character or a possible marker.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(getter, js_name = heldBytes)]
    pub fn held_bytes(&self) -> Result<usize, JsValue> {
        Ok(self.peek()?.held_bytes())
    }

    /// Whether a `number_needed` event waits for its answer.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(getter, js_name = isAwaitingNumber)]
    pub fn is_awaiting_number(&self) -> Result<bool, JsValue> {
        Ok(self.peek()?.is_awaiting_number())
    }

    /// Whether the `done` event has been queued.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(getter, js_name = isEnded)]
    pub fn is_ended(&self) -> Result<bool, JsValue> {
        Ok(self.peek()?.is_ended())
    }

    /// Whether `close()` was called.
    #[wasm_bindgen(getter, js_name = isClosed)]
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// Drops the engine's state (sources, numbering, held-back text) now, keeping the JS
    /// object; every later call throws `RewriteError` `closed`. Read `numbering()` first.
    pub fn close(&mut self) {
        self.state = State::Closed;
    }
}
