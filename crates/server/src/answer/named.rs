//! The named streams (Responses, Messages): one [`Answer`] for every [`NamedWire`] (each
//! upstream event read as an object, given to the engine, its events rewritten by the wire),
//! and their frames: each event named by its `type`, as the Anthropic SDKs read the `event:`
//! line; errors as `error` events.

use bytes::Bytes;
use citeflow_core::provider::TextDelta;
use citeflow_store::StoreError;
use serde_json::{json, Value};

use super::engine::{Drained, Engine};
use super::{parse_object, texts, Answer};
use crate::error::StreamError;
use crate::ops::shutdown;
use crate::sse::{self, Naming};

/// What a named stream's wire adds to the engine: where its text blocks start and end, and
/// how the engine's output becomes the API's own events.
pub(crate) trait NamedWire: Send + 'static {
    /// The engine the wire feeds.
    fn engine(&mut self) -> &mut Engine;

    /// Notes what an upstream event starts (a text block), before the engine reads it.
    fn before(&mut self, v: &Value);

    /// Whether the upstream event ends a text block (the engine decides its held text).
    fn is_boundary(&self, v: &Value) -> bool;

    /// The events to send for an upstream event, given what the engine drained for it.
    fn after(&mut self, v: Value, d: Drained) -> Vec<Value>;

    /// The last events, given what the engine drained at the end.
    ///
    /// # Errors
    /// `upstream_cut` when the answer was not finished.
    fn end(&mut self, d: Drained) -> Result<Vec<Value>, StreamError>;

    /// The API's error event for a failure.
    fn error_value(&mut self, e: &StreamError) -> Value;

    /// An upstream event that is answer text alone, read without a tree (the core's
    /// [`TextDelta`]), noted as [`Self::before`] notes it: such an event goes to the engine
    /// as its text ([`Engine::step_text`]), and [`Self::after_text`] gives what
    /// [`Self::after`] would for it. `None`: the event is read as an object.
    fn text_delta<'a>(&mut self, data: &'a str) -> Option<TextDelta<'a>>;

    /// The events to send for an event [`Self::text_delta`] read, given what the engine
    /// drained for it: what [`Self::after`] gives for that event.
    fn after_text(&mut self, t: &TextDelta<'_>, d: Drained) -> Vec<String>;
}

impl<W: NamedWire> Answer for W {
    async fn on_data(&mut self, data: &str) -> Result<Vec<String>, StreamError> {
        if let Some(t) = self.text_delta(data) {
            let d = self.engine().step_text(&t).await?;
            return Ok(self.after_text(&t, d));
        }
        let v = parse_object(data)?;
        self.before(&v);
        let boundary = self.is_boundary(&v);
        let d = self.engine().step(&v, boundary).await?;
        Ok(texts(self.after(v, d)))
    }

    async fn on_end(&mut self, _done: bool) -> Result<Vec<String>, StreamError> {
        let d = self.engine().finish().await?;
        Ok(texts(self.end(d)?))
    }

    fn error_event(&mut self, e: &StreamError) -> String {
        self.error_value(e).to_string()
    }

    const NAMING: Naming = Naming::ByType;

    fn read_error_frame(e: &StoreError) -> Bytes {
        read_error_frame(e)
    }

    fn failure_frame(data: &str) -> Bytes {
        failure(data)
    }

    fn shutdown_frame() -> Bytes {
        shutdown_frame()
    }
}

/// The log's read error in a named stream (Responses, Messages), as an `error` event (its
/// logged events are named by their `type`: [`Naming::ByType`]).
pub(crate) fn read_error_frame(e: &StoreError) -> Bytes {
    tracing::error!(error = %e, "cannot read stream log");
    let data = json!({"type": "error", "error": {"type": "api_error",
        "message": "the stream log cannot be read; reconnect with Last-Event-ID"}});
    sse::event(None, Some("error"), &data.to_string())
}

/// A named stream's failure event, as it was logged.
pub(crate) fn failure(data: &str) -> Bytes {
    sse::event(None, Some("error"), data)
}

/// The shutdown's last event of a named stream (named `error`, as their errors are).
pub(crate) fn shutdown_frame() -> Bytes {
    let data = json!({"type": "error", "error": {"type": "api_error",
        "code": shutdown::CODE.as_str(), "message": shutdown::MESSAGE}});
    sse::event(None, Some("error"), &data.to_string())
}
