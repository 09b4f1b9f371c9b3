//! Integration tests of citeflow-store-sqlite.

use std::sync::Arc;

use citeflow_store::{conformance, NumberScope, Store, StoredEvent, StreamRecord, StreamStatus};
use citeflow_store_sqlite::{SqliteOptions, SqliteStore};

#[test]
fn sqlite_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join("c.db")).expect("open");
    futures_executor::block_on(conformance::run_all(Arc::new(store)));
}

#[test]
fn data_survives_reopening_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("re.db");
    futures_executor::block_on(async {
        let store = SqliteStore::open(&path).expect("open");
        let scope = NumberScope::Session("s".into());
        store.allocate(&scope, "a", "s1").await.expect("a");
        store.allocate(&scope, "b", "s2").await.expect("b");
        store
            .create_stream(StreamRecord {
                id: "st".into(),
                owner: "o".into(),
                session_id: None,
                status: StreamStatus::Running,
                created_ms: 1,
            })
            .await
            .expect("stream");
        let events: Vec<StoredEvent> = (1..=300)
            .map(|id| StoredEvent {
                id,
                data: format!("e{id}"),
            })
            .collect();
        store
            .append_events("st", events.clone())
            .await
            .expect("append");
        drop(store);
        let store = SqliteStore::open(&path).expect("reopen");
        assert_eq!(store.allocate(&scope, "b", "x").await.expect("b").number, 2);
        assert_eq!(store.allocate(&scope, "c", "x").await.expect("c").number, 3);
        assert_eq!(store.running_streams().await.expect("running"), ["st"]);
        let mut got = Vec::new();
        let mut after = 0;
        loop {
            let page = store.events_after("st", after, 100).await.expect("read");
            let Some(last) = page.last() else { break };
            after = last.id;
            got.extend(page);
        }
        assert_eq!(got, events);
        // The reopened writer knows the stream's newest event only from the file: the order
        // is still enforced, and appending goes on from there.
        let event = |id| StoredEvent {
            id,
            data: format!("e{id}"),
        };
        for wrong in [300, 302, 1] {
            let bad = store.append_events("st", vec![event(wrong)]).await;
            assert!(
                matches!(
                    bad,
                    Err(citeflow_store::StoreError::EventOrder { last: 300, .. })
                ),
                "{wrong}: {bad:?}"
            );
        }
        store
            .append_events("st", vec![event(301), event(302)])
            .await
            .expect("append after reopening");
        store
            .finish_stream("st", StreamStatus::Completed)
            .await
            .expect("finish");
        let closed = store.append_events("st", vec![event(303)]).await;
        assert!(
            matches!(closed, Err(citeflow_store::StoreError::StreamClosed { .. })),
            "{closed:?}"
        );
    });
}

/// Writes a file as an older citeflow did: the `sessions` and `numbers` tables, which no
/// version changed, then `rest` (that version's streams and events).
fn old_file(path: &std::path::Path, rest: &str) {
    let c = rusqlite::Connection::open(path).expect("create old file");
    c.execute_batch(&format!(
        "PRAGMA journal_mode = WAL;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT NOT NULL, sources TEXT NOT NULL,
                 created_ms INTEGER NOT NULL, last_used_ms INTEGER NOT NULL);
             CREATE TABLE numbers (namespace TEXT NOT NULL, key TEXT NOT NULL,
                 number INTEGER NOT NULL, source_id TEXT NOT NULL,
                 PRIMARY KEY (namespace, key), UNIQUE (namespace, number)) WITHOUT ROWID;
{rest}"
    ))
    .expect("old schema");
}

