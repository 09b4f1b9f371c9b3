//! `ProviderStream`: a provider API's stream (SSE or JSONL bytes, or one event object at a
//! time) in, events out, with the provider's citations numbered in the same table as markers.

use citeflow_core::provider::{Dialect, Framing, ProviderError};
use citeflow_core::{Event, Numbering, Settings};
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::BindingError;
use crate::js::{chunk_bytes, entries_to_js, events_to_js, stringify, to_js};
use crate::settings::{SettingsIn, SettingsOut};
use crate::sources::Sources;
use crate::types::{
    Chunk, JsEventArray, JsLeanRelease, JsMaybeEvent, JsNumberEntryArray, JsProviderEvent,
    JsProviderEventOrBytes, JsProviderStreamOptions, JsResolvedSettings, JsTextOrEventArray,
};

/// The binding's lifecycle.
#[derive(Debug)]
enum State {
    /// Reading.
    Open,
    /// A call threw: later calls throw `RewriteError` `failed` (events before it stay queued).
    Failed(String),
    /// `close()` dropped the engine.
    Closed,
}

/// The JS `ProviderStreamOptions` object.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OptionsIn {
    settings: Option<SettingsIn>,
    numbering: Option<Vec<citeflow_core::NumberEntry>>,
    dialect: Option<String>,
    framing: Option<String>,
}

/// Reads a provider API's stream (Anthropic Messages, OpenAI Chat Completions and Responses,
/// Gemini, Gemini Interactions, Cohere v2, Bedrock ConverseStream) and yields the rewriter's
/// events, with every provider citation registered as a source and numbered in the same
/// append-only table as the markers the model writes.
///
/// # Call protocol
/// 1. `new ProviderStream(sources, { settings, numbering, dialect, framing })`: `dialect` is
///    `"auto"` (detected from the first payload) or a dialect name; `framing` of the bytes is
///    `"auto"`, `"sse"`, `"jsonl"` or `"text"`.
/// 2. `feedBytes(bytes)` with the raw stream (cut anywhere), or `feedEvent(event)` with one
///    parsed event (an object, or its JSON text; a JSON string is a chunk of answer text),
///    or `feedText(text)` with the answer text of an event that holds text alone: each
///    returns the events it released (`write`-style: `pollEvent()` also works);
///    `feedEventCompact` and `feedTextCompact` return released text alone as a string;
///    `feedEventLean` and `feedTextLean` return `false` for nothing released and (text)
///    `true` for exactly the text given.
/// 3. `finish()`: the remaining events, the last being `done`, whose `text` is the final
///    answer when a citation was bound after its text was shown (`finishCompact()`: the
///    same without the `done` event's `uncited` list).
///
/// Errors are `ProviderError` (`invalid_json`, `unknown_dialect`, `unexpected_shape`,
/// `upstream_error`, `no_text`, …), `RewriteError` or `SourceError`; after one, every call
/// throws `RewriteError` `failed`, while the events before it stay queued for `pollEvent()`.
#[wasm_bindgen]
#[derive(Debug)]
pub struct ProviderStream {
    stream: Box<citeflow_core::provider::ProviderStream>,
    state: State,
    /// Payloads given to `feedEvent` (their line numbers in errors).
    payloads: u64,
    settings: Settings,
    sources: citeflow_core::Sources,
    numbering: Numbering,
}

impl ProviderStream {
    fn check(&self) -> Result<(), BindingError> {
        match &self.state {
            State::Open => Ok(()),
            State::Failed(m) => Err(BindingError::new("RewriteError", "failed", m.clone())),
            State::Closed => Err(BindingError::new(
                "RewriteError",
                "closed",
                "the provider stream was closed",
            )),
        }
    }

    fn call(
        &mut self,
        f: impl FnOnce(&mut citeflow_core::provider::ProviderStream) -> Result<(), ProviderError>,
    ) -> Result<(), BindingError> {
        self.check()?;
        f(&mut self.stream).map_err(|e| {
            if !matches!(
                e,
                ProviderError::Rewrite(citeflow_core::RewriteError::NotAwaiting { .. })
            ) {
                self.state = State::Failed(format!("the provider stream failed earlier: {e}"));
            }
            BindingError::from(e)
        })
    }

