//! `POST /v1/messages`: the Anthropic Messages API, forwarded to
//! `{anthropic_upstream}/messages` (`--anthropic-upstream`).
//!
//! The caller's `x-api-key` (or bearer key) is checked like any key of this server;
//! `anthropic-version` and `anthropic-beta` are passed on. The request's own sources
//! (`search_result` and `document` blocks) join the plan ([`Plan::new`]); the upstream is
//! always asked to stream, its events answered by the Messages wire
//! ([`MessagesWire`]) or the AI SDK UI stream. A
//! non-streaming request gets the message put together from the stream.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use citeflow_core::provider::Dialect;
use citeflow_core::Source;
use serde_json::{json, Map, Value};

use super::relay::{relay, Api, Relayed};
use crate::answer::messages::{is_block_stop, MessagesWire};
use crate::answer::stream::{self, citeflow_of};
use crate::error::ApiError;
use crate::intake::auth::AnthropicOwner;
use crate::intake::body::ApiJson;
use crate::plan::{Plan, Route};
use crate::state::AppState;
use crate::upstream::upstream_key;

/// A book's passage as an Anthropic `search_result` block: Claude's `search_result_location`
/// citations name its `source`, the passage's id, so they map back to the passage (chapter
/// and CFI).
fn search_result(p: &citeflow_core::Source) -> Value {
    let chapter = p.locator.as_ref().and_then(|l| l.chapter_title.as_deref());
    let title = match (p.title.as_deref(), chapter) {
        (Some(t), Some(c)) => format!("{t}, {c}"),
        (Some(t), None) => t.to_owned(),
        (None, Some(c)) => c.to_owned(),
        (None, None) => p.id.clone(),
    };
    json!({"type": "search_result", "source": p.id, "title": title,
        "content": [{"type": "text", "text": p.text.as_deref().unwrap_or_default()}],
        "citations": {"enabled": true}})
}

/// The sources a request gives Claude in its own form, in order: each `search_result` block
/// (in a message or a tool result; its `source` names it in `search_result_location`
/// citations) and each `document` block (cited by its index among the request's documents),
/// with their title and text (up to `max_text` bytes), under the ids the stream reader gives
/// their citations.
fn native_sources(body: &Map<String, Value>, max_text: usize) -> Vec<Source> {
    fn text_of(blocks: Option<&Value>) -> Option<String> {
        let Some(Value::Array(blocks)) = blocks else {
            return None;
        };
        let parts: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }
    fn walk(v: &Value, max_text: usize, docs: &mut u64, out: &mut Vec<Source>) {
        let Value::Array(blocks) = v else { return };
        for b in blocks {
            let title = b.get("title").and_then(Value::as_str);
            let (mut s, text) = match b.get("type").and_then(Value::as_str) {
                Some("search_result") => {
                    let Some(src) = b.get("source").and_then(Value::as_str) else {
                        continue;
                    };
                    let mut s = Source::new(src);
                    s = if src.starts_with("http://") || src.starts_with("https://") {
                        s.with_url(src)
                    } else {
                        s.with_key(format!("search_result:{src}"))
                    };
                    (s, text_of(b.get("content")))
                }
                Some("document") => {
                    let id = format!("document:{docs}");
                    *docs += 1;
                    let mut s = Source::new(&id).with_key(id.clone());
                    let source = b.get("source");
                    let kind = source.and_then(|x| x.get("type")).and_then(Value::as_str);
                    let text = match kind {
                        Some("text") => source
                            .and_then(|x| x.get("data"))
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        Some("content") => text_of(source.and_then(|x| x.get("content"))),
                        Some("url") => {
                            if let Some(u) =
                                source.and_then(|x| x.get("url")).and_then(Value::as_str)
                            {
                                s = s.with_url(u);
                            }
                            None
                        }
                        _ => None,
                    };
                    (s, text)
                }
                Some("tool_result") => {
                    walk(
                        b.get("content").unwrap_or(&Value::Null),
                        max_text,
                        docs,
                        out,
                    );
                    continue;
                }
                _ => continue,
            };
            if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
                s = s.with_title(t);
            }
            if let Some(mut t) = text {
                if t.len() > max_text {
                    let mut at = max_text;
                    while !t.is_char_boundary(at) {
                        at -= 1;
                    }
                    t.truncate(at);
                }
                s = s.with_text(t);
            }
            if !out.iter().any(|o| o.id == s.id) {
                out.push(s);
            }
        }
    }
    let mut out = Vec::new();
    let mut docs = 0;
    if let Some(Value::Array(messages)) = body.get("messages") {
        for m in messages {
            walk(
                m.get("content").unwrap_or(&Value::Null),
                max_text,
                &mut docs,
                &mut out,
            );
        }
    }
    out
}

