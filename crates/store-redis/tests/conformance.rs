//! The shared conformance suite of every store, against Redis.

use std::sync::Arc;

use citeflow_store::conformance;

use crate::support::{fresh_prefix, redis_url, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn redis_store_passes_the_conformance_suite() {
    let Some(url) = redis_url("redis_store_passes_the_conformance_suite") else {
        return;
    };
    let s = store(&url, &fresh_prefix("conformance"));
    conformance::run_all(Arc::new(s)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn redis_store_with_one_script_per_call_passes_the_conformance_suite() {
    let Some(url) = redis_url("redis_store_with_one_script_per_call_passes_the_conformance_suite")
    else {
        return;
    };
    let settings = citeflow_store_redis::RedisSettings::from_url(&url)
        .expect("url")
        .with_key_prefix(fresh_prefix("conformance-one"))
        .with_allocate_batch(1)
        .with_append_batch(1);
    let s = citeflow_store_redis::RedisStore::new(settings).expect("store");
    conformance::run_all(Arc::new(s)).await;
}