    fn drain(&mut self) -> Vec<Event> {
        std::iter::from_fn(|| self.stream.poll_event()).collect()
    }

    /// One event as its JSON text (from an object, a string, or UTF-8 bytes when `bytes`),
    /// read by the dialect's typed reader; its line is the count of events fed.
    fn write_event(&mut self, event: &JsValue, bytes: bool) -> Result<(), BindingError> {
        self.check()?;
        self.payloads += 1;
        let line = self.payloads;
        let json = match event.dyn_ref::<js_sys::Uint8Array>().filter(|_| bytes) {
            Some(a) => match String::from_utf8(a.to_vec()) {
                Ok(text) => text,
                Err(_) => return self.call(|_| Err(ProviderError::InvalidUtf8 { line })),
            },
            None => match event.as_string() {
                Some(text) => text,
                None => stringify(event)?.unwrap_or_else(|| "null".to_owned()),
            },
        };
        self.call(|s| s.write_payload_json(&json, line))
    }

    /// The answer text of one event that holds text alone (nothing for empty text).
    fn write_text(&mut self, text: &str) -> Result<(), BindingError> {
        self.check()?;
        self.payloads += 1;
        if text.is_empty() {
            return Ok(());
        }
        self.call(|s| s.write_text(text))
    }
}

/// Events as a JS value: their text joined as one string when every one is non-empty `text`
/// (`""` for none), else the array of events.
fn compact(events: &[Event]) -> Result<JsValue, BindingError> {
    let mut text = String::new();
    for e in events {
        match e {
            Event::Text { text: t } if !t.is_empty() => text.push_str(t),
            _ => return events_to_js(events),
        }
    }
    Ok(JsValue::from_str(&text))
}

/// Events as the lean calls return them: `true` when they are exactly one `text` event of
/// `echo` (the text just given: nothing crosses back), `false` when there are none, else as
/// [`compact`]. Neither answer makes a JS string.
fn lean(events: &[Event], echo: Option<&str>) -> Result<JsValue, BindingError> {
    match (events, echo) {
        ([], _) => Ok(JsValue::FALSE),
        ([Event::Text { text }], Some(echo)) if text == echo => Ok(JsValue::TRUE),
        _ => compact(events),
    }
}

#[wasm_bindgen]
impl ProviderStream {
    /// A stream over a copy of `sources` (may be empty, `new Sources()`: provider citations
    /// bring their own).
    ///
    /// # Errors
    /// Throws `SettingsError` for bad settings or an unknown dialect or framing,
    /// `NumberingError` for conflicting entries.
    #[wasm_bindgen(constructor)]
    pub fn new(
        sources: &Sources,
        options: Option<JsProviderStreamOptions>,
    ) -> Result<ProviderStream, JsValue> {
        let opts: OptionsIn = match options.as_ref().map(|o| stringify(o)).transpose()? {
            Some(Some(json)) => serde_json::from_str::<Option<OptionsIn>>(&json)
                .map_err(BindingError::invalid_settings)?
                .unwrap_or_default(),
            _ => OptionsIn::default(),
        };
        let settings = opts
            .settings
            .unwrap_or_default()
            .apply(Settings::default())?;
        let numbering = Numbering::from_entries(opts.numbering.unwrap_or_default())
            .map_err(BindingError::from)?;
        let framing: Framing = opts
            .framing
            .as_deref()
            .unwrap_or("auto")
            .parse()
            .map_err(BindingError::from)?;
        let sources = sources.as_core().clone();
        let mut stream = citeflow_core::provider::ProviderStream::new(
            settings.clone(),
            sources.clone(),
            numbering.clone(),
        )
        .with_framing(framing);
        match opts.dialect.as_deref() {
            None | Some("auto") => {}
            Some(name) => {
                let d: Dialect = name.parse().map_err(BindingError::from)?;
                stream = stream.with_dialect(d);
            }
        }
        Ok(ProviderStream {
            stream: Box::new(stream),
            state: State::Open,
            payloads: 0,
            settings,
            sources,
            numbering,
        })
    }