/// The passages of `citeflow.book` go before the last user message's content as
/// `search_result` blocks (the system text names only the other sources).
fn add_search_results(plan: &mut Plan) {
    if plan.passages.is_empty() {
        return;
    }
    let blocks: Vec<Value> = plan.passages.iter().map(search_result).collect();
    let Some(Value::Array(messages)) = plan.body.get_mut("messages") else {
        return;
    };
    let Some(last) = messages
        .iter_mut()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
    else {
        return;
    };
    let content = match last.get_mut("content").map(Value::take) {
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        Some(Value::Array(parts)) => parts,
        _ => Vec::new(),
    };
    last["content"] = Value::Array(blocks.into_iter().chain(content).collect());
}

/// `POST /v1/messages`.
pub(crate) async fn create(
    State(state): State<AppState>,
    owner: Result<AnthropicOwner, ApiError>,
    headers: HeaderMap,
    body: Result<ApiJson<Map<String, Value>>, ApiError>,
) -> Result<Response, ApiError> {
    // In this order, as this route always checked: the upstream, the body, then the key.
    let Some(base) = state.settings.anthropic_upstream.clone() else {
        return Err(ApiError::invalid(
            "this server has no Anthropic upstream (start it with --anthropic-upstream URL)",
            None,
        ));
    };
    let ApiJson(body) = body?;
    let AnthropicOwner(owner) = owner?;
    let native = native_sources(&body, state.settings.limits.max_source_text_bytes);
    let route = Route::Provider {
        native,
        native_passages: true,
    };
    let mut plan = Plan::new(&state, owner, &headers, body, route).await?;
    add_search_results(&mut plan);
    if let Some(system) = &plan.system {
        let block = json!({"type": "text", "text": system});
        let merged = match plan.body.remove("system") {
            None | Some(Value::Null) => Value::String(system.clone()),
            Some(Value::String(s)) => Value::String(format!("{system}\n\n{s}")),
            Some(Value::Array(mut blocks)) => {
                blocks.insert(0, block);
                Value::Array(blocks)
            }
            Some(other) => other,
        };
        plan.body.insert("system".into(), merged);
    }
    plan.body.insert("stream".into(), Value::Bool(true));
    let version = headers
        .get("anthropic-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("2023-06-01")
        .to_owned();
    let mut req = state
        .http
        .post(format!("{base}/messages"))
        .header("anthropic-version", version)
        .json(&plan.body);
    if let Some(beta) = headers.get("anthropic-beta").and_then(|v| v.to_str().ok()) {
        req = req.header("anthropic-beta", beta);
    }
    if let Some(k) = upstream_key(&state, &headers) {
        req = req.header("x-api-key", k);
    }
    let api = Api {
        dialect: Dialect::Anthropic,
        wire: MessagesWire::new,
        is_block_end: is_block_stop,
    };
    let (answer, events) = match relay(&state, &plan, req, api).await? {
        Relayed::Streamed(r) => return Ok(r),
        Relayed::Whole(answer, events) => (answer, events),
    };
    let mut answer = answer.message();
    answer["citeflow"] = citeflow_of(&events, plan.session_id.as_deref());
    state.metrics.completions.inc(crate::metrics::ANTHROPIC);
    Ok(Json(answer).into_response())
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ResumeQuery {
    last_event_id: Option<String>,
}

/// `GET /v1/messages/{stream_id}`: the stream again after `Last-Event-ID`, with named events.
pub(crate) async fn resume(
    State(state): State<AppState>,
    AnthropicOwner(owner): AnthropicOwner,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<ResumeQuery>,
) -> Result<Response, ApiError> {
    stream::resume::<MessagesWire>(&state, &owner, &headers, id, q.last_event_id.as_deref()).await
}
