//! The embedded SQLite store of citeflow: [`SqliteStore`] implements
//! [`citeflow_store::Store`] in one database file.
//!
//! The file runs in WAL mode. Writes go to one writer thread that groups the jobs waiting at
//! that moment into one transaction (group commit), and an append or an allocation returns
//! only after its transaction committed, so an event is in the file before the server sends
//! it. Reads use their own connections. A running stream's record and recent events are also
//! kept in memory, so its live followers never query the file: the hot path of a stream only
//! writes. Events go to an append-ordered log (4 KiB pages), and that is all an append
//! writes: a stream's index (the log position of each of its events, one blob on its row) is
//! written when it finishes, in one statement, from the positions the writer kept meanwhile,
//! so that a commit touching many running streams writes only the log's last pages. Streams a
//! crash left running are indexed when the file is opened. A thread of its own copies the WAL
//! into the file (`PASSIVE` checkpoints), so the writer never waits for that; near
//! [`SqliteOptions::wal_max_bytes`] the writer copies the rest itself and the WAL starts over,
//! so that it stays bounded under steady load.
//!
//! ```
//! use citeflow_store::{NumberScope, Store};
//! use citeflow_store_sqlite::SqliteStore;
//!
//! # futures_executor::block_on(async {
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("citeflow.db"))?;
//! let scope = NumberScope::Session("s1".into());
//! assert_eq!(store.allocate(&scope, "id:source_7", "source_7").await?.number, 1);
//! assert_eq!(store.allocate(&scope, "id:source_3", "source_3").await?.number, 2);
//! assert_eq!(store.allocate(&scope, "id:source_7", "source_7").await?.number, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod options;
mod store;
mod writer;

pub use options::{SqliteOptions, DEFAULT_WAL_MAX_BYTES};
pub use store::purge::{PURGE_SLICE_EVENTS, PURGE_SLICE_SESSIONS};
pub use store::SqliteStore;
