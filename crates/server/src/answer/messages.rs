//! The Messages wire ([`MessagesWire`], a [`NamedWire`], so an answer): each upstream event through
//! the [`Engine`] (dialect `anthropic`); `text_delta`s carry the rewritten text (a content block
//! gets all its text, numbers included, before its `content_block_stop`); `citations_delta`s pass
//! unchanged (Anthropic citations name no offsets, so none can go stale); citeflow's events ride in
//! a `citeflow` field, so the official SDKs parse the stream as usual. Its frames are named by each
//! event's `type` ([`named`](super::named)), as the Anthropic SDKs read them.

use std::collections::BTreeMap;

use citeflow_core::provider::{Dialect, TextDelta, TextDeltas};
use serde_json::{json, Value};

use super::engine::{Drained, Engine};
use super::named::NamedWire;
use super::texts;
use crate::code::ErrorCode;
use crate::error::StreamError;

/// One content block as the stream built it.
#[derive(Debug, Clone)]
struct Block {
    start: Value,
    text: String,
    citations: Vec<Value>,
    json: String,
}

/// `text` as a `text_delta` of block `index`, as JSON text: the bytes
/// `json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta",
/// "text": text}}).to_string()` gives (serde_json's map keeps its keys sorted), without the tree.
fn text_delta_json(index: u64, text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 96);
    out.extend_from_slice(br#"{"delta":{"text":"#);
    // A string always serializes.
    let _ = serde_json::to_writer(&mut out, text);
    out.extend_from_slice(br#","type":"text_delta"},"index":"#);
    out.extend_from_slice(index.to_string().as_bytes());
    out.extend_from_slice(br#","type":"content_block_delta"}"#);
    // serde_json writes UTF-8: checked once here, the fallback never runs.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The Messages wire format.
pub(crate) struct MessagesWire {
    engine: Engine,
    stream_id: Option<String>,
    cur: Option<u64>,
    blocks: BTreeMap<u64, Block>,
    message: Option<Value>,
    delta: Option<Value>,
    pending: Vec<Value>,
    terminal: Option<Value>,
    /// Reads the text deltas, one written like the last by its text alone.
    deltas: TextDeltas,
}

pub(crate) fn is_block_stop(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("content_block_stop")
}

impl MessagesWire {
    pub(crate) fn new(engine: Engine, stream_id: Option<String>) -> Self {
        MessagesWire {
            engine,
            stream_id,
            cur: None,
            blocks: BTreeMap::new(),
            message: None,
            delta: None,
            pending: Vec::new(),
            terminal: None,
            deltas: TextDeltas::new(Dialect::Anthropic),
        }
    }

    fn citeflow(&self, events: Vec<Value>) -> Value {
        match &self.stream_id {
            Some(id) => json!({"stream_id": id, "events": events}),
            None => json!({"events": events}),
        }
    }

    fn attach(&mut self, mut out: Vec<Value>) -> Vec<Value> {
        if let Some(first) = out.first_mut() {
            if !self.pending.is_empty() {
                let events = std::mem::take(&mut self.pending);
                first["citeflow"] = self.citeflow(events);
            }
        }
        out
    }

    /// The rewritten text as a `text_delta` of the current text block (or of a new block
    /// when none is open).
    fn text_events(&mut self, text: &str) -> Vec<Value> {
        if text.is_empty() {
            return Vec::new();
        }
        match self.cur {
            Some(i) => {
                if let Some(b) = self.blocks.get_mut(&i) {
                    b.text.push_str(text);
                }
                vec![json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "text_delta", "text": text}})]
            }
            None => {
                let i = self.blocks.keys().next_back().map_or(0, |k| k + 1);
                let start = json!({"type": "text", "text": ""});
                self.blocks.insert(
                    i,
                    Block {
                        start: start.clone(),
                        text: text.to_owned(),
                        citations: Vec::new(),
                        json: String::new(),
                    },
                );
                vec![
                    json!({"type": "content_block_start", "index": i, "content_block": start}),
                    json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "text_delta", "text": text}}),
                    json!({"type": "content_block_stop", "index": i}),
                ]
            }
        }
    }

    /// The whole message, as a non-streaming answer.
    pub(crate) fn message(&self) -> Value {
        let mut m = self
            .message
            .clone()
            .unwrap_or_else(|| json!({"type": "message"}));
        let content: Vec<Value> = self
            .blocks
            .values()
            .map(|b| {
                let mut c = b.start.clone();
                match c.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        c["text"] = Value::String(b.text.clone());
                        if !b.citations.is_empty() {
                            c["citations"] = Value::Array(b.citations.clone());
                        }
                    }
                    Some("tool_use" | "server_tool_use") if !b.json.is_empty() => {
                        if let Ok(input) = serde_json::from_str::<Value>(&b.json) {
                            c["input"] = input;
                        }
                    }
                    _ => {}
                }
                c
            })
            .collect();
        m["content"] = Value::Array(content);
        if let Some(d) = &self.delta {
            if let Some(Value::Object(delta)) = d.get("delta") {
                for (k, v) in delta {
                    m[k] = v.clone();
                }
            }
            if let (Some(Value::Object(u)), Some(Value::Object(mu))) =
                (d.get("usage"), m.get_mut("usage"))
            {
                for (k, v) in u {
                    mu.insert(k.clone(), v.clone());
                }
            }
        }
        m
    }
}

