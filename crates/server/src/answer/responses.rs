//! The Responses wire ([`ResponsesWire`], a [`NamedWire`], so an answer): each upstream event
//! through the [`Engine`] (dialect `openai-responses`); text deltas re-emitted with the rewritten
//! text, the provider's `annotation.added` events replaced by citeflow's citations as standard
//! `url_citation` (or `file_citation`) annotations whose `start_index`/`end_index` are characters
//! of the rewritten part, `sequence_number`s counting the events sent, the done events and
//! `response.completed` carrying the rewritten text, citeflow's own events in a `citeflow` field.
//! Its frames are named by each event's `type` ([`named`](super::named)).

use citeflow_core::provider::{apply_late_edits, Dialect, LateEdit, TextDelta};
use serde_json::{json, Value};

use super::engine::{Cite, Drained, Engine};
use super::named::NamedWire;
use super::{parse_object, texts};
use crate::code::ErrorCode;
use crate::error::StreamError;

/// One text part of the answer (`item_id`, `content_index`).
#[derive(Debug, Clone)]
struct Part {
    item_id: String,
    output_index: Value,
    content_index: u64,
    /// Characters of the whole answer before this part's first text.
    char_base: Option<u64>,
    text: String,
    annotations: Vec<Value>,
    /// Citations bound after their text was shown: `(annotation index, edit of text)`.
    late: Vec<(usize, LateEdit)>,
}

/// Byte offset of character `chars` of `s` (its length past the end).
fn byte_of_char(s: &str, chars: u64) -> u64 {
    let n = usize::try_from(chars).unwrap_or(usize::MAX);
    s.char_indices().nth(n).map_or(s.len(), |(b, _)| b) as u64
}

/// The Responses wire format.
pub(crate) struct ResponsesWire {
    engine: Engine,
    stream_id: Option<String>,
    seq: u64,
    chars: u64,
    cur: Option<usize>,
    parts: Vec<Part>,
    pending: Vec<Value>,
    terminal: Option<Value>,
}

fn is_text_part_event(t: &str) -> bool {
    matches!(
        t,
        "response.output_text.delta"
            | "response.output_text.annotation.added"
            | "response.output_text.done"
            | "response.content_part.added"
    )
}

impl ResponsesWire {
    pub(crate) fn new(engine: Engine, stream_id: Option<String>) -> Self {
        ResponsesWire {
            engine,
            stream_id,
            seq: 0,
            chars: 0,
            cur: None,
            parts: Vec::new(),
            pending: Vec::new(),
            terminal: None,
        }
    }

    fn find(&self, item_id: &str, content_index: u64) -> Option<usize> {
        self.parts
            .iter()
            .position(|p| p.item_id == item_id && p.content_index == content_index)
    }

    fn citeflow(&self, events: Vec<Value>) -> Value {
        match &self.stream_id {
            Some(id) => json!({"stream_id": id, "events": events}),
            None => json!({"events": events}),
        }
    }

    /// Numbers the events and puts the waiting citeflow events on the first.
    fn stamp(&mut self, mut out: Vec<Value>) -> Vec<Value> {
        if let Some(first) = out.first_mut() {
            if !self.pending.is_empty() {
                let events = std::mem::take(&mut self.pending);
                first["citeflow"] = self.citeflow(events);
            }
        }
        for e in &mut out {
            e["sequence_number"] = json!(self.seq);
            self.seq += 1;
        }
        out
    }

    /// Rewritten text sent as part `i`'s.
    fn part_text(&mut self, i: usize, text: &str) {
        let part = &mut self.parts[i];
        if part.char_base.is_none() {
            part.char_base = Some(self.chars);
        }
        part.text.push_str(text);
        self.chars += text.chars().count() as u64;
    }

