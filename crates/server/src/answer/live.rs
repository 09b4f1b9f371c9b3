//! The live hand-off from a generation to the response of the request that started it: each
//! event, once the log has it, goes framed straight to that response, which then needs no
//! read of the log per event. A response that falls [`CAPACITY`] events behind, or whose
//! generation ended, goes on from the log after the last event it got (the follower every
//! other reader uses), so it sends exactly what the log holds, in order, whatever happens.
//! A generation that finished with every event handed off says so ([`LiveTx::end`]): the
//! response then ends without reading the log again. [`Log`] is the generation's end of it:
//! the stream's log, each batch appended (retried) and then handed off.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::answer::handoff::{self, Consumer, Producer};
use crate::answer::sink::Sink;
use crate::error::StreamError;
use crate::sse::{self, Naming};
use crate::state::AppState;
use crate::unrecorded::{record_failure, retry};
use bytes::Bytes;
use citeflow_store::{follow, EventFeed, StoreError, StoredEvent, StreamStatus};
use futures_util::Stream;

/// Events a response may lag behind its generation before it is served from the log.
pub(crate) const CAPACITY: usize = 256;

/// How a logged event becomes the response's frame ([`sse::logged`], as the format names its
/// events), or the log's read error the format's error frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Framer {
    /// How the format names its events.
    pub(crate) naming: Naming,
    /// The format's frame of the log's read error.
    pub(crate) read_error: fn(&StoreError) -> Bytes,
}

impl Framer {
    /// The frame of a logged event, or of the log's read error.
    pub(crate) fn frame(self, e: Result<&StoredEvent, &StoreError>) -> Bytes {
        match e {
            Ok(e) => sse::logged(self.naming, e.id, &e.data),
            Err(e) => (self.read_error)(e),
        }
    }
}

/// What goes from the generation to its response.
#[derive(Debug)]
enum Live {
    /// A logged event's id and frame.
    Event(u64, Bytes),
    /// The stream finished and its status is logged: every event of it was handed off.
    End,
}

/// The generation's end: sends each logged event, framed, while the response keeps up.
#[derive(Default)]
pub(crate) struct LiveTx {
    to: Option<(Producer<Live>, Framer)>,
    /// The frames of the batch the log is taking ([`LiveTx::frame`]), sent once it took
    /// them ([`LiveTx::send_framed`]); kept for its room.
    framed: Vec<Live>,
}

impl LiveTx {
    /// No response to feed (it reads the log).
    pub(crate) fn none() -> Self {
        LiveTx::default()
    }

    /// Frames `events` (each once, into a [`Bytes`] the response writes as it is) before
    /// the log takes them, which then owns their data: [`LiveTx::send_framed`] sends the
    /// frames once it has. A batch the log refused is never sent (the next `frame` drops it).
    pub(crate) fn frame(&mut self, events: &[StoredEvent]) {
        self.framed.clear();
        if let Some((_, framer)) = &self.to {
            let naming = framer.naming;
            self.framed.extend(
                events
                    .iter()
                    .map(|e| Live::Event(e.id, sse::logged(naming, e.id, &e.data))),
            );
        }
    }

    /// Sends the frames of the batch the log took. A response that is gone or full is let
    /// go: from then on it reads the log.
    pub(crate) fn send_framed(&mut self) {
        let Some((tx, _)) = &self.to else {
            return;
        };
        if tx.send_all(self.framed.drain(..)).is_err() {
            self.to = None;
        }
    }

    /// Sends events the log has taken: [`LiveTx::frame`] then [`LiveTx::send_framed`].
    #[cfg(test)]
    pub(crate) fn send(&mut self, events: &[StoredEvent]) {
        self.frame(events);
        self.send_framed();
    }

    /// Tells the response that the stream finished (its status is logged) after the events
    /// sent: it ends there. Only for a response that got every event; one that was let go
    /// (or a full queue) reads the rest from the log.
    pub(crate) fn end(&mut self) {
        if let Some((tx, _)) = self.to.take() {
            let _ = tx.send_all([Live::End]);
        }
    }
}

/// A hand-off for the response of stream `stream_id`, from its first event: the generation's
/// end and the response's feed of frames.
pub(crate) fn channel(state: &AppState, stream_id: &str, framer: Framer) -> (LiveTx, LiveFeed) {
    let (tx, rx) = handoff::queue(CAPACITY);
    let feed = LiveFeed {
        store: Arc::clone(&state.store),
        stream_id: stream_id.to_owned(),
        last: 0,
        framer,
        phase: Phase::Live(rx),
    };
    let tx = LiveTx {
        to: Some((tx, framer)),
        framed: Vec::new(),
    };
    (tx, feed)
}

/// The response's end: the live frames, then the log after the last of them.
pub(crate) struct LiveFeed {
    store: Arc<dyn citeflow_store::Store>,
    stream_id: String,
    /// The id of the last event sent.
    last: u64,
    framer: Framer,
    phase: Phase,
}

enum Phase {
    Live(Consumer<Live>),
    Log(EventFeed),
    /// The generation said the stream ended after the last event sent.
    Ended,
}

