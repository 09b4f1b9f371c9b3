//! [`RedisStore`]: its state, the connection and the [`Store`] methods. The parts that are
//! concerns of their own are child modules that add methods to its types and use its private
//! state directly: `allocate` (the allocation batches), `append` (the append script and its
//! batches), `lease` (the lease, its heartbeat and `running_streams`) and `tail` (reading a
//! stream's log and waiting for its next event).

mod allocate;
mod append;
mod lease;
mod tail;

use std::collections::HashSet;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use citeflow_core::{NumberEntry, Numbering, Source, Sources};
use citeflow_store::{
    decode_record, encode_record, Allocation, NumberScope, SessionRecord, Store, StoreError,
    StoredEvent, StreamRecord, StreamSignals, StreamStatus,
};
use redis::{Cmd, RedisError, Value};
use tokio::sync::oneshot;

use crate::batch::Batches;
use crate::conn::{query_each, store_error, Client, Conn};
use crate::keys::{Keys, TableKeys};
use crate::scripts::Scripts;
use crate::settings::RedisSettings;

/// A [`Store`] in Redis (standalone, TLS or Cluster), shared by every server that points at
/// the same Redis.
///
/// Create it with [`RedisStore::open`] (a URL) or [`RedisStore::new`] (a
/// [`RedisSettings`]); it connects on first use, inside a Tokio runtime, and reconnects by
/// itself after Redis comes back. A request made while Redis cannot be reached fails with
/// [`StoreError::Unavailable`].
///
/// Each store holds a lease (`P:lease:NAME`, renewed by a heartbeat task) so that
/// [`Store::running_streams`] can leave out the streams another live server is generating.
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    settings: RedisSettings,
    keys: Keys,
    client: Client,
    conn: tokio::sync::OnceCell<Conn>,
    blocking: Mutex<Vec<Conn>>,
    blocking_open: AtomicUsize,
    scripts: Scripts,
    batches: Batches<AllocationRequest>,
    appends: Batches<AppendRequest>,
    signals: StreamSignals,
    owned: Mutex<HashSet<String>>,
    instance: String,
    epoch: String,
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// One allocation waiting for its batch (`allocate.rs`).
struct AllocationRequest {
    table: TableKeys,
    key: String,
    /// `[key, source_id]` as JSON.
    record: String,
    reply: oneshot::Sender<Result<(u32, bool), StoreError>>,
}

/// One `append_events` call waiting for its batch (standalone only; `append.rs`).
struct AppendRequest {
    keys: [String; 5],
    events: Vec<StoredEvent>,
    reply: oneshot::Sender<Result<Vec<String>, StoreError>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(h) = self
            .heartbeat
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            h.abort();
        }
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.inner.settings.display_url())
            .field("instance", &self.inner.instance)
            .finish_non_exhaustive()
    }
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        buf.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (t >> (i % 16 * 8)) as u8 ^ (std::process::id() as u8));
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

fn number<T: std::str::FromStr>(what: &str, s: Option<&str>) -> Result<T, StoreError> {
    s.and_then(|s| s.parse().ok())
        .ok_or_else(|| StoreError::Backend(format!("stored {what} {s:?} is not a number")))
}

fn status_of(name: &str) -> Result<StreamStatus, StoreError> {
    StreamStatus::from_name(name)
        .ok_or_else(|| StoreError::Backend(format!("unknown stream status {name:?}")))
}