    /// Text and citations of the engine, as events of the current part.
    fn text_events(&mut self, d: &Drained, template: Option<&Value>) -> Vec<Value> {
        let mut out = Vec::new();
        let Some(i) = self.cur.or_else(|| self.parts.len().checked_sub(1)) else {
            self.chars += d.text.chars().count() as u64;
            return out;
        };
        if !d.text.is_empty() {
            self.part_text(i, &d.text);
            let part = &self.parts[i];
            let mut ev = template.cloned().unwrap_or_else(|| {
                json!({"type": "response.output_text.delta", "item_id": part.item_id,
                    "output_index": part.output_index, "content_index": part.content_index,
                    "logprobs": []})
            });
            ev["delta"] = Value::String(d.text.clone());
            out.push(ev);
        }
        for c in &d.cites {
            let part = &mut self.parts[i];
            let base = *part.char_base.get_or_insert(self.chars);
            let annotation = annotation(c, base);
            let ev = json!({"type": "response.output_text.annotation.added",
                "item_id": part.item_id, "output_index": part.output_index,
                "content_index": part.content_index, "annotation_index": part.annotations.len(),
                "annotation": annotation});
            if let Some((shown, replace)) = &c.late {
                let byte =
                    |chars: u64| byte_of_char(&part.text, chars.saturating_sub(base)) as usize;
                let (start, end) = (byte(c.start), byte(c.end));
                let edit = LateEdit {
                    start: if *replace { start } else { end },
                    end,
                    text: shown.clone(),
                };
                part.late.push((part.annotations.len(), edit));
            }
            part.annotations.push(annotation);
            out.push(ev);
        }
        out
    }

    /// Puts the rewritten text and annotations into a message item's content.
    fn rewrite_item(&self, item: &mut Value) {
        if item.get("type").and_then(Value::as_str) != Some("message") {
            return;
        }
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(Value::Array(content)) = item.get_mut("content") {
            for (ci, c) in content.iter_mut().enumerate() {
                self.rewrite_part(&id, ci as u64, c);
            }
        }
    }

    fn rewrite_part(&self, item_id: &str, ci: u64, c: &mut Value) {
        if c.get("type").and_then(Value::as_str) != Some("output_text") {
            return;
        }
        match self.find(item_id, ci) {
            Some(i) => {
                let (text, annotations) = self.parts[i].final_answer();
                c["text"] = Value::String(text);
                c["annotations"] = Value::Array(annotations);
            }
            None => {
                c["text"] = json!("");
                c["annotations"] = json!([]);
            }
        }
    }
}

impl Part {
    /// The part's final text (the streamed text with the late numbers in place) and its
    /// annotations with offsets over it: what `output_text.done`, the done items and
    /// `response.completed` carry.
    fn final_answer(&self) -> (String, Vec<Value>) {
        if self.late.is_empty() {
            return (self.text.clone(), self.annotations.clone());
        }
        let edits: Vec<LateEdit> = self.late.iter().map(|(_, e)| e.clone()).collect();
        let (text, landed) = apply_late_edits(&self.text, &edits);
        // A byte of the streamed text, in the final text.
        let moved = |byte: usize| -> usize {
            let mut shift: isize = 0;
            for (e, l) in edits.iter().zip(&landed) {
                if e.end <= byte {
                    let added = l.as_ref().map_or(0, |r| r.len()) as isize;
                    shift += added - (e.end - e.start) as isize;
                }
            }
            byte.saturating_add_signed(shift).min(text.len())
        };
        let chars_at = |byte: usize| text[..byte].chars().count() as u64;
        let byte_of = |chars: u64| byte_of_char(&self.text, chars) as usize;
        let mut annotations = self.annotations.clone();
        for (i, a) in annotations.iter_mut().enumerate() {
            let range = match self.late.iter().position(|(k, _)| *k == i) {
                // Where its number landed (or the same number right before it).
                Some(k) => match &landed[k] {
                    Some(r) => r.clone(),
                    None => {
                        let end = moved(edits[k].end);
                        end.saturating_sub(edits[k].text.len())..end
                    }
                },
                None => {
                    let field = |f: &str| a.get(f).and_then(Value::as_u64);
                    match (field("start_index"), field("end_index")) {
                        (Some(s), Some(e)) => moved(byte_of(s))..moved(byte_of(e)),
                        _ => continue,
                    }
                }
            };
            let (start, end) = (chars_at(range.start), chars_at(range.end));
            if a.get("start_index").is_some() {
                a["start_index"] = json!(start);
                a["end_index"] = json!(end);
            } else if a.get("index").is_some() {
                a["index"] = json!(end);
            }
        }
        (text, annotations)
    }
}

/// A citation as a Responses annotation, in characters of its part.
fn annotation(c: &Cite, base: u64) -> Value {
    let (start, end) = (c.start.saturating_sub(base), c.end.saturating_sub(base));
    match &c.url {
        Some(url) => json!({"type": "url_citation", "start_index": start, "end_index": end,
            "url": url, "title": c.title.clone().unwrap_or_default(), "number": c.number}),
        None => json!({"type": "file_citation", "file_id": c.source_id, "index": end,
            "filename": c.title.clone().unwrap_or_default(), "number": c.number}),
    }
}

