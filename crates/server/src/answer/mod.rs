//! The one answer runner. Every answer of the server — chat completions streamed and not,
//! Responses, Messages, and the AI SDK UI message stream over them — is an [`Answer`] (one
//! type per output format: how an upstream event becomes the events the client gets, and how
//! a logged event, a read error, a failure and the shutdown are framed for it) driven by this
//! module: the upstream's SSE events in, each batch of rewritten events out to a [`Sink`], the
//! upstream's end or cut, panics, metrics.
//!
//! A streamed answer ([`spawn`]) runs in a task of its own, so it goes on when the client
//! leaves; its sink is the stream's log ([`live::Log`]): every write tried
//! [`STORE_ATTEMPTS`](crate::unrecorded::STORE_ATTEMPTS) times, each logged event handed live
//! to the response of the request that started it, a failure the store would not take kept
//! and retried apart ([`crate::unrecorded`]). A non-streamed answer ([`collect`],
//! [`collect_whole`]) runs in the request and its sink is a list.

pub(crate) mod ai_sdk;
pub(crate) mod chat;
pub(crate) mod ends;
pub(crate) mod engine;
mod handoff;
pub(crate) mod live;
pub(crate) mod messages;
mod named;
pub(crate) mod responses;
mod sink;
pub(crate) mod stream;

use std::future::Future;
use std::panic::AssertUnwindSafe;

use axum::http::HeaderMap;
use bytes::Bytes;
use citeflow_store::{StoreError, StreamStatus};
use futures_util::FutureExt;
use serde_json::Value;

use crate::answer::live::LiveTx;
use crate::code::ErrorCode;
use crate::error::StreamError;
use crate::quota::StreamSlot;
use crate::sse::Naming;
use crate::state::AppState;
use crate::upstream::events::UpstreamEvents;

pub(crate) use live::Log;
pub(crate) use sink::Sink;

/// One output format: upstream events in, the events to send out (as their JSON text; a bare
/// `[DONE]` as it is), and how the response frames them.
pub(crate) trait Answer: Send + 'static {
    /// How the format's frames name its events: a logged event's frame is
    /// [`sse::logged`](crate::sse::logged), made where the log makes the event (its live
    /// hand-off, [`live::Log`]) and by `resume`, without a call back into the format.
    const NAMING: Naming;

    /// The frame of the log's read error (a clear error event without an id, so that
    /// `Last-Event-ID` stays on the last event sent).
    fn read_error_frame(e: &StoreError) -> Bytes
    where
        Self: Sized;

    /// The frame of a failure's event (`data`, as logged, or the error envelope when the
    /// store took none) that the store did not take.
    fn failure_frame(data: &str) -> Bytes
    where
        Self: Sized;

    /// The last frame of a response the shutdown interrupts.
    fn shutdown_frame() -> Bytes
    where
        Self: Sized;

    /// Headers the format's response carries besides the stream's id.
    fn headers(_headers: &mut HeaderMap)
    where
        Self: Sized,
    {
    }

    /// One upstream SSE event's `data` (never `[DONE]`): the events it gives.
    fn on_data(
        &mut self,
        data: &str,
    ) -> impl Future<Output = Result<Vec<String>, StreamError>> + Send;

    /// The upstream ended: after `[DONE]` (`done`), or by closing its body. Returns the last
    /// events.
    ///
    /// # Errors
    /// `upstream_cut` when the answer was not finished (the events given before it are
    /// still sent).
    fn on_end(
        &mut self,
        done: bool,
    ) -> impl Future<Output = Result<Vec<String>, StreamError>> + Send;

    /// The event that ends a failed stream.
    fn error_event(&mut self, f: &StreamError) -> String;

    /// The upstream API the metrics count this answer under, from the upstream's `url`.
    fn upstream(&self, state: &AppState, url: &str) -> &'static str {
        state.metrics.upstream_of(url)
    }
}

/// Reads the upstream body through `answer` into `sink` until the upstream ends (`[DONE]`
/// or the end of its body). Each upstream event that gives events is counted as a chunk of
/// `upstream`; the time a batch waited in the server is observed.
async fn drive<A: Answer, S: Sink>(
    state: &AppState,
    upstream: &'static str,
    answer: &mut A,
    resp: reqwest::Response,
    sink: &mut S,
) -> Result<(), StreamError> {
    let mut body = UpstreamEvents::new(resp, &state.settings.limits);
    // Taken once: a chunk adds to them without a look-up in the metrics.
    let chunks = state.metrics.chunks.counter(upstream);
    let added_latency = state.metrics.added_latency();
    loop {
        let batch = body.next_batch().await?;
        let mut out = Vec::new();
        let mut done = false;
        for ev in batch.events {
            if ev.data.trim() == "[DONE]" {
                done = true;
                break;
            }
            let events = answer.on_data(&ev.data).await?;
            // Most batches hold one upstream event: its events are the batch, not copied.
            if out.is_empty() {
                out = events;
            } else {
                out.extend(events);
            }
            chunks.inc();
        }
        if done || batch.last {
            return match answer.on_end(done).await {
                Ok(tail) => {
                    out.extend(tail);
                    sink.send(out).await
                }
                Err(f) => {
                    sink.send(out).await?;
                    Err(f)
                }
            };
        }
        if !out.is_empty() {
            sink.send(out).await?;
            added_latency.observe(batch.received.elapsed().as_secs_f64());
        }
    }
}

