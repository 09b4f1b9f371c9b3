//! The upstream's streamed body as SSE events, under the stream's budgets: its whole duration
//! (`max_stream_duration_ms`, `stream_too_long`), silence between chunks
//! (`upstream_idle_timeout_ms`, `upstream_timeout`), total bytes (`max_upstream_bytes`,
//! `upstream_too_large`) and line length (`max_upstream_line_bytes`, `upstream_malformed`).
//! Both generation paths (chat in `generate`, the provider routes in `relay`) read through it.

use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use citeflow_core::sse::{SseDecoder, SseEvent};
use futures_util::{Stream, StreamExt};

use crate::code::ErrorCode;
use crate::error::StreamError;
use crate::settings::Limits;

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// The events of one chunk of the upstream's body.
pub(crate) struct Batch {
    /// The complete events the chunk ended, in order (`[DONE]` included).
    pub(crate) events: Vec<SseEvent>,
    /// The body ended: no batch follows.
    pub(crate) last: bool,
    /// When the chunk arrived.
    pub(crate) received: Instant,
}

/// Reads an upstream's SSE body batch by batch, within the limits.
pub(crate) struct UpstreamEvents {
    body: Body,
    sse: SseDecoder,
    deadline: tokio::time::Instant,
    idle: Duration,
    max_duration_ms: u64,
    max_bytes: u64,
    received: u64,
}

impl UpstreamEvents {
    /// Starts the clocks of `limits` now.
    pub(crate) fn new(resp: reqwest::Response, limits: &Limits) -> Self {
        UpstreamEvents {
            body: Box::pin(resp.bytes_stream()),
            sse: SseDecoder::new(limits.max_upstream_line_bytes),
            deadline: tokio::time::Instant::now()
                + Duration::from_millis(limits.max_stream_duration_ms),
            idle: Duration::from_millis(limits.upstream_idle_timeout_ms),
            max_duration_ms: limits.max_stream_duration_ms,
            max_bytes: limits.max_upstream_bytes,
            received: 0,
        }
    }

    /// The next chunk's events; the last batch has `last` set.
    ///
    /// # Errors
    /// A [`StreamError`] naming the budget exceeded, a broken body, or a malformed line.
    pub(crate) async fn next_batch(&mut self) -> Result<Batch, StreamError> {
        let malformed = |e: citeflow_core::sse::SseError| {
            StreamError::new(ErrorCode::UpstreamMalformed, e.to_string())
        };
        let wait_until = (tokio::time::Instant::now() + self.idle).min(self.deadline);
        let next = tokio::time::timeout_at(wait_until, self.body.next()).await;
        let received = Instant::now();
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
            Ok(Some(Err(e))) => {
                return Err(StreamError::new(
                    ErrorCode::UpstreamCut,
                    format!("the upstream stream broke: {e}"),
                ))
            }
            Ok(Some(Ok(b))) => {
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
            Ok(None) => {
                self.sse.end().map_err(malformed)?;
                true
            }
        };
        Ok(Batch {
            events: std::iter::from_fn(|| self.sse.poll_event()).collect(),
            last,
            received,
        })
    }
}
