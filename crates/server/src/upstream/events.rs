//! The upstream's streamed body as SSE events ([`UpstreamEvents`]), batch by batch, under the
//! stream's budgets: its whole duration (`max_stream_duration_ms`, `stream_too_long`), silence
//! between chunks (`upstream_idle_timeout_ms`, `upstream_timeout`), total bytes
//! (`max_upstream_bytes`, `upstream_too_large`) and line length (`max_upstream_line_bytes`,
//! `upstream_malformed`); a body that breaks is `upstream_cut`. The one answer runner
//! ([`crate::answer`]) reads every streamed upstream answer through it, whatever its wire
//! format (chat completions, Responses, Messages); an answer that comes whole (one JSON body)
//! does not pass here.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use citeflow_core::sse::{SseDecoder, SseEvent};

use crate::code::ErrorCode;
use crate::error::StreamError;
use crate::settings::Limits;

/// The events of one chunk of the upstream's body.
pub(crate) struct Batch<'a> {
    /// The complete events the chunk ended, in order (`[DONE]` included).
    pub(crate) events: Events<'a>,
    /// The body ended: no batch follows.
    pub(crate) last: bool,
    /// When the chunk arrived.
    pub(crate) received: Instant,
}

/// The complete events one chunk ended, taken from the decoder one at a time as they are
/// read, in order: a batch has no container of its own. Those left unread when it is dropped
/// are dropped with it, never handed to the next batch.
pub(crate) struct Events<'a>(&'a mut SseDecoder);

impl Iterator for Events<'_> {
    type Item = SseEvent;

    fn next(&mut self) -> Option<SseEvent> {
        self.0.poll_event()
    }
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        while self.0.poll_event().is_some() {}
    }
}

/// Reads an upstream's SSE body batch by batch, within the limits.
pub(crate) struct UpstreamEvents {
    /// The response, its body read a chunk at a time ([`reqwest::Response::chunk`]: no stream
    /// adapters between this and the body).
    resp: reqwest::Response,
    sse: SseDecoder,
    deadline: tokio::time::Instant,
    idle: Duration,
    /// When the body last gave something (or the stream started).
    last_activity: tokio::time::Instant,
    /// One timer for both budgets, set to the earlier of `last_activity + idle` and `deadline`
    /// and moved only when it fires early (the body gave something meanwhile): a chunk costs
    /// no timer registration of its own.
    timer: Pin<Box<tokio::time::Sleep>>,
    /// The timer was polled since it was last set: it will wake this task when it fires.
    timer_armed: bool,
    max_duration_ms: u64,
    max_bytes: u64,
    received: u64,
}

impl UpstreamEvents {
    /// Starts the clocks of `limits` now.
    pub(crate) fn new(resp: reqwest::Response, limits: &Limits) -> Self {
        let now = tokio::time::Instant::now();
        let deadline = now + Duration::from_millis(limits.max_stream_duration_ms);
        let idle = Duration::from_millis(limits.upstream_idle_timeout_ms);
        UpstreamEvents {
            resp,
            sse: SseDecoder::new(limits.max_upstream_line_bytes),
            deadline,
            idle,
            last_activity: now,
            timer: Box::pin(tokio::time::sleep_until((now + idle).min(deadline))),
            timer_armed: false,
            max_duration_ms: limits.max_stream_duration_ms,
            max_bytes: limits.max_upstream_bytes,
            received: 0,
        }
    }

    /// The next chunk's events; the last batch has `last` set.
    ///
    /// # Errors
    /// A [`StreamError`] naming the budget exceeded, a broken body, or a malformed line.
    pub(crate) async fn next_batch(&mut self) -> Result<Batch<'_>, StreamError> {
        let malformed = |e: citeflow_core::sse::SseError| {
            StreamError::new(ErrorCode::UpstreamMalformed, e.to_string())
        };
        let next = {
            let UpstreamEvents {
                resp,
                timer,
                timer_armed,
                last_activity,
                idle,
                deadline,
                ..
            } = self;
            let mut chunk = std::pin::pin!(resp.chunk());
            std::future::poll_fn(|cx| loop {
                if let Poll::Ready(item) = chunk.as_mut().poll(cx) {
                    return Poll::Ready(Ok(item));
                }
                // Once polled, the timer keeps this task's waker until it fires: it is polled
                // again only then (or once moved), not each time the body has nothing yet.
                if *timer_armed && !timer.is_elapsed() {
                    return Poll::Pending;
                }
                if timer.as_mut().poll(cx).is_pending() {
                    *timer_armed = true;
                    return Poll::Pending;
                }
                let due = (*last_activity + *idle).min(*deadline);
                if tokio::time::Instant::now() >= due {
                    return Poll::Ready(Err(()));
                }
                timer.as_mut().reset(due);
                *timer_armed = false;
            })
            .await
        };
        // One clock read for both: tokio's clock is the standard one unless a test pauses it.
        let now = tokio::time::Instant::now();
        self.last_activity = now;
        let received = now.into_std();
        let last = match next {
            Err(_) if tokio::time::Instant::now() >= self.deadline => {
                return Err(StreamError::new(
                    ErrorCode::StreamTooLong,
                    format!("the stream ran longer than {} ms", self.max_duration_ms),
                ))
            }
            Err(_) => {
                return Err(StreamError::new(
                    ErrorCode::UpstreamTimeout,
                    format!("the upstream sent nothing for {} ms", self.idle.as_millis()),
                ))
            }
            Ok(Err(e)) => {
                return Err(StreamError::new(
                    ErrorCode::UpstreamCut,
                    format!("the upstream stream broke: {e}"),
                ))
            }
            Ok(Ok(Some(b))) => {
                self.received += b.len() as u64;
                if self.received > self.max_bytes {
                    return Err(StreamError::new(
                        ErrorCode::UpstreamTooLarge,
                        format!(
                            "the upstream sent more than {} bytes (max_upstream_bytes)",
                            self.max_bytes
                        ),
                    ));
                }
                self.sse.write(&b).map_err(malformed)?;
                false
            }
            Ok(Ok(None)) => {
                self.sse.end().map_err(malformed)?;
                true
            }
        };
        Ok(Batch {
            events: Events(&mut self.sse),
            last,
            received,
        })
    }
}
