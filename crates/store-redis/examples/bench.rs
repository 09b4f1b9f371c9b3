//! Allocations/s and logged events/s with 1, 2 and 4 Redis store instances (separate
//! connections, as separate servers have) on one Redis (or a Redis Cluster), beside the
//! SQLite store; allocations and appends both batched (the default) and one script call each
//! (`allocate_batch=1`, `append_batch=1`, as before batching), in the same run; and streamed
//! events/s at 1,000 concurrent streams (a writer and a live follower each), Redis beside
//! SQLite, batched and not.
//!
//! `cargo run --release -p citeflow-store-redis --example bench -- REDIS_URL [SECONDS] [SESSIONS] [ROUNDS]`
//! (scripts/bench-redis.sh starts a Redis and runs it). The allocations go to SESSIONS
//! sessions (default 1; on a Cluster, one session is one slot, so one master). Every case runs
//! ROUNDS times (default 1), the cases of a round one after the other; the tables give the
//! median and each round's figure.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use citeflow_store::{follow, NumberScope, Store, StoredEvent, StreamRecord, StreamStatus};
use citeflow_store_redis::{RedisSettings, RedisStore};
use futures_util::StreamExt;

/// Concurrent callers per store instance (requests in flight, pipelined on one connection).
const TASKS: usize = 256;

/// Concurrent streams of the streaming case.
const STREAMS: usize = 1_000;

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

fn running(id: String) -> StreamRecord {
    StreamRecord {
        id,
        owner: "bench".into(),
        session_id: None,
        status: StreamStatus::Running,
        created_ms: 1,
    }
}

/// One event as the server logs a chunk of a chat completion.
fn chunk() -> String {
    format!(
        "{{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}",
        "x".repeat(60)
    )
}

async fn events(stores: &[Arc<dyn Store>], secs: f64, tag: &str) -> f64 {
    let base = format!("bench-{tag}-{}", nanos());
    // One stream per caller; each appends one event at a time, as a server logs each chunk.
    for (s, store) in stores.iter().enumerate() {
        for t in 0..TASKS {
            store
                .create_stream(running(format!("{base}-{}", s * TASKS + t)))
                .await
                .expect("create");
        }
    }
    let data = chunk();
    run(stores, secs, move |store, me, i| {
        let (id, data) = (format!("{base}-{me}"), data.clone());
        async move {
            store
                .append_events(&id, vec![StoredEvent { id: i + 1, data }])
                .await
                .expect("append");
        }
    })
    .await
}

/// `STREAMS` streams at once on one store, each with a writer appending one event per call and
/// a follower (`follow`, as a client of the server) reading them live: events the followers
/// received per second.
async fn streamed(store: Arc<dyn Store>, secs: f64, tag: &str) -> f64 {
    let base = format!("bench-streams-{tag}-{}", nanos());
    for s in 0..STREAMS {
        store
            .create_stream(running(format!("{base}-{s}")))
            .await
            .expect("create");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    let mut followers = Vec::new();
    for s in 0..STREAMS {
        let id = format!("{base}-{s}");
        let (st, rc) = (store.clone(), received.clone());
        let fid = id.clone();
        followers.push(tokio::spawn(async move {
            let mut feed = follow(st, fid, 0);
            while let Some(e) = feed.next().await {
                e.expect("follow");
                rc.fetch_add(1, Ordering::Relaxed);
            }
        }));
        let (st, stop) = (store.clone(), stop.clone());
        let data = chunk();
        writers.push(tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                st.append_events(
                    &id,
                    vec![StoredEvent {
                        id: i,
                        data: data.clone(),
                    }],
                )
                .await
                .expect("append");
            }
            st.finish_stream(&id, StreamStatus::Completed)
                .await
                .expect("finish");
        }));
    }
    let start = Instant::now();
    let first = received.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    let n = received.load(Ordering::Relaxed) - first;
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for h in writers.into_iter().chain(followers) {
        h.await.expect("task");
    }
    n as f64 / elapsed
}

