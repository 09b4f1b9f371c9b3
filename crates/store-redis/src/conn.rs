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
    AsyncConnectionConfig, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, ServerErrorKind,
    Value,
};

use crate::settings::{RedisSettings, Target};

/// One connection of either kind.
#[derive(Clone)]
pub(crate) enum Conn {
    /// Standalone: reconnects by itself after an I/O error.
    Managed(ConnectionManager),
    /// Standalone, dedicated to blocking reads.
    Plain(MultiplexedConnection),
    /// Cluster: routes each command by its key's slot and reconnects by itself.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Managed(c) => c.req_packed_command(cmd),
            Conn::Plain(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Managed(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Plain(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Managed(c) => c.get_db(),
            Conn::Plain(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
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
                Ok(Conn::Managed(ConnectionManager::new_lazy_with_config(
                    (**c).clone(),
                    config,
                )?))
            }
            Client::Cluster(c) => Ok(Conn::Cluster(c.get_async_connection().await?)),
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
                Ok(Conn::Plain(
                    c.get_multiplexed_async_connection_with_config(&config)
                        .await?,
                ))
            }
            Client::Cluster(c) => Ok(Conn::Cluster(c.get_async_connection().await?)),
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
