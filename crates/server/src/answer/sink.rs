//! Where the runner puts an answer's events: the stream's log ([`Log`], for a streamed
//! answer), or a list (a non-streamed one).

use std::future::Future;

use citeflow_store::{StoredEvent, StreamStatus};

use crate::answer::live::LiveTx;
use crate::error::StreamError;
use crate::state::AppState;
use crate::unrecorded::{record_failure, with_retries};

/// Takes each batch of an answer's events.
pub(crate) trait Sink: Send {
    /// Takes a batch of events (JSON texts, or a bare `[DONE]`).
    fn send(&mut self, events: Vec<String>)
        -> impl Future<Output = Result<(), StreamError>> + Send;
}

/// Collects the events (a non-streamed answer).
impl Sink for Vec<String> {
    async fn send(&mut self, events: Vec<String>) -> Result<(), StreamError> {
        self.extend(events);
        Ok(())
    }
}

/// The log of one stream: event ids from 1, each write tried
/// [`STORE_ATTEMPTS`](crate::unrecorded::STORE_ATTEMPTS) times, each logged event handed to
/// the live response.
pub(crate) struct Log {
    state: AppState,
    stream_id: String,
    next_id: u64,
    /// The id of the last event the log took.
    logged: u64,
    live: LiveTx,
}

impl Log {
    pub(crate) fn new(state: AppState, stream_id: String, live: LiveTx) -> Self {
        Log {
            state,
            stream_id,
            next_id: 1,
            logged: 0,
            live,
        }
    }

    pub(crate) fn stream_id(&self) -> &str {
        &self.stream_id
    }

    fn event(&mut self, data: String) -> StoredEvent {
        let e = StoredEvent {
            id: self.next_id,
            data,
        };
        self.next_id += 1;
        e
    }

    /// Sets the stream's final status, the failure's `error` event logged first, with
    /// retries; what the store does not take is kept and retried apart
    /// ([`record_failure`]). A completed stream's live response ends here (it got every
    /// event); a failed one's reads the error event (or learns that the store did not take
    /// it) from the log.
    pub(crate) async fn finish(&mut self, status: StreamStatus, error: Option<String>) {
        if error.is_some() {
            self.live = LiveTx::none();
        }
        // Right after the last event the log took (events it refused are lost).
        self.next_id = self.logged + 1;
        let error = error.map(|data| self.event(data));
        let s = &self.state;
        record_failure(&s.unrecorded, &s.store, &self.stream_id, error, status).await;
        self.live.end();
    }
}

impl Sink for Log {
    async fn send(&mut self, events: Vec<String>) -> Result<(), StreamError> {
        if events.is_empty() {
            return Ok(());
        }
        let events: Vec<StoredEvent> = events.into_iter().map(|d| self.event(d)).collect();
        let last = events.last().map(|e| e.id);
        let store = &self.state.store;
        let id = &self.stream_id;
        with_retries("stream events", || store.append_events(id, events.clone()))
            .await
            .map_err(|e| StreamError::store(&e))?;
        self.logged = last.unwrap_or(self.logged);
        self.live.send(&events);
        Ok(())
    }
}
