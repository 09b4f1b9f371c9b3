//! `ProviderStream`: a provider API's stream (SSE or JSONL bytes, or one event object at a
//! time) in, events out, with the provider's citations numbered in the same table as markers.

use citeflow_core::provider::{Dialect, Framing, ProviderError};
use citeflow_core::{Event, Numbering, Settings};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::BindingError;
use crate::js::{chunk_bytes, stringify, to_js};
use crate::settings::{SettingsIn, SettingsOut};
use crate::sources::Sources;
use crate::types::{
    Chunk, JsEventArray, JsMaybeEvent, JsNumberEntryArray, JsProviderEvent,
    JsProviderStreamOptions, JsResolvedSettings,
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
///    parsed event (an object, or its JSON text; a JSON string is a chunk of answer text):
///    each returns the events it released (`write`-style: `pollEvent()` also works).
/// 3. `finish()`: the remaining events, the last being `done`, whose `text` is the final
///    answer when a citation was bound after its text was shown.
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
        Ok(to_js(&self.drain())?.unchecked_into())
    }

    /// Feeds one provider event (an object, or its JSON text) and returns the events it
    /// released.
    ///
    /// # Errors
    /// As `feedBytes`; `ProviderError` `invalid_json` for text that is not JSON.
    #[wasm_bindgen(js_name = feedEvent)]
    pub fn feed_event(&mut self, event: &JsProviderEvent) -> Result<JsEventArray, JsValue> {
        self.check()?;
        self.payloads += 1;
        let line = self.payloads;
        let json = match event.as_string() {
            Some(text) => text,
            None => stringify(event)?.unwrap_or_else(|| "null".to_owned()),
        };
        let payload: Value = match serde_json::from_str(&json) {
            Ok(v) => v,
            Err(e) => {
                let err = ProviderError::Json {
                    line,
                    sse: false,
                    message: e.to_string(),
                };
                self.state = State::Failed(format!("the provider stream failed earlier: {err}"));
                return Err(BindingError::from(err).into());
            }
        };
        self.call(|s| s.write_payload(&payload, line))?;
        Ok(to_js(&self.drain())?.unchecked_into())
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
        Ok(to_js(&self.drain())?.unchecked_into())
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
        Ok(to_js(entries)?.unchecked_into())
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
