//! The shared conformance suite of every store, against Redis.

use std::sync::Arc;

use citeflow_store::conformance;

use crate::support::{fresh_prefix, redis_url, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_store_passes_the_conformance_suite() {
    let Some(url) = redis_url("redis_store_passes_the_conformance_suite") else {
        return;
    };
    let s = store(&url, &fresh_prefix("conformance"));
    conformance::run_all(Arc::new(s)).await;
}
