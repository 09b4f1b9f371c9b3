//! The relay of a provider-shaped answer: [`pump`] reads the upstream's SSE through a
//! [`Wire`] into a sink (the stream's log, or a list for a non-streaming answer), and the log
//! goes out as SSE with event names (the Anthropic SDKs read the `event:` line), live and on
//! resume.

use axum::http::HeaderMap;
use axum::response::Response;
use citeflow_core::provider::Dialect;
use citeflow_store::{follow, NumberScope, StoredEvent, StreamRecord, StreamStatus};
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::code::ErrorCode;
use crate::engine::{Engine, Wire};
use crate::error::{ApiError, StreamError};
use crate::proxy::Plan;
use crate::quota::StreamSlot;
use crate::sse;
use crate::state::{now_ms, random_id, AppState};
use crate::tenancy::Owner;
use crate::upstream_body::UpstreamEvents;

/// Reads the upstream's SSE body through `wire`, calling `sink` with each batch of events.
/// Payloads of `[DONE]` are skipped.
pub(crate) async fn pump<W: Wire>(
    state: &AppState,
    engine: &mut Engine,
    wire: &mut W,
    resp: reqwest::Response,
    mut sink: impl AsyncSink,
) -> Result<(), StreamError> {
    let wire_upstream = state.metrics.upstream_of(resp.url().as_str());
    let mut upstream = UpstreamEvents::new(resp, &state.settings.limits);
    loop {
        let batch = upstream.next_batch().await?;
        let last = batch.last;
        let mut out = Vec::new();
        for ev in batch.events {
            if ev.data.trim() == "[DONE]" {
                continue;
            }
            let v: Value = serde_json::from_str(&ev.data).map_err(|e| {
                let excerpt: String = ev.data.chars().take(80).collect();
                StreamError::new(
                    ErrorCode::UpstreamMalformed,
                    format!("the upstream sent an event that is not JSON ({e}): {excerpt}"),
                )
            })?;
            if !v.is_object() {
                return Err(StreamError::new(
                    ErrorCode::UpstreamMalformed,
                    "the upstream sent an event that is not a JSON object",
                ));
            }
            state.metrics.chunks.inc(wire_upstream);
            wire.before(&v);
            let mut r = engine.ps.write_payload(&v, 0);
            if r.is_ok() && wire.is_boundary(&v) {
                r = engine.ps.write_boundary();
            }
            let d = engine.drain().await?;
            r?;
            out.extend(wire.after(v, d));
        }
        if last {
            engine.ps.end()?;
            let d = engine.drain().await?;
            match wire.end(d) {
                Ok(tail) => out.extend(tail),
                Err(f) => {
                    sink.send(out).await?;
                    return Err(f);
                }
            }
            sink.send(out).await?;
            return Ok(());
        }
        if !out.is_empty() {
            sink.send(out).await?;
        }
    }
}

/// Where [`pump`] puts events: the stream's log, or a list for a non-streaming answer.
pub(crate) trait AsyncSink {
    /// Takes a batch of events.
    fn send(
        &mut self,
        events: Vec<Value>,
    ) -> impl std::future::Future<Output = Result<(), StreamError>> + Send;
}

/// Collects the events (a non-streaming answer).
impl AsyncSink for &mut Vec<Value> {
    async fn send(&mut self, events: Vec<Value>) -> Result<(), StreamError> {
        self.extend(events);
        Ok(())
    }
}

/// Logs the events to a stream (ids from 1).
pub(crate) struct Log {
    pub(crate) state: AppState,
    pub(crate) stream_id: String,
    pub(crate) next_id: u64,
}

impl AsyncSink for &mut Log {
    async fn send(&mut self, events: Vec<Value>) -> Result<(), StreamError> {
        let events = events
            .into_iter()
            .map(|v| {
                // A JSON string is sent as it is (`[DONE]`).
                let data = match v {
                    Value::String(s) => s,
                    v => v.to_string(),
                };
                let e = StoredEvent {
                    id: self.next_id,
                    data,
                };
                self.next_id += 1;
                e
            })
            .collect();
        self.state
            .store
            .append_events(&self.stream_id, events)
            .await
            .map_err(|e| StreamError::store(&e))
    }
}

/// Starts a logged stream: the record, its numbering scope, the engine.
pub(crate) async fn open_stream(
    state: &AppState,
    plan: &Plan,
    dialect: Dialect,
) -> Result<(String, Engine), ApiError> {
    let stream_id = random_id("strm_");
    // A session's shared table, else numbers of this answer alone, kept by its engine (the
    // stream's log has them for any reader). The local table also lets a provider part end
    // with several url-only citations at once, which store numbering (asked one at a time)
    // cannot answer in core's ProviderStream today.
    let scope = match (&plan.session_id, plan.session_scope) {
        (Some(s), true) => Some(NumberScope::Session(s.clone())),
        _ => None,
    };
    let engine = Engine::new(state, plan, scope, dialect).await?;
    state
        .store
        .create_stream(StreamRecord {
            id: stream_id.clone(),
            owner: plan.owner.0.clone(),
            session_id: plan.session_id.clone(),
            status: StreamStatus::Running,
            created_ms: now_ms(),
        })
        .await?;
    Ok((stream_id, engine))
}