impl NamedWire for MessagesWire {
    fn engine(&mut self) -> &mut Engine {
        &mut self.engine
    }

    fn before(&mut self, v: &Value) {
        if v.get("type").and_then(Value::as_str) == Some("content_block_start")
            && v.pointer("/content_block/type").and_then(Value::as_str) == Some("text")
        {
            self.cur = v.get("index").and_then(Value::as_u64);
        }
    }

    fn is_boundary(&self, v: &Value) -> bool {
        is_block_stop(v)
    }

    fn after(&mut self, mut v: Value, d: Drained) -> Vec<Value> {
        self.pending.extend(d.events.iter().cloned());
        let t = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let index = v.get("index").and_then(Value::as_u64);
        let mut out = Vec::new();
        match t.as_str() {
            "message_start" => {
                self.message = v.get("message").cloned();
                out.push(v);
                out.extend(self.text_events(&d.text));
            }
            "content_block_start" => {
                let mut start = v.get("content_block").cloned().unwrap_or(json!({}));
                if start.get("type").and_then(Value::as_str) == Some("text") {
                    start["text"] = json!("");
                    v["content_block"]["text"] = json!("");
                }
                if let Some(i) = index {
                    self.blocks.insert(
                        i,
                        Block {
                            start,
                            text: String::new(),
                            citations: Vec::new(),
                            json: String::new(),
                        },
                    );
                }
                out.push(v);
                out.extend(self.text_events(&d.text));
            }
            "content_block_delta" => {
                let kind = v
                    .pointer("/delta/type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let block = index.and_then(|i| self.blocks.get_mut(&i));
                match (kind.as_str(), block) {
                    ("text_delta", _) => {}
                    ("citations_delta", Some(b)) => {
                        b.citations.extend(v.pointer("/delta/citation").cloned());
                        out.push(v);
                    }
                    ("input_json_delta", Some(b)) => {
                        if let Some(p) = v.pointer("/delta/partial_json").and_then(Value::as_str) {
                            b.json.push_str(p);
                        }
                        out.push(v);
                    }
                    _ => out.push(v),
                }
                // The rewritten text replaces the upstream's text_delta.
                let mut text = self.text_events(&d.text);
                text.append(&mut out);
                out = text;
            }
            "content_block_stop" => {
                out.extend(self.text_events(&d.text));
                if index == self.cur {
                    self.cur = None;
                }
                out.push(v);
            }
            "message_delta" => {
                self.delta = Some(v.clone());
                out.extend(self.text_events(&d.text));
                out.push(v);
            }
            "message_stop" => {
                out.extend(self.text_events(&d.text));
                self.terminal = Some(v);
            }
            _ => {
                out.extend(self.text_events(&d.text));
                out.push(v);
            }
        }
        self.attach(out)
    }

    fn end(&mut self, d: Drained) -> Result<Vec<Value>, StreamError> {
        self.pending.extend(d.events.iter().cloned());
        self.cur = None;
        let mut out = self.text_events(&d.text);
        let Some(mut terminal) = self.terminal.take() else {
            return Err(StreamError::new(
                ErrorCode::UpstreamCut,
                "the upstream closed the stream before message_stop",
            ));
        };
        let mut events = std::mem::take(&mut self.pending);
        events.extend(d.done);
        terminal["citeflow"] = self.citeflow(events);
        out.push(terminal);
        Ok(out)
    }

    /// A `text_delta` (the core's reading; one written like the last by its text alone): its
    /// text is rewritten into the current text block's own `text_delta`, as [`Self::after`]
    /// does for it.
    fn text_delta<'a>(&mut self, data: &'a str) -> Option<TextDelta<'a>> {
        self.deltas.read(data)
    }

    fn after_text(&mut self, _: &TextDelta<'_>, d: Drained) -> Vec<String> {
        self.pending.extend(d.events);
        if let (true, Some(i)) = (self.pending.is_empty(), self.cur) {
            // The common event: text for the open block and nothing of citeflow's to attach.
            if d.text.is_empty() {
                return Vec::new();
            }
            if let Some(b) = self.blocks.get_mut(&i) {
                b.text.push_str(&d.text);
            }
            return vec![text_delta_json(i, &d.text)];
        }
        let out = self.text_events(&d.text);
        texts(self.attach(out))
    }

    fn error_value(&mut self, e: &StreamError) -> Value {
        json!({"type": "error", "error": {
            "type": e.code.anthropic_kind(), "message": e.message, "code": e.code.as_str()
        }})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_delta_is_written_as_the_tree_writes_it() {
        for (index, text) in [
            (0, "Paris"),
            (3, ""),
            (u64::MAX, "caf\u{e9} \"q\" \\ \n\t\u{1}\u{7f}"),
            (12, "【1】草枕 [[source_3]] </script>"),
        ] {
            let tree = json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": text}});
            assert_eq!(text_delta_json(index, text), tree.to_string());
        }
    }
}
