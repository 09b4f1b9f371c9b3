//! The behaviour every [`Store`] shares. Each adapter's tests call [`run_all`] on a fresh store.
//!
//! ```
//! # futures_executor::block_on(async {
//! let store = std::sync::Arc::new(citeflow_store::MemoryStore::new());
//! citeflow_store::conformance::run_all(store).await;
//! # });
//! ```

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use citeflow_core::{Source, Sources};
use futures_util::StreamExt;

use crate::error::StoreError;
use crate::model::{NumberScope, SessionRecord, StoredEvent, StreamRecord, StreamStatus};
use crate::store::{follow, Store};

/// Runs every check in turn; panics with the check's name on the first failure.
pub async fn run_all(store: Arc<dyn Store>) {
    sessions_round_trip_and_delete(store.clone()).await;
    rounds_append_atomically(store.clone()).await;
    allocation_is_dense_and_stable(store.clone()).await;
    parallel_allocation_never_repeats_a_number(store.clone()).await;
    allocate_many_numbers_in_order(store.clone()).await;
    scopes_are_separate(store.clone()).await;
    event_log_is_ordered_and_replayed(store.clone()).await;
    follow_replays_then_tails_live(store.clone()).await;
    finished_streams_refuse_events(store.clone()).await;
    running_streams_are_listed(store.clone()).await;
    idle_records_are_purged(store.clone()).await;
    sessions_are_counted_per_owner(store).await;
}

fn session(id: &str, owner: &str, now_ms: u64) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        owner: owner.to_owned(),
        sources: Sources::from_vec(vec![Source::new("s1").with_title("One")])
            .expect("valid sources"),
        created_ms: now_ms,
        last_used_ms: now_ms,
    }
}

fn stream(id: &str, now_ms: u64) -> StreamRecord {
    StreamRecord {
        id: id.to_owned(),
        owner: "k".to_owned(),
        session_id: None,
        status: StreamStatus::Running,
        created_ms: now_ms,
    }
}

fn ev(id: u64) -> StoredEvent {
    StoredEvent {
        id,
        data: format!("{{\"n\":{id}}}"),
    }
}

/// Create, read, and delete a session; unknown ids are `NotFound`; ids are unique.
pub async fn sessions_round_trip_and_delete(store: Arc<dyn Store>) {
    let s = session("conf-sess-1", "owner-a", 1_000);
    store.create_session(s.clone()).await.expect("create");
    // Compared as JSON: `Sources` keeps a lookup index that is rebuilt on demand.
    let json = |s: &SessionRecord| serde_json::to_value(s).expect("json");
    assert_eq!(
        json(&store.session("conf-sess-1").await.expect("read")),
        json(&s)
    );
    assert!(matches!(
        store.create_session(s).await,
        Err(StoreError::Exists { .. })
    ));
    store.delete_session("conf-sess-1").await.expect("delete");
    assert!(matches!(
        store.session("conf-sess-1").await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete_session("conf-sess-1").await,
        Err(StoreError::NotFound { .. })
    ));
}

/// Rounds are numbered in order and a bad round registers nothing.
pub async fn rounds_append_atomically(store: Arc<dyn Store>) {
    store
        .create_session(session("conf-sess-2", "o", 1))
        .await
        .expect("create");
    let s = store
        .append_round(
            "conf-sess-2",
            Some("q2".into()),
            vec![Source::new("s2"), Source::new("s1")],
            5,
        )
        .await
        .expect("round");
    assert_eq!(s.sources.rounds().len(), 2);
    assert_eq!(s.sources.rounds()[1].query.as_deref(), Some("q2"));
    assert_eq!(s.sources.len(), 2);
    assert_eq!(s.last_used_ms, 5);
    let bad = store
        .append_round(
            "conf-sess-2",
            None,
            vec![Source::new("x"), Source::new("x")],
            6,
        )
        .await;
    assert!(matches!(bad, Err(StoreError::Sources(_))), "{bad:?}");
    let again = store.session("conf-sess-2").await.expect("read");
    assert_eq!(again.sources.rounds().len(), 2);
    assert!(matches!(
        store.append_round("conf-nope", None, vec![], 1).await,
        Err(StoreError::NotFound { .. })
    ));
    store.delete_session("conf-sess-2").await.expect("delete");
}

