//! [`BodyBudget`]: one memory budget, in bytes, that every request body read whole (the JSON
//! bodies of [`ApiJson`](crate::intake::body::ApiJson), the bodies the passthrough forwards) draws
//! from, whatever the number of requests. A body takes its share as it arrives, a block of
//! 64 KiB at a time before the chunk that needs it is read (its blocks are never copied, and
//! it is parsed from them as they are), so a slow client holds only about what it has sent,
//! and gives it all back when it is parsed, refused or dropped (at the latest when
//! `body_read_timeout_ms` ends it). A body that finds the budget spent waits for its share at
//! most `body_budget_wait_ms` in all, then is refused with 503 `overloaded` and
//! `Retry-After`. Without it, 300 clients that each sent a 4 MiB body but its last 10 bytes
//! held 1.2 GB of the server (issue 44 §10).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, HttpBody as _};
use futures_util::StreamExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::error::ApiError;
use crate::settings::Limits;

/// The budget is counted in units of this many bytes (a semaphore takes at most `u32::MAX`
/// permits at once).
const UNIT: usize = 1024;

/// Room taken before each chunk is read (unless the body's declared length is less): the
/// largest chunk hyper hands over at once, as `conn::serve` sets its read buffer. With
/// hyper's default buffer (408 KiB, as under `axum::serve`) a larger chunk takes its room
/// once read.
pub(crate) const READ_AHEAD: usize = 64 << 10;

/// The shared budget of request bodies being read; one per server ([`AppState`]).
///
/// [`AppState`]: crate::AppState
#[derive(Debug)]
pub(crate) struct BodyBudget {
    units: Arc<Semaphore>,
    total_bytes: usize,
    wait: Duration,
}

/// A body read whole, in blocks of at most [`BLOCK`] bytes, and its share of the budget
/// (given back when this is dropped).
#[derive(Debug)]
pub(crate) struct Received {
    blocks: Vec<Vec<u8>>,
    len: usize,
    share: Share,
}

/// A body's share of the budget: given back when this is dropped.
#[derive(Debug)]
pub(crate) struct Share {
    _permit: Option<OwnedSemaphorePermit>,
}

/// The size of the blocks a body is kept in: it grows a block at a time, never copied, so it
/// holds no more than its bytes and one block, and never two buffers at once.
const BLOCK: usize = 64 << 10;

impl Received {
    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The body parsed as JSON (from its blocks as they are: no copy).
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        match self.blocks.as_slice() {
            [] => serde_json::from_slice(b""),
            [one] => serde_json::from_slice(one),
            blocks => serde_json::from_reader(Blocks {
                rest: blocks,
                at: 0,
            }),
        }
    }

    /// The body in one buffer (a copy when it took more than one block), and its share.
    pub(crate) fn into_bytes(mut self) -> (axum::body::Bytes, Share) {
        let bytes = if self.blocks.len() == 1 {
            self.blocks.remove(0)
        } else {
            self.blocks.concat()
        };
        (bytes.into(), self.share)
    }
}

/// The blocks of a body as one reader.
struct Blocks<'a> {
    rest: &'a [Vec<u8>],
    at: usize,
}

impl std::io::Read for Blocks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while let Some(block) = self.rest.first() {
            if self.at < block.len() {
                let n = (block.len() - self.at).min(buf.len());
                buf[..n].copy_from_slice(&block[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            self.rest = &self.rest[1..];
            self.at = 0;
        }
        Ok(0)
    }
}

impl BodyBudget {
    /// The budget of `limits` ([`Limits::body_budget_bytes`], [`Limits::body_budget_wait_ms`]).
    pub(crate) fn new(limits: &Limits) -> Self {
        let units = limits
            .body_budget_bytes
            .div_ceil(UNIT)
            .clamp(1, Semaphore::MAX_PERMITS);
        BodyBudget {
            units: Arc::new(Semaphore::new(units)),
            total_bytes: limits.body_budget_bytes,
            wait: Duration::from_millis(limits.body_budget_wait_ms),
        }
    }

