//! Integration tests of citeflow-store.

use std::sync::Arc;

use citeflow_store::{conformance, MemoryStore};

#[test]
fn memory_store_passes_the_conformance_suite() {
    futures_executor::block_on(conformance::run_all(Arc::new(MemoryStore::new())));
}