impl RedisStore {
    /// A store for this URL (see [`RedisSettings::from_url`]). It connects on first use.
    ///
    /// # Errors
    /// [`StoreError::Backend`] naming the URL when it cannot be used.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let settings =
            RedisSettings::from_url(url).map_err(|e| StoreError::Backend(e.to_string()))?;
        RedisStore::new(settings)
    }

    /// A store with these settings. It connects on first use.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the driver rejects the settings.
    pub fn new(settings: RedisSettings) -> Result<Self, StoreError> {
        let client = Client::new(&settings)?;
        let instance = settings.instance.clone().unwrap_or_else(|| random_hex(8));
        Ok(RedisStore {
            inner: Arc::new(Inner {
                keys: Keys::new(&settings.prefix),
                settings,
                client,
                conn: tokio::sync::OnceCell::new(),
                blocking: Mutex::new(Vec::new()),
                blocking_open: AtomicUsize::new(0),
                scripts: Scripts::new(),
                batches: Default::default(),
                appends: Default::default(),
                signals: StreamSignals::new(),
                owned: Mutex::new(HashSet::new()),
                instance,
                epoch: random_hex(8),
                heartbeat: Mutex::new(None),
            }),
        })
    }

    /// Connects now and checks Redis answers (`PING`).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when Redis cannot be reached.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut c = self.conn().await?;
        let _: String = redis::cmd("PING")
            .query_async(&mut c)
            .await
            .map_err(|e| self.err(&e))?;
        Ok(())
    }

    /// This server's name among those sharing the Redis (its lease key's suffix).
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// The settings.
    pub fn settings(&self) -> &RedisSettings {
        &self.inner.settings
    }

    fn err(&self, e: &RedisError) -> StoreError {
        store_error(self.inner.settings.display_url(), e)
    }

    fn ttl(&self) -> u64 {
        self.inner.settings.idle_ttl_ms
    }

    /// The shared connection; the first call also takes the lease and starts the heartbeat.
    async fn conn(&self) -> Result<Conn, StoreError> {
        let inner = &self.inner;
        let c = inner
            .conn
            .get_or_try_init(|| async {
                let mut c = inner
                    .client
                    .shared(&inner.settings)
                    .await
                    .map_err(|e| self.err(&e))?;
                inner.renew_lease(&mut c).await.map_err(|e| self.err(&e))?;
                let weak = Arc::downgrade(&self.inner);
                let handle = tokio::spawn(Inner::heartbeat(weak, c.clone()));
                *inner.heartbeat.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
                Ok::<_, StoreError>(c)
            })
            .await?;
        Ok(c.clone())
    }

    /// Runs an idempotent request; when the connection turns out to be broken (Redis came
    /// back, the connection did not), runs it once more on the new one, with `true`.
    async fn retrying<T, F, Fut>(&self, mut f: F) -> Result<T, StoreError>
    where
        F: FnMut(Conn, bool) -> Fut,
        Fut: std::future::Future<Output = Result<T, RedisError>>,
    {
        let c = self.conn().await?;
        match f(c, false).await {
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                tracing::debug!(error = %e, "redis connection dropped, retrying once");
                let c = self.conn().await?;
                f(c, true).await.map_err(|e| self.err(&e))
            }
            r => r.map_err(|e| self.err(&e)),
        }
    }

    async fn query<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> Result<T, StoreError> {
        self.retrying(|mut c, _| async move { cmd.query_async(&mut c).await })
            .await
    }

    /// Updates an index (a hint); a failure is logged, the TTL still expires the record.
    async fn hint(&self, cmd: Cmd) {
        if let Err(e) = self.query::<Value>(&cmd).await {
            tracing::warn!(error = %e, "redis index update failed");
        }
    }

    fn is_owned(&self, stream_id: &str) -> bool {
        self.inner
            .owned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(stream_id)
    }

    fn set_owned(&self, stream_id: &str, owned: bool) {
        let mut set = self.inner.owned.lock().unwrap_or_else(|e| e.into_inner());
        if owned {
            set.insert(stream_id.to_owned());
        } else {
            set.remove(stream_id);
        }
    }

    async fn read_session(&self, id: &str) -> Result<(SessionRecord, String), StoreError> {
        let row: Vec<Option<String>> = self
            .query(redis::cmd("HMGET").arg(self.inner.keys.session(id)).arg(&[
                "owner",
                "sources",
                "created_ms",
                "last_used_ms",
                "ver",
            ]))
            .await?;
        let [Some(owner), Some(sources), created, last, ver] = row.as_slice() else {
            return Err(StoreError::not_found("session", id));
        };
        let sources: Sources = decode_record(sources)?;
        Ok((
            SessionRecord {
                id: id.to_owned(),
                owner: owner.clone(),
                sources,
                created_ms: number("created_ms", created.as_deref())?,
                last_used_ms: number("last_used_ms", last.as_deref())?,
            },
            ver.clone().unwrap_or_else(|| "0".to_owned()),
        ))
    }

    /// The owner of session `id`, if it exists.
    async fn owner_of_session(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.query(
            redis::cmd("HGET")
                .arg(self.inner.keys.session(id))
                .arg("owner"),
        )
        .await
    }

    fn session_keys(&self, id: &str) -> [String; 4] {
        let t = self.inner.keys.table(&NumberScope::Session(id.to_owned()));
        [self.inner.keys.session(id), t.num, t.byn, t.ctr]
    }

    fn stream_keys(&self, id: &str) -> [String; 5] {
        let t = self.inner.keys.table(&NumberScope::Stream(id.to_owned()));
        [
            self.inner.keys.stream(id),
            self.inner.keys.log(id),
            t.num,
            t.byn,
            t.ctr,
        ]
    }
}