    /// Bytes of the budget held now by bodies being read.
    pub(crate) fn held_bytes(&self) -> usize {
        let total = self.total_bytes.div_ceil(UNIT).max(1);
        total.saturating_sub(self.units.available_permits()) * UNIT
    }

    /// Reads `body` whole under `max_bytes` (and under the whole budget: a body may not be
    /// larger), drawing from the budget as it arrives. `on_error` says what a failed read of
    /// the body means, given the `body_too_large` error (`conn::body_error`).
    ///
    /// # Errors
    /// `body_too_large` past the limit, `on_error`'s answer when the body cannot be read
    /// (`request_timeout` when it is too slow), `overloaded` when its share was not free
    /// within the wait.
    pub(crate) async fn read(
        &self,
        body: Body,
        max_bytes: usize,
        on_error: impl Fn(axum::Error, ApiError) -> ApiError,
    ) -> Result<Received, ApiError> {
        let max_bytes = max_bytes.min(self.total_bytes);
        let too_large = || ApiError::BodyTooLarge { max_bytes };
        let hint = body.size_hint();
        if usize::try_from(hint.lower()).map_or(true, |n| n > max_bytes) {
            return Err(too_large());
        }
        let declared = hint.upper().and_then(|n| usize::try_from(n).ok());
        let mut taking = Taking {
            budget: self,
            blocks: Vec::new(),
            len: 0,
            cap: 0,
            held: None,
            wait_until: None,
            limit: declared.map_or(max_bytes, |d| d.min(max_bytes)),
        };
        let mut data = body.into_data_stream();
        loop {
            // Room for the next chunk before it is read: a body that waits for the budget
            // holds what it received, and its next bytes stay in the socket.
            taking.room(taking.len + READ_AHEAD).await?;
            let Some(chunk) = data.next().await else {
                break;
            };
            let chunk = chunk.map_err(|e| on_error(e, too_large()))?;
            if taking.len + chunk.len() > max_bytes {
                return Err(too_large());
            }
            taking.room(taking.len + chunk.len()).await?;
            taking.append(&chunk);
        }
        Ok(Received {
            blocks: taking.blocks,
            len: taking.len,
            share: Share {
                _permit: taking.held,
            },
        })
    }
}

/// One body being read: its blocks, the units it holds (one for each [`UNIT`] of its blocks'
/// capacity), and when its wait for the budget ends.
struct Taking<'a> {
    budget: &'a BodyBudget,
    blocks: Vec<Vec<u8>>,
    /// Bytes received.
    len: usize,
    /// Bytes the blocks can hold.
    cap: usize,
    held: Option<OwnedSemaphorePermit>,
    wait_until: Option<Instant>,
    /// The most the blocks hold: the declared length, else `max_bytes`.
    limit: usize,
}

