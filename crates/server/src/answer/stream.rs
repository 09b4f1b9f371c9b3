//! The SSE response of every streamed answer, and its resume: [`start`] runs an [`Answer`]
//! (one type per output format) in a task of its own and answers the request that started it
//! with its events live ([`live`](crate::answer::live)), then from the log; [`resume`] follows the
//! log after `Last-Event-ID` (`GET /v1/streams/{id}`, `/v1/responses/{id}`,
//! `/v1/messages/{id}`). Both send exactly what the log holds, framed by the answer's type,
//! and end with its shutdown or failure frame. [`collect`] runs a non-streamed relay.

use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use citeflow_store::{follow, StreamRecord, StreamStatus};
use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::answer::live::Framer;
use crate::answer::{self, Answer};
use crate::code::ErrorCode;
use crate::error::{ApiError, StreamError};
use crate::quota::StreamSlot;
use crate::sse;
use crate::state::{now_ms, random_id, AppState};
use crate::tenancy::Owner;

/// A new stream's id.
pub(crate) fn new_stream_id() -> String {
    random_id("strm_")
}

/// Creates stream `stream_id`'s record (running) for `owner` in `session_id`.
///
/// # Errors
/// The store's.
pub(crate) async fn open_stream(
    state: &AppState,
    stream_id: &str,
    owner: &Owner,
    session_id: Option<&str>,
) -> Result<(), ApiError> {
    state
        .store
        .create_stream(StreamRecord {
            id: stream_id.to_owned(),
            owner: owner.0.clone(),
            session_id: session_id.map(str::to_owned),
            status: StreamStatus::Running,
            created_ms: now_ms(),
        })
        .await?;
    Ok(())
}

/// Runs `answer` over the upstream's `resp` in a task of its own (holding `slot`), logging to
/// stream `stream_id`; the response gets each logged event live, then from the log.
pub(crate) fn start<A: Answer>(
    state: &AppState,
    stream_id: String,
    answer: A,
    resp: reqwest::Response,
    slot: StreamSlot,
    session_id: Option<&str>,
) -> Response {
    let (live, feed) = crate::answer::live::channel(state, &stream_id, framer::<A>());
    answer::spawn(state.clone(), stream_id.clone(), answer, resp, slot, live);
    let mut r = sse_response::<A, _>(state, &stream_id, feed);
    if let Some(v) = session_id.and_then(|s| s.parse().ok()) {
        r.headers_mut().insert("x-citeflow-session-id", v);
    }
    r
}

/// How `A`'s logged events and the log's read error are framed.
fn framer<A: Answer>() -> Framer {
    Framer {
        naming: A::NAMING,
        read_error: A::read_error_frame,
    }
}

/// The SSE response of stream `stream_id` over `feed` (its frames): ended by the shutdown,
/// or by a failure the store did not take, with `A`'s frame; `A`'s headers.
pub(crate) fn sse_response<A, S>(state: &AppState, stream_id: &str, feed: S) -> Response
where
    A: Answer,
    S: futures_util::Stream<Item = Bytes> + Send + 'static,
{
    let feed = crate::answer::ends::until_cut(
        state,
        stream_id,
        feed,
        A::shutdown_frame(),
        A::failure_frame,
    );
    let keep_alive = std::time::Duration::from_millis(state.settings.limits.sse_keep_alive_ms);
    let mut resp = sse::response(feed, keep_alive);
    let h = resp.headers_mut();
    if let Ok(v) = stream_id.parse() {
        h.insert("x-citeflow-stream-id", v);
    }
    A::headers(h);
    resp
}

/// The stream `id` of `owner` again, after `Last-Event-ID` (the header, else `query_last`),
/// framed as `A`; its status in `x-citeflow-stream-status`.
///
/// # Errors
/// `not_found` (another owner's stream too), `store_unavailable` while its failure is not
/// recorded, a bad `Last-Event-ID`.
pub(crate) async fn resume<A: Answer>(
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
    if !crate::unrecorded::repair(&state.unrecorded, &state.store, &id).await {
        return Err(ApiError::StoreUnavailable);
    }
    let after = sse::last_event_id(headers, query_last)?;
    let framer = framer::<A>();
    let feed =
        follow(state.store.clone(), id.clone(), after).map(move |e| framer.frame(e.as_ref()));
    let mut resp = sse_response::<A, _>(state, &id, feed);
    if let Ok(v) = s.status.as_str().parse() {
        resp.headers_mut().insert("x-citeflow-stream-status", v);
    }
    Ok(resp)
}

/// Runs a non-streamed answer over the upstream's streamed `resp`: its events as JSON.
///
/// # Errors
/// The answer's failure.
pub(crate) async fn collect<A: Answer>(
    state: &AppState,
    answer: &mut A,
    resp: reqwest::Response,
) -> Result<Vec<Value>, ApiError> {
    let events = answer::collect(state, answer, resp).await?;
    Ok(events
        .iter()
        .filter_map(|e| serde_json::from_str(e).ok())
        .collect())
}

/// The `citeflow` member of a non-streamed answer: every event the stream's events carried,
/// and the session.
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

/// At start-up: every stream still marked running was cut by a crash or a kill. Each gets an
/// error event after its last logged one and is marked interrupted.
///
/// # Errors
/// A store error.
pub async fn recover_interrupted(state: &AppState) -> Result<usize, citeflow_store::StoreError> {
    let ids = state.store.running_streams().await?;
    for id in &ids {
        let last = last_event_id(state, id).await?;
        let event = citeflow_store::StoredEvent {
            id: last + 1,
            data: StreamError::new(
                ErrorCode::StreamInterrupted,
                "the server stopped while this answer was being generated; the events before \
                 this one are complete, the rest of the answer is lost",
            )
            .payload(),
        };
        state.store.append_events(id, vec![event]).await?;
        state
            .store
            .finish_stream(id, StreamStatus::Interrupted)
            .await?;
        state.metrics.streams_interrupted.inc();
        tracing::warn!(stream_id = %id, "marked interrupted stream");
    }
    Ok(ids.len())
}

async fn last_event_id(state: &AppState, id: &str) -> Result<u64, citeflow_store::StoreError> {
    let mut after = 0;
    loop {
        let page = state.store.events_after(id, after, 1024).await?;
        match page.last() {
            Some(e) => after = e.id,
            None => return Ok(after),
        }
    }
}
