//! The [`Store`] trait and the log follower built on it.

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use citeflow_core::{Numbering, Source};

use crate::error::StoreError;
use crate::model::{
    Allocation, NumberScope, SessionRecord, StoredEvent, StreamRecord, StreamStatus,
};

/// A stream of persisted events: the replayed ones, then the live tail, ending when the
/// stream has finished and every event was yielded.
pub type EventFeed =
    Pin<Box<dyn futures_core::Stream<Item = Result<StoredEvent, StoreError>> + Send>>;

/// Everything citeflow keeps: sessions with their sources, numbering tables, and streams
/// with their event logs.
///
/// Implementations must make [`Store::allocate`] atomic (look up the key, else take the next
/// number and record it, in one step) across every process that shares the backend, and must
/// have persisted an event when [`Store::append_events`] returns. Times are given by the
/// caller (milliseconds since the Unix epoch); the trait reads no clock. Ownership is checked
/// by the caller: records carry their owner.
///
/// The conformance suite (feature `conformance`) states the behaviour every implementation
/// shares.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates a session.
    ///
    /// # Errors
    /// [`StoreError::Exists`] when the id is taken; backend errors.
    async fn create_session(&self, session: SessionRecord) -> Result<(), StoreError>;

    /// The session with this id.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; backend errors.
    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError>;

    /// How many sessions `owner` has (a per-key quota reads it before creating one); deleted
    /// and purged sessions no longer count.
    ///
    /// # Errors
    /// Backend errors.
    async fn count_sessions(&self, owner: &str) -> Result<u64, StoreError>;

    /// Registers a round of sources in the session atomically and returns the updated session.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], [`StoreError::Sources`] (nothing registered); backend errors.
    async fn append_round(
        &self,
        id: &str,
        query: Option<String>,
        sources: Vec<Source>,
        now_ms: u64,
    ) -> Result<SessionRecord, StoreError>;

    /// Marks the session used now (it expires later).
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; backend errors.
    async fn touch_session(&self, id: &str, now_ms: u64) -> Result<(), StoreError>;

    /// Deletes the session and its numbering table.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; backend errors.
    async fn delete_session(&self, id: &str) -> Result<(), StoreError>;

    /// The number of `key` in `scope`, or the next free one recorded now, atomically.
    ///
    /// # Errors
    /// Backend errors; nothing is recorded then.
    async fn allocate(
        &self,
        scope: &NumberScope,
        key: &str,
        source_id: &str,
    ) -> Result<Allocation, StoreError>;

    /// The numbers of several keys of one scope, as [`Store::allocate`] called once per
    /// `(key, source_id)` in this order gives them: a key given twice has one number (the
    /// second is not new). A store that can do it in one round trip overrides it; the default
    /// calls [`Store::allocate`] for each key in turn.
    ///
    /// # Errors
    /// Backend errors; the keys before the failing one may be numbered then (a retry returns
    /// their numbers).
    async fn allocate_many(
        &self,
        scope: &NumberScope,
        keys: &[(&str, &str)],
    ) -> Result<Vec<Allocation>, StoreError> {
        let mut out = Vec::with_capacity(keys.len());
        for (key, source_id) in keys {
            out.push(self.allocate(scope, key, source_id).await?);
        }
        Ok(out)
    }

    /// The numbering table of `scope` (empty if nothing was allocated).
    ///
    /// # Errors
    /// Backend errors.
    async fn numbering(&self, scope: &NumberScope) -> Result<Numbering, StoreError>;

    /// Creates a stream with an empty log.
    ///
    /// # Errors
    /// [`StoreError::Exists`]; backend errors.
    async fn create_stream(&self, stream: StreamRecord) -> Result<(), StoreError>;

    /// The stream with this id.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; backend errors.
    async fn stream(&self, id: &str) -> Result<StreamRecord, StoreError>;

    /// Appends events to a running stream's log. Their ids must continue the log (1, 2, …);
    /// when this returns, they are persisted and followers are woken.
    ///
    /// # Errors
    /// [`StoreError::EventOrder`], [`StoreError::StreamClosed`], [`StoreError::NotFound`]
    /// (nothing appended); backend errors.
    async fn append_events(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), StoreError>;

    /// [`Store::append_events`], handing `events` back with the error when they were not
    /// appended, so that a caller that tries again keeps no copy of them. The default gives
    /// [`Store::append_events`] a copy; a store that keeps the events it is given (the memory
    /// store) takes them as they are.
    ///
    /// # Errors
    /// As [`Store::append_events`], with the events.
    async fn append_events_or_return(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), (StoreError, Vec<StoredEvent>)> {
        match self.append_events(stream_id, events.clone()).await {
            Ok(()) => Ok(()),
            Err(e) => Err((e, events)),
        }
    }

    /// Sets a running stream's final status and wakes its followers.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; backend errors.
    async fn finish_stream(&self, stream_id: &str, status: StreamStatus) -> Result<(), StoreError>;

    /// Up to `limit` events with ids greater than `after`, in order.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; backend errors.
    async fn events_after(
        &self,
        stream_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError>;

    /// Returns once the log holds an event with an id greater than `after` or the stream is no
    /// longer running (at once if that is already so). Implementations that cannot be woken may
    /// return early; callers check again.
    ///
    /// # Errors
    /// [`StoreError::NotFound`]; backend errors.
    async fn wait_for_events(&self, stream_id: &str, after: u64) -> Result<(), StoreError>;

    /// The ids of the streams still marked running (after a restart: those interrupted).
    ///
    /// # Errors
    /// Backend errors.
    async fn running_streams(&self) -> Result<Vec<String>, StoreError>;

    /// Deletes sessions and streams last used before `idle_before_ms`, with their numbering
    /// tables and logs. Running streams are kept. Returns how many records were deleted.
    ///
    /// # Errors
    /// Backend errors.
    async fn purge_idle(&self, idle_before_ms: u64) -> Result<u64, StoreError>;

    /// Writes a small record of its own (`now_ms`, under a fixed key, replaced each time) and
    /// returns once it is persisted: whether the backend takes writes now, for a readiness
    /// check. It changes nothing that the other calls read.
    ///
    /// The default writes nothing and answers `Ok` (a store kept in memory always takes
    /// writes).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the backend cannot take writes now (full disk,
    /// read-only, out of memory, unreachable); other backend errors.
    async fn probe_write(&self, now_ms: u64) -> Result<(), StoreError> {
        let _ = now_ms;
        Ok(())
    }
}

