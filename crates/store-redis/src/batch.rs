//! Allocation batches: the allocations that arrive while a script call is under way go
//! together in the next one (group commit), so a busy store sends one `EVALSHA` for many
//! allocations instead of one each.
//!
//! A batch is one run of the `ALLOCATE_MANY` script, which handles its allocations one after
//! the other, each exactly as the single `ALLOCATE` script does (look the key up, else `INCR`
//! the counter and record both directions); Redis runs a script atomically, so a batch is as
//! safe as the same allocations sent one by one. On a standalone server every allocation may
//! join one batch (a script may touch any key there); on a Cluster a batch holds the
//! allocations of one numbering table only (one hash tag, so one slot and one node), and the
//! `WAIT` after it covers the whole batch.

use std::collections::HashMap;
use std::sync::Mutex;

use citeflow_store::StoreError;
use tokio::sync::oneshot;

use crate::keys::TableKeys;
use crate::store::RedisStore;

/// Script calls of one group that may be under way at once (one runs in Redis while the next
/// one is being filled).
const FLUSHERS: usize = 2;

/// One allocation waiting for its batch.
pub(crate) struct Request {
    pub(crate) table: TableKeys,
    pub(crate) key: String,
    /// `[key, source_id]` as JSON.
    pub(crate) record: String,
    pub(crate) reply: oneshot::Sender<Result<(u32, bool), StoreError>>,
}

struct Group<R> {
    pending: Vec<R>,
    flushers: usize,
}

/// The requests waiting, by group (for allocations: the table's `num` key on a Cluster, `""`
/// standalone).
pub(crate) struct Batches<R> {
    groups: Mutex<HashMap<String, Group<R>>>,
}

