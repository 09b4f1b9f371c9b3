//! Connections: a shared, self-reconnecting one for every request, and dedicated ones for
//! `XREAD BLOCK` (a blocking command would stall a shared connection).

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
    /// Replicas that must acknowledge a script, and for how long to wait, in ms.
    acks: Option<(u64, u64)>,
}

impl Conn {
    fn new(link: Link, settings: &RedisSettings) -> Conn {
        let n = settings.replica_acks();
        Conn {
            link,
            acks: (n > 0).then_some((n, settings.replica_ack_timeout_ms)),
        }
    }

    /// Whether commands are routed by slot (a pipeline must then stay in one slot).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }
}

/// The number of replicas a `ROLE` reply lists (0 for a replica or an unreadable reply).
fn connected_replicas(role: &Value) -> u64 {
    match role {
        Value::Array(parts) => match parts.as_slice() {
            [Value::BulkString(kind), _, Value::Array(replicas)] if kind == b"master" => {
                replicas.len() as u64
            }
            _ => 0,
        },
        _ => 0,
    }
}

/// Runs a script, then, if the node that ran it has replicas, `WAIT`s for `want` of them
/// (at most as many as it has) on the same node. The script's reply is returned as it is
/// (a server error in it, such as `NOSCRIPT`, is for the caller); a missing acknowledgement
/// is a `TRYAGAIN` error.
async fn acked_script(
    link: &mut Link,
    cmd: &Cmd,
    want: u64,
    timeout_ms: u64,
) -> RedisResult<Value> {
    let mut first = redis::pipe();
    first.add_command(cmd.clone()).cmd("ROLE");
    let mut replies = link.req_packed_commands(&first, 0, 2).await?;
    let role = replies.pop().unwrap_or(Value::Nil);
    let reply = replies.pop().unwrap_or(Value::Nil);
    if matches!(reply, Value::ServerError(_)) {
        return Ok(reply);
    }
    let need = want.min(connected_replicas(&role));
    if need == 0 {
        return Ok(reply);
    }
    // `EVALSHA sha numkeys key…`: the first key routes `WAIT` to the node that ran the script.
    let key = cmd.args_iter().nth(3).and_then(|a| match a {
        redis::Arg::Simple(k) => Some(k.to_vec()),
        _ => None,
    });
    let mut wait = redis::pipe();
    if let Some(k) = &key {
        wait.cmd("EXISTS").arg(k.as_slice()).ignore();
    }
    wait.cmd("WAIT").arg(need).arg(timeout_ms);
    let skip = usize::from(key.is_some());
    let acks = link.req_packed_commands(&wait, skip, 1).await?;
    match acks.first() {
        Some(Value::Int(n)) if *n >= 0 && *n as u64 >= need => Ok(reply),
        other => Err(RedisError::from((
            ErrorKind::Server(ServerErrorKind::TryAgain),
            "write not acknowledged by enough replicas",
            format!("{need} wanted within {timeout_ms} ms, got {other:?}"),
        ))),
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self.acks {
            Some((want, timeout_ms))
                if cmd
                    .args_iter()
                    .next()
                    .is_some_and(|a| matches!(a, redis::Arg::Simple(b"EVALSHA"))) =>
            {
                Box::pin(acked_script(&mut self.link, cmd, want, timeout_ms))
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

/// Whether an error means Redis cannot be reached or cannot serve now (retry later).
pub(crate) fn is_unavailable(e: &RedisError) -> bool {
    e.is_io_error()
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
        StoreError::Unavailable(format!("redis at {display} is unreachable: {e}"))
    } else {
        StoreError::Backend(format!("redis at {display} failed: {e}"))
    }
}
