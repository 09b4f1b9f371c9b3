//! Intake under pressure (issue 44 §10): request bodies draw from one memory budget shared
//! by every request (slow clients that hold bodies open; a body past the budget waits, then
//! 503 `overloaded` with `Retry-After`; a slow client gives its share back at
//! `body_read_timeout_ms`), and an upload that meets a full disk (a real tmpfs the test mounts
//! and fills) answers 503 `store_unavailable`, leaves no partial book nor file, and the server
//! goes on; upload files a stopped server left are removed at start-up. The 300-client memory
//! figures against a real `citeflow serve` are in `scripts/test-hostile.sh`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use citeflow_replay::Script;
use citeflow_store::MemoryStore;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::store_full::{fill, Tmpfs};
use crate::support::{limits, read_sse, shared_dir, text_of, Harness};

/// A chat request for the replaying upstream's model `ok`, padded with spaces (valid JSON) to
/// `len` bytes.
fn padded_chat(len: usize) -> Vec<u8> {
    let mut body = json!({"model": "ok", "stream": true,
                          "messages": [{"role": "user", "content": "q"}]})
    .to_string()
    .into_bytes();
    assert!(body.len() < len);
    body.resize(len, b' ');
    body
}

/// A chat whose client sends all of a `len`-byte body but its last 10 bytes, then waits; the
/// sender sends the rest (and ends the body) when told to.
struct Slow {
    rest: mpsc::Sender<Result<Vec<u8>, std::io::Error>>,
    tail: Vec<u8>,
    answer: tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>,
}

impl Slow {
    async fn start(h: &Harness, len: usize) -> Slow {
        let mut body = padded_chat(len);
        let tail = body.split_off(len - 10);
        let (tx, rx) = mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
        tx.send(Ok(body)).await.expect("first part");
        let stream =
            futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|x| (x, rx)) },
            );
        let answer = tokio::spawn(
            h.post("/v1/chat/completions")
                .header("content-type", "application/json")
                .body(reqwest::Body::wrap_stream(stream))
                .send(),
        );
        Slow {
            rest: tx,
            tail,
            answer,
        }
    }

    /// Sends the last bytes; the answer.
    async fn finish(self) -> reqwest::Response {
        self.rest.send(Ok(self.tail)).await.expect("tail");
        drop(self.rest);
        self.answer.await.expect("task").expect("send")
    }
}

/// A whole chat of `len` bytes, sent at once: (status, `Retry-After`, error code or answer
/// text).
async fn chat(h: &Harness, len: usize) -> (u16, Option<String>, String) {
    let r = h
        .post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(padded_chat(len))
        .send()
        .await
        .expect("send");
    answer(r).await
}

async fn answer(r: reqwest::Response) -> (u16, Option<String>, String) {
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().expect("ascii").to_owned());
    if status == 200 {
        return (status, retry, text_of(&read_sse(r, 1 << 20).await));
    }
    let v: Value = r.json().await.expect("json");
    let code = v["error"]["code"].as_str().expect("code").to_owned();
    (status, retry, code)
}

