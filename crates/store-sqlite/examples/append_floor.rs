//! The floor of a durable append in SQLite on this machine: the CPU that SQLite alone spends
//! to log one row per chunk, with nothing of citeflow around it (no channel, no job, no
//! reply, no index, no tail). One thread inserts rows of the given size into a table shaped
//! like the store's log (`pos INTEGER PRIMARY KEY, stream_id, id, data`), `BATCH` rows per
//! `BEGIN IMMEDIATE … COMMIT`, on a file with the store's settings (WAL, `synchronous =
//! NORMAL`, 4 KiB pages, no automatic checkpoint); a second connection runs a passive
//! checkpoint every 9,000 rows and one at the end, as the store's checkpoint thread does every
//! 250 ms at the benchmark's load, timed apart. Prints the CPU time of both per row, for each
//! batch size: the best of three runs, each on a new file.
//!
//!     cargo run --release -p citeflow-store-sqlite --example append_floor -- [ROWS] [BYTES] [STREAMS] [BATCH,…]
//!     defaults: 200000 rows of 300 bytes, from 1000 streams, batches of 1,4,16,64
//!
//! `scripts/bench-server.sh` runs it after the proxy and gives the figure as a ratio against
//! the pass-through proxy's CPU per chunk of the same run.

use rusqlite::{params, Connection};

/// CPU time of the calling thread, in microseconds: the first field of
/// `/proc/thread-self/schedstat`, nanoseconds on the CPU (Linux).
fn thread_cpu_us() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns: f64 = stat
        .split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .expect("nanoseconds");
    ns / 1e3
}

/// Rows between two checkpoints: the store checkpoints every 250 ms, and at the benchmark's
/// load (1,000 streams × 50 chunks/s, about 36,000 chunks a second) that is about 9,000 rows.
const CHECKPOINT_ROWS: usize = 9_000;

fn open(path: &std::path::Path) -> Connection {
    let c = Connection::open(path).expect("open the file");
    c.execute_batch(
        "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         PRAGMA cache_size = -8192;",
    )
    .expect("settings");
    c
}

/// Appends `rows` rows of `bytes` bytes, `batch` per transaction, round-robin over `streams`
/// streams; returns the CPU µs per row of the writer and of the checkpoints.
fn run(
    dir: &std::path::Path,
    rows: usize,
    bytes: usize,
    streams: usize,
    batch: usize,
    attempt: usize,
) -> (f64, f64) {
    let path = dir.join(format!("floor-{batch}-{attempt}.db"));
    let conn = open(&path);
    // As the store's writer: it never checkpoints itself, the checkpoint thread does.
    conn.execute_batch(
        "PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE event_log (pos INTEGER PRIMARY KEY, stream_id TEXT NOT NULL,
         id INTEGER NOT NULL, data TEXT NOT NULL);",
    )
    .expect("schema");
    let checkpoints = open(&path);
    let mut checkpoint = 0.0;
    let mut checkpoint_now = || {
        let t = thread_cpu_us();
        let _ = checkpoints.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        checkpoint += thread_cpu_us() - t;
    };
    let ids: Vec<String> = (0..streams)
        .map(|i| format!("chatcmpl-{i:08}-0000-0000-0000-000000000000"))
        .collect();
    let data = "x".repeat(bytes);
    let t0 = thread_cpu_us();
    let mut n = 0;
    while n < rows {
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        let mut insert = conn
            .prepare_cached("INSERT INTO event_log (stream_id, id, data) VALUES (?1, ?2, ?3)")
            .expect("prepare");
        for _ in 0..batch.min(rows - n) {
            insert
                .execute(params![ids[n % streams], (n / streams) as i64, data])
                .expect("insert");
            n += 1;
        }
        drop(insert);
        conn.execute_batch("COMMIT").expect("commit");
        if n % CHECKPOINT_ROWS < batch {
            checkpoint_now();
        }
    }
    // As the store's thread does when it stops: every page reaches the file once.
    checkpoint_now();
    let writer = thread_cpu_us() - t0 - checkpoint;
    (writer / rows as f64, checkpoint / rows as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: usize| {
        args.get(i)
            .map(|s| s.parse().expect("a number"))
            .unwrap_or(default)
    };
    let rows = arg(0, 200_000);
    let bytes = arg(1, 300);
    let streams = arg(2, 1000);
    let batches: Vec<usize> = args
        .get(3)
        .map(|s| {
            s.split(',')
                .map(|b| b.parse().expect("a batch size"))
                .collect()
        })
        .unwrap_or_else(|| vec![1, 4, 16, 64]);
    let dir = tempfile::tempdir().expect("a temporary directory");
    println!("| rows per commit | writer µs per row | checkpoint µs per row | together |");
    println!("|---|---|---|---|");
    for batch in batches {
        // The best of three runs: a floor, and this shared machine's noise only adds.
        let (w, c) = (0..3)
            .map(|i| run(dir.path(), rows, bytes, streams, batch, i))
            .min_by(|a, b| (a.0 + a.1).total_cmp(&(b.0 + b.1)))
            .expect("three runs");
        println!("| {batch} | {w:.2} | {c:.2} | {:.2} |", w + c);
    }
}
