//! How long a purge of idle records holds up a live stream: fills a file with STREAMS finished
//! streams of EVENTS events each, all past the idle cutoff, then runs `purge_idle` while one
//! running stream appends an event every millisecond on another thread. Prints how long the
//! purge took, and the live stream's append times during it against the same appends with no
//! purge running, measured just before (an append waits for whatever writer job is ahead of
//! it: with the purge in slices, one slice).
//!
//!     cargo run --release -p citeflow-store-sqlite --example purge_stall -- [STREAMS] [EVENTS]
//!     defaults: 200 streams of 1000 events (200,000 events, about 300 bytes each)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use citeflow_store::{Store, StoredEvent, StreamRecord, StreamStatus};
use citeflow_store_sqlite::SqliteStore;
use futures_executor::block_on;

fn record(id: &str, created_ms: u64) -> StreamRecord {
    StreamRecord {
        id: id.into(),
        owner: "o".into(),
        session_id: None,
        status: StreamStatus::Running,
        created_ms,
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let streams = args.first().copied().unwrap_or(200);
    let events = args.get(1).copied().unwrap_or(1000);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(dir.path().join("purge.db")).expect("open"));
    let data = "x".repeat(300);
    block_on(async {
        for s in 0..streams {
            let id = format!("old{s}");
            store.create_stream(record(&id, 1)).await.expect("create");
            for chunk in (1..=events).collect::<Vec<_>>().chunks(100) {
                let batch = chunk
                    .iter()
                    .map(|&i| StoredEvent {
                        id: i,
                        data: data.clone(),
                    })
                    .collect();
                store.append_events(&id, batch).await.expect("append");
            }
            store
                .finish_stream(&id, StreamStatus::Completed)
                .await
                .expect("finish");
        }
        store
            .create_stream(record("live", 100))
            .await
            .expect("live");
    });

    // The live stream's appends: first alone (the baseline), then while the purge runs.
    let mut next_id = 0;
    let alone = appends_until(&store, &data, &mut next_id, |t| {
        t.elapsed() > Duration::from_millis(300)
    });
    let purging = Arc::new(AtomicBool::new(true));
    let live = {
        let (store, purging, data) = (Arc::clone(&store), Arc::clone(&purging), data.clone());
        std::thread::spawn(move || {
            appends_until(&store, &data, &mut next_id, |_| {
                !purging.load(Ordering::Relaxed)
            })
        })
    };
    std::thread::sleep(Duration::from_millis(5));
    let t = Instant::now();
    let purged = block_on(store.purge_idle(10)).expect("purge");
    let took = t.elapsed();
    purging.store(false, Ordering::Relaxed);
    let during = live.join().expect("live thread");
    assert_eq!(purged, streams, "every old stream purged");
    println!(
        "purge of {streams} streams × {events} events ({} per slice): {:.1} ms",
        citeflow_store_sqlite::PURGE_SLICE_EVENTS,
        took.as_secs_f64() * 1e3
    );
    println!("live appends alone:        {}", summary(alone));
    println!("live appends during purge: {}", summary(during));
}

/// Appends one event to stream `live` every millisecond until `stop`; the time of each.
fn appends_until(
    store: &SqliteStore,
    data: &str,
    id: &mut u64,
    stop: impl Fn(&Instant) -> bool,
) -> Vec<Duration> {
    let start = Instant::now();
    let mut took = Vec::new();
    while !stop(&start) {
        *id += 1;
        let e = StoredEvent {
            id: *id,
            data: data.to_owned(),
        };
        let t = Instant::now();
        block_on(store.append_events("live", vec![e])).expect("live append");
        took.push(t.elapsed());
        std::thread::sleep(Duration::from_millis(1));
    }
    took
}

/// p50, p99 and the slowest, in ms.
fn summary(mut took: Vec<Duration>) -> String {
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    format!(
        "{} appends, p50 {:.2} ms, p99 {:.2} ms, slowest {:.2} ms",
        took.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    )
}