impl Taking<'_> {
    /// Adds blocks until they can hold `want` bytes (never past the limit, unless a chunk
    /// larger than a block needs it), taking their units first.
    async fn room(&mut self, want: usize) -> Result<(), ApiError> {
        let want = want.min(self.limit.max(self.len));
        while self.cap < want {
            let size = BLOCK
                .min(self.limit.saturating_sub(self.cap))
                .max(want - self.cap);
            let held = self
                .held
                .as_ref()
                .map_or(0, OwnedSemaphorePermit::num_permits);
            let more = (self.cap + size).div_ceil(UNIT).saturating_sub(held);
            if more > 0 {
                let permit = self.take(more).await?;
                match &mut self.held {
                    Some(h) => h.merge(permit),
                    None => self.held = Some(permit),
                }
            }
            self.blocks.push(Vec::with_capacity(size));
            self.cap += size;
        }
        Ok(())
    }

    /// Copies `data` into the blocks' room (taken by [`Taking::room`]).
    fn append(&mut self, mut data: &[u8]) {
        self.len += data.len();
        for block in &mut self.blocks {
            if data.is_empty() {
                break;
            }
            let n = (block.capacity() - block.len()).min(data.len());
            block.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        debug_assert!(data.is_empty(), "room was taken first");
    }

    /// `units` of the budget, waited for until this body's wait is over (it starts at its
    /// first wait and counts every wait after).
    async fn take(&mut self, units: usize) -> Result<OwnedSemaphorePermit, ApiError> {
        let sem = &self.budget.units;
        let overloaded = || ApiError::Overloaded {
            budget_bytes: self.budget.total_bytes,
            wait_ms: self.budget.wait.as_millis() as u64,
        };
        let n = u32::try_from(units).map_err(|_| overloaded())?;
        if let Ok(p) = Arc::clone(sem).try_acquire_many_owned(n) {
            return Ok(p);
        }
        let until = *self
            .wait_until
            .get_or_insert_with(|| Instant::now() + self.budget.wait);
        match tokio::time::timeout_at(until, Arc::clone(sem).acquire_many_owned(n)).await {
            Ok(Ok(p)) => Ok(p),
            // Timed out; the semaphore is never closed.
            _ => Err(overloaded()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(bytes: usize, wait_ms: u64) -> BodyBudget {
        BodyBudget::new(&Limits {
            body_budget_bytes: bytes,
            body_budget_wait_ms: wait_ms,
            ..Limits::default()
        })
    }

    /// A body of `len` bytes sent in chunks of `chunk` bytes, its length not declared.
    fn chunked(len: usize, chunk: usize) -> Body {
        // A JSON string: `"aaa…"`.
        let mut text = vec![b'a'; len];
        (text[0], text[len - 1]) = (b'"', b'"');
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            text.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
        Body::from_stream(futures_util::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_body_holds_its_share_until_dropped() {
        let b = budget(1 << 20, 10);
        let got = b
            .read(chunked(300_000, 10_000), 1 << 20, |_, e| e)
            .await
            .unwrap();
        assert_eq!(got.len(), 300_000);
        // Its blocks: what it received and the room for one more chunk.
        let held = b.held_bytes();
        assert!(
            (300_000..=300_000 + READ_AHEAD + BLOCK + UNIT).contains(&held),
            "{held}"
        );
        let text: String = got.json().unwrap();
        assert_eq!(text.len(), 299_998);
        drop(got);
        assert_eq!(b.held_bytes(), 0);
        // A declared length is taken as it is, not read ahead.
        let got = b
            .read(Body::from(vec![b'x'; 5_000]), 1 << 20, |_, e| e)
            .await
            .unwrap();
        assert_eq!((got.len(), b.held_bytes()), (5_000, 5 * UNIT));
    }

    #[tokio::test]
    async fn past_the_budget_a_body_waits_then_is_overloaded() {
        let b = budget(256 << 10, 50);
        let first = b
            .read(chunked(200_000, 10_000), 1 << 20, |_, e| e)
            .await
            .unwrap();
        let t = Instant::now();
        let e = b
            .read(chunked(200_000, 10_000), 1 << 20, |_, e| e)
            .await
            .unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(50));
        assert_eq!((e.status().as_u16(), e.code()), (503, "overloaded"), "{e}");
        // What the refused body had taken went back; once the first is dropped the whole
        // budget is free again.
        assert!(b.held_bytes() <= 256 << 10);
        drop(first);
        assert_eq!(b.held_bytes(), 0);
        assert_eq!(
            b.read(chunked(200_000, 10_000), 1 << 20, |_, e| e)
                .await
                .unwrap()
                .len(),
            200_000
        );
    }

    #[tokio::test]
    async fn a_body_larger_than_the_budget_is_too_large() {
        let b = budget(100_000, 10);
        let e = b
            .read(chunked(150_000, 10_000), 1 << 20, |_, e| e)
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "request body is larger than 100000 bytes");
        assert_eq!(b.held_bytes(), 0);
    }
}