impl Stream for LiveFeed {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        loop {
            match &mut this.phase {
                Phase::Live(rx) => match rx.poll_recv(cx) {
                    Poll::Ready(Some(Live::Event(id, frame))) => {
                        this.last = id;
                        return Poll::Ready(Some(frame));
                    }
                    Poll::Ready(Some(Live::End)) => {
                        this.phase = Phase::Ended;
                        return Poll::Ready(None);
                    }
                    Poll::Ready(None) => {
                        // The generation ended or let this response go: the log has the rest.
                        let feed =
                            follow(Arc::clone(&this.store), this.stream_id.clone(), this.last);
                        this.phase = Phase::Log(feed);
                    }
                    Poll::Pending => return Poll::Pending,
                },
                Phase::Log(feed) => {
                    let framer = this.framer;
                    return feed
                        .as_mut()
                        .poll_next(cx)
                        .map(|e| e.map(|e| framer.frame(e.as_ref())));
                }
                Phase::Ended => return Poll::Ready(None),
            }
        }
    }
}

/// The log of one stream: event ids from 1, each write tried
/// [`STORE_ATTEMPTS`](crate::unrecorded::STORE_ATTEMPTS) times, each logged event handed to
/// the live response ([`LiveTx`]).
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
        // Framed before the log owns them; sent only after it took them.
        self.live.frame(&events);
        let store = &self.state.store;
        let id = &self.stream_id;
        // The first try here (the events handed back if the store did not take them), the
        // retries (rare) in `unrecorded`.
        if let Err((first, events)) = store.append_events_or_return(id, events).await {
            retry("stream events", first, || {
                store.append_events(id, events.clone())
            })
            .await
            .map_err(|e| StreamError::store(&e))?;
        }
        self.logged = last.unwrap_or(self.logged);
        self.live.send_framed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use citeflow_store::{MemoryStore, Store, StreamRecord, StreamStatus};
    use futures_util::StreamExt;

    use super::*;
    use crate::ServerSettings;

    fn frame(e: Result<&StoredEvent, &StoreError>) -> Bytes {
        FRAMER.frame(e)
    }

    const FRAMER: Framer = Framer {
        naming: Naming::Unnamed,
        read_error: |e| panic!("read error: {e}"),
    };

    fn ev(id: u64) -> StoredEvent {
        StoredEvent {
            id,
            data: format!("e{id}"),
        }
    }

    async fn running(store: &Arc<dyn Store>, id: &str) {
        store
            .create_stream(StreamRecord {
                id: id.into(),
                owner: "o".into(),
                session_id: None,
                status: StreamStatus::Running,
                created_ms: 0,
            })
            .await
            .expect("create");
    }

    /// A response that keeps up gets every event live; one that falls behind gets the rest
    /// from the log; either way exactly the log's events, in order, once each.
    #[tokio::test]
    async fn live_then_the_log_gives_the_log_exactly() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let state = AppState::new(ServerSettings::new("http://127.0.0.1:9/v1"), store.clone());
        let cap = CAPACITY as u64;
        for (id, n) in [
            ("kept-up", 10),
            ("at-capacity", cap),
            ("one-past", cap + 1),
            ("behind", cap * 3),
        ] {
            running(&store, id).await;
            let (mut tx, feed) = channel(&state, id, FRAMER);
            for i in 1..=n {
                store.append_events(id, vec![ev(i)]).await.expect("append");
                tx.send(&[ev(i)]);
            }
            store
                .finish_stream(id, StreamStatus::Completed)
                .await
                .expect("finish");
            drop(tx);
            let got: Vec<Bytes> = feed.collect().await;
            let want: Vec<Bytes> = (1..=n).map(|i| frame(Ok(&ev(i)))).collect();
            assert_eq!(got, want, "{id}");
        }
    }

    /// A response that got every event ends at the generation's `end` without the log (here
    /// the log still says running, so a read of it would wait); one that was let go reads
    /// the rest from the log, and `end` changes nothing for it.
    #[tokio::test]
    async fn end_closes_a_response_that_got_everything() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let state = AppState::new(ServerSettings::new("http://127.0.0.1:9/v1"), store.clone());
        // A running stream whose `n` events the log took and the generation sent, then `end`.
        let ended = |id: &'static str, n: u64| {
            let (store, state) = (store.clone(), state.clone());
            async move {
                running(&store, id).await;
                let (mut tx, feed) = channel(&state, id, FRAMER);
                for i in 1..=n {
                    store.append_events(id, vec![ev(i)]).await.expect("append");
                    tx.send(&[ev(i)]);
                }
                tx.end();
                feed
            }
        };
        let feed = ended("kept-up", 3).await;
        let got: Vec<Bytes> =
            tokio::time::timeout(std::time::Duration::from_secs(5), feed.collect())
                .await
                .expect("ended without the log");
        assert_eq!(got, (1..=3).map(|i| frame(Ok(&ev(i)))).collect::<Vec<_>>());

        let n = CAPACITY as u64 + 1;
        let feed = ended("let-go", n).await;
        store
            .finish_stream("let-go", StreamStatus::Completed)
            .await
            .expect("finish");
        let got: Vec<Bytes> = feed.collect().await;
        assert_eq!(got, (1..=n).map(|i| frame(Ok(&ev(i)))).collect::<Vec<_>>());
    }
}
