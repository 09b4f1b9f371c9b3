//! Integration tests of citeflow-store-sqlite.

use std::sync::Arc;

use citeflow_store::{conformance, NumberScope, Store, StoredEvent, StreamRecord, StreamStatus};
use citeflow_store_sqlite::SqliteStore;

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

/// A file written by schema version 1 (events in a `WITHOUT ROWID` table, `last_event` kept on
/// the stream row) opens with everything in it, and is upgraded to version 2.
#[test]
fn a_version_1_file_is_upgraded_without_losing_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v1.db");
    {
        let c = rusqlite::Connection::open(&path).expect("create v1 file");
        c.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT NOT NULL, sources TEXT NOT NULL,
                 created_ms INTEGER NOT NULL, last_used_ms INTEGER NOT NULL);
             CREATE TABLE numbers (namespace TEXT NOT NULL, key TEXT NOT NULL,
                 number INTEGER NOT NULL, source_id TEXT NOT NULL,
                 PRIMARY KEY (namespace, key), UNIQUE (namespace, number)) WITHOUT ROWID;
             CREATE TABLE streams (id TEXT PRIMARY KEY, owner TEXT NOT NULL, session_id TEXT,
                 status TEXT NOT NULL, created_ms INTEGER NOT NULL,
                 last_event INTEGER NOT NULL DEFAULT 0);
             CREATE TABLE events (stream_id TEXT NOT NULL, id INTEGER NOT NULL,
                 data TEXT NOT NULL, PRIMARY KEY (stream_id, id)) WITHOUT ROWID;
             INSERT INTO streams VALUES ('old', 'o', NULL, 'running', 1, 3);
             INSERT INTO events VALUES ('old', 1, 'a'), ('old', 2, 'b'), ('old', 3, 'c');
             INSERT INTO numbers VALUES ('stream:old', 'id:x', 1, 'x');
             PRAGMA user_version = 1;",
        )
        .expect("v1 schema");
    }
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
    let c = rusqlite::Connection::open(&path).expect("reopen");
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(v, 2);
}