    /// Feeds bytes of the stream as the provider sent them (SSE or JSONL, cut anywhere; with
    /// `framing: "text"`, answer text) and returns the events they released.
    ///
    /// # Errors
    /// Throws `ProviderError` naming the line, `RewriteError`, `SourceError`, or `TypeError`
    /// `invalid_chunk`.
    #[wasm_bindgen(js_name = feedBytes)]
    pub fn feed_bytes(&mut self, bytes: &Chunk) -> Result<JsEventArray, JsValue> {
        let bytes = chunk_bytes(bytes)?;
        self.call(|s| s.write(&bytes))?;
        Ok(events_to_js(&self.drain())?.unchecked_into())
    }

    /// Feeds one provider event (an object, or its JSON text) and returns the events it
    /// released. The text is read by the dialect's typed reader, without a JSON tree.
    ///
    /// # Errors
    /// As `feedBytes`; `ProviderError` `invalid_json` for text that is not JSON.
    #[wasm_bindgen(js_name = feedEvent)]
    pub fn feed_event(&mut self, event: &JsProviderEvent) -> Result<JsEventArray, JsValue> {
        self.write_event(event, false)?;
        Ok(events_to_js(&self.drain())?.unchecked_into())
    }

    /// Feeds the answer text of one provider event that holds answer text alone, read by the
    /// caller (what the dialect's reader would have given for the event, without reading
    /// it: the core's `ProviderStream::write_text`), and returns the events it released. For
    /// adapters whose SDK has already parsed the event; every other event goes to
    /// `feedEvent`. It counts as one event (the line named in later errors); empty text
    /// releases nothing, as an event without text.
    ///
    /// # Errors
    /// As `feedBytes`.
    #[wasm_bindgen(js_name = feedText)]
    pub fn feed_text(&mut self, text: &str) -> Result<JsEventArray, JsValue> {
        self.write_text(text)?;
        Ok(events_to_js(&self.drain())?.unchecked_into())
    }

    /// `feedEvent` for adapters that feed every chunk: what the event released comes back
    /// as one string when it is text alone (the `text` events' text joined, `""` when
    /// nothing was released), as the events otherwise. The event may also be its JSON text
    /// as UTF-8 bytes (a `Uint8Array`: a long text crosses into WebAssembly faster so).
    ///
    /// # Errors
    /// As `feedEvent`; `ProviderError` `invalid_utf8` for bytes that are not UTF-8.
    #[wasm_bindgen(js_name = feedEventCompact)]
    pub fn feed_event_compact(
        &mut self,
        event: &JsProviderEventOrBytes,
    ) -> Result<JsTextOrEventArray, JsValue> {
        self.write_event(event, true)?;
        Ok(compact(&self.drain())?.unchecked_into())
    }

    /// `feedText`, with what it released returned as `feedEventCompact` returns it.
    ///
    /// # Errors
    /// As `feedText`.
    #[wasm_bindgen(js_name = feedTextCompact)]
    pub fn feed_text_compact(&mut self, text: &str) -> Result<JsTextOrEventArray, JsValue> {
        self.write_text(text)?;
        Ok(compact(&self.drain())?.unchecked_into())
    }

    /// `feedEventCompact` for adapters that feed every chunk and mostly get nothing back:
    /// `false` when the event released nothing (instead of `""`), else as `feedEventCompact`.
    ///
    /// # Errors
    /// As `feedEventCompact`.
    #[wasm_bindgen(js_name = feedEventLean)]
    pub fn feed_event_lean(
        &mut self,
        event: &JsProviderEventOrBytes,
    ) -> Result<JsLeanRelease, JsValue> {
        self.write_event(event, true)?;
        Ok(lean(&self.drain(), None)?.unchecked_into())
    }

    /// `feedTextCompact` for adapters that keep the text they gave: `true` when the call
    /// released exactly `text` (the usual case: no string comes back), `false` when it
    /// released nothing, else as `feedTextCompact` (other text as a string, or the events).
    ///
    /// # Errors
    /// As `feedText`.
    #[wasm_bindgen(js_name = feedTextLean)]
    pub fn feed_text_lean(&mut self, text: &str) -> Result<JsLeanRelease, JsValue> {
        self.write_text(text)?;
        Ok(lean(&self.drain(), Some(text))?.unchecked_into())
    }