/// Numbers start at 1, follow first-allocation order, and a key keeps its number.
pub async fn allocation_is_dense_and_stable(store: Arc<dyn Store>) {
    let scope = NumberScope::Session("conf-alloc".into());
    let a = store.allocate(&scope, "key:a", "s1").await.expect("a");
    let b = store.allocate(&scope, "key:b", "s2").await.expect("b");
    let a2 = store
        .allocate(&scope, "key:a", "s3")
        .await
        .expect("a again");
    assert_eq!((a.number, a.is_new), (1, true));
    assert_eq!((b.number, b.is_new), (2, true));
    assert_eq!((a2.number, a2.is_new), (1, false));
    let table = store.numbering(&scope).await.expect("table");
    let rows: Vec<_> = table
        .entries()
        .iter()
        .map(|e| (e.number, e.key.as_str(), e.source_id.as_str()))
        .collect();
    assert_eq!(rows, [(1, "key:a", "s1"), (2, "key:b", "s2")]);
}

/// Many concurrent allocations over overlapping keys: each key one number, each number one
/// key, numbers dense.
pub async fn parallel_allocation_never_repeats_a_number(store: Arc<dyn Store>) {
    let scope = NumberScope::Session("conf-parallel".into());
    let tasks = (0..400).map(|i| {
        let store = store.clone();
        let scope = scope.clone();
        async move {
            let key = format!("key:{}", (i * 7) % 50);
            let a = store.allocate(&scope, &key, "s").await.expect("allocate");
            (key, a.number)
        }
    });
    let got = futures_util::future::join_all(tasks).await;
    let mut by_key: HashMap<String, u32> = HashMap::new();
    for (k, n) in got {
        let prev = by_key.insert(k.clone(), n);
        assert!(prev.is_none_or(|p| p == n), "key {k} got two numbers");
    }
    let numbers: HashSet<u32> = by_key.values().copied().collect();
    assert_eq!(numbers.len(), by_key.len(), "a number was given twice");
    assert_eq!(numbers, (1..=50).collect::<HashSet<u32>>());
    assert_eq!(store.numbering(&scope).await.expect("table").len(), 50);
}

/// `allocate_many` gives what `allocate` key by key in the same order gives: new keys in order,
/// a repeated key its first number, known keys their numbers; concurrent batches and single
/// allocations over overlapping keys never give a number twice or a key two numbers.
pub async fn allocate_many_numbers_in_order(store: Arc<dyn Store>) {
    let scope = NumberScope::Session("conf-many".into());
    assert!(store
        .allocate_many(&scope, &[])
        .await
        .expect("empty")
        .is_empty());
    store.allocate(&scope, "key:b", "sb").await.expect("b");
    let got = store
        .allocate_many(
            &scope,
            &[
                ("key:a", "sa"),
                ("key:b", "sb2"),
                ("key:c", "sc"),
                ("key:a", "sa2"),
            ],
        )
        .await
        .expect("many");
    let got: Vec<_> = got.iter().map(|a| (a.number, a.is_new)).collect();
    assert_eq!(got, [(2, true), (1, false), (3, true), (2, false)]);
    let rows: Vec<_> = store
        .numbering(&scope)
        .await
        .expect("table")
        .entries()
        .iter()
        .map(|e| (e.number, e.key.clone(), e.source_id.clone()))
        .collect();
    let want = [(1, "key:b", "sb"), (2, "key:a", "sa"), (3, "key:c", "sc")];
    let want: Vec<_> = want
        .iter()
        .map(|(n, k, s)| (*n, (*k).to_owned(), (*s).to_owned()))
        .collect();
    assert_eq!(rows, want);

    let scope = NumberScope::Session("conf-many-parallel".into());
    let tasks = (0..64).map(|i| {
        let store = store.clone();
        let scope = scope.clone();
        async move {
            let keys: Vec<String> = (0..5)
                .map(|j| format!("key:{}", (i * 7 + j * 3) % 40))
                .collect();
            if i % 2 == 0 {
                let pairs: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "s")).collect();
                let got = store.allocate_many(&scope, &pairs).await.expect("many");
                assert_eq!(got.len(), keys.len());
                keys.into_iter()
                    .zip(got.into_iter().map(|a| a.number))
                    .collect::<Vec<_>>()
            } else {
                let mut out = Vec::new();
                for k in keys {
                    let n = store.allocate(&scope, &k, "s").await.expect("one").number;
                    out.push((k, n));
                }
                out
            }
        }
    });
    let got = futures_util::future::join_all(tasks).await;
    let mut by_key: HashMap<String, u32> = HashMap::new();
    for (k, n) in got.into_iter().flatten() {
        let prev = by_key.insert(k.clone(), n);
        assert!(prev.is_none_or(|p| p == n), "key {k} got two numbers");
    }
    let numbers: HashSet<u32> = by_key.values().copied().collect();
    assert_eq!(numbers.len(), by_key.len(), "a number was given twice");
    assert_eq!(numbers, (1..=by_key.len() as u32).collect::<HashSet<u32>>());
    let table = store.numbering(&scope).await.expect("table");
    for e in table.entries() {
        assert_eq!(
            by_key.get(&e.key),
            Some(&e.number),
            "stored {} differs",
            e.key
        );
    }
    assert_eq!(table.len(), by_key.len());
}