#[async_trait]
impl Store for RedisStore {
    /// `SET` of a key of its own (`PREFIX:probe`), expiring after a minute.
    async fn probe_write(&self, now_ms: u64) -> Result<(), StoreError> {
        let mut set = redis::cmd("SET");
        set.arg(self.inner.keys.probe())
            .arg(now_ms)
            .arg("PX")
            .arg(60_000);
        self.query::<()>(&set).await
    }

    async fn create_session(&self, session: SessionRecord) -> Result<(), StoreError> {
        let mut c = self.conn().await?;
        let ok: i64 = self
            .inner
            .scripts
            .create_session
            .key(self.inner.keys.session(&session.id))
            .arg(&session.owner)
            .arg(encode_record(&session.sources)?)
            .arg(session.created_ms)
            .arg(session.last_used_ms)
            .arg(self.ttl())
            .invoke_async(&mut c)
            .await
            .map_err(|e| self.err(&e))?;
        if ok == 0 {
            return Err(StoreError::Exists {
                what: "session",
                id: session.id,
            });
        }
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(self.inner.keys.idle_sessions())
            .arg(session.last_used_ms)
            .arg(&session.id);
        self.hint(zadd).await;
        // Counted for its owner (a set of its own, beside the session: one slot per owner).
        let counted: Result<i64, _> = self
            .inner
            .scripts
            .owner_sessions
            .key(self.inner.keys.owner_sessions(&session.owner))
            .arg(&session.id)
            .arg(self.ttl())
            .invoke_async(&mut c)
            .await;
        if let Err(e) = counted {
            tracing::warn!(error = %e, "redis: the session is not counted for its owner");
        }
        Ok(())
    }