/// Runs a logged stream to its end in its own task.
pub(crate) fn spawn_stream<W: Wire>(
    state: AppState,
    stream_id: String,
    mut engine: Engine,
    mut wire: W,
    resp: reqwest::Response,
    slot: StreamSlot,
) {
    tokio::spawn(async move {
        let _slot = slot;
        let m = &state.metrics;
        let up = m.upstream_of(resp.url().as_str());
        m.stream_opened(up);
        let mut log = Log {
            state: state.clone(),
            stream_id: stream_id.clone(),
            next_id: 1,
        };
        let work = pump(&state, &mut engine, &mut wire, resp, &mut log);
        let result =
            match futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(work)).await {
                Ok(r) => r,
                Err(_) => Err(StreamError::internal(&"the generation task panicked")),
            };
        let status = match result {
            Ok(()) => StreamStatus::Completed,
            Err(f) => {
                tracing::warn!(stream_id = %stream_id, code = %f.code, message = %f.message, "stream failed");
                if f.code.is_upstream() {
                    m.upstream_errors.inc(up);
                }
                let ev = wire.error_event(&f);
                if let Err(e) = (&mut log).send(vec![ev]).await {
                    tracing::error!(stream_id = %stream_id, error = %e.message, "cannot log error event");
                }
                StreamStatus::Failed
            }
        };
        if let Err(e) = state.store.finish_stream(&stream_id, status).await {
            tracing::error!(stream_id = %stream_id, error = %e, "cannot finish stream");
        }
        m.stream_closed(up, status == StreamStatus::Completed);
    });
}

/// The `citeflow` field of a non-streaming answer: every citeflow event the streamed events
/// carried, in order, and the session.
pub(crate) fn citeflow_of(events: &[Value], session_id: Option<&str>) -> Value {
    let all: Vec<Value> = events
        .iter()
        .filter_map(|e| e.pointer("/citeflow/events").and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect();
    let mut cf = json!({"events": all});
    if let Some(s) = session_id {
        cf["session_id"] = json!(s);
    }
    cf
}

/// An SSE response of the stream's log after `after`: each event named by its payload's
/// `type` (as the Responses and Messages APIs send them), ids kept for `Last-Event-ID`.
pub(crate) fn named_sse(state: &AppState, stream_id: &str, after: u64) -> Response {
    let feed = follow(state.store.clone(), stream_id.to_owned(), after).map(|e| match e {
        Ok(e) => {
            let name = serde_json::from_str::<Typed<'_>>(&e.data).ok();
            let name = name.as_ref().and_then(|t| t.r#type.as_deref());
            sse::event(Some(e.id), name, &e.data)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read stream log");
            let data = json!({"type": "error", "error": {"type": "api_error",
                "message": "the stream log cannot be read; reconnect with Last-Event-ID"}});
            sse::event(None, Some("error"), &data.to_string())
        }
    });
    let feed = crate::shutdown::until_interrupted(state, feed, crate::shutdown::named_event());
    let mut resp = sse::response(feed);
    if let Ok(v) = stream_id.parse() {
        resp.headers_mut().insert("x-citeflow-stream-id", v);
    }
    resp
}

/// A logged payload's `type` (its SSE event name), read without building the payload.
#[derive(serde::Deserialize)]
struct Typed<'a> {
    #[serde(borrow)]
    r#type: Option<std::borrow::Cow<'a, str>>,
}

/// The `Last-Event-ID` header (or `?last_event_id=`): decimal digits up to `i64::MAX`.
pub(crate) fn last_event_id(headers: &HeaderMap, query: Option<&str>) -> Result<u64, ApiError> {
    let raw = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("?").to_owned())
        .or_else(|| query.map(str::to_owned));
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return Ok(0);
    };
    let t = raw.trim();
    match t.parse::<u64>() {
        Ok(n) if t.bytes().all(|b| b.is_ascii_digit()) && i64::try_from(n).is_ok() => Ok(n),
        _ => {
            let shown: String = raw.chars().take(40).collect();
            Err(ApiError::invalid(
                format!("Last-Event-ID {shown:?} is not an event id of this server"),
                Some("Last-Event-ID"),
            ))
        }
    }
}

/// Resumes a stream this owner started, after `Last-Event-ID`, with named events.
pub(crate) async fn resume_named(
    state: &AppState,
    owner: &Owner,
    headers: &HeaderMap,
    id: String,
    query_last: Option<&str>,
) -> Result<Response, ApiError> {
    let s = state.store.stream(&id).await?;
    if s.owner != owner.0 {
        return Err(ApiError::NotFound { what: "stream", id });
    }
    let after = last_event_id(headers, query_last)?;
    let mut resp = named_sse(state, &id, after);
    if let Ok(v) = s.status.as_str().parse() {
        resp.headers_mut().insert("x-citeflow-stream-status", v);
    }
    Ok(resp)
}

/// Adds the stream and session ids to a streaming response's headers.
pub(crate) fn stream_headers(resp: &mut Response, session_id: Option<&str>) {
    if let Some(v) = session_id.and_then(|s| s.parse().ok()) {
        resp.headers_mut().insert("x-citeflow-session-id", v);
    }
}