/// Session and stream scopes have their own tables; deleting a session drops its table.
pub async fn scopes_are_separate(store: Arc<dyn Store>) {
    store
        .create_session(session("conf-scope", "o", 1))
        .await
        .expect("create");
    let ses = NumberScope::Session("conf-scope".into());
    let stm = NumberScope::Stream("conf-scope".into());
    store.allocate(&ses, "k1", "s").await.expect("a");
    store.allocate(&ses, "k2", "s").await.expect("b");
    assert_eq!(store.allocate(&stm, "k2", "s").await.expect("c").number, 1);
    store.delete_session("conf-scope").await.expect("delete");
    assert!(store.numbering(&ses).await.expect("table").is_empty());
    assert_eq!(store.numbering(&stm).await.expect("table").len(), 1);
}

/// Appends must continue the ids; reads page in order.
pub async fn event_log_is_ordered_and_replayed(store: Arc<dyn Store>) {
    store
        .create_stream(stream("conf-log", 1))
        .await
        .expect("create");
    assert_eq!(
        store.stream("conf-log").await.expect("read"),
        stream("conf-log", 1)
    );
    store
        .append_events("conf-log", vec![ev(1), ev(2)])
        .await
        .expect("append");
    store
        .append_events("conf-log", vec![ev(3)])
        .await
        .expect("append");
    let bad = store.append_events("conf-log", vec![ev(5)]).await;
    assert!(
        matches!(
            bad,
            Err(StoreError::EventOrder {
                last: 3,
                got: 5,
                ..
            })
        ),
        "{bad:?}"
    );
    let bad = store.append_events("conf-log", vec![ev(4), ev(4)]).await;
    assert!(matches!(bad, Err(StoreError::EventOrder { .. })), "{bad:?}");
    assert_eq!(
        store.events_after("conf-log", 0, 100).await.expect("read"),
        vec![ev(1), ev(2), ev(3)]
    );
    assert_eq!(
        store.events_after("conf-log", 1, 1).await.expect("read"),
        vec![ev(2)]
    );
    assert!(store
        .events_after("conf-log", 3, 10)
        .await
        .expect("read")
        .is_empty());
    assert!(matches!(
        store.events_after("conf-none", 0, 10).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.create_stream(stream("conf-log", 2)).await,
        Err(StoreError::Exists { .. })
    ));
    // The append that hands refused events back: as they were given; taken ones are logged.
    match store.append_events_or_return("conf-log", vec![ev(5)]).await {
        Err((
            StoreError::EventOrder {
                last: 3, got: 5, ..
            },
            back,
        )) => assert_eq!(back, vec![ev(5)]),
        other => panic!("{other:?}"),
    }
    store
        .append_events_or_return("conf-log", vec![ev(4)])
        .await
        .map_err(|(e, _)| e)
        .expect("append");
    assert_eq!(
        store.events_after("conf-log", 3, 10).await.expect("read"),
        vec![ev(4)]
    );
}

/// A follower gets the logged events, then each live one, and ends when the stream finishes.
pub async fn follow_replays_then_tails_live(store: Arc<dyn Store>) {
    store
        .create_stream(stream("conf-follow", 1))
        .await
        .expect("create");
    store
        .append_events("conf-follow", vec![ev(1), ev(2)])
        .await
        .expect("append");
    let mut feed = follow(store.clone(), "conf-follow".into(), 1);
    assert_eq!(feed.next().await.expect("item").expect("ok"), ev(2));
    let writer = {
        let store = store.clone();
        async move {
            for i in 3..=40 {
                store
                    .append_events("conf-follow", vec![ev(i)])
                    .await
                    .expect("append");
            }
            store
                .finish_stream("conf-follow", StreamStatus::Completed)
                .await
                .expect("finish");
        }
    };
    let reader = async {
        let mut got = Vec::new();
        while let Some(e) = feed.next().await {
            got.push(e.expect("ok").id);
        }
        got
    };
    let ((), got) = futures_util::future::join(writer, reader).await;
    assert_eq!(got, (3..=40).collect::<Vec<u64>>());
    assert_eq!(
        store.stream("conf-follow").await.expect("read").status,
        StreamStatus::Completed
    );
    let all: Vec<u64> = follow(store.clone(), "conf-follow".into(), 0)
        .map(|e| e.expect("ok").id)
        .collect()
        .await;
    assert_eq!(all, (1..=40).collect::<Vec<u64>>());
}