/// A file written by schema version 1 (events in a `WITHOUT ROWID` table, `last_event` kept on
/// the stream row) opens with everything in it, and is upgraded to the current version.
#[test]
fn a_version_1_file_is_upgraded_without_losing_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v1.db");
    old_file(
        &path,
        "CREATE TABLE streams (id TEXT PRIMARY KEY, owner TEXT NOT NULL, session_id TEXT,
                 status TEXT NOT NULL, created_ms INTEGER NOT NULL,
                 last_event INTEGER NOT NULL DEFAULT 0);
             CREATE TABLE events (stream_id TEXT NOT NULL, id INTEGER NOT NULL,
                 data TEXT NOT NULL, PRIMARY KEY (stream_id, id)) WITHOUT ROWID;
             INSERT INTO streams VALUES ('old', 'o', NULL, 'running', 1, 3);
             INSERT INTO events VALUES ('old', 1, 'a'), ('old', 2, 'b'), ('old', 3, 'c');
             INSERT INTO numbers VALUES ('stream:old', 'id:x', 1, 'x');
             PRAGMA user_version = 1;",
    );
    futures_executor::block_on(async {
        let store = SqliteStore::open(&path).expect("open and upgrade");
        let got: Vec<(u64, String)> = store
            .events_after("old", 0, 10)
            .await
            .expect("events")
            .into_iter()
            .map(|e| (e.id, e.data))
            .collect();
        assert_eq!(got, vec![(1, "a".into()), (2, "b".into()), (3, "c".into())]);
        // The log continues after the migrated events, and nowhere else.
        let bad = store
            .append_events(
                "old",
                vec![StoredEvent {
                    id: 5,
                    data: "e".into(),
                }],
            )
            .await;
        assert!(bad.is_err(), "{bad:?}");
        store
            .append_events(
                "old",
                vec![StoredEvent {
                    id: 4,
                    data: "d".into(),
                }],
            )
            .await
            .expect("append after the migrated events");
        assert_eq!(store.running_streams().await.expect("running"), vec!["old"]);
        let n = store
            .allocate(&NumberScope::Stream("old".into()), "id:y", "y")
            .await
            .expect("allocate");
        assert_eq!(n.number, 2);
    });
    assert_eq!(schema_version(&path), 4);
}

/// Every event of a stream, read page by page.
async fn read_all(store: &SqliteStore, stream: &str) -> Vec<StoredEvent> {
    let mut got = Vec::new();
    let mut after = 0;
    loop {
        let page = store.events_after(stream, after, 37).await.expect("read");
        let Some(last) = page.last() else { break };
        after = last.id;
        got.extend(page);
    }
    got
}

fn ev(id: u64, data: &str) -> StoredEvent {
    StoredEvent {
        id,
        data: data.into(),
    }
}

/// The `live` stream of an upgraded file holds `l1` … `l{n}`: it reads back whole, takes event
/// `n + 1` and no other, finishes, and reads back whole again.
async fn live_continues_after(store: &SqliteStore, n: u64) {
    let events = |n: u64| (1..=n).map(|i| ev(i, &format!("l{i}"))).collect::<Vec<_>>();
    assert_eq!(read_all(store, "live").await, events(n));
    let bad = store.append_events("live", vec![ev(n + 2, "skip")]).await;
    assert!(bad.is_err(), "{bad:?}");
    store
        .append_events("live", vec![ev(n + 1, &format!("l{}", n + 1))])
        .await
        .expect("append after the migrated events");
    store
        .finish_stream("live", StreamStatus::Completed)
        .await
        .expect("finish");
    assert_eq!(read_all(store, "live").await, events(n + 1));
}

/// The one integer `sql` gives, read from the file at `path` (a count, a pragma).
fn file_int(path: &std::path::Path, sql: &str) -> i64 {
    rusqlite::Connection::open(path)
        .expect("reopen")
        .query_row(sql, [], |r| r.get(0))
        .expect(sql)
}

/// The file's `PRAGMA user_version`.
fn schema_version(path: &std::path::Path) -> i64 {
    file_int(path, "PRAGMA user_version")
}

fn running(id: &str) -> StreamRecord {
    StreamRecord {
        id: id.into(),
        owner: "o".into(),
        session_id: None,
        status: StreamStatus::Running,
        created_ms: 1,
    }
}