    async fn count_sessions(&self, owner: &str) -> Result<u64, StoreError> {
        let mut c = self.conn().await?;
        let n: i64 = self
            .inner
            .scripts
            .owner_sessions
            .key(self.inner.keys.owner_sessions(owner))
            .arg("")
            .arg(self.ttl())
            .invoke_async(&mut c)
            .await
            .map_err(|e| self.err(&e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        self.read_session(id).await.map(|(s, _)| s)
    }

    async fn append_round(
        &self,
        id: &str,
        query: Option<String>,
        sources: Vec<Source>,
        now_ms: u64,
    ) -> Result<SessionRecord, StoreError> {
        let keys = self.session_keys(id);
        // Optimistic: read, add the round, write only if no other writer came in between.
        for _ in 0..32 {
            let (mut s, ver) = self.read_session(id).await?;
            s.sources.append_round(query.clone(), sources.clone())?;
            s.last_used_ms = s.last_used_ms.max(now_ms);
            let mut c = self.conn().await?;
            let mut inv = self.inner.scripts.update_sources.prepare_invoke();
            for k in &keys {
                inv.key(k);
            }
            let r: i64 = inv
                .arg(&ver)
                .arg(encode_record(&s.sources)?)
                .arg(now_ms)
                .arg(self.ttl())
                .invoke_async(&mut c)
                .await
                .map_err(|e| self.err(&e))?;
            match r {
                1 => {
                    let mut zadd = redis::cmd("ZADD");
                    zadd.arg(self.inner.keys.idle_sessions())
                        .arg("GT")
                        .arg(s.last_used_ms)
                        .arg(id);
                    self.hint(zadd).await;
                    return Ok(s);
                }
                -1 => return Err(StoreError::not_found("session", id)),
                _ => tokio::task::yield_now().await,
            }
        }
        Err(StoreError::Backend(format!(
            "session {id}: too many concurrent rounds, try again"
        )))
    }

    async fn touch_session(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        let keys = self.session_keys(id);
        let last: i64 = self
            .retrying(|mut c, _| {
                let mut inv = self.inner.scripts.touch.prepare_invoke();
                for k in &keys {
                    inv.key(k);
                }
                inv.arg(now_ms).arg(self.ttl());
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        if last < 0 {
            return Err(StoreError::not_found("session", id));
        }
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(self.inner.keys.idle_sessions())
            .arg("GT")
            .arg(last)
            .arg(id);
        self.hint(zadd).await;
        Ok(())
    }

    async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let owner = self.owner_of_session(id).await?;
        let mut c = self.conn().await?;
        let mut inv = self.inner.scripts.delete_session.prepare_invoke();
        for k in &self.session_keys(id) {
            inv.key(k);
        }
        let n: i64 = inv.invoke_async(&mut c).await.map_err(|e| self.err(&e))?;
        if n == 0 {
            return Err(StoreError::not_found("session", id));
        }
        let mut zrem = redis::cmd("ZREM");
        zrem.arg(self.inner.keys.idle_sessions()).arg(id);
        self.hint(zrem).await;
        if let Some(owner) = owner {
            let mut zrem = redis::cmd("ZREM");
            zrem.arg(self.inner.keys.owner_sessions(&owner)).arg(id);
            self.hint(zrem).await;
        }
        Ok(())
    }

    async fn allocate(
        &self,
        scope: &NumberScope,
        key: &str,
        source_id: &str,
    ) -> Result<Allocation, StoreError> {
        let t = self.inner.keys.table(scope);
        let record = encode_record(&(key, source_id))?;
        if self.inner.settings.allocate_batch > 1 {
            let group = self.batch_group(&t);
            let r = self
                .allocate_batched(group, vec![(t, key.to_owned(), record)])
                .await?;
            let (number, is_new) = r.first().copied().ok_or_else(|| {
                StoreError::Backend("redis allocation batch gave no answer".into())
            })?;
            return Ok(Allocation { number, is_new });
        }
        let acked = self.inner.settings.replica_acks() > 0;
        // A retry after a lost reply finds the key numbered: same number, `is_new` false.
        let (n, is_new): (u32, i64) = self
            .retrying(|mut c, _| {
                let mut inv = self.inner.scripts.allocate.prepare_invoke();
                inv.key(&t.num)
                    .key(&t.byn)
                    .key(&t.ctr)
                    .key(&t.owner)
                    .arg(key)
                    .arg(&record)
                    .arg(self.ttl())
                    .arg(if acked { "1" } else { "0" });
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        Ok(Allocation {
            number: n,
            is_new: is_new == 1,
        })
    }

    async fn allocate_many(
        &self,
        scope: &NumberScope,
        keys: &[(&str, &str)],
    ) -> Result<Vec<Allocation>, StoreError> {
        if self.inner.settings.allocate_batch <= 1 {
            let mut out = Vec::with_capacity(keys.len());
            for (key, source_id) in keys {
                out.push(self.allocate(scope, key, source_id).await?);
            }
            return Ok(out);
        }
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let t = self.inner.keys.table(scope);
        let group = self.batch_group(&t);
        let requests = keys
            .iter()
            .map(|(key, source_id)| {
                Ok((
                    t.clone(),
                    (*key).to_owned(),
                    encode_record(&(key, source_id))?,
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let r = self.allocate_batched(group, requests).await?;
        Ok(r.into_iter()
            .map(|(number, is_new)| Allocation { number, is_new })
            .collect())
    }

    async fn numbering(&self, scope: &NumberScope) -> Result<Numbering, StoreError> {
        let t = self.inner.keys.table(scope);
        let rows: Vec<(u32, String)> = self.query(redis::cmd("HGETALL").arg(&t.byn)).await?;
        let mut entries = rows
            .into_iter()
            .map(|(number, rec)| {
                let (key, source_id): (String, String) = decode_record(&rec)?;
                Ok(NumberEntry {
                    number,
                    key,
                    source_id,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        entries.sort_by_key(|e| e.number);
        Numbering::from_entries(entries)
            .map_err(|e| StoreError::Backend(format!("stored numbering: {e}")))
    }

    async fn create_stream(&self, stream: StreamRecord) -> Result<(), StoreError> {
        let running = stream.status == StreamStatus::Running;
        if running {
            // The index first: an entry without a stream is skipped on read, a running stream
            // missing from it would never be recovered.
            self.query::<Value>(
                redis::cmd("ZADD")
                    .arg(self.inner.keys.running())
                    .arg(stream.created_ms)
                    .arg(&stream.id),
            )
            .await?;
        }
        let mut c = self.conn().await?;
        let ok: i64 = self
            .inner
            .scripts
            .create_stream
            .key(self.inner.keys.stream(&stream.id))
            .arg(&stream.owner)
            .arg(stream.session_id.as_deref().unwrap_or(""))
            .arg(stream.status.as_str())
            .arg(stream.created_ms)
            .arg(&self.inner.instance)
            .arg(&self.inner.epoch)
            .arg(self.ttl())
            .arg(if stream.session_id.is_some() {
                "1"
            } else {
                "0"
            })
            .invoke_async(&mut c)
            .await
            .map_err(|e| self.err(&e))?;
        if ok == 0 {
            return Err(StoreError::Exists {
                what: "stream",
                id: stream.id,
            });
        }
        if running {
            self.set_owned(&stream.id, true);
        } else {
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(self.inner.keys.idle_streams())
                .arg(stream.created_ms)
                .arg(&stream.id);
            self.hint(zadd).await;
        }
        Ok(())
    }

    async fn stream(&self, id: &str) -> Result<StreamRecord, StoreError> {
        let row: Vec<Option<String>> = self
            .query(redis::cmd("HMGET").arg(self.inner.keys.stream(id)).arg(&[
                "owner",
                "session_id",
                "status",
                "created_ms",
            ]))
            .await?;
        let [Some(owner), session_id, Some(status), created] = row.as_slice() else {
            return Err(StoreError::not_found("stream", id));
        };
        Ok(StreamRecord {
            id: id.to_owned(),
            owner: owner.clone(),
            session_id: session_id.clone(),
            status: status_of(status)?,
            created_ms: number("created_ms", created.as_deref())?,
        })
    }

    async fn append_events(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), StoreError> {
        self.append_to_log(stream_id, events).await?;
        self.inner.signals.notify(stream_id);
        Ok(())
    }

    async fn finish_stream(&self, stream_id: &str, status: StreamStatus) -> Result<(), StoreError> {
        let keys = self.stream_keys(stream_id);
        let r: Vec<String> = self
            .retrying(|mut c, _| {
                let mut inv = self.inner.scripts.finish.prepare_invoke();
                for k in &keys {
                    inv.key(k);
                }
                inv.arg(status.as_str()).arg(self.ttl());
                async move { inv.invoke_async(&mut c).await }
            })
            .await?;
        let created = match r.as_slice() {
            [ok, created] if ok == "ok" => created.clone(),
            _ => return Err(StoreError::not_found("stream", stream_id)),
        };
        if status.is_finished() {
            // Two index keys in two slots: one pipeline standalone, two commands on a Cluster.
            let cmds = [
                redis::cmd("ZREM")
                    .arg(self.inner.keys.running())
                    .arg(stream_id)
                    .clone(),
                redis::cmd("ZADD")
                    .arg(self.inner.keys.idle_streams())
                    .arg(created)
                    .arg(stream_id)
                    .clone(),
            ];
            let cmds = &cmds;
            let r = self
                .retrying(|c, _| async move { query_each::<Value>(&c, cmds).await })
                .await;
            if let Err(e) = r {
                tracing::warn!(error = %e, "redis index update failed");
            }
            self.set_owned(stream_id, false);
            self.inner.signals.close(stream_id);
        }
        Ok(())
    }

    async fn events_after(
        &self,
        stream_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.log_page(stream_id, after, limit).await
    }

    async fn wait_for_events(&self, stream_id: &str, after: u64) -> Result<(), StoreError> {
        self.wait_past(stream_id, after).await
    }

    async fn running_streams(&self) -> Result<Vec<String>, StoreError> {
        self.list_running().await
    }

    async fn purge_idle(&self, idle_before_ms: u64) -> Result<u64, StoreError> {
        let mut deleted = 0;
        for (index, is_session) in [
            (self.inner.keys.idle_sessions(), true),
            (self.inner.keys.idle_streams(), false),
        ] {
            let ids: Vec<String> = self
                .query(
                    redis::cmd("ZRANGEBYSCORE")
                        .arg(&index)
                        .arg("-inf")
                        .arg(format!("({idle_before_ms}")),
                )
                .await?;
            for id in ids {
                let owner = if is_session {
                    self.owner_of_session(&id).await?
                } else {
                    None
                };
                let mut c = self.conn().await?;
                let r: i64 = if is_session {
                    let mut inv = self.inner.scripts.purge_session.prepare_invoke();
                    for k in &self.session_keys(&id) {
                        inv.key(k);
                    }
                    inv.arg(idle_before_ms).invoke_async(&mut c).await
                } else {
                    let mut inv = self.inner.scripts.purge_stream.prepare_invoke();
                    for k in &self.stream_keys(&id) {
                        inv.key(k);
                    }
                    inv.arg(idle_before_ms).invoke_async(&mut c).await
                }
                .map_err(|e| self.err(&e))?;
                let fix = if r >= 0 {
                    // Used since: keep, with its true score.
                    redis::cmd("ZADD").arg(&index).arg(r).arg(&id).clone()
                } else {
                    if r == -2 {
                        deleted += 1;
                        if let Some(owner) = &owner {
                            let mut zrem = redis::cmd("ZREM");
                            zrem.arg(self.inner.keys.owner_sessions(owner)).arg(&id);
                            self.hint(zrem).await;
                        }
                    }
                    redis::cmd("ZREM").arg(&index).arg(&id).clone()
                };
                self.hint(fix).await;
            }
        }
        Ok(deleted)
    }
}
