//! Which running streams are interrupted when several servers share one Redis.
//!
//! Each store writes a lease `P:lease:NAME` holding a random epoch, with a TTL (15 s by
//! default) that a heartbeat task renews every third of it. A stream records the `server`
//! name and `epoch` of the store that created it. [`Store::running_streams`] lists a running
//! stream unless another live process generates it: its owner's lease exists and still holds
//! the stream's epoch, and that owner is not this store. So a server restarted under the same
//! name (see `RedisSettings::with_instance`) finds its old streams at once (the lease now
//! holds its new epoch), and the streams of a crashed server turn up once its lease expired.
//!
//! [`Store::running_streams`]: citeflow_store::Store::running_streams

use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

use citeflow_store::StoreError;
use redis::{RedisError, Value};

use super::{Inner, RedisStore};
use crate::conn::{query_each, Conn};

/// How many streams one pipeline checks.
const BATCH: usize = 512;

impl Inner {
    /// Writes this store's lease: its epoch, expiring after the lease time.
    pub(super) async fn renew_lease(&self, c: &mut Conn) -> Result<(), RedisError> {
        redis::cmd("SET")
            .arg(self.keys.lease(&self.instance))
            .arg(&self.epoch)
            .arg("PX")
            .arg(self.settings.lease_ms)
            .query_async::<Value>(c)
            .await
            .map(|_| ())
    }

    /// Renews the lease every third of its time until the store is dropped.
    pub(super) async fn heartbeat(inner: Weak<Inner>, mut c: Conn) {
        loop {
            let every = match inner.upgrade() {
                Some(i) => Duration::from_millis(i.settings.lease_ms / 3),
                None => return,
            };
            tokio::time::sleep(every).await;
            let Some(i) = inner.upgrade() else { return };
            if let Err(e) = i.renew_lease(&mut c).await {
                tracing::warn!(error = %e, instance = %i.instance, "cannot renew the redis lease");
            }
        }
    }
}

impl RedisStore {
    /// `Store::running_streams`: the running streams no other live server generates (see the
    /// module docs).
    pub(super) async fn list_running(&self) -> Result<Vec<String>, StoreError> {
        let mut c = self.conn().await?;
        let err = |e: redis::RedisError| self.err(&e);
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.inner.keys.running())
            .arg(0)
            .arg(-1)
            .query_async(&mut c)
            .await
            .map_err(err)?;
        let (me, my_epoch) = (self.inner.instance.as_str(), self.inner.epoch.as_str());
        let mut out = Vec::new();
        let mut stale = Vec::new();
        for chunk in ids.chunks(BATCH) {
            let reads: Vec<redis::Cmd> = chunk
                .iter()
                .map(|id| {
                    redis::cmd("HMGET")
                        .arg(self.inner.keys.stream(id))
                        .arg(&["status", "server", "epoch"])
                        .clone()
                })
                .collect();
            let rows: Vec<Vec<Option<String>>> = query_each(&c, &reads).await.map_err(err)?;
            let mut servers: Vec<String> = rows
                .iter()
                .filter_map(|r| r.get(1).cloned().flatten())
                .collect();
            servers.sort();
            servers.dedup();
            let gets: Vec<redis::Cmd> = servers
                .iter()
                .map(|s| redis::cmd("GET").arg(self.inner.keys.lease(s)).clone())
                .collect();
            let leases: Vec<Option<String>> = query_each(&c, &gets).await.map_err(err)?;
            let leases: HashMap<&str, Option<&str>> = servers
                .iter()
                .map(String::as_str)
                .zip(leases.iter().map(Option::as_deref))
                .collect();
            for (id, row) in chunk.iter().zip(&rows) {
                let [status, server, epoch] = row.as_slice() else {
                    continue;
                };
                if status.as_deref() != Some("running") {
                    stale.push(id.clone());
                    continue;
                }
                let server = server.as_deref().unwrap_or("");
                let epoch = epoch.as_deref().unwrap_or("");
                let mine = server == me && epoch == my_epoch;
                let owner_alive = leases.get(server).copied().flatten() == Some(epoch);
                if mine || !owner_alive {
                    out.push(id.clone());
                }
            }
        }
        if !stale.is_empty() {
            // Finished or expired streams left in the index: drop them (a hint only).
            let r: Result<Value, _> = redis::cmd("ZREM")
                .arg(self.inner.keys.running())
                .arg(&stale)
                .query_async(&mut c)
                .await;
            if let Err(e) = r {
                tracing::warn!(error = %e, "redis index update failed");
            }
        }
        Ok(out)
    }
}
