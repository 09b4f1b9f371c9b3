//! Following a stream: reading its log a page at a time and waiting for its next event, in
//! process when this store writes the stream, else with a blocking `XREAD` on a connection
//! from a pool of their own (capped; past the cap a follower polls).

use std::sync::atomic::Ordering;
use std::time::Duration;

use citeflow_store::{StoreError, StoredEvent, StreamStatus};
use redis::{RedisError, Value};

use super::{number, status_of, RedisStore};
use crate::conn::Conn;

/// The most events one `events_after` call reads.
const MAX_PAGE: usize = 4096;

/// The event id of a log entry id `n-0` (`None` for the end mark `n-1`).
fn event_id(entry: &str) -> Option<u64> {
    entry.strip_suffix("-0")?.parse().ok()
}

impl RedisStore {
    /// Status and last event id of a stream.
    async fn status_last(&self, id: &str) -> Result<(StreamStatus, u64), StoreError> {
        let row: Vec<Option<String>> = self
            .query(
                redis::cmd("HMGET")
                    .arg(self.inner.keys.stream(id))
                    .arg("status")
                    .arg("last"),
            )
            .await?;
        match row.as_slice() {
            [Some(status), last] => {
                Ok((status_of(status)?, number("last event", last.as_deref())?))
            }
            _ => Err(StoreError::not_found("stream", id)),
        }
    }

    /// A connection for a blocking read, from the pool or new; `None` when the cap is reached.
    async fn blocking_conn(&self) -> Result<Option<Conn>, StoreError> {
        if let Some(c) = self
            .inner
            .blocking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
        {
            return Ok(Some(c));
        }
        let open = &self.inner.blocking_open;
        if open.fetch_add(1, Ordering::SeqCst) >= self.inner.settings.max_blocking_connections {
            open.fetch_sub(1, Ordering::SeqCst);
            return Ok(None);
        }
        match self.inner.client.dedicated(&self.inner.settings).await {
            Ok(c) => Ok(Some(c)),
            Err(e) => {
                open.fetch_sub(1, Ordering::SeqCst);
                Err(self.err(&e))
            }
        }
    }

    /// `Store::events_after`: one page of the log after `after`.
    pub(super) async fn log_page(
        &self,
        stream_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let limit = limit.min(MAX_PAGE);
        if limit == 0 {
            self.status_last(stream_id).await?;
            return Ok(Vec::new());
        }
        // One round trip: the page (plus room for the end mark) and whether the stream exists.
        let mut pipe = redis::pipe();
        pipe.cmd("XRANGE")
            .arg(self.inner.keys.log(stream_id))
            .arg(format!("({after}-0"))
            .arg("+")
            .arg("COUNT")
            .arg(limit + 1)
            .cmd("EXISTS")
            .arg(self.inner.keys.stream(stream_id));
        let pipe = &pipe;
        let (entries, exists): (Vec<(String, Vec<String>)>, bool) = self
            .retrying(|mut c, _| async move { pipe.query_async(&mut c).await })
            .await?;
        if !exists {
            return Err(StoreError::not_found("stream", stream_id));
        }
        let mut out = Vec::with_capacity(entries.len());
        for (entry, fields) in entries {
            let Some(id) = event_id(&entry) else { continue };
            let data = match fields.as_slice() {
                [name, data] if name == "d" => data.clone(),
                _ => {
                    return Err(StoreError::Backend(format!(
                        "log entry {entry} of stream {stream_id} has no data"
                    )))
                }
            };
            out.push(StoredEvent { id, data });
        }
        out.truncate(limit);
        Ok(out)
    }

    /// `Store::wait_for_events`: returns when the stream may have moved past `after` (an
    /// event, its end) or after the block time; woken in process when this store writes the
    /// stream, else by a blocking `XREAD` on a connection of its own.
    pub(super) async fn wait_past(&self, stream_id: &str, after: u64) -> Result<(), StoreError> {
        let block = Duration::from_millis(self.inner.settings.block_ms);
        if self.is_owned(stream_id) {
            // Written by this process: its appends wake the listener.
            let listener = self.inner.signals.listen(stream_id);
            let (status, last) = self.status_last(stream_id).await?;
            if status.is_finished() || last > after {
                return Ok(());
            }
            let _ = tokio::time::timeout(block, listener).await;
            return Ok(());
        }
        let (status, last) = self.status_last(stream_id).await?;
        if status.is_finished() || last > after {
            return Ok(());
        }
        let Some(mut c) = self.blocking_conn().await? else {
            // Too many blocked followers: poll.
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Ok(());
        };
        // The next event is entry `after+1`-0; the end mark `last-1` also wakes us.
        let r: Result<Value, RedisError> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(self.inner.settings.block_ms)
            .arg("STREAMS")
            .arg(self.inner.keys.log(stream_id))
            .arg(format!("{after}-0"))
            .query_async(&mut c)
            .await;
        match r {
            Ok(_) => {
                self.inner
                    .blocking
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(c);
                Ok(())
            }
            Err(e) => {
                self.inner.blocking_open.fetch_sub(1, Ordering::SeqCst);
                Err(self.err(&e))
            }
        }
    }
}
