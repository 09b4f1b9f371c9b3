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
    });
}
