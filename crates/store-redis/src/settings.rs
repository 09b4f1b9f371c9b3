//! [`RedisSettings`]: where the Redis store connects and how long it keeps records.

/// A Redis URL that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Not one of the supported schemes.
    #[error("redis url {url:?} is not supported (expected redis://, rediss://, redis+cluster://, rediss+cluster:// or a comma list of redis:// urls)")]
    Scheme {
        /// The URL (password hidden).
        url: String,
    },
    /// A `rediss://` URL in a build without the `tls` feature.
    #[error("redis url {url:?} needs tls; build citeflow-store-redis with its `tls` feature")]
    TlsDisabled {
        /// The URL (password hidden).
        url: String,
    },
    /// A citeflow option in the query string with a bad value.
    #[error("redis url option {name}={value:?} is not valid: {reason}")]
    Option {
        /// The option.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The URL is malformed (the driver's message).
    #[error("redis url {url:?} is malformed: {reason}")]
    Malformed {
        /// The URL (password hidden).
        url: String,
        /// What the driver said.
        reason: String,
    },
}

/// A standalone server or the seed nodes of a Cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// One server (or a proxy): one driver URL.
    Single(String),
    /// Redis Cluster: driver URLs of the seed nodes.
    Cluster(Vec<String>),
}

/// Where the Redis store connects and how it keys, expires and leases its records.
///
/// Build it with [`RedisSettings::from_url`], then adjust it with the `with_*` setters. The
/// URL forms:
///
/// - `redis://[user:password@]host:port[/db]`: one server (or Valkey);
/// - `rediss://…`: the same over TLS (feature `tls`, on by default);
/// - `redis+cluster://[user:password@]h1:p1,h2:p2` (or `rediss+cluster://…`): Redis Cluster
///   with these seed nodes; a plain comma list `redis://h1:p1,redis://h2:p2` means the same.
///
/// citeflow options may be given in the query string and are removed before the URL reaches
/// the driver: `idle_ttl_ms`, `prefix`, `instance`, `lease_ms`, `timeout_ms`, `replica_acks`,
/// `replica_ack_timeout_ms`, `allocate_batch`, `append_batch`, e.g.
/// `redis://127.0.0.1:6379/0?idle_ttl_ms=86400000&instance=web-1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisSettings {
    pub(crate) target: Target,
    pub(crate) display: String,
    pub(crate) idle_ttl_ms: u64,
    pub(crate) prefix: String,
    pub(crate) instance: Option<String>,
    pub(crate) lease_ms: u64,
    pub(crate) timeout_ms: u64,
    pub(crate) block_ms: u64,
    pub(crate) max_blocking_connections: usize,
    pub(crate) replica_acks: Option<u64>,
    pub(crate) replica_ack_timeout_ms: u64,
    pub(crate) allocate_batch: usize,
    pub(crate) append_batch: usize,
}

/// The most allocations one script call carries, by default.
const DEFAULT_ALLOCATE_BATCH: usize = 256;

/// The most append calls one script call carries, by default.
const DEFAULT_APPEND_BATCH: usize = 128;

/// Seven days in milliseconds.
pub const DEFAULT_IDLE_TTL_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// Hides the password of a URL for messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (auth, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match auth.rsplit_once('@') {
        Some((user, hosts)) => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{scheme}://{user}:***@{hosts}{tail}")
        }
        None => url.to_owned(),
    }
}

fn parse_u64(name: &'static str, value: &str) -> Result<u64, UrlError> {
    match value.parse::<u64>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(UrlError::Option {
            name,
            value: value.to_owned(),
            reason: "expected a positive whole number",
        }),
    }
}