/// Streams written in turns, as a busy server writes them: each stream reads back exactly its
/// own events while running (far past the in-memory tail, so from the log), after finishing
/// (through the index written then), and after the file is reopened with one stream left
/// running (indexed on opening); the running one then goes on and finishes.
#[test]
fn interleaved_streams_read_back_running_finished_and_after_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("interleaved.db");
    let names = ["a", "b", "c"];
    let event = |s: &str, id: u64| StoredEvent {
        id,
        data: format!("{s}{id}"),
    };
    let expected = |s: &str, n: u64| (1..=n).map(|id| event(s, id)).collect::<Vec<_>>();
    futures_executor::block_on(async {
        let store = SqliteStore::open(&path).expect("open");
        for s in names {
            store.create_stream(running(s)).await.expect("create");
        }
        for id in 1..=400 {
            for s in names {
                store
                    .append_events(s, vec![event(s, id)])
                    .await
                    .expect("append");
            }
        }
        for s in names {
            assert_eq!(read_all(&store, s).await, expected(s, 400), "{s} running");
        }
        store
            .finish_stream("a", StreamStatus::Completed)
            .await
            .expect("finish a");
        store
            .finish_stream("b", StreamStatus::Failed)
            .await
            .expect("finish b");
        assert_eq!(read_all(&store, "a").await, expected("a", 400));
        assert_eq!(read_all(&store, "b").await, expected("b", 400));
        // A finished stream's followers are not kept waiting.
        store.wait_for_events("a", 400).await.expect("wait");
    });
    futures_executor::block_on(async {
        let store = SqliteStore::open(&path).expect("reopen");
        assert_eq!(store.running_streams().await.expect("running"), ["c"]);
        // Without a tail, a follower of the running stream learns from the log what is new.
        use futures_util::FutureExt;
        let behind = store.wait_for_events("c", 399).now_or_never();
        assert!(matches!(behind, Some(Ok(()))), "{behind:?}");
        let caught_up = store.wait_for_events("c", 400).now_or_never();
        assert!(caught_up.is_none(), "{caught_up:?}");
        for s in names {
            assert_eq!(read_all(&store, s).await, expected(s, 400), "{s} reopened");
        }
        let more: Vec<_> = (401..=450).map(|id| event("c", id)).collect();
        store.append_events("c", more).await.expect("append c");
        assert_eq!(read_all(&store, "c").await, expected("c", 450));
        store
            .finish_stream("c", StreamStatus::Interrupted)
            .await
            .expect("finish c");
        assert_eq!(read_all(&store, "c").await, expected("c", 450));
        // Finished streams old enough are purged with their events; the others stay whole.
        assert_eq!(store.purge_idle(2).await.expect("purge"), 3);
        for s in names {
            assert!(store.events_after(s, 0, 10).await.is_err(), "{s} purged");
        }
    });
    let left = file_int(&path, "SELECT COUNT(*) FROM event_log");
    assert_eq!(left, 0, "a purged stream's events leave the log");
}

/// A file written by schema version 2 (a rowid log with a unique index by stream) opens with
/// everything in it: a finished and a running stream read back whole, and the running one
/// continues.
#[test]
fn a_version_2_file_is_upgraded_without_losing_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v2.db");
    old_file(
        &path,
        "CREATE TABLE streams (id TEXT PRIMARY KEY, owner TEXT NOT NULL, session_id TEXT,
                 status TEXT NOT NULL, created_ms INTEGER NOT NULL);
             CREATE TABLE event_log (stream_id TEXT NOT NULL, id INTEGER NOT NULL,
                 data TEXT NOT NULL);
             CREATE UNIQUE INDEX event_log_by_stream ON event_log (stream_id, id);
             INSERT INTO streams VALUES ('done', 'o', NULL, 'completed', 1),
                 ('live', 'o', NULL, 'running', 1);
             INSERT INTO event_log VALUES ('live', 1, 'l1'), ('done', 1, 'd1'),
                 ('live', 2, 'l2'), ('done', 2, 'd2');
             PRAGMA user_version = 2;",
    );
    futures_executor::block_on(async {
        let store = SqliteStore::open(&path).expect("open and upgrade");
        assert_eq!(read_all(&store, "done").await, [ev(1, "d1"), ev(2, "d2")]);
        live_continues_after(&store, 2).await;
    });
    assert_eq!(schema_version(&path), 4);
}

