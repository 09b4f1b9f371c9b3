//! Appending to a stream's log: one script checks the status and the ids, then `XADD`s every
//! event with its id as the entry id, all in one step.

use citeflow_store::{StoreError, StoredEvent, StreamStatus};

use crate::store::RedisStore;

/// Runs the append script; `retry` accepts a batch that is in the log already (its first
/// reply was lost). Returns the script's answer.
pub(crate) async fn append(
    store: &RedisStore,
    stream_id: &str,
    events: &[StoredEvent],
    retry: bool,
) -> Result<Vec<String>, StoreError> {
    let keys = store.stream_key_set(stream_id);
    // A retry (first reply lost) accepts the batch if the first attempt wrote it.
    store
        .retrying(|mut c, again| {
            let mut inv = store.scripts().append.prepare_invoke();
            for k in &keys {
                inv.key(k);
            }
            inv.arg(store.idle_ttl_ms())
                .arg(if retry || again { "1" } else { "0" });
            for e in events {
                inv.arg(e.id).arg(&e.data);
            }
            async move { inv.invoke_async(&mut c).await }
        })
        .await
}

/// The error of a script answer other than `ok`.
pub(crate) fn check(stream_id: &str, answer: Vec<String>) -> Result<(), StoreError> {
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
