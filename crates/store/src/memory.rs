//! [`MemoryStore`]: everything in one process's memory.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use citeflow_core::{Numbering, Source};
use event_listener::Event;
use rustc_hash::FxHashMap;

use crate::error::StoreError;
use crate::model::{
    Allocation, NumberScope, SessionRecord, StoredEvent, StreamRecord, StreamStatus,
};
use crate::store::Store;

/// A store in memory: for tests, and for servers that need no durability.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<String, SessionRecord>,
    numbering: HashMap<String, Numbering>,
    /// Looked up at every append: hashed with FxHash, not SipHash. Its keys are the server's
    /// random stream ids (a client names one only to look it up, never to add one), so no
    /// client can pick keys that collide.
    streams: FxHashMap<String, StreamEntry>,
}

#[derive(Debug)]
struct StreamEntry {
    record: StreamRecord,
    last_used_ms: u64,
    events: Vec<StoredEvent>,
    /// Wakes the stream's followers ([`Store::wait_for_events`]) at each append and at its
    /// end: notified and listened to under the store's lock, where the log changes, so that
    /// an append costs one lock and one look-up.
    wake: Event,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `events` to the log of stream `stream_id`, or hands them back with the error.
    fn append(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), (StoreError, Vec<StoredEvent>)> {
        let mut inner = self.lock();
        let Some(s) = inner.streams.get_mut(stream_id) else {
            return Err((no_stream(stream_id), events));
        };
        if s.record.status.is_finished() {
            let e = StoreError::StreamClosed {
                stream_id: stream_id.to_owned(),
                status: s.record.status.as_str(),
            };
            return Err((e, events));
        }
        let mut last = s.events.last().map_or(0, |e| e.id);
        for e in &events {
            if e.id != last + 1 {
                let e = StoreError::EventOrder {
                    stream_id: stream_id.to_owned(),
                    last,
                    got: e.id,
                };
                return Err((e, events));
            }
            last = e.id;
        }
        s.events.extend(events);
        // A notification only marks listeners woken (the wakers run their tasks later): no
        // follower runs under this lock. Without listeners it is one atomic read.
        s.wake.notify(usize::MAX);
        Ok(())
    }
}

fn no_session(id: &str) -> StoreError {
    StoreError::not_found("session", id)
}

fn no_stream(id: &str) -> StoreError {
    StoreError::not_found("stream", id)
}

#[async_trait]
impl Store for MemoryStore {
    async fn create_session(&self, session: SessionRecord) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner.sessions.contains_key(&session.id) {
            return Err(StoreError::Exists {
                what: "session",
                id: session.id,
            });
        }
        inner.sessions.insert(session.id.clone(), session);
        Ok(())
    }

    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        self.lock()
            .sessions
            .get(id)
            .cloned()
            .ok_or_else(|| no_session(id))
    }

    async fn count_sessions(&self, owner: &str) -> Result<u64, StoreError> {
        let inner = self.lock();
        Ok(inner.sessions.values().filter(|s| s.owner == owner).count() as u64)
    }

    async fn append_round(
        &self,
        id: &str,
        query: Option<String>,
        sources: Vec<Source>,
        now_ms: u64,
    ) -> Result<SessionRecord, StoreError> {
        let mut inner = self.lock();
        let s = inner.sessions.get_mut(id).ok_or_else(|| no_session(id))?;
        s.sources.append_round(query, sources)?;
        s.last_used_ms = s.last_used_ms.max(now_ms);
        Ok(s.clone())
    }

    async fn touch_session(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let s = inner.sessions.get_mut(id).ok_or_else(|| no_session(id))?;
        s.last_used_ms = s.last_used_ms.max(now_ms);
        Ok(())
    }

    async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.sessions.remove(id).ok_or_else(|| no_session(id))?;
        inner
            .numbering
            .remove(&NumberScope::Session(id.to_owned()).namespace());
        Ok(())
    }

    async fn allocate(
        &self,
        scope: &NumberScope,
        key: &str,
        source_id: &str,
    ) -> Result<Allocation, StoreError> {
        let mut inner = self.lock();
        let (number, is_new) = inner
            .numbering
            .entry(scope.namespace())
            .or_default()
            .allocate(key, source_id);
        Ok(Allocation { number, is_new })
    }

    async fn numbering(&self, scope: &NumberScope) -> Result<Numbering, StoreError> {
        Ok(self
            .lock()
            .numbering
            .get(&scope.namespace())
            .cloned()
            .unwrap_or_default())
    }

    async fn create_stream(&self, stream: StreamRecord) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner.streams.contains_key(&stream.id) {
            return Err(StoreError::Exists {
                what: "stream",
                id: stream.id,
            });
        }
        inner.streams.insert(
            stream.id.clone(),
            StreamEntry {
                last_used_ms: stream.created_ms,
                record: stream,
                events: Vec::new(),
                wake: Event::new(),
            },
        );
        Ok(())
    }

    async fn stream(&self, id: &str) -> Result<StreamRecord, StoreError> {
        self.lock()
            .streams
            .get(id)
            .map(|s| s.record.clone())
            .ok_or_else(|| no_stream(id))
    }

    async fn append_events(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), StoreError> {
        self.append(stream_id, events).map_err(|(e, _)| e)
    }

    async fn append_events_or_return(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), (StoreError, Vec<StoredEvent>)> {
        self.append(stream_id, events)
    }

    async fn finish_stream(&self, stream_id: &str, status: StreamStatus) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let s = inner
            .streams
            .get_mut(stream_id)
            .ok_or_else(|| no_stream(stream_id))?;
        s.record.status = status;
        s.wake.notify(usize::MAX);
        Ok(())
    }

    async fn events_after(
        &self,
        stream_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let inner = self.lock();
        let s = inner
            .streams
            .get(stream_id)
            .ok_or_else(|| no_stream(stream_id))?;
        // Ids are dense from 1, so the event after `after` is at index `after`.
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(s.events.len());
        Ok(s.events[start..].iter().take(limit).cloned().collect())
    }

    async fn wait_for_events(&self, stream_id: &str, after: u64) -> Result<(), StoreError> {
        let listener = {
            let inner = self.lock();
            let s = inner
                .streams
                .get(stream_id)
                .ok_or_else(|| no_stream(stream_id))?;
            if s.record.status.is_finished() || s.events.last().is_some_and(|e| e.id > after) {
                return Ok(());
            }
            // Listened to under the lock that appends take: no append goes unseen.
            s.wake.listen()
        };
        listener.await;
        Ok(())
    }

    async fn running_streams(&self) -> Result<Vec<String>, StoreError> {
        let inner = self.lock();
        let mut ids: Vec<String> = inner
            .streams
            .values()
            .filter(|s| s.record.status == StreamStatus::Running)
            .map(|s| s.record.id.clone())
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn purge_idle(&self, idle_before_ms: u64) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let sessions: Vec<String> = inner
            .sessions
            .values()
            .filter(|s| s.last_used_ms < idle_before_ms)
            .map(|s| s.id.clone())
            .collect();
        let streams: Vec<String> = inner
            .streams
            .values()
            .filter(|s| s.record.status.is_finished() && s.last_used_ms < idle_before_ms)
            .map(|s| s.record.id.clone())
            .collect();
        for id in &sessions {
            inner.sessions.remove(id);
            inner
                .numbering
                .remove(&NumberScope::Session(id.clone()).namespace());
        }
        for id in &streams {
            inner.streams.remove(id);
            inner
                .numbering
                .remove(&NumberScope::Stream(id.clone()).namespace());
        }
        Ok((sessions.len() + streams.len()) as u64)
    }
}
