//! Appending to a stream's log: one script checks the status and the ids, then `XADD`s every
//! event with its id as the entry id, all in one step.

use citeflow_store::{StoreError, StoredEvent, StreamStatus};
use tokio::sync::oneshot;

use super::{AppendRequest as Request, RedisStore};
use crate::batch::Flushing;

impl RedisStore {
    /// Writes `events` to the log of `stream_id` (through the append batches when they are
    /// on and the store is standalone), or the error the script answered.
    pub(super) async fn append_to_log(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), StoreError> {
        let r = if self.inner.settings.append_batch > 1 && !self.inner.settings.is_cluster() {
            batched(self, stream_id, events).await?
        } else {
            append(self, stream_id, &events, false).await?
        };
        check(stream_id, r)
    }
}

/// Queues the append in the store's append batches and returns the script's answer for it.
/// Appends that arrive while a batch call is under way go together in the next one
/// (`APPEND_MANY`, each checked and written as `APPEND` does it).
async fn batched(
    store: &RedisStore,
    stream_id: &str,
    events: Vec<StoredEvent>,
) -> Result<Vec<String>, StoreError> {
    let (tx, rx) = oneshot::channel();
    let req = Request {
        keys: store.stream_keys(stream_id),
        events,
        reply: tx,
    };
    if store.inner.appends.push("", vec![req]) {
        // A task of its own: a caller that stops waiting must not strand the others' batch.
        let store = RedisStore {
            inner: store.inner.clone(),
        };
        tokio::spawn(flush(store));
    }
    rx.await.map_err(|_| {
        StoreError::Backend(format!(
            "append to stream {stream_id}: the batch ended without an answer"
        ))
    })?
}

/// Sends the append batches until none waits.
async fn flush(store: RedisStore) {
    let mut guard = Flushing {
        batches: &store.inner.appends,
        group: "",
        done: false,
    };
    let max = store.inner.settings.append_batch;
    while let Some(batch) = store.inner.appends.take("", max) {
        match run(&store, &batch).await {
            Ok(answers) if answers.len() == batch.len() => {
                for (req, a) in batch.into_iter().zip(answers) {
                    let _ = req.reply.send(Ok(a));
                }
            }
            Ok(answers) => {
                let e = StoreError::Backend(format!(
                    "redis append batch: {} answers for {} appends",
                    answers.len(),
                    batch.len()
                ));
                for req in batch {
                    let _ = req.reply.send(Err(e.clone()));
                }
            }
            Err(e) => {
                // Redis cannot serve now: the appends queued behind the batch fail with it
                // (nothing was sent for them).
                let queued = if matches!(e, StoreError::Unavailable(_)) {
                    store.inner.appends.drain("")
                } else {
                    Vec::new()
                };
                for req in batch.into_iter().chain(queued) {
                    let _ = req.reply.send(Err(e.clone()));
                }
            }
        }
    }
    guard.done = true;
}

/// One `APPEND_MANY` call; a retry (first reply lost) accepts the appends already in the log.
async fn run(store: &RedisStore, batch: &[Request]) -> Result<Vec<Vec<String>>, StoreError> {
    store
        .retrying(|mut c, again| {
            let mut inv = store.inner.scripts.append_many.prepare_invoke();
            for req in batch {
                for k in &req.keys {
                    inv.key(k);
                }
            }
            inv.arg(store.ttl()).arg(if again { "1" } else { "0" });
            for req in batch {
                inv.arg(req.events.len());
                for e in &req.events {
                    inv.arg(e.id).arg(&e.data);
                }
            }
            async move { inv.invoke_async(&mut c).await }
        })
        .await
}

/// Runs the append script; `retry` accepts a batch that is in the log already (its first
/// reply was lost). Returns the script's answer.
async fn append(
    store: &RedisStore,
    stream_id: &str,
    events: &[StoredEvent],
    retry: bool,
) -> Result<Vec<String>, StoreError> {
    let keys = store.stream_keys(stream_id);
    // A retry (first reply lost) accepts the batch if the first attempt wrote it.
    store
        .retrying(|mut c, again| {
            let mut inv = store.inner.scripts.append.prepare_invoke();
            for k in &keys {
                inv.key(k);
            }
            inv.arg(store.ttl())
                .arg(if retry || again { "1" } else { "0" });
            for e in events {
                inv.arg(e.id).arg(&e.data);
            }
            async move { inv.invoke_async(&mut c).await }
        })
        .await
}

/// The error of a script answer other than `ok`.
fn check(stream_id: &str, answer: Vec<String>) -> Result<(), StoreError> {
    let bad = |what: &str| StoreError::Backend(format!("append to stream {stream_id}: {what}"));
    match answer.first().map(String::as_str) {
        Some("ok") => Ok(()),
        Some("nf") => Err(StoreError::NotFound {
            what: "stream",
            id: stream_id.to_owned(),
        }),
        Some("closed") => Err(StoreError::StreamClosed {
            stream_id: stream_id.to_owned(),
            status: answer
                .get(1)
                .and_then(|s| StreamStatus::from_name(s))
                .map_or("finished", StreamStatus::as_str),
        }),
        Some("order") => {
            let num = |i: usize| answer.get(i).and_then(|s| s.parse::<u64>().ok());
            match (num(1), num(2)) {
                (Some(last), Some(got)) => Err(StoreError::EventOrder {
                    stream_id: stream_id.to_owned(),
                    last,
                    got,
                }),
                _ => Err(bad("unreadable answer")),
            }
        }
        _ => Err(bad("unknown answer")),
    }
}