/// Runs a streamed answer to its end in a task of its own, logging every event to stream
/// `stream_id` before any client sees it, and handing each to `live`. The task holds `slot`
/// (the key's quota) until it ends; its stream is counted open meanwhile.
pub(crate) fn spawn<A: Answer>(
    state: AppState,
    stream_id: String,
    mut answer: A,
    resp: reqwest::Response,
    slot: StreamSlot,
    live: LiveTx,
) {
    tokio::spawn(async move {
        let _slot = slot;
        let m = &state.metrics;
        let up = answer.upstream(&state, resp.url().as_str());
        m.stream_opened(up);
        let mut log = Log::new(state.clone(), stream_id, live);
        let result = supervised(drive(&state, up, &mut answer, resp, &mut log)).await;
        let status = match result {
            Ok(()) => {
                log.finish(StreamStatus::Completed, None).await;
                StreamStatus::Completed
            }
            Err(f) => {
                tracing::warn!(stream_id = %log.stream_id(), code = %f.code, message = %f.message, "stream failed");
                if f.code.is_upstream() {
                    m.upstream_errors.inc(up);
                }
                let event = answer.error_event(&f);
                log.finish(StreamStatus::Failed, Some(event)).await;
                StreamStatus::Failed
            }
        };
        m.stream_closed(up, status == StreamStatus::Completed);
    });
}

/// Runs a non-streamed answer over a streamed upstream body: every event it gives, in order.
///
/// # Errors
/// The answer's failure (the upstream's error, cut, malformed event, or a store error).
pub(crate) async fn collect<A: Answer>(
    state: &AppState,
    answer: &mut A,
    resp: reqwest::Response,
) -> Result<Vec<String>, StreamError> {
    let up = answer.upstream(state, resp.url().as_str());
    let mut events = Vec::new();
    supervised(drive(state, up, answer, resp, &mut events)).await?;
    Ok(events)
}

/// Runs a non-streamed answer over an upstream answer that came whole (one JSON body): the
/// body is its one event, then the end.
///
/// # Errors
/// As [`collect`].
pub(crate) async fn collect_whole<A: Answer>(
    state: &AppState,
    upstream: &'static str,
    answer: &mut A,
    body: &Value,
) -> Result<Vec<String>, StreamError> {
    let data = serde_json::to_string(body).map_err(|e| StreamError::internal(&e))?;
    supervised(async {
        let mut events = answer.on_data(&data).await?;
        state.metrics.chunks.inc(upstream);
        events.extend(answer.on_end(true).await?);
        Ok(events)
    })
    .await
}

/// Runs an answer's work; a panic inside it becomes an `internal_error` failure (logged with
/// its message), so that the runner still ends the stream with its error event.
async fn supervised<T, F>(work: F) -> Result<T, StreamError>
where
    F: Future<Output = Result<T, StreamError>>,
{
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            Err(StreamError::internal(&format_args!(
                "the answer's task panicked: {message}"
            )))
        }
    }
}

/// A wire's events as the texts the runner logs.
pub(crate) fn texts(events: Vec<Value>) -> Vec<String> {
    // Written into a byte vector, not through `Display`'s formatter: the same bytes, in half
    // the instructions.
    events
        .iter()
        .map(|v| serde_json::to_string(v).unwrap_or_else(|_| v.to_string()))
        .collect()
}

/// An upstream event's `data` as a JSON object.
///
/// # Errors
/// `upstream_malformed`, with an excerpt of the data, when it is not JSON or not an object.
pub(crate) fn parse_object(data: &str) -> Result<Value, StreamError> {
    let v: Value = serde_json::from_str(data).map_err(|e| {
        let excerpt: String = data.chars().take(80).collect();
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
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_an_answer_is_an_internal_failure() {
        let f = supervised(async {
            if f64::MAX > 0.0 {
                panic!("boom");
            }
            Ok(())
        })
        .await
        .err()
        .unwrap();
        assert_eq!(
            (f.code.as_str(), f.message.as_str()),
            ("internal_error", "internal error")
        );
        let f = supervised::<(), _>(async { Err(StreamError::new(ErrorCode::UpstreamCut, "x")) })
            .await
            .err()
            .unwrap();
        assert_eq!(f.code, "upstream_cut");
        assert!(supervised(async { Ok(()) }).await.is_ok());
    }
}
