//! Store writes of a stream under a bound, and failures the store would not take.
//!
//! A generation's writes (its events, its error event, its final status) are tried
//! [`STORE_ATTEMPTS`] times with growing pauses. When a stream fails and even its error event
//! or its `failed` status cannot be written, the failure is kept here: followers in this
//! process get the error event and end, `GET /v1/streams/{id}` tries to record it again and
//! answers 503 `store_unavailable` if it still cannot (never an endless wait), and a repair
//! task retries until the store takes it. A process that exits first leaves the stream
//! `running`, and the next start-up marks it interrupted ([`crate::recover_interrupted`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use citeflow_store::{Store, StoreError, StoredEvent, StreamStatus};
use tokio::sync::watch;

use crate::code::ErrorCode;
use crate::error::StreamError;

/// Tries of one store write of a stream before the stream fails.
pub(crate) const STORE_ATTEMPTS: u32 = 4;
/// The pause before the second try; it doubles for each further one (50, 100, 200 ms).
const FIRST_PAUSE_MS: u64 = 50;
/// The longest pause of the repair task between two tries.
const MAX_REPAIR_PAUSE_MS: u64 = 30_000;

/// Runs `write` up to [`STORE_ATTEMPTS`] times while it fails; the last error otherwise.
pub(crate) async fn with_retries<T, F, Fut>(what: &str, mut write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    match write().await {
        Ok(v) => Ok(v),
        Err(e) => retry(what, e, write).await,
    }
}

/// Runs `write` again after its first try failed with `first`, up to [`STORE_ATTEMPTS`] tries
/// in all (as [`with_retries`]; for a caller that makes the first try itself, so that a write
/// that succeeds runs no code here).
pub(crate) async fn retry<T, F, Fut>(
    what: &str,
    first: StoreError,
    mut write: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut pause = FIRST_PAUSE_MS;
    let mut attempt = 1;
    let mut last = first;
    loop {
        if attempt >= STORE_ATTEMPTS {
            return Err(last);
        }
        tracing::warn!(error = %last, attempt, "store write failed ({what}); retrying");
        tokio::time::sleep(Duration::from_millis(pause)).await;
        pause *= 2;
        attempt += 1;
        match write().await {
            Ok(v) => return Ok(v),
            Err(e) => last = e,
        }
    }
}

/// A failure not yet in the store: the error event still to append (if it is not) and the
/// status to set.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) event: Option<StoredEvent>,
    pub(crate) status: StreamStatus,
}

/// The failures of this process the store has not taken yet, by stream id.
#[derive(Debug)]
pub(crate) struct Unrecorded {
    map: Mutex<HashMap<String, Pending>>,
    changed: watch::Sender<u64>,
}

impl Default for Unrecorded {
    fn default() -> Self {
        Unrecorded {
            map: Mutex::new(HashMap::new()),
            changed: watch::channel(0).0,
        }
    }
}

impl Unrecorded {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The error event payload of a stream whose failure is not recorded, if it is one.
    pub(crate) fn error_of(&self, stream_id: &str) -> Option<String> {
        self.lock().get(stream_id).map(|p| {
            p.event.as_ref().map_or_else(
                || StreamError::new(ErrorCode::StoreUnavailable, "the store failed").payload(),
                |e| e.data.clone(),
            )
        })
    }

    /// Resolves once `stream_id` has a failure here.
    pub(crate) async fn wait_for(&self, stream_id: &str) {
        let mut rx = self.changed.subscribe();
        loop {
            if self.lock().contains_key(stream_id) {
                return;
            }
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    fn insert(&self, stream_id: &str, pending: Pending) {
        self.lock().insert(stream_id.to_owned(), pending);
        self.changed.send_modify(|n| *n += 1);
    }

    fn remove(&self, stream_id: &str) {
        self.lock().remove(stream_id);
    }
}

/// Writes a failed stream's error event (if given) and its status, each with retries. When
/// the store does not take them, keeps the failure in [`Unrecorded`] and starts a task that
/// retries until it does.
pub(crate) async fn record_failure(
    unrecorded: &Arc<Unrecorded>,
    store: &Arc<dyn Store>,
    stream_id: &str,
    event: Option<StoredEvent>,
    status: StreamStatus,
) {
    let pending = Pending { event, status };
    let Err(pending) = try_record(store, stream_id, pending, true).await else {
        return;
    };
    tracing::error!(
        stream_id,
        "the store did not take the stream's failure; retrying in the background"
    );
    unrecorded.insert(stream_id, pending);
    let (unrecorded, store, id) = (
        Arc::clone(unrecorded),
        Arc::clone(store),
        stream_id.to_owned(),
    );
    tokio::spawn(async move {
        let mut pause = 1_000;
        loop {
            tokio::time::sleep(Duration::from_millis(pause)).await;
            if repair(&unrecorded, &store, &id).await {
                tracing::info!(stream_id = %id, "recorded the stream's failure");
                return;
            }
            pause = (pause * 2).min(MAX_REPAIR_PAUSE_MS);
        }
    });
}

/// Tries once more to record a kept failure of `stream_id`; true when nothing is left to
/// record.
pub(crate) async fn repair(
    unrecorded: &Unrecorded,
    store: &Arc<dyn Store>,
    stream_id: &str,
) -> bool {
    let Some(pending) = unrecorded.lock().get(stream_id).cloned() else {
        return true;
    };
    match try_record(store, stream_id, pending, false).await {
        Ok(()) => {
            unrecorded.remove(stream_id);
            true
        }
        Err(left) => {
            if let Some(p) = unrecorded.lock().get_mut(stream_id) {
                *p = left;
            }
            false
        }
    }
}

/// Appends the event, then sets the status; returns what is left to do on failure.
async fn try_record(
    store: &Arc<dyn Store>,
    stream_id: &str,
    mut pending: Pending,
    retries: bool,
) -> Result<(), Pending> {
    if let Some(event) = pending.event.clone() {
        let write = || store.append_events(stream_id, vec![event.clone()]);
        let r = if retries {
            with_retries("error event", write).await
        } else {
            write().await
        };
        if let Err(e) = r {
            tracing::warn!(stream_id, error = %e, "cannot log the error event");
            return Err(pending);
        }
        pending.event = None;
    }
    let status = pending.status;
    let write = || store.finish_stream(stream_id, status);
    let r = if retries {
        with_retries("stream status", write).await
    } else {
        write().await
    };
    r.map_err(|e| {
        tracing::warn!(stream_id, error = %e, "cannot finish the stream");
        pending
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_write_is_tried_a_bounded_number_of_times() {
        let tries = AtomicU32::new(0);
        let r: Result<(), StoreError> = with_retries("x", || {
            tries.fetch_add(1, Ordering::Relaxed);
            async { Err(StoreError::Unavailable("down".into())) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(tries.load(Ordering::Relaxed), STORE_ATTEMPTS);
        let tries = AtomicU32::new(0);
        let r = with_retries("x", || {
            let n = tries.fetch_add(1, Ordering::Relaxed);
            async move {
                if n < 2 {
                    Err(StoreError::Unavailable("down".into()))
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(r.unwrap(), 2);
    }
}