/// A file written by schema version 3 (the index by stream as one `event_index` row per event)
/// opens with everything in it: a finished stream reads back whole through its new index, and a
/// running one a crash left half indexed reads back whole, continues and finishes.
#[test]
fn a_version_3_file_is_upgraded_without_losing_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v3.db");
    old_file(
        &path,
        "CREATE TABLE streams (id TEXT PRIMARY KEY, owner TEXT NOT NULL, session_id TEXT,
                 status TEXT NOT NULL, created_ms INTEGER NOT NULL, first_pos INTEGER);
             CREATE TABLE event_log (pos INTEGER PRIMARY KEY, stream_id TEXT NOT NULL,
                 id INTEGER NOT NULL, data TEXT NOT NULL);
             CREATE TABLE event_index (stream_id TEXT NOT NULL, id INTEGER NOT NULL,
                 pos INTEGER NOT NULL, PRIMARY KEY (stream_id, id)) WITHOUT ROWID;
             INSERT INTO streams VALUES ('done', 'o', NULL, 'completed', 1, 1),
                 ('live', 'o', NULL, 'running', 1, 2);
             INSERT INTO event_log VALUES (1, 'done', 1, 'd1'), (2, 'live', 1, 'l1'),
                 (3, 'done', 2, 'd2'), (4, 'live', 2, 'l2'), (5, 'live', 3, 'l3');
             INSERT INTO event_index VALUES ('done', 1, 1), ('done', 2, 3), ('live', 1, 2);
             PRAGMA user_version = 3;",
    );
    futures_executor::block_on(async {
        let store = SqliteStore::open(&path).expect("open and upgrade");
        assert_eq!(read_all(&store, "done").await, [ev(1, "d1"), ev(2, "d2")]);
        live_continues_after(&store, 3).await;
        assert_eq!(
            store.events_after("live", 2, 1).await.expect("page"),
            [ev(3, "l3")]
        );
    });
    assert_eq!(schema_version(&path), 4);
    let old_index = file_int(
        &path,
        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'event_index'",
    );
    assert_eq!(old_index, 0, "the old index table is gone");
}