impl NamedWire for ResponsesWire {
    fn engine(&mut self) -> &mut Engine {
        &mut self.engine
    }

    fn before(&mut self, v: &Value) {
        let t = v.get("type").and_then(Value::as_str).unwrap_or_default();
        if !is_text_part_event(t) {
            return;
        }
        if t == "response.content_part.added"
            && v.pointer("/part/type").and_then(Value::as_str) != Some("output_text")
        {
            return;
        }
        let item_id = v
            .get("item_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let ci = v.get("content_index").and_then(Value::as_u64).unwrap_or(0);
        self.cur = Some(match self.find(&item_id, ci) {
            Some(i) => i,
            None => {
                self.parts.push(Part {
                    item_id,
                    output_index: v.get("output_index").cloned().unwrap_or(json!(0)),
                    content_index: ci,
                    char_base: None,
                    text: String::new(),
                    annotations: Vec::new(),
                    late: Vec::new(),
                });
                self.parts.len() - 1
            }
        });
    }

    fn is_boundary(&self, v: &Value) -> bool {
        v.get("type").and_then(Value::as_str) == Some("response.output_text.done")
    }

    fn after(&mut self, mut v: Value, d: Drained) -> Vec<Value> {
        let t = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.pending.extend(d.events.iter().cloned());
        let template = (t == "response.output_text.delta").then_some(&v);
        let mut out = self.text_events(&d, template);
        match t.as_str() {
            // Replaced by the rewritten delta and citeflow's annotations.
            "response.output_text.delta" | "response.output_text.annotation.added" => {}
            "response.output_text.done" => {
                if let Some(i) = self.cur {
                    v["text"] = Value::String(self.parts[i].final_answer().0);
                }
                self.cur = None;
                out.push(v);
            }
            "response.content_part.done" => {
                let id = v
                    .get("item_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let ci = v.get("content_index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(p) = v.get_mut("part") {
                    self.rewrite_part(&id, ci, p);
                }
                out.push(v);
            }
            "response.output_item.done" => {
                if let Some(item) = v.get_mut("item") {
                    self.rewrite_item(item);
                }
                out.push(v);
            }
            "response.completed" | "response.incomplete" => self.terminal = Some(v),
            _ => out.push(v),
        }
        self.stamp(out)
    }

    fn end(&mut self, d: Drained) -> Result<Vec<Value>, StreamError> {
        self.pending.extend(d.events.iter().cloned());
        let mut out = self.text_events(&d, None);
        let Some(mut terminal) = self.terminal.take() else {
            return Err(StreamError::new(
                ErrorCode::UpstreamCut,
                "the upstream closed the stream before response.completed",
            ));
        };
        if let Some(Value::Array(items)) = terminal.pointer_mut("/response/output") {
            for item in items.iter_mut() {
                self.rewrite_item(item);
            }
        }
        let mut events = std::mem::take(&mut self.pending);
        events.extend(d.done);
        terminal["citeflow"] = self.citeflow(events);
        out.push(terminal);
        Ok(self.stamp(out))
    }

    /// An `output_text.delta` of a part seen before (a new part's members are read from the
    /// event's tree, by [`Self::before`]).
    fn text_delta<'a>(&mut self, data: &'a str) -> Option<TextDelta<'a>> {
        let t = TextDelta::read(Dialect::OpenaiResponses, data)?;
        let (item, index) = t.part()?;
        self.cur = Some(self.find(item, index)?);
        Some(t)
    }

    /// The upstream's event with the rewritten text and the next `sequence_number`, when the
    /// engine gave text and nothing else; else what [`Self::after`] gives for the event's tree.
    fn after_text(&mut self, t: &TextDelta<'_>, d: Drained) -> Vec<String> {
        let plain = self.pending.is_empty() && d.events.is_empty() && d.cites.is_empty();
        if let (true, Some(i)) = (plain, self.cur) {
            if d.text.is_empty() {
                return Vec::new();
            }
            if let Some(out) = t.splice(&d.text, self.seq) {
                self.seq += 1;
                self.part_text(i, &d.text);
                return vec![out];
            }
        }
        match parse_object(t.data()) {
            Ok(v) => texts(self.after(v, d)),
            // Read as an object already: not reached.
            Err(_) => Vec::new(),
        }
    }

    fn error_value(&mut self, e: &StreamError) -> Value {
        let seq = self.seq;
        self.seq += 1;
        json!({"type": "error", "code": e.code.as_str(), "message": e.message, "param": null,
            "sequence_number": seq})
    }
}