impl RedisSettings {
    /// Parses a Redis URL (see the type's docs for the forms and the query options).
    ///
    /// # Errors
    /// [`UrlError`] naming the URL (password hidden) when the scheme is not supported, TLS is
    /// asked for without the `tls` feature, an option has a bad value, or the driver cannot
    /// read it.
    pub fn from_url(url: &str) -> Result<Self, UrlError> {
        let display = redact(url.trim());
        let url = url.trim();
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (url, None),
        };
        let mut settings = RedisSettings {
            target: Target::Single(String::new()),
            display: display.clone(),
            idle_ttl_ms: DEFAULT_IDLE_TTL_MS,
            prefix: "citeflow".to_owned(),
            instance: None,
            lease_ms: 15_000,
            timeout_ms: 5_000,
            block_ms: 2_000,
            max_blocking_connections: 64,
            replica_acks: None,
            replica_ack_timeout_ms: 1_000,
            allocate_batch: DEFAULT_ALLOCATE_BATCH,
            append_batch: DEFAULT_APPEND_BATCH,
        };
        let mut driver_query = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match name {
                "idle_ttl_ms" => settings.idle_ttl_ms = parse_u64("idle_ttl_ms", value)?,
                "lease_ms" => settings.lease_ms = parse_u64("lease_ms", value)?.max(1_000),
                "timeout_ms" => settings.timeout_ms = parse_u64("timeout_ms", value)?,
                "replica_acks" => {
                    settings.replica_acks = Some(value.parse().map_err(|_| UrlError::Option {
                        name: "replica_acks",
                        value: value.to_owned(),
                        reason: "expected a whole number",
                    })?)
                }
                "replica_ack_timeout_ms" => {
                    settings.replica_ack_timeout_ms = parse_u64("replica_ack_timeout_ms", value)?
                }
                "allocate_batch" => {
                    settings.allocate_batch =
                        usize::try_from(parse_u64("allocate_batch", value)?).unwrap_or(usize::MAX)
                }
                "append_batch" => {
                    settings.append_batch =
                        usize::try_from(parse_u64("append_batch", value)?).unwrap_or(usize::MAX)
                }
                "prefix" | "instance" if value.is_empty() || value.contains(['{', '}']) => {
                    return Err(UrlError::Option {
                        name: if name == "prefix" {
                            "prefix"
                        } else {
                            "instance"
                        },
                        value: value.to_owned(),
                        reason: "expected a non-empty name without braces",
                    })
                }
                "prefix" => settings.prefix = value.to_owned(),
                "instance" => settings.instance = Some(value.to_owned()),
                _ => driver_query.push(pair),
            }
        }
        let with_query = |u: String| {
            if driver_query.is_empty() {
                u
            } else {
                format!("{u}?{}", driver_query.join("&"))
            }
        };
        let tls_needed =
            |scheme: &str| scheme.starts_with("rediss") || scheme.starts_with("valkeys");
        let (scheme, rest) = base.split_once("://").ok_or_else(|| UrlError::Scheme {
            url: display.clone(),
        })?;
        let cluster_scheme = match scheme {
            "redis+cluster" | "valkey+cluster" => Some("redis"),
            "rediss+cluster" | "valkeys+cluster" => Some("rediss"),
            "redis" | "rediss" | "valkey" | "valkeys" | "redis+unix" | "unix" => None,
            _ => return Err(UrlError::Scheme { url: display }),
        };
        if tls_needed(scheme) && !cfg!(feature = "tls") {
            return Err(UrlError::TlsDisabled { url: display });
        }
        settings.target = if let Some(node_scheme) = cluster_scheme {
            let (auth, hosts) = match rest.rsplit_once('@') {
                Some((a, h)) => (format!("{a}@"), h),
                None => (String::new(), rest),
            };
            let hosts = hosts.split('/').next().unwrap_or("");
            let nodes: Vec<String> = hosts
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(|h| with_query(format!("{node_scheme}://{auth}{h}")))
                .collect();
            if nodes.is_empty() {
                return Err(UrlError::Malformed {
                    url: display,
                    reason: "no cluster node".to_owned(),
                });
            }
            Target::Cluster(nodes)
        } else if base.contains(',') {
            let nodes: Vec<String> = base
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| with_query(n.to_owned()))
                .collect();
            for n in &nodes {
                let scheme = n.split_once("://").map_or("", |(s, _)| s);
                if !matches!(scheme, "redis" | "rediss" | "valkey" | "valkeys") {
                    return Err(UrlError::Scheme { url: display });
                }
                if tls_needed(scheme) && !cfg!(feature = "tls") {
                    return Err(UrlError::TlsDisabled { url: display });
                }
            }
            Target::Cluster(nodes)
        } else {
            Target::Single(with_query(base.to_owned()))
        };
        let urls = match &settings.target {
            Target::Single(u) => std::slice::from_ref(u),
            Target::Cluster(n) => n.as_slice(),
        };
        for u in urls {
            redis::Client::open(u.as_str()).map_err(|e| UrlError::Malformed {
                url: redact(u),
                reason: e.to_string(),
            })?;
        }
        Ok(settings)
    }

    /// Records of a session or stream not used for this long expire (Redis TTL, refreshed on
    /// each use). The server's own idle clean-up (`purge_idle`) works beside it.
    ///
    /// ### Default
    /// 7 days ([`DEFAULT_IDLE_TTL_MS`]); URL option `idle_ttl_ms`.
    pub fn with_idle_ttl_ms(mut self, ms: u64) -> Self {
        self.idle_ttl_ms = ms.max(1);
        self
    }

    /// The first part of every key, so several deployments can share one Redis.
    ///
    /// ### Default
    /// `citeflow`; URL option `prefix`.
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// A stable name for this server among those sharing the Redis (e.g. its host or pod
    /// name). A server restarted under the same name reports the streams its previous run left
    /// running at once; without a name, they are reported once the old lease has expired.
    ///
    /// ### Default
    /// None: a random name per store; URL option `instance`.
    pub fn with_instance(mut self, name: impl Into<String>) -> Self {
        self.instance = Some(name.into());
        self
    }

    /// How long this server's lease lives without a heartbeat (it is renewed every third of
    /// it). Streams whose owner's lease has expired count as interrupted.
    ///
    /// ### Default
    /// 15 000 ms (at least 1 000); URL option `lease_ms`.
    pub fn with_lease_ms(mut self, ms: u64) -> Self {
        self.lease_ms = ms.max(1_000);
        self
    }

    /// Time-out of one Redis request and of one connection attempt.
    ///
    /// ### Default
    /// 5 000 ms; URL option `timeout_ms`.
    pub fn with_timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = ms.max(1);
        self
    }

    /// The longest one `XREAD BLOCK` waits before a follower checks the stream again.
    ///
    /// ### Default
    /// 2 000 ms.
    pub fn with_block_ms(mut self, ms: u64) -> Self {
        self.block_ms = ms.max(1);
        self
    }

    /// How many connections followers of streams written by other servers may hold for
    /// `XREAD BLOCK`; past it, followers poll.
    ///
    /// ### Default
    /// 64.
    pub fn with_max_blocking_connections(mut self, n: usize) -> Self {
        self.max_blocking_connections = n;
        self
    }

    /// How many replicas must acknowledge each atomic write (an allocation, an append, …)
    /// before it counts as done: after the script, the store sends `WAIT n` to the node that
    /// ran it, unless that node has no connected replica (then nothing can be promoted over
    /// it). A write not acknowledged in time fails with `StoreError::Unavailable` (it may have
    /// happened; an allocation retried later returns the same number). Redis replicates
    /// asynchronously: without this, a master killed right after a write can be replaced by a
    /// replica that never saw it, and the next allocation would hand its number out again.
    /// The number asked for is capped by the node's connected replicas.
    ///
    /// ### Default
    /// 1 for a Cluster, 0 (no `WAIT`) for a standalone server; URL option `replica_acks`.
    pub fn with_replica_acks(mut self, n: u64) -> Self {
        self.replica_acks = Some(n);
        self
    }

    /// How long one write waits for its replica acknowledgements
    /// (see [`RedisSettings::with_replica_acks`]); at most half the request time-out
    /// ([`RedisSettings::with_timeout_ms`]).
    ///
    /// ### Default
    /// 1 000 ms; URL option `replica_ack_timeout_ms`.
    pub fn with_replica_ack_timeout_ms(mut self, ms: u64) -> Self {
        self.replica_ack_timeout_ms = ms.max(1);
        self
    }

    /// The most allocations one script call carries: allocations that arrive while a call is
    /// under way (two per numbering table on a Cluster, two per store standalone) wait and go
    /// together in the next one, each handled as a single allocation is, in one atomic script.
    /// 1 sends one script per allocation, without waiting.
    ///
    /// ### Default
    /// 256; URL option `allocate_batch`.
    pub fn with_allocate_batch(mut self, n: usize) -> Self {
        self.allocate_batch = n.max(1);
        self
    }

    /// The most `append_events` calls one script call carries on a standalone server: appends
    /// (to any streams) that arrive while a call is under way wait and go together in the next
    /// one, each checked and written as a single append is, in one atomic script. 1 sends one
    /// script per append. On a Cluster each append is its own call (a stream's appends come
    /// one after the other from its writer, and streams are in different slots).
    ///
    /// ### Default
    /// 128; URL option `append_batch`.
    pub fn with_append_batch(mut self, n: usize) -> Self {
        self.append_batch = n.max(1);
        self
    }

    /// The replica acknowledgements each atomic write waits for (0: none).
    pub fn replica_acks(&self) -> u64 {
        self.replica_acks.unwrap_or(u64::from(self.is_cluster()))
    }

    /// The URL with its password hidden, for messages.
    pub fn display_url(&self) -> &str {
        &self.display
    }

    /// The idle time after which records expire, in ms.
    pub fn idle_ttl_ms(&self) -> u64 {
        self.idle_ttl_ms
    }

    /// Whether the URL names a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.target, Target::Cluster(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_url_keeps_driver_options_and_takes_citeflow_ones() {
        let s = RedisSettings::from_url(
            "redis://:pw@127.0.0.1:6390/2?idle_ttl_ms=1000&instance=a&protocol=resp3",
        )
        .expect("parse");
        assert_eq!(
            s.target,
            Target::Single("redis://:pw@127.0.0.1:6390/2?protocol=resp3".into())
        );
        assert_eq!(s.idle_ttl_ms, 1000);
        assert_eq!(s.instance.as_deref(), Some("a"));
        assert!(!s.display_url().contains("pw"));
    }

    #[test]
    fn cluster_urls_list_their_nodes() {
        let s = RedisSettings::from_url("redis+cluster://u:p@h1:7000,h2:7001").expect("parse");
        assert_eq!(
            s.target,
            Target::Cluster(vec![
                "redis://u:p@h1:7000".into(),
                "redis://u:p@h2:7001".into()
            ])
        );
        let s = RedisSettings::from_url("redis://h1:7000,redis://h2:7001").expect("parse");
        assert!(s.is_cluster());
    }

    #[test]
    fn bad_urls_name_the_value() {
        let e = RedisSettings::from_url("http://x").expect_err("scheme");
        assert!(e.to_string().contains("http://x"), "{e}");
        let e = RedisSettings::from_url("redis://x?idle_ttl_ms=soon").expect_err("option");
        assert!(e.to_string().contains("soon"), "{e}");
        let e = RedisSettings::from_url("redis://u:secret@x:1/?prefix=").expect_err("prefix");
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