/// A purge larger than one slice ([`PURGE_SLICE_EVENTS`] events, [`PURGE_SLICE_SESSIONS`]
/// sessions) takes several writer jobs and ends with exactly what one big delete would leave:
/// every old finished stream and idle session gone with its events and numbers; running
/// streams, newer streams and sessions in use whole.
#[test]
fn a_purge_larger_than_a_slice_removes_exactly_the_idle_records() {
    use citeflow_core::{Source, Sources};
    use citeflow_store::SessionRecord;
    use citeflow_store_sqlite::{PURGE_SLICE_EVENTS, PURGE_SLICE_SESSIONS};

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("purge.db");
    let per_stream = PURGE_SLICE_EVENTS / 2 + 1;
    let old = ["o1", "o2", "o3", "o4"];
    let old_sessions = PURGE_SLICE_SESSIONS + PURGE_SLICE_SESSIONS / 2;
    let session = |id: String, used: u64| SessionRecord {
        id,
        owner: "o".into(),
        sources: Sources::from_vec(vec![Source::new("s1")]).expect("sources"),
        created_ms: used,
        last_used_ms: used,
    };
    futures_executor::block_on(async {
        let store = SqliteStore::open(&path).expect("open");
        for (s, created_ms) in old
            .iter()
            .map(|s| (*s, 1))
            .chain([("live", 1), ("new", 50)])
        {
            let record = StreamRecord {
                created_ms,
                ..running(s)
            };
            store.create_stream(record).await.expect("create");
            let events: Vec<_> = (1..=per_stream).map(|i| ev(i, s)).collect();
            store.append_events(s, events).await.expect("append");
            let scope = NumberScope::Stream(s.into());
            store.allocate(&scope, "k", "s1").await.expect("number");
            if s != "live" {
                store
                    .finish_stream(s, StreamStatus::Completed)
                    .await
                    .expect("finish");
            }
        }
        for i in 0..old_sessions + 2 {
            // The last two are in use (after the cutoff).
            let used = if i < old_sessions { 1 } else { 50 };
            store
                .create_session(session(format!("se{i}"), used))
                .await
                .expect("session");
            let scope = NumberScope::Session(format!("se{i}"));
            store.allocate(&scope, "k", "s1").await.expect("number");
        }

        let purged = store.purge_idle(10).await.expect("purge");
        assert_eq!(purged, old.len() as u64 + old_sessions as u64);
        for s in old {
            assert!(store.events_after(s, 0, 1).await.is_err(), "{s} purged");
        }
        for s in ["live", "new"] {
            let all: Vec<_> = (1..=per_stream).map(|i| ev(i, s)).collect();
            assert_eq!(read_all(&store, s).await, all, "{s} whole");
        }
        assert_eq!(store.count_sessions("o").await.expect("count"), 2);
        assert!(store.session(&format!("se{}", old_sessions)).await.is_ok());
        assert!(store.session("se0").await.is_err());
    });
    let count = |sql: &str| file_int(&path, sql);
    assert_eq!(
        count("SELECT COUNT(*) FROM event_log"),
        2 * per_stream as i64,
        "only the live and the new stream's events are left"
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM numbers"),
        4,
        "the numbers of the two streams and two sessions left"
    );
}

/// Under steady appends the WAL never empties by itself (the writer commits while the
/// checkpoint thread copies); past three quarters of `wal_max_bytes` it starts over, so its
/// file stays near the limit instead of growing with everything written. Appends of one event
/// every millisecond for at least 2 s (each commit writes at least one 4 KiB frame, so without
/// a restart the WAL would hold at least `appends × 4120` bytes) with a limit of 256 KiB: the
/// file ends under a third of that, and every event reads back, before and after reopening.
#[test]
fn the_wal_starts_over_under_steady_appends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("wal.db");
    let wal = dir.path().join("wal.db-wal");
    let mut options = SqliteOptions::default();
    options.wal_max_bytes = 256 << 10;
    let data = "x".repeat(1000);
    let appended = futures_executor::block_on(async {
        let store = SqliteStore::open_with(&path, &options).expect("open");
        store
            .create_stream(running("steady"))
            .await
            .expect("create");
        let start = std::time::Instant::now();
        let mut n = 0;
        while n < 1500 || start.elapsed() < std::time::Duration::from_secs(2) {
            n += 1;
            store
                .append_events("steady", vec![ev(n, &format!("{n} {data}"))])
                .await
                .expect("append");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let size = std::fs::metadata(&wal).expect("the WAL").len();
        let without_restart = n * 4120;
        assert!(
            size < without_restart / 3,
            "WAL file of {size} bytes after {n} appends: it did not start over"
        );
        let want: Vec<StoredEvent> = (1..=n).map(|i| ev(i, &format!("{i} {data}"))).collect();
        assert_eq!(read_all(&store, "steady").await, want);
        store
            .finish_stream("steady", StreamStatus::Completed)
            .await
            .expect("finish");
        want
    });
    let store = SqliteStore::open(&path).expect("reopen");
    assert_eq!(
        futures_executor::block_on(read_all(&store, "steady")),
        appended
    );
}
