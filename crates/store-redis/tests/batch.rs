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
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn concurrent_appends_share_script_calls_and_keep_their_own_answers() {
    use citeflow_store::{StoreError, StoredEvent, StreamRecord, StreamStatus};
    if redis_url("concurrent_appends_share_script_calls_and_keep_their_own_answers").is_none() {
        return;
    }
    let redis = OwnRedis::start();
    let settings = RedisSettings::from_url(&redis.url())
        .expect("url")
        .with_key_prefix(fresh_prefix("appendbatch"));
    let store: Arc<dyn Store> = Arc::new(RedisStore::new(settings).expect("store"));
    let ev = |id: u64, s: usize| StoredEvent {
        id,
        data: format!("{{\"s\":{s},\"n\":{id}}}"),
    };
    for s in 0..100 {
        store
            .create_stream(StreamRecord {
                id: format!("s{s}"),
                owner: "k".into(),
                session_id: None,
                status: if s == 99 {
                    StreamStatus::Completed
                } else {
                    StreamStatus::Running
                },
                created_ms: 1,
            })
            .await
            .expect("create");
    }
    // Scripts loaded before counting.
    store
        .append_events("s0", vec![ev(1, 0)])
        .await
        .expect("warm");
    let before = evalsha_calls(redis.port);
    // Streams 0–97: 5 appends each, one after the other per stream, all streams at once;
    // stream 98 gets a gap (event 2 before 1), stream 99 is finished, "none" does not exist.
    let mut tasks = Vec::new();
    for s in 0..98usize {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let start = if s == 0 { 2 } else { 1 };
            for id in start..start + 5 {
                store
                    .append_events(&format!("s{s}"), vec![ev(id, s)])
                    .await
                    .expect("append");
            }
        }));
    }
    let bad = {
        let store = store.clone();
        tokio::spawn(async move {
            (
                store.append_events("s98", vec![ev(2, 98)]).await,
                store.append_events("s99", vec![ev(1, 99)]).await,
                store.append_events("none", vec![ev(1, 0)]).await,
            )
        })
    };
    for t in tasks {
        t.await.expect("task");
    }
    let (gap, closed, missing) = bad.await.expect("task");
    let calls = evalsha_calls(redis.port) - before;
    assert!(
        matches!(
            gap,
            Err(StoreError::EventOrder {
                last: 0,
                got: 2,
                ..
            })
        ),
        "{gap:?}"
    );
    assert!(
        matches!(closed, Err(StoreError::StreamClosed { .. })),
        "{closed:?}"
    );
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );
    for s in 0..98usize {
        let got = store
            .events_after(&format!("s{s}"), 0, 100)
            .await
            .expect("read");
        let want: Vec<_> = (1..=if s == 0 { 6 } else { 5 })
            .map(|id| ev(id, s))
            .collect();
        assert_eq!(got, want, "stream s{s}");
    }
    assert!(store
        .events_after("s98", 0, 10)
        .await
        .expect("read")
        .is_empty());
    eprintln!("appends: 493 calls in {calls} script calls");
    assert!(calls <= 250, "{calls} script calls for 493 appends");
}
