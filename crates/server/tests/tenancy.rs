//! Tenancy (issue 15): books belong to the API key that uploaded them; books of the index at
//! start-up are shared and read-only; another key's book is answered as if absent.

use std::io::{Read, Write};
use std::sync::Arc;

use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::{fingerprint, BookPassage, Index};
use citeflow_replay::Script;
use citeflow_store::MemoryStore;
use serde_json::{json, Value};

use crate::support::{read_sse, shared_dir, Harness};

const ALICE: &str = "alice.epub";
const KUSAMAKURA: &str = "kusamakura-japanese-vertical-writing.epub";

fn epub(name: &str) -> Vec<u8> {
    let p = shared_dir().join("fixtures/epub").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The same book in other bytes (every entry stored): another fingerprint, the same
/// identifier and title.
fn restored(bytes: &[u8]) -> Vec<u8> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).expect("entry");
        let mut data = Vec::new();
        f.read_to_end(&mut data).expect("read");
        w.start_file(f.name().to_owned(), stored).expect("start");
        w.write_all(&data).expect("write");
    }
    w.finish().expect("zip").into_inner()
}

async fn send(r: reqwest::RequestBuilder) -> (u16, Value) {
    let r = r.send().await.expect("send");
    let status = r.status().as_u16();
    (status, r.json().await.expect("json"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books_belong_to_the_key_that_added_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A start-up book, as `citeflow serve --book` adds it: shared, read-only.
    let shared = {
        let mut index = Index::open_or_create(dir.path()).expect("index");
        let bytes = epub(ALICE);
        let book = Book::open(&bytes, &Limits::default()).expect("opens");
        let settings = ChunkSettings::default();
        let passages = BookPassage::from_book(&book, &settings);
        index
            .add_book(&passages, &fingerprint(&bytes, &settings))
            .expect("indexed");
        index
            .keep_epub(&passages[0].book_key, &bytes)
            .expect("kept");
        passages[0].book_key.clone()
    };
    let h = Harness::with(
        |s| {
            s.with_index(dir.path())
                .with_api_keys(vec!["key-a".into(), "key-b".into()])
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let upload = |key: &str, bytes: Vec<u8>| {
        h.post("/v1/books")
            .bearer_auth(key)
            .header("content-type", "application/epub+zip")
            .body(bytes)
    };
    let keys_of = |key: &'static str| {
        let r = h.get("/v1/books").bearer_auth(key);
        async move {
            let (status, v) = send(r).await;
            assert_eq!(status, 200, "{v}");
            let mut keys: Vec<String> = v["data"]
                .as_array()
                .expect("data")
                .iter()
                .map(|b| b["key"].as_str().expect("key").to_owned())
                .collect();
            keys.sort();
            keys
        }
    };

    // Key a adds a book: its key carries 64 bits of hash.
    let (status, a) = send(upload("key-a", epub(KUSAMAKURA))).await;
    assert_eq!(status, 201, "{a}");
    let a_key = a["key"].as_str().expect("key").to_owned();
    let hash = a_key.rsplit_once('-').expect("slug-hash").1;
    assert_eq!(hash.len(), 16, "{a_key}");

    // a sees the shared book and its own; b only the shared one.
    let mut both = vec![shared.clone(), a_key.clone()];
    both.sort();
    assert_eq!(keys_of("key-a").await, both);
    assert_eq!(keys_of("key-b").await, vec![shared.clone()]);

    // b cannot read, search or ask a's book: 404 as if absent.
    let cfi = "epubcfi(/6/4!/4/2/1:0)";
    let (status, v) = send(
        h.get(&format!("/v1/books/{a_key}/read"))
            .query(&[("cfi", cfi)])
            .bearer_auth("key-b"),
    )
    .await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (404, &json!("book_not_found"))
    );
    let (status, v) = send(
        h.post(&format!("/v1/books/{a_key}/search"))
            .bearer_auth("key-b")
            .json(&json!({"query": "智に働けば"})),
    )
    .await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (404, &json!("book_not_found"))
    );
    let ask = |key: &str, book: &str| {
        h.post("/v1/chat/completions")
            .bearer_auth(key)
            .json(&json!({
                "model": "m", "stream": true,
                "messages": [{"role": "user", "content": "智に働けば角が立つ"}],
                "citeflow": {"book": book, "top_k": 1},
            }))
    };
    let (status, v) = send(ask("key-b", &a_key)).await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["error"]["code"], "book_not_found");
    assert_eq!(v["error"]["param"], "citeflow.book");
    // a can.
    let (status, v) = send(
        h.post(&format!("/v1/books/{a_key}/search"))
            .bearer_auth("key-a")
            .json(&json!({"query": "智に働けば"})),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert!(!v["data"].as_array().expect("data").is_empty());

    // b adding the same book gets a copy of its own; a's is untouched.
    let (status, b) = send(upload("key-b", epub(KUSAMAKURA))).await;
    assert_eq!(status, 201, "{b}");
    let b_key = b["key"].as_str().expect("key").to_owned();
    assert_ne!(b_key, a_key);
    assert_eq!(keys_of("key-b").await.len(), 2);
    let (status, _) = send(upload("key-a", epub(KUSAMAKURA))).await;
    assert_eq!(status, 200, "a's book is still as a added it");

    // The shared book as it is: found, not copied. Other bytes of it (a new fingerprint)
    // cannot replace it: they become b's own book.
    let (status, v) = send(upload("key-b", epub(ALICE))).await;
    assert_eq!(
        (status, &v["key"], &v["added"]),
        (200, &json!(shared), &json!(false))
    );
    let (status, v) = send(upload("key-b", restored(&epub(ALICE)))).await;
    assert_eq!(status, 201, "{v}");
    assert_ne!(v["key"], json!(shared));
    let index = Index::open_or_create(dir.path()).expect("index");
    let listed = index.books().expect("books");
    let alice = listed.iter().find(|b| b.key == shared).expect("shared");
    assert_eq!(
        alice.fingerprint,
        fingerprint(&epub(ALICE), &ChunkSettings::default())
    );

    // Both keys read and ask the shared book.
    for key in ["key-a", "key-b"] {
        h.replay.insert("m", Script::chat(&["ok"]));
        let r = ask(key, &shared).send().await.expect("send");
        assert_eq!(r.status(), 200);
        read_sse(r, usize::MAX).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_past_its_running_answers_gets_429_and_others_do_not() {
    use citeflow_replay::{Script, Step};
    let h = Harness::with(
        |s| {
            s.with_api_keys(vec!["key-a".into(), "key-b".into()])
                .with_limits(crate::support::limits(|l| l.max_streams_per_key = 1))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    // An answer that takes a while: its first chunk, a pause, the rest.
    let quick = Script::chat(&["Hello ", "world"]);
    let mut steps = quick.steps[..2].to_vec();
    steps.push(Step::SleepMs(1_500));
    steps.extend(quick.steps[2..].iter().cloned());
    h.replay.insert("slow", Script::new(steps));
    h.replay.insert("quick", quick);
    let chat = |key: &str, model: &str| {
        h.post("/v1/chat/completions")
            .bearer_auth(key)
            .json(&json!({
                "model": model, "stream": true,
                "messages": [{"role": "user", "content": "q"}]
            }))
    };
    let first = chat("key-a", "slow").send().await.expect("send");
    assert_eq!(first.status(), 200);
    // While it runs, key a may not start another (streaming or not, any route)...
    for body in [
        json!({"model": "quick", "stream": true, "messages": []}),
        json!({"model": "quick", "messages": []}),
    ] {
        let (status, v) = send(
            h.post("/v1/chat/completions")
                .bearer_auth("key-a")
                .json(&body),
        )
        .await;
        assert_eq!(status, 429, "{v}");
        assert_eq!(v["error"]["code"], "too_many_streams", "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .expect("message")
                .contains("at most 1 are allowed at once (max_streams_per_key)"),
            "{v}"
        );
    }
    // ...but key b may.
    let b = chat("key-b", "quick").send().await.expect("send");
    assert_eq!(b.status(), 200);
    let events = crate::support::read_sse(b, usize::MAX).await;
    assert_eq!(crate::support::text_of(&events), "Hello world");
    // When a's answer ends, its slot comes back.
    let events = crate::support::read_sse(first, usize::MAX).await;
    assert_eq!(crate::support::text_of(&events), "Hello world");
    let mut status = 0;
    for _ in 0..50 {
        let r = chat("key-a", "quick").send().await.expect("send");
        status = r.status().as_u16();
        if status == 200 {
            let events = crate::support::read_sse(r, usize::MAX).await;
            assert_eq!(crate::support::text_of(&events), "Hello world");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(status, 200, "the slot was not given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_past_its_rounds_gets_429_and_stays_as_it_was() {
    let h = Harness::with(
        |s| s.with_limits(crate::support::limits(|l| l.max_rounds_per_session = 2)),
        Arc::new(MemoryStore::new()),
    )
    .await;
    let (status, v) = send(
        h.post("/v1/sessions")
            .json(&json!({"sources": [{"id": "a", "url": "https://e.org/a"}]})),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_owned();
    let round = |src: &str| {
        h.post(&format!("/v1/sessions/{id}/rounds"))
            .json(&json!({"query": "q", "sources": [{"id": src}]}))
    };
    let (status, v) = send(round("b")).await;
    assert_eq!((status, v["round"].as_u64()), (201, Some(2)), "{v}");
    let (status, v) = send(round("c")).await;
    assert_eq!(status, 429, "{v}");
    assert_eq!(v["error"]["code"], "too_many_rounds", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .expect("message")
            .contains("at most 2 are allowed (max_rounds_per_session)"),
        "{v}"
    );
    // A chat that would add a round is refused the same way, before the upstream is called.
    let (status, v) = send(h.post("/v1/chat/completions").json(&json!({
        "model": "m", "messages": [{"role": "user", "content": "q"}],
        "sources": [{"id": "d"}], "citeflow": {"session": id}
    })))
    .await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (429, Some("too_many_rounds")),
        "{v}"
    );
    // The session is as it was: two rounds, a and b.
    let (status, v) = send(h.get(&format!("/v1/sessions/{id}"))).await;
    assert_eq!(status, 200, "{v}");
    let ids: Vec<&str> = v["rounds"]
        .as_array()
        .expect("rounds")
        .iter()
        .flat_map(|r| r["sources"].as_array().expect("sources"))
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_past_its_sessions_gets_429_until_it_deletes_one() {
    let h = Harness::with(
        |s| {
            s.with_api_keys(vec!["key-a".into(), "key-b".into()])
                .with_limits(crate::support::limits(|l| l.max_sessions_per_key = 2))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let create = |key: &str| {
        h.post("/v1/sessions")
            .bearer_auth(key)
            .json(&json!({"sources": [{"id": "s"}]}))
    };
    let (status, first) = send(create("key-a")).await;
    assert_eq!(status, 201, "{first}");
    let (status, v) = send(create("key-a")).await;
    assert_eq!(status, 201, "{v}");
    let (status, v) = send(create("key-a")).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (429, Some("too_many_sessions")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .expect("message")
            .contains("at most 2 are allowed (max_sessions_per_key)"),
        "{v}"
    );
    // Another key has its own count.
    let (status, v) = send(create("key-b")).await;
    assert_eq!(status, 201, "{v}");
    // A deleted session no longer counts.
    let id = first["id"].as_str().expect("id");
    let r = h
        .client
        .delete(format!("{}/v1/sessions/{id}", h.base))
        .bearer_auth("key-a")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 204);
    let (status, v) = send(create("key-a")).await;
    assert_eq!(status, 201, "{v}");
}