/// A finished stream accepts no more events.
pub async fn finished_streams_refuse_events(store: Arc<dyn Store>) {
    store
        .create_stream(stream("conf-closed", 1))
        .await
        .expect("create");
    store
        .append_events("conf-closed", vec![ev(1)])
        .await
        .expect("append");
    store
        .finish_stream("conf-closed", StreamStatus::Failed)
        .await
        .expect("finish");
    let bad = store.append_events("conf-closed", vec![ev(2)]).await;
    assert!(
        matches!(bad, Err(StoreError::StreamClosed { .. })),
        "{bad:?}"
    );
    store
        .wait_for_events("conf-closed", 1)
        .await
        .expect("returns at once");
}

/// Streams still running are listed (a restarted server marks them interrupted).
pub async fn running_streams_are_listed(store: Arc<dyn Store>) {
    store
        .create_stream(stream("conf-run-a", 1))
        .await
        .expect("create");
    store
        .create_stream(stream("conf-run-b", 1))
        .await
        .expect("create");
    store
        .finish_stream("conf-run-b", StreamStatus::Interrupted)
        .await
        .expect("finish");
    let running = store.running_streams().await.expect("list");
    assert!(running.contains(&"conf-run-a".to_owned()));
    assert!(!running.contains(&"conf-run-b".to_owned()));
    store
        .finish_stream("conf-run-a", StreamStatus::Completed)
        .await
        .expect("finish");
}

/// Sessions are counted per owner; a deleted or purged one no longer counts.
pub async fn sessions_are_counted_per_owner(store: Arc<dyn Store>) {
    let count = |owner: &'static str| {
        let store = store.clone();
        async move { store.count_sessions(owner).await.expect("count") }
    };
    assert_eq!(count("conf-count-a").await, 0);
    for (id, owner) in [
        ("conf-count-1", "conf-count-a"),
        ("conf-count-2", "conf-count-a"),
        ("conf-count-3", "conf-count-a"),
        ("conf-count-4", "conf-count-b"),
    ] {
        store
            .create_session(session(id, owner, 2_000))
            .await
            .expect("create");
    }
    assert_eq!(
        (count("conf-count-a").await, count("conf-count-b").await),
        (3, 1)
    );
    store.delete_session("conf-count-2").await.expect("delete");
    assert_eq!(count("conf-count-a").await, 2);
    // Idle ones purged: no longer counted.
    store
        .create_session(session("conf-count-old", "conf-count-c", 10))
        .await
        .expect("create");
    store
        .create_session(session("conf-count-new", "conf-count-c", 10))
        .await
        .expect("create");
    store
        .touch_session("conf-count-new", 5_000)
        .await
        .expect("touch");
    assert_eq!(count("conf-count-c").await, 2);
    store.purge_idle(1_000).await.expect("purge");
    assert_eq!(count("conf-count-c").await, 1);
    assert_eq!(count("conf-count-a").await, 2);
}

/// Idle sessions and finished streams go; recent ones and running streams stay.
pub async fn idle_records_are_purged(store: Arc<dyn Store>) {
    store
        .create_session(session("conf-old", "o", 10))
        .await
        .expect("create");
    store
        .create_session(session("conf-new", "o", 10))
        .await
        .expect("create");
    store.touch_session("conf-new", 5_000).await.expect("touch");
    store
        .create_stream(stream("conf-old-stream", 10))
        .await
        .expect("create");
    store
        .finish_stream("conf-old-stream", StreamStatus::Completed)
        .await
        .expect("finish");
    store
        .create_stream(stream("conf-live-stream", 10))
        .await
        .expect("create");
    store.purge_idle(1_000).await.expect("purge");
    assert!(store.session("conf-old").await.is_err());
    assert!(store.session("conf-new").await.is_ok());
    assert!(store.stream("conf-old-stream").await.is_err());
    assert!(store.stream("conf-live-stream").await.is_ok());
    store
        .finish_stream("conf-live-stream", StreamStatus::Completed)
        .await
        .expect("finish");
}
