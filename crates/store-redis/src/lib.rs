//! The Redis store of citeflow: [`RedisStore`] implements [`citeflow_store::Store`] in Redis
//! (Valkey URLs are accepted but untested), standalone, over TLS or in a Cluster, so several
//! citeflow servers share one numbering per session and one event log per stream.
//!
//! [`RedisSettings`] parses the URL (`redis://`, `rediss://`, `redis+cluster://h1:p1,h2:p2`)
//! and holds the options (idle TTL, key prefix, server name, lease); [`RedisStore`] connects
//! lazily and reconnects by itself. Number allocation is one Lua script (look the key up, else
//! `INCR` the counter and record both directions), each stream's events are a Redis Stream
//! whose entry ids are the event ids (`n-0`), and every key of a session or of a stream carries
//! one hash tag, so it lives in one Cluster slot. Redis being unreachable, or refusing writes
//! for now (`OOM` past its `maxmemory`, `READONLY` on a replica or a demoted primary,
//! `LOADING`, `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`), is
//! [`citeflow_store::StoreError::Unavailable`].
//!
//! ```no_run
//! use citeflow_store::{NumberScope, Store};
//! use citeflow_store_redis::RedisStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = RedisStore::open("redis://127.0.0.1:6379/0")?;
//! let scope = NumberScope::Session("s1".into());
//! assert_eq!(store.allocate(&scope, "id:source_7", "source_7").await?.number, 1);
//! assert_eq!(store.allocate(&scope, "id:source_3", "source_3").await?.number, 2);
//! assert_eq!(store.allocate(&scope, "id:source_7", "source_7").await?.number, 1);
//! # Ok(())
//! # }
//! ```

mod batch;
mod conn;
mod keys;
mod scripts;
mod settings;
mod store;

pub use settings::{RedisSettings, UrlError, DEFAULT_IDLE_TTL_MS};
pub use store::RedisStore;
