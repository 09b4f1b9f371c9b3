//! The Vercel AI SDK UI message stream (AI SDK 5+, what `useChat` reads; header
//! `x-vercel-ai-ui-message-stream: v1`), for every answering route when a request asks for it
//! (`citeflow.protocol: "ai-sdk"`, or an `Accept` naming `x-vercel-ai-ui-message-stream`):
//! chat completions, responses and messages, and a chat stream's resume (`GET
//! /v1/streams/{id}` with that `Accept`, where the AI SDK's reconnect points).
//!
//! The parts: `start`, then for each batch of rewritten text one `source-url` (or
//! `source-document` for a source without a url) per number shown for the first time, before
//! the text that shows it; `text-start`/`text-delta`/`text-end` of one text part; citeflow's
//! events as `data-citeflow` parts, but each claim anchor (`citeflow.settings.anchors`) as a
//! `data-citeflow-anchor` part of its own, as soon as its sentence closes; `finish` and
//! `[DONE]`; a failure is an `error` part.
//!
//! They are made two ways. For responses and messages the parts are written when the answer
//! is generated ([`AiSdkWire`], a [`Wire`] of the relay engine): the log holds the parts, and
//! [`response`] sends them as logged to the request that started the answer. For chat
//! completions the log holds the chat chunks (the same log serves a plain resume), and
//! [`chat_response`] makes the parts of each logged chunk as it reads it (`chat_parts`, the
//! first choice only). Both responses end with an `error` part on the shutdown and on a
//! failure the store did not take.

use axum::response::Response;
use bytes::Bytes;
use citeflow_store::follow;
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::engine::{Drained, Wire};
use crate::error::StreamError;
use crate::sse;
use crate::state::AppState;

/// The id of the one text part.
const TEXT_ID: &str = "text-0";

/// A number's source as a UI message part: `source-url`, or `source-document` for a source
/// without url (a book passage), with the number, id, chapter and CFI in provider metadata.
fn source_part(number: u64, s: &Value) -> Value {
    let id = s
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let title = s.get("title").and_then(Value::as_str).map(str::to_owned);
    let mut meta = json!({"number": number, "id": id});
    for k in ["cfi", "chapter", "book"] {
        if let Some(v) = s.pointer(&format!("/metadata/{k}")) {
            meta[k] = v.clone();
        }
    }
    for (k, at) in [
        ("cfi", "/locator/cfi"),
        ("chapter", "/locator/chapter_title"),
    ] {
        if let Some(v) = s.pointer(at) {
            meta[k] = v.clone();
        }
    }
    // The AI SDK's schema takes a title or none, never null.
    let mut part = match s.get("url").and_then(Value::as_str) {
        Some(url) => json!({"type": "source-url", "sourceId": format!("{number}"),
            "url": url, "providerMetadata": {"citeflow": meta}}),
        None => json!({"type": "source-document", "sourceId": format!("{number}"),
            "mediaType": "text/plain", "title": title.clone().unwrap_or(id),
            "providerMetadata": {"citeflow": meta}}),
    };
    if let Some(t) = title {
        part["title"] = json!(t);
    }
    part
}

/// Citeflow's events as UI message parts, in their order: each anchor a
/// `data-citeflow-anchor` part of its own (the anchor event is its `data`; its `id` names the
/// citation and claim, so a client keeps one part per anchor), the events between them
/// together in a `data-citeflow` part.
fn event_parts(events: impl Iterator<Item = Value>, out: &mut Vec<Value>) {
    let mut run: Vec<Value> = Vec::new();
    for e in events {
        if e["type"] != "anchor" {
            run.push(e);
            continue;
        }
        if !run.is_empty() {
            let events = std::mem::take(&mut run);
            out.push(json!({"type": "data-citeflow", "data": {"events": events}}));
        }
        let id = format!(
            "anchor-{}-{}",
            e["number"],
            e.pointer("/claim/char_start").unwrap_or(&Value::Null)
        );
        out.push(json!({"type": "data-citeflow-anchor", "id": id, "data": e}));
    }
    if !run.is_empty() {
        out.push(json!({"type": "data-citeflow", "data": {"events": run}}));
    }
}

/// The UI message parts of one logged event of a chat completions stream (its first choice):
/// `first` for the stream's first event (`start`, `text-start` go before it). Each source
/// event becomes its part before the text of the chunk; the other citeflow events go in a
/// `data-citeflow` part; `[DONE]` closes the text and the message; an error envelope is an
/// `error` part.
fn chat_parts(data: &str, stream_id: &str, first: bool) -> Vec<String> {
    let mut out: Vec<Value> = Vec::new();
    if first {
        out.push(json!({"type": "start", "messageId": stream_id}));
        out.push(json!({"type": "text-start", "id": TEXT_ID}));
    }
    if data == "[DONE]" {
        out.push(json!({"type": "text-end", "id": TEXT_ID}));
        out.push(json!({"type": "finish"}));
        let mut parts: Vec<String> = out.iter().map(Value::to_string).collect();
        parts.push("[DONE]".to_owned());
        return parts;
    }
    let v: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    if let Some(err) = v.get("error").filter(|e| e.is_object()) {
        let code = err.get("code").and_then(Value::as_str).unwrap_or("error");
        let message = err.get("message").and_then(Value::as_str).unwrap_or("");
        out.push(json!({"type": "error", "errorText": format!("{code}: {message}")}));
        return out.iter().map(Value::to_string).collect();
    }
    // Later choices (n > 1) are not part of the one message.
    let events: &[Value] = match v.pointer("/citeflow/events") {
        Some(Value::Array(e)) if v.pointer("/citeflow/choice").is_none() => e,
        _ => &[],
    };
    for e in events.iter().filter(|e| e["type"] == "source") {
        out.push(source_part(
            e["number"].as_u64().unwrap_or_default(),
            &e["source"],
        ));
    }
    let text: String = v
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        .filter_map(|c| c.pointer("/delta/content").and_then(Value::as_str))
        .collect();
    if !text.is_empty() {
        out.push(json!({"type": "text-delta", "id": TEXT_ID, "delta": text}));
    }
    let rest = events.iter().filter(|e| e["type"] != "source").cloned();
    event_parts(rest, &mut out);
    out.iter().map(Value::to_string).collect()
}

