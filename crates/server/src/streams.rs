//! SSE responses of a chat stream: `GET /v1/streams/{id}` follows the persisted log; the
//! answer to the request that started it gets its events from the generation
//! ([`live`](crate::live)) and from the log after them. Both send exactly what the log holds.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use citeflow_store::{follow, StoreError, StoredEvent, StreamStatus};
use futures_util::StreamExt;

use crate::code::ErrorCode;
use crate::error::ApiError;
use crate::error::StreamError;
use crate::sse;
use crate::state::AppState;
use crate::tenancy::Owner;
use crate::unrecorded::until_unrecorded;

/// A logged event of a chat stream as its SSE frame (a read error as the error event that
/// says so).
pub(crate) fn chat_frame(e: Result<&StoredEvent, &StoreError>) -> Bytes {
    match e {
        Ok(e) => sse::event(Some(e.id), None, &e.data),
        Err(e) => {
            tracing::error!(error = %e, "cannot read stream log");
            let f = StreamError::new(
                ErrorCode::StoreUnavailable,
                "the stream log cannot be read; reconnect with Last-Event-ID",
            );
            sse::event(None, None, &f.payload())
        }
    }
}

/// An SSE response with the events of `stream_id` after `after`, then the live tail.
pub(crate) fn sse_response(state: &AppState, stream_id: String, after: u64) -> Response {
    let feed =
        follow(state.store.clone(), stream_id.clone(), after).map(|e| chat_frame(e.as_ref()));
    chat_sse(state, stream_id, feed)
}

/// The SSE response of a chat stream's `feed` of frames: cut by a shutdown, and ended by
/// the error event of a failure the store did not take.
pub(crate) fn chat_sse<S>(state: &AppState, stream_id: String, feed: S) -> Response
where
    S: futures_util::Stream<Item = Bytes> + Send + 'static,
{
    let feed = crate::shutdown::until_interrupted(state, feed, crate::shutdown::chat_event());
    let feed = until_unrecorded(&state.unrecorded, &stream_id, feed, |data| {
        sse::event(None, None, data)
    });
    sse::response(feed)
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ResumeQuery {
    last_event_id: Option<String>,
}

/// `GET /v1/streams/{id}`: replay after `Last-Event-ID` (header, or `?last_event_id=`), then
/// follow.
pub(crate) async fn resume(
    State(state): State<AppState>,
    owner: Owner,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<ResumeQuery>,
) -> Result<Response, ApiError> {
    let s = state.store.stream(&id).await?;
    if s.owner != owner.0 {
        return Err(ApiError::NotFound { what: "stream", id });
    }
    // Its failure is not in the store yet: record it now, else say so (no endless wait).
    if !crate::unrecorded::repair(&state.unrecorded, &state.store, &id).await {
        return Err(ApiError::StoreUnavailable);
    }
    let after = sse::last_event_id(&headers, q.last_event_id.as_deref())?;
    // A chat stream read as the AI SDK UI message stream, as it was asked for (the AI SDK's
    // reconnect, pointed here by `prepareReconnectToStreamRequest`).
    let ui = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("x-vercel-ai-ui-message-stream"));
    let mut resp = if ui {
        crate::ai_sdk::chat_response(&state, &id, after)
    } else {
        sse_response(&state, id, after)
    };
    if let Ok(v) = s.status.as_str().parse() {
        resp.headers_mut().insert("x-citeflow-stream-status", v);
    }
    Ok(resp)
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