fn redis_stores(
    url: &str,
    prefix: &str,
    n: usize,
    batch: usize,
) -> Result<Vec<Arc<dyn Store>>, Box<dyn std::error::Error>> {
    (0..n)
        .map(|_| {
            let s = RedisSettings::from_url(url)?
                .with_key_prefix(prefix)
                .with_allocate_batch(batch)
                .with_append_batch(batch);
            Ok(Arc::new(RedisStore::new(s)?) as Arc<dyn Store>)
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `median (r1 / r2 / …)`.
fn cell(v: &[f64]) -> String {
    let each: Vec<String> = v.iter().map(|x| format!("{x:.0}")).collect();
    if v.len() < 2 {
        return format!("{:.0}", median(v));
    }
    format!("{:.0} ({})", median(v), each.join(" / "))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: bench REDIS_URL [SECONDS] [SESSIONS] [ROUNDS]")?;
    let secs: f64 = args.next().map_or(Ok(3.0), |s| s.parse())?;
    let sessions: usize = args.next().map_or(Ok(1), |s| s.parse())?;
    let rounds: usize = args.next().map_or(Ok(1), |s| s.parse())?;
    let prefix = format!("citeflow-bench-{}", nanos());
    let dir = tempfile::tempdir()?;
    let sqlite: Arc<dyn Store> = Arc::new(citeflow_store_sqlite::SqliteStore::open(
        dir.path().join("bench.db"),
    )?);
    // (table row, column) → one figure per round.
    let mut fig: BTreeMap<(usize, &str), Vec<f64>> = BTreeMap::new();
    let mut push =
        |row: usize, col: &'static str, x: f64| fig.entry((row, col)).or_default().push(x);
    for round in 1..=rounds {
        eprintln!("round {round} of {rounds}");
        let s = std::slice::from_ref(&sqlite);
        push(0, "alloc", allocations(s, secs, "sqlite", sessions).await);
        push(0, "events", events(s, secs, "sqlite").await);
        for (row, n) in [(1usize, 1usize), (2, 2), (3, 4)] {
            let one = redis_stores(&url, &prefix, n, 1)?;
            push(
                row,
                "alloc1",
                allocations(&one, secs, &format!("r{n}one"), sessions).await,
            );
            push(
                row,
                "events1",
                events(&one, secs, &format!("r{n}one")).await,
            );
            drop(one);
            let batched = redis_stores(&url, &prefix, n, 256)?;
            let a = allocations(&batched, secs, &format!("r{n}batch"), sessions).await;
            push(row, "alloc", a);
            push(
                row,
                "events",
                events(&batched, secs, &format!("r{n}")).await,
            );
        }
        push(
            10,
            "streamed",
            streamed(sqlite.clone(), secs, "sqlite").await,
        );
        let one = redis_stores(&url, &prefix, 1, 1)?.remove(0);
        push(11, "streamed", streamed(one, secs, "redis-one").await);
        let redis = redis_stores(&url, &prefix, 1, 256)?.remove(0);
        push(12, "streamed", streamed(redis, secs, "redis").await);
    }
    let get = |row: usize, col: &str| fig.get(&(row, col)).map_or("–".to_owned(), |v| cell(v));
    println!("Median of {rounds} round(s) (each round's figure in brackets), {secs} s per case, {TASKS} callers per instance, allocations over {sessions} session(s):");
    println!();
    println!("| store | instances | allocations/s, one script each (as before) | allocations/s, batched | events/s, one script each (as before) | events/s, batched |");
    println!("|---|---:|---:|---:|---:|---:|");
    println!(
        "| sqlite | 1 | – | {} | – | {} |",
        get(0, "alloc"),
        get(0, "events")
    );
    for (row, n) in [(1usize, 1usize), (2, 2), (3, 4)] {
        println!(
            "| redis | {n} | {} | {} | {} | {} |",
            get(row, "alloc1"),
            get(row, "alloc"),
            get(row, "events1"),
            get(row, "events")
        );
    }
    println!();
    println!("| store | concurrent streams (writer + live follower each) | streamed events/s |");
    println!("|---|---:|---:|");
    println!("| sqlite | {STREAMS} | {} |", get(10, "streamed"));
    println!(
        "| redis, one script per append (as before) | {STREAMS} | {} |",
        get(11, "streamed")
    );
    println!("| redis, batched | {STREAMS} | {} |", get(12, "streamed"));
    Ok(())
}
