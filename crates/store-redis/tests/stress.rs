//! Many concurrent allocations for one session from several store instances (separate
//! connections, as several servers would have).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use citeflow_store::{NumberScope, Store};

use crate::support::{fresh_prefix, redis_url, store};

const INSTANCES: usize = 4;
const TASKS_PER_INSTANCE: usize = 8;
const REQUESTS_PER_TASK: usize = 150;
const KEYS: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn concurrent_allocations_from_several_servers_never_repeat_or_renumber() {
    let Some(url) =
        redis_url("concurrent_allocations_from_several_servers_never_repeat_or_renumber")
    else {
        return;
    };
    let prefix = fresh_prefix("stress");
    let stores: Vec<Arc<dyn Store>> = (0..INSTANCES)
        .map(|_| Arc::new(store(&url, &prefix)) as Arc<dyn Store>)
        .collect();
    let scope = NumberScope::Session("stress".into());
    for st in &stores {
        // Connected before the clock starts.
        st.numbering(&scope).await.expect("connect");
    }
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for (s, st) in stores.iter().enumerate() {
        for t in 0..TASKS_PER_INSTANCE {
            let st = st.clone();
            let scope = scope.clone();
            tasks.push(tokio::spawn(async move {
                // Each task walks the keys from its own start with its own stride: every key is
                // asked for by several tasks at about the same time.
                let me = s * TASKS_PER_INSTANCE + t;
                let mut got = Vec::with_capacity(REQUESTS_PER_TASK);
                for i in 0..REQUESTS_PER_TASK {
                    let k = (me * 37 + i * (1 + me % 5)) % KEYS;
                    let key = format!("key:{k}");
                    let source = format!("src-{me}");
                    let a = st.allocate(&scope, &key, &source).await.expect("allocate");
                    got.push((key, source, a.number, a.is_new));
                }
                got
            }));
        }
    }
    let mut by_key: HashMap<String, u32> = HashMap::new();
    let mut new_by_number: HashMap<u32, (String, String)> = HashMap::new();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.expect("task"));
    }
    let elapsed = started.elapsed();
    eprintln!(
        "stress: {} allocations ({} keys, {INSTANCES} store instances × {TASKS_PER_INSTANCE} tasks, one at a time each) in {} ms: {:.0}/s on {}",
        INSTANCES * TASKS_PER_INSTANCE * REQUESTS_PER_TASK,
        KEYS,
        elapsed.as_millis(),
        (INSTANCES * TASKS_PER_INSTANCE * REQUESTS_PER_TASK) as f64 / elapsed.as_secs_f64(),
        if crate::support::is_cluster_url(&url) {
            "a Redis Cluster"
        } else {
            "a standalone Redis"
        },
    );
    let mut total = 0;
    for got in results {
        let mut seen: Vec<u32> = Vec::new();
        for (key, source, n, is_new) in got {
            total += 1;
            let prev = by_key.insert(key.clone(), n);
            assert!(prev.is_none_or(|p| p == n), "key {key} got two numbers");
            if is_new {
                let prev = new_by_number.insert(n, (key.clone(), source));
                assert!(prev.is_none(), "number {n} handed out twice");
                // First-allocation order: a new number is larger than every number this task
                // was given before.
                assert!(seen.iter().all(|&m| m < n), "number {n} out of order");
            }
            seen.push(n);
        }
    }
    assert_eq!(total, INSTANCES * TASKS_PER_INSTANCE * REQUESTS_PER_TASK);
    let numbers: HashSet<u32> = by_key.values().copied().collect();
    assert_eq!(
        numbers.len(),
        by_key.len(),
        "a number was given to two keys"
    );
    assert_eq!(
        numbers,
        (1..=by_key.len() as u32).collect(),
        "numbers are not dense"
    );
    assert_eq!(new_by_number.len(), by_key.len());
    let table = stores[0].numbering(&scope).await.expect("table");
    assert_eq!(table.len(), by_key.len());
    for e in table.entries() {
        let (key, source) = &new_by_number[&e.number];
        assert_eq!((&e.key, &e.source_id), (key, source), "number {}", e.number);
    }
}
