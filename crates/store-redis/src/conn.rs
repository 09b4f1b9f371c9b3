//! Connections: a shared, self-reconnecting one for every request, and dedicated ones for
//! `XREAD BLOCK` (a blocking command would stall a shared connection).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use citeflow_store::StoreError;
use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{
    AsyncConnectionConfig, Cmd, ErrorKind, FromRedisValue, Pipeline, RedisError, RedisFuture,
    RedisResult, ServerErrorKind, Value,
};

use crate::settings::{RedisSettings, Target};

/// One connection of either kind.
#[derive(Clone)]
enum Link {
    /// Standalone: reconnects by itself after an I/O error.
    Managed(ConnectionManager),
    /// Standalone, dedicated to blocking reads.
    Plain(MultiplexedConnection),
    /// Cluster: routes each command by its key's slot and reconnects by itself.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Managed(c) => c.req_packed_command(cmd),
            Link::Plain(c) => c.req_packed_command(cmd),
            Link::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Link::Managed(c) => c.req_packed_commands(cmd, offset, count),
            Link::Plain(c) => c.req_packed_commands(cmd, offset, count),
            Link::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Managed(c) => c.get_db(),
            Link::Plain(c) => c.get_db(),
            Link::Cluster(c) => c.get_db(),
        }
    }
}

/// A connection. Scripts (`EVALSHA`, the store's only writes that matter) sent through it
/// wait for replica acknowledgements when the settings ask for them
/// ([`RedisSettings::with_replica_acks`]).
#[derive(Clone)]
pub(crate) struct Conn {
    link: Link,
    acks: Option<Arc<Acks>>,
}

/// What scripts wait for, and the `WAIT`s under way, shared by the clones of a connection.
struct Acks {
    /// Replicas that must acknowledge a script.
    want: u64,
    timeout_ms: u64,
    /// One group per node, named by the replicas its `ROLE` lists (a replica has one master).
    groups: Mutex<HashMap<Vec<u8>, Arc<AckGroup>>>,
}

/// Group commit of the `WAIT`s of one node: `WAIT` waits for every write sent before it on the
/// connection (one per node), so one `WAIT` sent after a script returned covers that script,
/// whoever sent it. A script that returns while a `WAIT` is under way needs the next one,
/// which the first of those waiting sends when the current one is done. (A `WAIT` blocks its
/// connection until the replicas answer: one per write would make every write of the node
/// wait for the one before.)
#[derive(Default)]
struct AckGroup {
    state: Mutex<GroupState>,
    done: tokio::sync::Notify,
}

#[derive(Default)]
struct GroupState {
    /// The number of the next `WAIT` to send (the first is 1).
    next: u64,
    /// Whether a `WAIT` is under way.
    in_flight: bool,
    /// The last `WAIT` done: its number and what it answered (replicas, or an error).
    last: Option<(u64, Result<i64, String>)>,
}

impl Conn {
    fn new(link: Link, settings: &RedisSettings) -> Conn {
        let want = settings.replica_acks();
        Conn {
            link,
            acks: (want > 0).then(|| {
                Arc::new(Acks {
                    want,
                    // Below the request time-out, so that a missing acknowledgement is told.
                    timeout_ms: settings
                        .replica_ack_timeout_ms
                        .min(settings.timeout_ms / 2)
                        .max(1),
                    groups: Mutex::new(HashMap::new()),
                })
            }),
        }
    }

    /// Whether commands are routed by slot (a pipeline must then stay in one slot).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }
}

/// The replicas a `ROLE` reply lists, as one name (their addresses), and how many they are
/// (none for a replica or an unreadable reply).
fn connected_replicas(role: &Value) -> (u64, Vec<u8>) {
    let replicas = match role {
        Value::Array(parts) => match parts.as_slice() {
            [Value::BulkString(kind), _, Value::Array(replicas)] if kind == b"master" => replicas,
            _ => return (0, Vec::new()),
        },
        _ => return (0, Vec::new()),
    };
    let mut name = Vec::new();
    for r in replicas {
        if let Value::Array(fields) = r {
            for f in fields.iter().take(2) {
                if let Value::BulkString(b) = f {
                    name.extend_from_slice(b);
                }
                name.push(b':');
            }
        }
        name.push(b',');
    }
    (replicas.len() as u64, name)
}

