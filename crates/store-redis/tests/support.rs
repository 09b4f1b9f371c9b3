//! Test helpers: the Redis under test, fresh key prefixes.

use citeflow_store_redis::{RedisSettings, RedisStore};

/// The Redis URL under test, or `None` after printing a notice (the test then passes).
pub(crate) fn redis_url(test: &str) -> Option<String> {
    match std::env::var("CITEFLOW_TEST_REDIS_URL") {
        Ok(u) if !u.trim().is_empty() => Some(u),
        _ => {
            eprintln!(
                "notice: {test} skipped: CITEFLOW_TEST_REDIS_URL is unset (scripts/test-redis.sh starts a Redis and sets it)"
            );
            None
        }
    }
}

/// A key prefix no earlier run used.
pub(crate) fn fresh_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    format!("cftest-{test}-{nanos:x}-{}", std::process::id())
}

/// A store on the Redis under test with a fresh prefix.
pub(crate) fn store(url: &str, prefix: &str) -> RedisStore {
    let settings = RedisSettings::from_url(url)
        .expect("url")
        .with_key_prefix(prefix);
    RedisStore::new(settings).expect("store")
}
