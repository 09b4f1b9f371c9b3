//! Allocations/s and logged events/s with 1, 2 and 4 Redis store instances (separate
//! connections, as separate servers have) on one Redis (or a Redis Cluster), beside the
//! SQLite store.
//!
//! `cargo run --release -p citeflow-store-redis --example bench -- REDIS_URL [SECONDS] [SESSIONS]`
//! (scripts/bench-redis.sh starts a Redis and runs it). The allocations go to SESSIONS
//! sessions (default 1; on a Cluster, one session is one slot, so one master).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use citeflow_store::{NumberScope, Store, StoredEvent, StreamRecord, StreamStatus};
use citeflow_store_redis::{RedisSettings, RedisStore};

/// Concurrent callers per store instance (requests in flight, pipelined on one connection).
const TASKS: usize = 256;

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Runs `TASKS` callers on each store for `secs`; returns operations per second.
async fn run<F, Fut>(stores: &[Arc<dyn Store>], secs: f64, op: F) -> f64
where
    F: Fn(Arc<dyn Store>, usize, u64) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for (s, store) in stores.iter().enumerate() {
        for t in 0..TASKS {
            let (store, stop, count, op) = (store.clone(), stop.clone(), count.clone(), op.clone());
            handles.push(tokio::spawn(async move {
                let me = s * TASKS + t;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    op(store.clone(), me, i).await;
                    i += 1;
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
    }
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    let n = count.load(Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.await.expect("task");
    }
    n as f64 / elapsed
}

async fn allocations(stores: &[Arc<dyn Store>], secs: f64, tag: &str, sessions: usize) -> f64 {
    let base = format!("bench-{tag}-{}", nanos());
    run(stores, secs, move |store, me, i| {
        let scope = NumberScope::Session(format!("{base}-{}", me % sessions.max(1)));
        async move {
            // Half the calls name a key seen before (a repeated citation), half a new one.
            let k = if i % 2 == 0 {
                (me as u64 * 31 + i) % 512
            } else {
                1_000 + me as u64 * 1_000_000 + i
            };
            let key = format!("id:source_{k}");
            store.allocate(&scope, &key, &key).await.expect("allocate");
        }
    })
    .await
}

async fn events(stores: &[Arc<dyn Store>], secs: f64, tag: &str) -> f64 {
    let base = format!("bench-{tag}-{}", nanos());
    // One stream per caller; each appends one event at a time, as a server logs each chunk.
    for (s, store) in stores.iter().enumerate() {
        for t in 0..TASKS {
            store
                .create_stream(StreamRecord {
                    id: format!("{base}-{}", s * TASKS + t),
                    owner: "bench".into(),
                    session_id: None,
                    status: StreamStatus::Running,
                    created_ms: 1,
                })
                .await
                .expect("create");
        }
    }
    let data = format!(
        "{{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}",
        "x".repeat(60)
    );
    let rate = run(stores, secs, move |store, me, i| {
        let (id, data) = (format!("{base}-{me}"), data.clone());
        async move {
            store
                .append_events(&id, vec![StoredEvent { id: i + 1, data }])
                .await
                .expect("append");
        }
    })
    .await;
    rate
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: bench REDIS_URL [SECONDS] [SESSIONS]")?;
    let secs: f64 = args.next().map_or(Ok(3.0), |s| s.parse())?;
    let sessions: usize = args.next().map_or(Ok(1), |s| s.parse())?;
    let prefix = format!("citeflow-bench-{}", nanos());
    println!("| store | instances | allocations/s | events/s |");
    println!("|---|---:|---:|---:|");
    let dir = tempfile::tempdir()?;
    let sqlite: Vec<Arc<dyn Store>> = vec![Arc::new(citeflow_store_sqlite::SqliteStore::open(
        dir.path().join("bench.db"),
    )?)];
    let a = allocations(&sqlite, secs, "sqlite", sessions).await;
    let e = events(&sqlite, secs, "sqlite").await;
    println!("| sqlite | 1 | {a:.0} | {e:.0} |");
    for n in [1usize, 2, 4] {
        let stores: Vec<Arc<dyn Store>> = (0..n)
            .map(|_| {
                let s = RedisSettings::from_url(&url)?.with_key_prefix(prefix.clone());
                Ok(Arc::new(RedisStore::new(s)?) as Arc<dyn Store>)
            })
            .collect::<Result<_, Box<dyn std::error::Error>>>()?;
        let a = allocations(&stores, secs, &format!("redis{n}"), sessions).await;
        let e = events(&stores, secs, &format!("redis{n}")).await;
        println!("| redis | {n} | {a:.0} | {e:.0} |");
    }
    Ok(())
}