/// Clears a group's `WAIT` under way if its sender is dropped before it is done, so that a
/// waiting script sends the next one.
struct Leading<'a> {
    group: &'a AckGroup,
    finished: bool,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.finished {
            lock(&self.group.state).in_flight = false;
            self.group.done.notify_waiters();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many replicas acknowledged a `WAIT` sent after this call, for `need` of them, on the
/// node of `key`: the group's next `WAIT`, sent here or by another script on the node.
async fn replicas_after(
    link: &mut Link,
    group: &AckGroup,
    key: &[u8],
    need: u64,
    timeout_ms: u64,
) -> RedisResult<i64> {
    // Every `WAIT` numbered from here on is sent after our script returned.
    let covering = lock(&group.state).next.max(1);
    loop {
        let done = group.done.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        let lead = {
            let mut st = lock(&group.state);
            match &st.last {
                Some((n, r)) if *n >= covering => {
                    return r
                        .clone()
                        .map_err(|e| RedisError::from(std::io::Error::other(e)));
                }
                _ if !st.in_flight => {
                    st.in_flight = true;
                    st.next = st.next.max(1);
                    let n = st.next;
                    st.next += 1;
                    Some(n)
                }
                _ => None,
            }
        };
        let Some(n) = lead else {
            done.await;
            continue;
        };
        let mut leading = Leading {
            group,
            finished: false,
        };
        // `EXISTS key` routes the pipeline (and so `WAIT`) to the key's node.
        let mut wait = redis::pipe();
        wait.cmd("EXISTS")
            .arg(key)
            .ignore()
            .cmd("WAIT")
            .arg(need)
            .arg(timeout_ms);
        let r = link
            .req_packed_commands(&wait, 1, 1)
            .await
            .and_then(|v| match v.first() {
                Some(Value::Int(acks)) => Ok(*acks),
                other => Err(RedisError::from((
                    ErrorKind::Server(ServerErrorKind::TryAgain),
                    "unexpected WAIT reply",
                    format!("{other:?}"),
                ))),
            });
        {
            let mut st = lock(&group.state);
            st.in_flight = false;
            st.last = Some((n, r.as_ref().map(|a| *a).map_err(|e| e.to_string())));
        }
        leading.finished = true;
        group.done.notify_waiters();
        return r;
    }
}

/// Runs a script, then, if the node that ran it has replicas, waits until `want` of them (at
/// most as many as it has) acknowledged it. The script's reply is returned as it is (a server
/// error in it, such as `NOSCRIPT`, is for the caller); a missing acknowledgement is a
/// `TRYAGAIN` error.
async fn acked_script(link: &mut Link, acks: &Acks, cmd: &Cmd) -> RedisResult<Value> {
    let mut first = redis::pipe();
    first.add_command(cmd.clone()).cmd("ROLE");
    let mut replies = link.req_packed_commands(&first, 0, 2).await?;
    let role = replies.pop().unwrap_or(Value::Nil);
    let reply = replies.pop().unwrap_or(Value::Nil);
    if matches!(reply, Value::ServerError(_)) {
        return Ok(reply);
    }
    let (replicas, node) = connected_replicas(&role);
    let need = acks.want.min(replicas);
    // `EVALSHA sha numkeys key…`: the first key names the node that ran the script.
    let key = match cmd.args_iter().nth(3) {
        Some(redis::Arg::Simple(k)) if need > 0 => k.to_vec(),
        _ => return Ok(reply),
    };
    let group = lock(&acks.groups).entry(node).or_default().clone();
    let got = replicas_after(link, &group, &key, need, acks.timeout_ms).await?;
    if got >= 0 && got as u64 >= need {
        Ok(reply)
    } else {
        Err(RedisError::from((
            ErrorKind::Server(ServerErrorKind::TryAgain),
            "write not acknowledged by enough replicas",
            format!(
                "{need} wanted within {} ms, {got} answered",
                acks.timeout_ms
            ),
        )))
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &self.acks {
            Some(acks)
                if cmd
                    .args_iter()
                    .next()
                    .is_some_and(|a| matches!(a, redis::Arg::Simple(b"EVALSHA"))) =>
            {
                let acks = acks.clone();
                Box::pin(async move { acked_script(&mut self.link, &acks, cmd).await })
            }
            _ => self.link.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        self.link.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}

/// Runs commands that may touch keys of different slots: one pipeline on a standalone
/// server, concurrent single commands on a Cluster (a Cluster pipeline must stay in one slot).
pub(crate) async fn query_each<T: FromRedisValue>(
    conn: &Conn,
    cmds: &[Cmd],
) -> RedisResult<Vec<T>> {
    if conn.is_cluster() {
        futures_util::future::try_join_all(cmds.iter().map(|cmd| {
            let mut c = conn.clone();
            async move { cmd.query_async(&mut c).await }
        }))
        .await
    } else {
        let mut pipe = redis::pipe();
        for cmd in cmds {
            pipe.add_command(cmd.clone());
        }
        pipe.query_async(&mut conn.clone()).await
    }
}

/// The driver's client for the configured target.
#[derive(Clone)]
pub(crate) enum Client {
    Single(Box<redis::Client>),
    Cluster(Box<ClusterClient>),
}

impl Client {
    pub(crate) fn new(settings: &RedisSettings) -> Result<Self, StoreError> {
        let bad = |e: RedisError| {
            StoreError::Backend(format!("redis url {:?}: {e}", settings.display_url()))
        };
        #[cfg(feature = "tls")]
        {
            // rustls needs a process-wide crypto provider; another crate may have set one.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let timeout = Duration::from_millis(settings.timeout_ms);
        Ok(match &settings.target {
            Target::Single(url) => {
                Client::Single(Box::new(redis::Client::open(url.as_str()).map_err(bad)?))
            }
            Target::Cluster(nodes) => Client::Cluster(Box::new(
                ClusterClient::builder(nodes.iter().map(String::as_str))
                    .connection_timeout(timeout)
                    .response_timeout(timeout)
                    .retries(2)
                    .build()
                    .map_err(bad)?,
            )),
        })
    }

    /// The shared connection (lazy for a standalone server: it connects on first use and
    /// reconnects after failures).
    pub(crate) async fn shared(&self, settings: &RedisSettings) -> Result<Conn, RedisError> {
        let timeout = Duration::from_millis(settings.timeout_ms);
        match self {
            Client::Single(c) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout))
                    .set_number_of_retries(1)
                    .set_min_delay(Duration::from_millis(50))
                    .set_max_delay(Duration::from_millis(500));
                let link = Link::Managed(ConnectionManager::new_lazy_with_config(
                    (**c).clone(),
                    config,
                )?);
                Ok(Conn::new(link, settings))
            }
            Client::Cluster(c) => Ok(Conn::new(
                Link::Cluster(c.get_async_connection().await?),
                settings,
            )),
        }
    }

    /// A connection for one blocking read at a time.
    pub(crate) async fn dedicated(&self, settings: &RedisSettings) -> Result<Conn, RedisError> {
        let timeout = Duration::from_millis(settings.timeout_ms);
        match self {
            Client::Single(c) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout + Duration::from_millis(settings.block_ms)));
                let link = Link::Plain(
                    c.get_multiplexed_async_connection_with_config(&config)
                        .await?,
                );
                Ok(Conn::new(link, settings))
            }
            Client::Cluster(c) => Ok(Conn::new(
                Link::Cluster(c.get_async_connection().await?),
                settings,
            )),
        }
    }
}

/// Whether an error means Redis cannot be reached or cannot serve now (retry later): among
/// them a server past its `maxmemory` (error code `OOM`) and a replica or a demoted
/// primary (`READONLY`).
pub(crate) fn is_unavailable(e: &RedisError) -> bool {
    e.code() == Some("OOM")
        || e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_cluster_error()
        || matches!(
            e.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                )
        )
}

/// The store error of a driver error, naming the server.
pub(crate) fn store_error(display: &str, e: &RedisError) -> StoreError {
    if is_unavailable(e) {
        StoreError::Unavailable(format!("redis at {display} cannot serve now: {e}"))
    } else {
        StoreError::Backend(format!("redis at {display} failed: {e}"))
    }
}
