//! Allocation batches: concurrent allocations share script calls, and give what one script
//! call each gives.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use citeflow_store::{NumberScope, Store};
use citeflow_store_redis::{RedisSettings, RedisStore};

use crate::support::{fresh_prefix, redis_url, OwnRedis};

/// `EVALSHA` calls the Redis on `port` has served (`INFO commandstats`).
fn evalsha_calls(port: u16) -> u64 {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", "commandstats"])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().expect("a count"))
}

/// `CALLERS` allocations at once over 60 keys of 2 sessions; returns them per session.
async fn allocate_at_once(store: Arc<dyn Store>) -> Vec<HashMap<String, u32>> {
    const CALLERS: usize = 300;
    let tasks: Vec<_> = (0..CALLERS)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let session = i % 2;
                let scope = NumberScope::Session(format!("batch-{session}"));
                let key = format!("key:{}", (i * 7) % 60);
                let a = store.allocate(&scope, &key, "s").await.expect("allocate");
                (session, key, a.number)
            })
        })
        .collect();
    let mut by_session = vec![HashMap::new(), HashMap::new()];
    for t in tasks {
        let (s, key, n) = t.await.expect("task");
        let prev = by_session[s].insert(key.clone(), n);
        assert!(prev.is_none_or(|p| p == n), "{key} got two numbers");
    }
    by_session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_allocations_share_script_calls() {
    if redis_url("concurrent_allocations_share_script_calls").is_none() {
        return;
    }
    // A Redis of its own: the other tests' calls would blur the count.
    let redis = OwnRedis::start();
    for (batch, most) in [(256usize, 100u64), (1, u64::MAX)] {
        let settings = RedisSettings::from_url(&redis.url())
            .expect("url")
            .with_key_prefix(fresh_prefix(&format!("batch{batch}")))
            .with_allocate_batch(batch);
        let store: Arc<dyn Store> = Arc::new(RedisStore::new(settings).expect("store"));
        // Connected, and the scripts loaded, before counting.
        store
            .allocate(&NumberScope::Session("warm".into()), "k", "s")
            .await
            .expect("warm");
        let before = evalsha_calls(redis.port);
        let got = allocate_at_once(store.clone()).await;
        let calls = evalsha_calls(redis.port) - before;
        for (s, by_key) in got.iter().enumerate() {
            // Keys 0, 7, 14, … mod 60 of the callers of one parity: 30 distinct keys each.
            let numbers: HashSet<u32> = by_key.values().copied().collect();
            assert_eq!(by_key.len(), 30, "session {s}");
            assert_eq!(numbers, (1..=30).collect::<HashSet<u32>>(), "session {s}");
            let table = store
                .numbering(&NumberScope::Session(format!("batch-{s}")))
                .await
                .expect("table");
            for e in table.entries() {
                assert_eq!(by_key.get(&e.key), Some(&e.number), "stored {}", e.key);
            }
            assert_eq!(table.len(), 30);
        }
        eprintln!("allocate_batch={batch}: 300 allocations in {calls} script calls");
        if batch == 1 {
            assert_eq!(calls, 300, "one script call per allocation");
        } else {
            assert!(calls <= most, "{calls} script calls for 300 allocations");
        }
    }
}
