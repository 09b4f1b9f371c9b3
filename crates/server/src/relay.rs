//! The relay of a provider-shaped answer (Responses, Messages): [`Relayed`], the runner's
//! [`Answer`] that reads each upstream event through the [`Engine`] and writes it out through
//! a [`Wire`]; the log goes out as SSE with event names (the Anthropic SDKs read the `event:`
//! line), live and on resume.

use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use citeflow_core::provider::Dialect;
use citeflow_store::{follow, NumberScope, StoreError, StoredEvent, StreamRecord, StreamStatus};
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::engine::{Engine, Wire};
use crate::error::{ApiError, StreamError};
use crate::live::LiveTx;
use crate::proxy::Plan;
use crate::quota::StreamSlot;
use crate::runner::{self, parse_object, Answer};
use crate::sse;
use crate::state::{now_ms, random_id, AppState};
use crate::tenancy::Owner;

/// A provider-shaped answer for the runner: each upstream event through the [`Engine`] (its
/// `ProviderStream`, numbered from the store) and out through the [`Wire`].
pub(crate) struct Relayed<W> {
    pub(crate) engine: Engine,
    pub(crate) wire: W,
}

/// An event as the log keeps it: a JSON string is sent as it is (`[DONE]`).
fn event_text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        v => v.to_string(),
    }
}

impl<W: Wire> Answer for Relayed<W> {
    async fn on_data(&mut self, data: &str) -> Result<Vec<String>, StreamError> {
        let v = parse_object(data)?;
        self.wire.before(&v);
        let ps = &mut self.engine.ps;
        let mut r = ps.write_payload(&v, 0);
        if r.is_ok() && self.wire.is_boundary(&v) {
            r = ps.write_boundary();
        }
        let d = self.engine.drain().await?;
        r?;
        Ok(self.wire.after(v, d).into_iter().map(event_text).collect())
    }

    async fn on_end(&mut self, _done: bool) -> Result<Vec<String>, StreamError> {
        self.engine.ps.end()?;
        let d = self.engine.drain().await?;
        Ok(self.wire.end(d)?.into_iter().map(event_text).collect())
    }

    fn error_event(&mut self, f: &StreamError) -> String {
        event_text(self.wire.error_event(f))
    }
}

/// Runs a non-streamed provider-shaped answer: every event it gave, as JSON.
///
/// # Errors
/// The answer's failure.
pub(crate) async fn collect<W: Wire>(
    state: &AppState,
    answer: &mut Relayed<W>,
    resp: reqwest::Response,
) -> Result<Vec<Value>, ApiError> {
    let events = runner::collect(state, answer, resp).await?;
    Ok(events
        .iter()
        .filter_map(|e| serde_json::from_str(e).ok())
        .collect())
}

/// The answer's stream, run in its own task ([`runner::spawn`]), as the AI SDK UI message
/// stream read from its log.
pub(crate) fn ui_stream<W: Wire>(
    state: &AppState,
    stream_id: String,
    engine: Engine,
    wire: W,
    resp: reqwest::Response,
    slot: StreamSlot,
) -> Response {
    let answer = Relayed { engine, wire };
    runner::spawn(
        state.clone(),
        stream_id.clone(),
        answer,
        resp,
        slot,
        LiveTx::none(),
    );
    crate::ai_sdk::response(state, &stream_id, 0)
}

/// The answer's stream, run in its own task ([`runner::spawn`]), with named events: each
/// logged event handed live to this response, then the log after it.
pub(crate) fn named_stream<W: Wire>(
    state: &AppState,
    stream_id: String,
    engine: Engine,
    wire: W,
    resp: reqwest::Response,
    slot: StreamSlot,
    session_id: Option<&str>,
) -> Response {
    let (live, feed) = crate::live::channel(state, &stream_id, named_frame);
    let answer = Relayed { engine, wire };
    runner::spawn(state.clone(), stream_id.clone(), answer, resp, slot, live);
    let mut r = named_response(state, &stream_id, feed);
    if let Some(v) = session_id.and_then(|s| s.parse().ok()) {
        r.headers_mut().insert("x-citeflow-session-id", v);
    }
    r
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

/// A logged event as its SSE frame, named by its payload's `type` (as the Responses and
/// Messages APIs send them), its id kept for `Last-Event-ID`; a read error as an `error`
/// event that says so.
fn named_frame(e: Result<&StoredEvent, &StoreError>) -> Bytes {
    match e {
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
    }
}

/// An SSE response of the stream's log after `after`, with named events.
pub(crate) fn named_sse(state: &AppState, stream_id: &str, after: u64) -> Response {
    let feed =
        follow(state.store.clone(), stream_id.to_owned(), after).map(|e| named_frame(e.as_ref()));
    named_response(state, stream_id, feed)
}

/// The SSE response of a provider-shaped stream's `feed` of frames: cut by a shutdown, and
/// ended by the error event of a failure the store did not take.
fn named_response<S>(state: &AppState, stream_id: &str, feed: S) -> Response
where
    S: futures_util::Stream<Item = Bytes> + Send + 'static,
{
    let feed = crate::shutdown::until_interrupted(state, feed, crate::shutdown::named_event());
    let feed = crate::unrecorded::until_unrecorded(&state.unrecorded, stream_id, feed, |data| {
        sse::event(None, Some("error"), data)
    });
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
    // Its failure is not in the store yet: record it now, else say so (no endless wait).
    if !crate::unrecorded::repair(&state.unrecorded, &state.store, &id).await {
        return Err(ApiError::StoreUnavailable);
    }
    let after = sse::last_event_id(headers, query_last)?;
    let mut resp = named_sse(state, &id, after);
    if let Ok(v) = s.status.as_str().parse() {
        resp.headers_mut().insert("x-citeflow-stream-status", v);
    }
    Ok(resp)
}
