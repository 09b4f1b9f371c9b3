//! `POST /v1/responses`: the OpenAI Responses API, forwarded to `{upstream}/responses`.
//!
//! The upstream is always asked to stream; its events go through a `ProviderStream` of
//! dialect `openai-responses`. Text deltas are re-emitted with the rewritten text, the
//! provider's `annotation.added` events are replaced by citeflow's citations as standard
//! `url_citation` (or `file_citation`) annotations whose `start_index`/`end_index` are
//! characters of the rewritten part, `sequence_number`s count the events sent, and the done
//! events and `response.completed` carry the rewritten text. Citeflow's own events ride in a
//! `citeflow` field. A non-streaming request gets `response.completed`'s response.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use citeflow_core::provider::{apply_late_edits, Dialect, LateEdit};
use serde_json::{json, Map, Value};

use crate::ai_sdk::AiSdkWire;
use crate::body::ApiJson;
use crate::code::ErrorCode;
use crate::engine::{Cite, Drained, Engine, Wire};
use crate::error::{ApiError, StreamError};
use crate::proxy::{self, answer_scope, upstream_key};
use crate::relay::{
    citeflow_of, collect, named_stream, open_stream, resume_named, ui_stream, Relayed,
};
use crate::state::AppState;
use crate::tenancy::Owner;

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
    pub(crate) fn new(stream_id: Option<String>) -> Self {
        ResponsesWire {
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

    /// Text and citations of the engine, as events of the current part.
    fn text_events(&mut self, d: &Drained, template: Option<&Value>) -> Vec<Value> {
        let mut out = Vec::new();
        let Some(i) = self.cur.or_else(|| self.parts.len().checked_sub(1)) else {
            self.chars += d.text.chars().count() as u64;
            return out;
        };
        if !d.text.is_empty() {
            let part = &mut self.parts[i];
            if part.char_base.is_none() {
                part.char_base = Some(self.chars);
            }
            part.text.push_str(&d.text);
            self.chars += d.text.chars().count() as u64;
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

impl Wire for ResponsesWire {
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

    fn error_event(&mut self, e: &StreamError) -> Value {
        let seq = self.seq;
        self.seq += 1;
        json!({"type": "error", "code": e.code.as_str(), "message": e.message, "param": null,
            "sequence_number": seq})
    }
}

/// `POST /v1/responses`.
pub(crate) async fn create(
    State(state): State<AppState>,
    owner: Result<Owner, ApiError>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Response, ApiError> {
    // The body is read before the key is checked (as this route always did).
    let mut plan = proxy::plan(&state, owner?, &headers, body).await?;
    if let Some(system) = &plan.system {
        let instructions = match plan.body.get("instructions").and_then(Value::as_str) {
            Some(i) if !i.is_empty() => format!("{system}\n\n{i}"),
            _ => system.clone(),
        };
        plan.body
            .insert("instructions".into(), Value::String(instructions));
    }
    plan.body.insert("stream".into(), Value::Bool(true));
    let mut req = state
        .http
        .post(format!("{}/responses", state.settings.upstream))
        .json(&plan.body);
    if let Some(k) = upstream_key(&state, &headers) {
        req = req.bearer_auth(k);
    }
    // A slot of the key's quota, taken before the upstream is called; it goes with the
    // generation task (or ends with this request when not streaming).
    let slot = state
        .quota
        .acquire(&plan.owner, state.settings.limits.max_streams_per_key)?;
    let resp = proxy::send(&state, req).await?;
    if plan.stream {
        let (stream_id, engine) = open_stream(&state, &plan, Dialect::OpenaiResponses).await?;
        if plan.ai_sdk {
            let wire = AiSdkWire::new(Some(stream_id.clone()), |v: &Value| {
                v.get("type").and_then(Value::as_str) == Some("response.output_text.done")
            });
            return Ok(ui_stream(&state, stream_id, engine, wire, resp, slot));
        }
        let wire = ResponsesWire::new(Some(stream_id.clone()));
        let session = plan.session_id.as_deref();
        let r = named_stream(&state, stream_id, engine, wire, resp, slot, session);
        return Ok(r);
    }
    let engine = Engine::new(&state, &plan, answer_scope(&plan), Dialect::OpenaiResponses).await?;
    let mut answer = Relayed {
        engine,
        wire: ResponsesWire::new(None),
    };
    let events = collect(&state, &mut answer, resp).await?;
    let mut answer = events
        .last()
        .and_then(|e| e.get("response"))
        .cloned()
        .ok_or_else(|| ApiError::UpstreamMalformed("no response.completed".into()))?;
    answer["citeflow"] = citeflow_of(&events, plan.session_id.as_deref());
    state.metrics.completions.inc(crate::metrics::OPENAI);
    Ok(Json(answer).into_response())
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ResumeQuery {
    last_event_id: Option<String>,
    /// The Responses API's resume cursor: the `sequence_number` of the last event seen.
    starting_after: Option<u64>,
}

/// `GET /v1/responses/{stream_id}`: the stream again after `Last-Event-ID` (or
/// `starting_after`, a `sequence_number`), with named events.
pub(crate) async fn resume(
    State(state): State<AppState>,
    owner: Owner,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<ResumeQuery>,
) -> Result<Response, ApiError> {
    let last = q
        .last_event_id
        .or_else(|| q.starting_after.map(|s| s.saturating_add(1).to_string()));
    resume_named(&state, &owner, &headers, id, last.as_deref()).await
}