    /// Ends the stream: the remaining events are queued, the last being `done`.
    ///
    /// # Errors
    /// As `feedBytes`; `ProviderError` `no_text` when the stream had no answer text but
    /// events this reader does not know.
    pub fn end(&mut self) -> Result<(), JsValue> {
        Ok(self.call(|s| s.end())?)
    }

    /// `end()`, then every remaining event, the last being `done`.
    ///
    /// # Errors
    /// As `end`.
    pub fn finish(&mut self) -> Result<JsEventArray, JsValue> {
        self.end()?;
        Ok(events_to_js(&self.drain())?.unchecked_into())
    }

    /// `finish()` for adapters that do not list the sources left uncited: the same events,
    /// the `done` event without its `uncited` list (as when every source was cited), which
    /// is then neither turned into JSON nor into JS values.
    ///
    /// # Errors
    /// As `end`.
    #[wasm_bindgen(js_name = finishCompact)]
    pub fn finish_compact(&mut self) -> Result<JsEventArray, JsValue> {
        self.end()?;
        let mut events = self.drain();
        for e in &mut events {
            if let Event::Done { uncited, .. } = e {
                uncited.clear();
            }
        }
        Ok(events_to_js(&events)?.unchecked_into())
    }

    /// The next event, or `undefined` when the stream needs more input.
    ///
    /// # Errors
    /// Throws `RewriteError` `closed` after `close()`.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> Result<JsMaybeEvent, JsValue> {
        if matches!(self.state, State::Closed) {
            self.check()?;
        }
        Ok(match self.stream.poll_event() {
            Some(e) => to_js(&e)?,
            None => JsValue::UNDEFINED,
        }
        .unchecked_into())
    }

    /// Answers a `number_needed` event with the number the shared store gave `key`.
    ///
    /// # Errors
    /// Throws `RewriteError` (`not_awaiting`: nothing changes).
    #[wasm_bindgen(js_name = provideNumber)]
    pub fn provide_number(&mut self, key: &str, number: u32) -> Result<(), JsValue> {
        Ok(self.call(|s| s.provide_number(key, number))?)
    }

    /// The dialect once given or detected (`"anthropic"`, `"openai-responses"`, …).
    #[wasm_bindgen(getter)]
    pub fn dialect(&self) -> Option<String> {
        self.stream.dialect().map(|d| d.name().to_owned())
    }

    /// The numbering table as it is now: save it to continue the numbering of a session.
    ///
    /// # Errors
    /// Never in practice (a JSON conversion failure).
    pub fn numbering(&self) -> Result<JsNumberEntryArray, JsValue> {
        let entries = match self.stream.rewriter() {
            Some(rw) => rw.numbering().entries(),
            None => self.numbering.entries(),
        };
        Ok(entries_to_js(entries)?.unchecked_into())
    }

    /// The key `number` belongs to in the numbering table (`undefined` for a number not
    /// handed out): one entry of `numbering()`, without the whole table's JSON.
    #[wasm_bindgen(js_name = keyOf)]
    pub fn key_of(&self, number: u32) -> Option<String> {
        let numbering = match self.stream.rewriter() {
            Some(rw) => rw.numbering(),
            None => &self.numbering,
        };
        numbering
            .entries()
            .iter()
            .find(|e| e.number == number)
            .map(|e| e.key.clone())
    }

    /// The settings, every key present.
    ///
    /// # Errors
    /// Never in practice (a JSON conversion failure).
    pub fn settings(&self) -> Result<JsResolvedSettings, JsValue> {
        let s = self
            .stream
            .rewriter()
            .map_or(&self.settings, |rw| rw.settings());
        Ok(to_js(&SettingsOut::from(s))?.unchecked_into())
    }

    /// A copy of the sources: the caller's and every source a provider cited so far.
    pub fn sources(&self) -> Sources {
        self.stream
            .rewriter()
            .map_or(&self.sources, |rw| rw.sources())
            .clone()
            .into()
    }

    /// Drops the engine's state; every later call throws `RewriteError` `closed`.
    pub fn close(&mut self) {
        self.state = State::Closed;
        *self.stream = citeflow_core::provider::ProviderStream::new(
            Settings::default(),
            citeflow_core::Sources::new(),
            Numbering::new(),
        );
    }
}
