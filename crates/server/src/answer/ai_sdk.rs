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
//! They are made one way, for every route: written when the answer is generated
//! ([`AiSdkWire`], an [`Answer`] over the [`Engine`] of the upstream's dialect, the first
//! choice only for chat); the log holds the parts, sent as logged live and on resume. The
//! response ends with an `error` part on the shutdown and on a failure the store did not
//! take.

use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use citeflow_store::StoreError;
use serde_json::{json, Value};

use crate::answer::engine::{Drained, Engine};
use crate::answer::{parse_object, Answer};
use crate::error::StreamError;
use crate::ops::shutdown;
use crate::sse::{self, Naming};

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

/// The UI message stream over any provider dialect: each upstream payload through the
/// [`Engine`], its text, sources and events out as parts.
pub(crate) struct AiSdkWire {
    engine: Engine,
    stream_id: String,
    boundary: fn(&Value) -> bool,
    started: bool,
    text_open: bool,
}

impl AiSdkWire {
    /// Stream `stream_id`'s parts; `boundary` says which upstream payloads end a content
    /// block.
    pub(crate) fn new(engine: Engine, stream_id: String, boundary: fn(&Value) -> bool) -> Self {
        AiSdkWire {
            engine,
            stream_id,
            boundary,
            started: false,
            text_open: false,
        }
    }

    fn parts(&mut self, d: Drained) -> Vec<String> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(json!({"type": "start", "messageId": self.stream_id}));
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
        out.iter().map(Value::to_string).collect()
    }
}

impl Answer for AiSdkWire {
    async fn on_data(&mut self, data: &str) -> Result<Vec<String>, StreamError> {
        let v = parse_object(data)?;
        let d = self.engine.step(&v, (self.boundary)(&v)).await?;
        Ok(self.parts(d))
    }

    async fn on_end(&mut self, _done: bool) -> Result<Vec<String>, StreamError> {
        let d = self.engine.finish().await?;
        let mut out = self.parts(d);
        if self.text_open {
            self.text_open = false;
            out.push(json!({"type": "text-end", "id": TEXT_ID}).to_string());
        }
        out.push(json!({"type": "finish"}).to_string());
        out.push("[DONE]".to_owned());
        Ok(out)
    }

    fn error_event(&mut self, e: &StreamError) -> String {
        json!({"type": "error", "errorText": format!("{}: {}", e.code, e.message)}).to_string()
    }

    const NAMING: Naming = Naming::Unnamed;

    fn read_error_frame(e: &StoreError) -> Bytes {
        tracing::error!(error = %e, "cannot read stream log");
        let data = json!({"type": "error", "errorText": "the stream log cannot be read"});
        sse::event(None, None, &data.to_string())
    }

    /// Its event as it was meant for the log (already a part, or an error envelope).
    fn failure_frame(data: &str) -> Bytes {
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

    fn shutdown_frame() -> Bytes {
        let data = json!({"type": "error",
            "errorText": format!("{}: {}", shutdown::CODE, shutdown::MESSAGE)});
        sse::event(None, None, &data.to_string())
    }

    fn headers(h: &mut HeaderMap) {
        h.insert(
            "x-vercel-ai-ui-message-stream",
            HeaderValue::from_static("v1"),
        );
    }
}