/// The UI message stream over any provider dialect.
pub(crate) struct AiSdkWire {
    stream_id: Option<String>,
    boundary: fn(&Value) -> bool,
    started: bool,
    text_open: bool,
}

impl AiSdkWire {
    /// `boundary` says which upstream payloads end a content block.
    pub(crate) fn new(stream_id: Option<String>, boundary: fn(&Value) -> bool) -> Self {
        AiSdkWire {
            stream_id,
            boundary,
            started: false,
            text_open: false,
        }
    }

    fn parts(&mut self, d: Drained) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            let id = self.stream_id.clone().unwrap_or_else(|| "msg".to_owned());
            out.push(json!({"type": "start", "messageId": id}));
        }
        for (number, s) in d.new_sources {
            out.push(source_part(u64::from(number), &s));
        }
        if !d.text.is_empty() {
            if !self.text_open {
                self.text_open = true;
                out.push(json!({"type": "text-start", "id": TEXT_ID}));
            }
            out.push(json!({"type": "text-delta", "id": TEXT_ID, "delta": d.text}));
        }
        event_parts(d.events.into_iter().chain(d.done), &mut out);
        out
    }
}

impl Wire for AiSdkWire {
    fn before(&mut self, _payload: &Value) {}

    fn is_boundary(&self, payload: &Value) -> bool {
        (self.boundary)(payload)
    }

    fn after(&mut self, _payload: Value, d: Drained) -> Vec<Value> {
        self.parts(d)
    }

    fn end(&mut self, d: Drained) -> Result<Vec<Value>, StreamError> {
        let mut out = self.parts(d);
        if self.text_open {
            self.text_open = false;
            out.push(json!({"type": "text-end", "id": TEXT_ID}));
        }
        out.push(json!({"type": "finish"}));
        out.push(Value::String("[DONE]".into()));
        Ok(out)
    }

    fn error_event(&mut self, e: &StreamError) -> Value {
        json!({"type": "error", "errorText": format!("{}: {}", e.code, e.message)})
    }
}

/// A chat completions stream's log after `after` as the UI message stream: each logged
/// event becomes its parts ([`chat_parts`]), the last of them carrying the event's id.
pub(crate) fn chat_response(state: &AppState, stream_id: &str, after: u64) -> Response {
    let id = stream_id.to_owned();
    let feed = follow(state.store.clone(), stream_id.to_owned(), after).flat_map(move |e| {
        let events: Vec<Bytes> = match e {
            Ok(e) => {
                let parts = chat_parts(&e.data, &id, e.id == 1);
                let n = parts.len();
                parts
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| sse::event((i + 1 == n).then_some(e.id), None, &p))
                    .collect()
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot read stream log");
                vec![read_error()]
            }
        };
        futures_util::stream::iter(events)
    });
    let feed = crate::shutdown::until_interrupted(state, feed, crate::shutdown::ui_event());
    let feed = crate::unrecorded::until_unrecorded(&state.unrecorded, stream_id, feed, error_frame);
    headers(sse::response(feed), stream_id)
}

/// The `error` part of a failure the store did not take: its event as it was meant for the
/// log (already a part, or a chat error envelope).
fn error_frame(data: &str) -> Bytes {
    let v: Value = serde_json::from_str(data).unwrap_or(Value::Null);
    if v.get("errorText").is_some() {
        return sse::event(None, None, data);
    }
    let at = |p: &str| v.pointer(p).and_then(Value::as_str);
    let (code, message) = (at("/error/code").unwrap_or("error"), at("/error/message"));
    let text = format!("{code}: {}", message.unwrap_or("the stream failed"));
    let part = json!({"type": "error", "errorText": text});
    sse::event(None, None, &part.to_string())
}

/// The part sent when the log cannot be read.
fn read_error() -> Bytes {
    let data = json!({"type": "error", "errorText": "the stream log cannot be read"});
    sse::event(None, None, &data.to_string())
}

/// The UI message stream's headers.
fn headers(mut resp: Response, stream_id: &str) -> Response {
    let h = resp.headers_mut();
    h.insert(
        "x-vercel-ai-ui-message-stream",
        axum::http::HeaderValue::from_static("v1"),
    );
    if let Ok(v) = stream_id.parse() {
        h.insert("x-citeflow-stream-id", v);
    }
    resp
}

/// The UI message stream of a logged stream after `after`.
pub(crate) fn response(state: &AppState, stream_id: &str, after: u64) -> Response {
    let feed = follow(state.store.clone(), stream_id.to_owned(), after).map(|e| match e {
        Ok(e) => sse::event(Some(e.id), None, &e.data),
        Err(e) => {
            tracing::error!(error = %e, "cannot read stream log");
            read_error()
        }
    });
    let feed = crate::shutdown::until_interrupted(state, feed, crate::shutdown::ui_event());
    let feed = crate::unrecorded::until_unrecorded(&state.unrecorded, stream_id, feed, error_frame);
    headers(sse::response(feed), stream_id)
}
