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

use citeflow_store::StoreError;
use tokio::sync::oneshot;

use super::{AllocationRequest as Request, RedisStore};
use crate::batch::Flushing;
use crate::keys::TableKeys;

impl RedisStore {
    /// The allocation batch a table's allocations join: one per store standalone, one per
    /// table (one slot) on a Cluster.
    pub(super) fn batch_group(&self, t: &TableKeys) -> String {
        if self.inner.settings.is_cluster() {
            t.num.clone()
        } else {
            String::new()
        }
    }

    /// Queues the allocations (table, key, record) and waits for their numbers (in the order
    /// given).
    pub(super) async fn allocate_batched(
        &self,
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
        if self.inner.batches.push(&group, requests) {
            // A task of its own: a caller that stops waiting must not strand the others' batch.
            let store = RedisStore {
                inner: self.inner.clone(),
            };
            tokio::spawn(flush(store, group));
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
}

/// Sends the batches of `group` until none waits.
async fn flush(store: RedisStore, group: String) {
    let mut guard = Flushing {
        batches: &store.inner.batches,
        group: &group,
        done: false,
    };
    let max = store.inner.settings.allocate_batch;
    while let Some(batch) = store.inner.batches.take(&group, max) {
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
                    store.inner.batches.drain(&group)
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
    let acked = store.inner.settings.replica_acks() > 0;
    let ttl = store.ttl();
    // A retry after a lost reply finds the keys numbered: the same numbers, not new.
    let flat: Vec<i64> = store
        .retrying(|mut c, _| {
            let mut inv = store.inner.scripts.allocate_many.prepare_invoke();
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