/// How many events a follower reads per query.
const PAGE: usize = 256;

/// The events of `stream_id` after `after`: first those already logged, then the live tail,
/// ending after the last event of a finished stream.
pub fn follow(store: Arc<dyn Store>, stream_id: String, after: u64) -> EventFeed {
    struct St {
        store: Arc<dyn Store>,
        stream_id: String,
        after: u64,
        buf: std::collections::VecDeque<StoredEvent>,
        done: bool,
    }
    let st = St {
        store,
        stream_id,
        after,
        buf: Default::default(),
        done: false,
    };
    Box::pin(futures_util::stream::unfold(st, |mut st| async move {
        // Per live event: one wait, one page with the event, one empty page. The status is
        // read only when a wait ended with nothing new (the stream finished, or the store
        // woke the follower early).
        let mut waited = false;
        loop {
            if let Some(e) = st.buf.pop_front() {
                st.after = e.id;
                return Some((Ok(e), st));
            }
            if st.done {
                return None;
            }
            match st.store.events_after(&st.stream_id, st.after, PAGE).await {
                Ok(page) if !page.is_empty() => {
                    st.buf.extend(page);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    st.done = true;
                    return Some((Err(e), st));
                }
            }
            if waited {
                // Nothing new after a wait: read the status, then the log once more. A
                // stream that had finished by then has all its events in that page (or a
                // later one).
                let status = match st.store.stream(&st.stream_id).await {
                    Ok(s) => s.status,
                    Err(e) => {
                        st.done = true;
                        return Some((Err(e), st));
                    }
                };
                if status.is_finished() {
                    match st.store.events_after(&st.stream_id, st.after, PAGE).await {
                        Ok(page) if !page.is_empty() => {
                            st.buf.extend(page);
                            continue;
                        }
                        Ok(_) => return None,
                        Err(e) => {
                            st.done = true;
                            return Some((Err(e), st));
                        }
                    }
                }
                // Woken early: yield so that a follower can never keep its executor thread
                // from the task that writes the events it waits for.
                YieldNow(false).await;
            }
            // Returns at once when the stream is no longer running.
            if let Err(e) = st.store.wait_for_events(&st.stream_id, st.after).await {
                st.done = true;
                return Some((Err(e), st));
            }
            waited = true;
        }
    }))
}

/// Returns `Pending` once (after asking to be polled again), then `Ready`.
struct YieldNow(bool);

impl std::future::Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
