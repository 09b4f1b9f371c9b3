//! Storage for citeflow: the [`Store`] trait, an in-memory store, and the conformance suite
//! every store adapter runs.
//!
//! A [`Store`] keeps [`SessionRecord`]s (sources registered in rounds), numbering tables
//! addressed by a [`NumberScope`] and handed out by the atomic [`Store::allocate`], and
//! [`StreamRecord`]s with their logs of [`StoredEvent`]s, which [`follow`] replays and then
//! tails live. [`MemoryStore`] implements it in memory; `citeflow-store-sqlite` (and later a
//! Redis store) implement it durably. The crate does no I/O and reads no clock: times come in
//! as arguments. The rewriter asks for numbers with `Event::NumberNeeded`, and the caller
//! answers from [`Store::allocate`]:
//!
//! ```
//! use citeflow_core::{Event, NumberSource, Numbering, Rewriter, Settings, Source, Sources};
//! use citeflow_store::{MemoryStore, NumberScope, Store};
//!
//! # futures_executor::block_on(async {
//! let store = MemoryStore::new();
//! let scope = NumberScope::Session("s1".into());
//! let sources = Sources::from_vec(vec![Source::new("source_7").with_title("Paris")])?;
//! let settings = Settings::default().with_number_source(NumberSource::External);
//! let mut rw = Rewriter::new(settings, sources, store.numbering(&scope).await?);
//! let mut text = String::new();
//! for chunk in ["Paris [[sou", "rce_7]]."] {
//!     rw.write(chunk)?;
//!     while let Some(event) = rw.poll_event() {
//!         match event {
//!             Event::NumberNeeded { key, source_id } => {
//!                 let n = store.allocate(&scope, &key, &source_id).await?.number;
//!                 rw.provide_number(&key, n)?;
//!             }
//!             Event::Text { text: t } => text.push_str(&t),
//!             _ => {}
//!         }
//!     }
//! }
//! assert_eq!(text, "Paris [1].");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod memory;
mod model;
mod signal;
mod store;

pub use error::{decode_record, encode_record, StoreError};
pub use memory::MemoryStore;
pub use model::{Allocation, NumberScope, SessionRecord, StoredEvent, StreamRecord, StreamStatus};
pub use signal::StreamSignals;
pub use store::{follow, EventFeed, Store};