/// Waits until the server holds at least `bytes` of the budget for bodies being read (the
/// slow clients' bytes have arrived).
async fn until_held(h: &Harness, bytes: usize) {
    let start = Instant::now();
    while h.state.body_bytes_held() < bytes {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the server holds {} bytes of bodies, not {bytes}",
            h.state.body_bytes_held()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bodies_share_one_budget_past_it_503_overloaded_and_slow_ones_give_it_back() {
    const BUDGET: usize = 1 << 20;
    let h = Harness::with(
        |s| {
            s.with_limits(limits(|l| {
                l.body_budget_bytes = BUDGET;
                l.body_budget_wait_ms = 300;
                l.body_read_timeout_ms = 3_000;
            }))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    h.replay.insert("ok", Script::chat(&["Hello ", "world"]));
    assert_eq!(chat(&h, 1_000).await, (200, None, "Hello world".into()));

    // Two clients hold 300 kB bodies open (each holds its bytes and room for the next 64 KiB,
    // in blocks of 64 KiB: 384 KiB, together 768 KiB); a 400 kB body finds too little left: it
    // waits 300 ms, then 503 overloaded with Retry-After.
    let a = Slow::start(&h, 300_010).await;
    let b = Slow::start(&h, 300_010).await;
    until_held(&h, 2 * (300_000 + (64 << 10))).await;
    let t = Instant::now();
    let refused = chat(&h, 400_000).await;
    let waited = t.elapsed();
    assert_eq!(refused, (503, Some("1".into()), "overloaded".into()));
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    // The accepted ones complete once their last bytes come, with their answers.
    assert_eq!(
        answer(a.finish().await).await,
        (200, None, "Hello world".into())
    );
    assert_eq!(
        answer(b.finish().await).await,
        (200, None, "Hello world".into())
    );
    assert_eq!(h.state.body_bytes_held(), 0);
    assert_eq!(chat(&h, 400_000).await, (200, None, "Hello world".into()));

    // A client that never sends its last bytes holds its share only until the body read
    // time-out: then it is 408 and the budget is whole again.
    let stuck = Slow::start(&h, 700_010).await;
    until_held(&h, 700_000).await;
    assert_eq!(
        chat(&h, 400_000).await,
        (503, Some("1".into()), "overloaded".into())
    );
    let r = stuck.answer.await.expect("task").expect("send");
    assert_eq!(answer(r).await, (408, None, "request_timeout".into()));
    assert_eq!(h.state.body_bytes_held(), 0);
    assert_eq!(chat(&h, 400_000).await, (200, None, "Hello world".into()));
    drop(stuck.rest);

    // A body larger than the whole budget can never fit: 413, naming the budget.
    let r = h
        .post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(padded_chat(BUDGET + 1))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.expect("json");
    assert_eq!(
        v["error"]["message"],
        format!("request body is larger than {BUDGET} bytes")
    );
}

fn fixture(name: &str) -> Vec<u8> {
    let p = shared_dir().join("fixtures/epub").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn alice() -> Vec<u8> {
    fixture("alice.epub")
}

fn kusamakura() -> Vec<u8> {
    fixture("kusamakura-japanese-vertical-writing.epub")
}

/// The files under `dir` (recursively) whose name ends with one of `ends`.
fn files_ending(dir: &Path, ends: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                dirs.push(e.path());
            } else if ends.iter().any(|end| name.ends_with(end)) {
                out.push(name);
            }
        }
    }
    out
}

/// An upload's status, `Retry-After`, `Connection` and JSON body.
async fn upload(h: &Harness, bytes: &[u8]) -> (u16, Option<String>, Option<String>, Value) {
    let r = h
        .post("/v1/books")
        .header("content-type", "application/epub+zip")
        .body(bytes.to_vec())
        .send()
        .await
        .expect("send");
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().expect("ascii").to_owned());
    let connection = r
        .headers()
        .get("connection")
        .map(|v| v.to_str().expect("ascii").to_owned());
    (status, retry, connection, r.json().await.expect("json"))
}

async fn titles(h: &Harness) -> Vec<String> {
    let r = h.get("/v1/books").send().await.expect("send");
    let status = r.status().as_u16();
    let text = r.text().await.expect("body");
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("GET /v1/books: {status}, not JSON ({e}): {text:?}"));
    assert_eq!(status, 200, "GET /v1/books: {v}");
    v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|b| b["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upload_on_a_full_disk_is_503_store_unavailable_and_leaves_no_partial_book() {
    // 4 MiB: the index, the two books' passages and kept copies fit.
    let fs = match Tmpfs::mount(4 << 20) {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!(
                "SKIPPED an_upload_on_a_full_disk_…: cannot mount a tmpfs here ({why}); \
                 run as root"
            );
            return;
        }
    };
    let dir = fs.path().join("index");
    let h = Harness::with(|s| s.with_index(&dir), Arc::new(MemoryStore::new())).await;
    h.replay.insert("ok", Script::chat(&["Hello ", "world"]));
    let book = alice();
    let leftovers = |dir: &Path| files_ending(dir, &[".part", ".tmp", ".epub"]);

    // 1. The disk full before the upload: its file cannot be written.
    let filler = fill(fs.path());
    let (status, retry, connection, v) = upload(&h, &book).await;
    assert_eq!(
        (status, retry.as_deref(), v["error"]["code"].as_str()),
        (503, Some("1"), Some("store_unavailable")),
        "{v}"
    );
    // The rest of the body was not read: the server says it closes the connection, so the
    // client's next request goes on a new one.
    assert_eq!(connection.as_deref(), Some("close"));
    assert_eq!(
        v["error"]["message"],
        "the store is unavailable, retry later"
    );
    assert_eq!(titles(&h).await, Vec::<String>::new());
    assert_eq!(leftovers(&dir), Vec::<String>::new());

    // 2. Room for the upload's file but not for the index's writes: the file is written and
    // read, then the index meets the full disk, at the book's kept copy (alice: 537 kB of
    // EPUB, 92 kB of passages) or at its passages (kusamakura: 234 kB of EPUB, 701 kB of
    // passages, tantivy's commit).
    std::fs::remove_file(&filler).expect("remove filler");
    for (name, book) in [("alice", &book), ("kusamakura", &kusamakura())] {
        let filler = fill(fs.path());
        // What the upload's own file needs, and 64 KiB: less than the book's passages and
        // its kept copy together.
        shrink(&filler, book.len() as u64 + (64 << 10));
        let (status, retry, _, v) = upload(&h, book).await;
        assert_eq!(
            (status, retry.as_deref(), v["error"]["code"].as_str()),
            (503, Some("1"), Some("store_unavailable")),
            "{name}: {v}"
        );
        assert_eq!(titles(&h).await, Vec::<String>::new(), "{name}");
        assert_eq!(leftovers(&dir), Vec::<String>::new(), "{name}");
        std::fs::remove_file(&filler).expect("remove filler");
    }
    let filler = fill(fs.path());

    // The server goes on: chats answer, and once there is room the same upload adds the
    // book, whole.
    let r = h
        .post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(padded_chat(100))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(text_of(&read_sse(r, 1 << 20).await), "Hello world");
    std::fs::remove_file(&filler).expect("remove filler");
    let (status, _, _, v) = upload(&h, &kusamakura()).await;
    assert_eq!(status, 201, "{v}");
    let (status, _, _, v) = upload(&h, &book).await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(
        titles(&h).await,
        ["Alice's Adventures in Wonderland", "草枕"]
    );
    let key = v["key"].as_str().expect("key").to_owned();
    let mut kept = leftovers(&dir);
    kept.sort();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.contains(&format!("{key}.epub")), "{kept:?}");
    let found: Value = h
        .post(&format!("/v1/books/{key}/search"))
        .header("content-type", "application/json")
        .json(&json!({"query": "white rabbit", "top_k": 1}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(found["data"].as_array().map(Vec::len), Some(1), "{found}");
}

/// Truncates the filler so that the file system has about `free` bytes free.
fn shrink(filler: &Path, free: u64) {
    let len = std::fs::metadata(filler).expect("filler").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(filler)
        .expect("filler");
    f.set_len(len.saturating_sub(free)).expect("shrink");
}

#[tokio::test]
async fn upload_files_a_stopped_server_left_are_removed_at_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let uploads = dir.path().join("uploads");
    std::fs::create_dir_all(&uploads).expect("uploads");
    // Left by a server that crashed while receiving; and one another server sharing the
    // index is receiving now (it holds its lock).
    std::fs::write(uploads.join("upload-left.part"), b"PK half a book").expect("write");
    let busy = uploads.join("upload-busy.part");
    let held = std::fs::File::create(&busy).expect("create");
    held.lock().expect("lock");
    std::fs::write(uploads.join("notes.txt"), b"not an upload").expect("write");
    let _h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    let mut left: Vec<String> = std::fs::read_dir(&uploads)
        .expect("read")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["notes.txt", "upload-busy.part"]);
    drop(held);
}