impl<R> Default for Batches<R> {
    fn default() -> Self {
        Batches {
            groups: Mutex::new(HashMap::new()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<R> Batches<R> {
    /// Queues `requests` (kept together and in order) in `group`; returns whether the caller
    /// must start a flusher for it.
    pub(crate) fn push(&self, group: &str, requests: Vec<R>) -> bool {
        let mut groups = lock(&self.groups);
        let g = groups.entry(group.to_owned()).or_insert_with(|| Group {
            pending: Vec::new(),
            flushers: 0,
        });
        g.pending.extend(requests);
        if g.flushers < FLUSHERS {
            g.flushers += 1;
            true
        } else {
            false
        }
    }

    /// The next batch of `group` (at most `max`), or `None` when nothing waits (the flusher
    /// then ends).
    pub(crate) fn take(&self, group: &str, max: usize) -> Option<Vec<R>> {
        let mut groups = lock(&self.groups);
        let g = groups.get_mut(group)?;
        if g.pending.is_empty() {
            g.flushers = g.flushers.saturating_sub(1);
            if g.flushers == 0 {
                groups.remove(group);
            }
            return None;
        }
        let n = g.pending.len().min(max.max(1));
        Some(g.pending.drain(..n).collect())
    }

    /// Every allocation waiting in `group` (the flusher's count stays).
    pub(crate) fn drain(&self, group: &str) -> Vec<R> {
        lock(&self.groups)
            .get_mut(group)
            .map(|g| std::mem::take(&mut g.pending))
            .unwrap_or_default()
    }

    /// A flusher that ends without `take` returning `None` (its task was cancelled or
    /// panicked): the next allocation must be able to start one. When it was the last, the
    /// waiting allocations fail (their senders are dropped).
    fn abandon(&self, group: &str) {
        let mut groups = lock(&self.groups);
        if let Some(g) = groups.get_mut(group) {
            g.flushers = g.flushers.saturating_sub(1);
            if g.flushers == 0 {
                groups.remove(group);
            }
        }
    }
}

/// Removes a flusher from its group's count if its task ends early.
pub(crate) struct Flushing<'a, R> {
    pub(crate) batches: &'a Batches<R>,
    pub(crate) group: &'a str,
    pub(crate) done: bool,
}

impl<R> Drop for Flushing<'_, R> {
    fn drop(&mut self) {
        if !self.done {
            self.batches.abandon(self.group);
        }
    }
}

/// Queues the allocations and waits for their numbers (in the order given).
pub(crate) async fn allocate(
    store: &RedisStore,
    group: String,
    requests: Vec<(TableKeys, String, String)>,
) -> Result<Vec<(u32, bool)>, StoreError> {
    let mut replies = Vec::with_capacity(requests.len());
    let requests = requests
        .into_iter()
        .map(|(table, key, record)| {
            let (tx, rx) = oneshot::channel();
            replies.push(rx);
            Request {
                table,
                key,
                record,
                reply: tx,
            }
        })
        .collect();
    if store.batches().push(&group, requests) {
        // A task of its own: a caller that stops waiting must not strand the others' batch.
        tokio::spawn(flush(store.handle(), group));
    }
    let mut out = Vec::with_capacity(replies.len());
    for rx in replies {
        let r = rx.await.map_err(|_| {
            StoreError::Backend("redis allocation batch ended without an answer".into())
        })?;
        out.push(r?);
    }
    Ok(out)
}

/// Sends the batches of `group` until none waits.
async fn flush(store: RedisStore, group: String) {
    let mut guard = Flushing {
        batches: store.batches(),
        group: &group,
        done: false,
    };
    let max = store.settings().allocate_batch;
    while let Some(batch) = store.batches().take(&group, max) {
        match run(&store, &batch).await {
            Ok(numbers) => {
                for (req, n) in batch.into_iter().zip(numbers) {
                    let _ = req.reply.send(Ok(n));
                }
            }
            Err(e) => {
                // Redis (or this slot's node) cannot serve now: the allocations queued behind
                // the batch fail with it rather than each wait for a time-out of its own.
                // Nothing was sent for them, so nothing was recorded.
                let queued = if matches!(e, StoreError::Unavailable(_)) {
                    store.batches().drain(&group)
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

/// One `ALLOCATE_MANY` call for `batch`: its numbers in order.
async fn run(store: &RedisStore, batch: &[Request]) -> Result<Vec<(u32, bool)>, StoreError> {
    // The tables in order of first use; each allocation names its table by index.
    let mut tables: Vec<&TableKeys> = Vec::new();
    let mut index = Vec::with_capacity(batch.len());
    for req in batch {
        let i = match tables.iter().position(|t| t.num == req.table.num) {
            Some(i) => i,
            None => {
                tables.push(&req.table);
                tables.len() - 1
            }
        };
        index.push(i);
    }
    let acked = store.settings().replica_acks() > 0;
    let ttl = store.idle_ttl_ms();
    // A retry after a lost reply finds the keys numbered: the same numbers, not new.
    let flat: Vec<i64> = store
        .retrying(|mut c, _| {
            let mut inv = store.scripts().allocate_many.prepare_invoke();
            for t in &tables {
                inv.key(&t.num).key(&t.byn).key(&t.ctr).key(&t.owner);
            }
            inv.arg(ttl).arg(if acked { "1" } else { "0" });
            for (req, i) in batch.iter().zip(&index) {
                inv.arg(*i).arg(&req.key).arg(&req.record);
            }
            async move { inv.invoke_async(&mut c).await }
        })
        .await?;
    if flat.len() != batch.len() * 2 {
        return Err(StoreError::Backend(format!(
            "redis allocation batch: {} answers for {} allocations",
            flat.len() / 2,
            batch.len()
        )));
    }
    flat.chunks_exact(2)
        .map(|p| match u32::try_from(p[0]) {
            Ok(n) => Ok((n, p[1] == 1)),
            Err(_) => Err(StoreError::Backend(format!(
                "redis allocation batch: number {} out of range",
                p[0]
            ))),
        })
        .collect()
}
