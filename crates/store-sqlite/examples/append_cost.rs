//! What the store's durable append costs at the proxy benchmark's pace, without the proxy:
//! STREAMS running streams each append one event of BYTES bytes every PACE_MS, for SECONDS,
//! their appends in flight together as the proxy's generations' are (one thread drives them
//! all as futures, sending the appends due each millisecond). Prints:
//!
//! - the CPU time per append of the store's threads (the writer and the checkpoints, from
//!   `/proc/self/task`) and of the thread that sends the appends and takes the answers;
//! - how long an append waited for its commit (p50, p99, slowest; it includes up to a
//!   millisecond until the driving thread looks again);
//! - the size of the WAL file at the end, which stays under `SqliteOptions::wal_max_bytes`.
//!
//! Beside `append_floor` (SQLite alone), it shows what the store adds to SQLite's own work,
//! in a run that takes seconds and has none of the proxy's noise.
//!
//!     cargo run --release -p citeflow-store-sqlite --example append_cost -- [STREAMS] [PACE_MS] [BYTES] [SECONDS]
//!     defaults: 1000 streams, one event each every 20 ms (50,000 a second), 360 bytes, 4 s

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use citeflow_store::{Store, StoredEvent, StreamRecord, StreamStatus};
use citeflow_store_sqlite::SqliteStore;
use futures_executor::LocalPool;
use futures_util::task::LocalSpawnExt;

/// CPU seconds of this process's threads whose name starts with `prefix` (`/proc`, Linux).
fn threads_cpu(prefix: &str) -> f64 {
    let mut total = 0.0;
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let dir = task.expect("a task").path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        // /proc/*/task/*/schedstat: nanoseconds on the CPU, finer than stat's ticks.
        let ns: f64 = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|f| f.parse().ok()))
            .unwrap_or(0.0);
        total += ns / 1e9;
    }
    total
}

/// CPU seconds of the calling thread.
fn this_thread_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    stat.split_whitespace()
        .next()
        .and_then(|f| f.parse::<f64>().ok())
        .expect("nanoseconds")
        / 1e9
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let streams = args.first().copied().unwrap_or(1000) as usize;
    let pace = Duration::from_millis(args.get(1).copied().unwrap_or(20));
    let bytes = args.get(2).copied().unwrap_or(360) as usize;
    let seconds = args.get(3).copied().unwrap_or(4);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(dir.path().join("cost.db")).expect("open"));
    let mut pool = LocalPool::new();
    let ids: Vec<String> = (0..streams)
        .map(|i| format!("chatcmpl-{i:08}-0000-0000-0000-000000000000"))
        .collect();
    pool.run_until(async {
        for id in &ids {
            store
                .create_stream(StreamRecord {
                    id: id.clone(),
                    owner: "o".into(),
                    session_id: None,
                    status: StreamStatus::Running,
                    created_ms: 1,
                })
                .await
                .expect("create");
        }
    });
    let data = "x".repeat(bytes);
    let spawner = pool.spawner();
    let mut next_id = vec![1u64; streams];
    let waits: Rc<RefCell<Vec<Duration>>> = Rc::default();
    let (store_before, driver_before) = (threads_cpu("sqlite-"), this_thread_cpu());
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let mut sent = 0u64;
    // Each stream's appends fall evenly over the pace interval, as with the proxy's spread
    // starts: every millisecond, the appends due by then are sent.
    let rate = streams as f64 / pace.as_secs_f64();
    let mut at = 0usize;
    let mut now = Instant::now();
    while now < end {
        let due = ((now - start).as_secs_f64() * rate) as u64;
        while sent < due {
            let s = at % streams;
            at += 1;
            let (store, id) = (Arc::clone(&store), ids[s].clone());
            let event = StoredEvent {
                id: next_id[s],
                data: data.clone(),
            };
            next_id[s] += 1;
            sent += 1;
            let waits = Rc::clone(&waits);
            spawner
                .spawn_local(async move {
                    let t = Instant::now();
                    store.append_events(&id, vec![event]).await.expect("append");
                    waits.borrow_mut().push(t.elapsed());
                })
                .expect("spawn");
        }
        pool.run_until_stalled();
        std::thread::sleep(Duration::from_millis(1));
        now = Instant::now();
    }
    pool.run();
    let wal = std::fs::metadata(dir.path().join("cost.db-wal")).map_or(0, |m| m.len());
    let mut waits = waits.take();
    waits.sort();
    let at = |q: f64| waits[((waits.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    let elapsed = start.elapsed().as_secs_f64();
    let store_cpu = threads_cpu("sqlite-") - store_before;
    let driver_cpu = this_thread_cpu() - driver_before;
    let rate = sent as f64 / elapsed;
    println!(
        "{sent} appends of {bytes} bytes from {streams} streams in {elapsed:.2} s ({rate:.0}/s); \
         CPU µs per append: store threads {:.2}, the appending thread {:.2}; \
         an append's wait p50 {:.2} ms, p99 {:.2} ms, slowest {:.2} ms; WAL file {:.1} MB at the end",
        store_cpu / sent as f64 * 1e6,
        driver_cpu / sent as f64 * 1e6,
        at(0.5),
        at(0.99),
        at(1.0),
        wal as f64 / 1e6,
    );
}
