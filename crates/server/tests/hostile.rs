//! Hostile input: upstream payloads of every JSON shape end the stream with an error event (no
//! panic, no stream left running), edge-case `Last-Event-ID`s and methods get the JSON error
//! envelope, and a hostile EPUB upload gets its budget error while the server stays up.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use citeflow_replay::{Script, Step};
use citeflow_store::{MemoryStore, StreamStatus};
use serde_json::{json, Value};

use crate::support::{read_sse, text_of, Harness, Received};

fn chat(model: &str) -> Value {
    json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "q"}]})
}

/// The upstream sends a normal first chunk, then `payload` as one SSE event, then a normal end.
fn script_with(payload: &str) -> Script {
    let good = Script::chat(&["Hello ", "world"]);
    let mut steps: Vec<Step> = good.steps[..2].to_vec();
    steps.push(Step::Bytes(format!("data: {payload}\n\n").into_bytes()));
    steps.extend(good.steps[2..].iter().cloned());
    Script::new(steps)
}

async fn streams_open(h: &Harness) -> u64 {
    crate::metrics::open_streams_settled(&h.state).await.0 as u64
}

/// Streams `model`; returns the stream id and its events (the reader gives up after 10 s, so a
/// stream that never ends fails the test instead of hanging it).
async fn stream(h: &Harness, model: &str) -> (String, Vec<Received>) {
    let r = h
        .post("/v1/chat/completions")
        .json(&chat(model))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200, "{model}");
    let id = r.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let events = tokio::time::timeout(Duration::from_secs(10), read_sse(r, usize::MAX))
        .await
        .unwrap_or_else(|_| panic!("{model}: the stream did not end"));
    (id, events)
}

fn error_code(e: &Received) -> Option<String> {
    let v: Value = serde_json::from_str(&e.data).ok()?;
    v.pointer("/error/code")?.as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_chunks_of_any_json_shape_end_the_stream_with_an_error_event() {
    let h = Harness::start().await;
    let payloads = [
        "42",
        "[]",
        "\"x\"",
        "true",
        "null",
        "[{\"choices\": []}]",
        "{\"choices\": [1]}",
        "{\"choices\": [{\"index\": 0, \"delta\": \"x\"}]}",
        "{\"choices\": [{\"index\": 0, \"delta\": [\"content\"]}]}",
    ];
    for (i, payload) in payloads.iter().enumerate() {
        let model = format!("shape-{i}");
        h.replay.insert(&model, script_with(payload));
        let (id, events) = stream(&h, &model).await;
        let last = events.last().expect("events");
        assert_eq!(
            error_code(last).as_deref(),
            Some("upstream_malformed"),
            "{payload}: {events:?}"
        );
        assert!(events[..events.len() - 1]
            .iter()
            .all(|e| error_code(e).is_none()));
        assert_eq!(
            h.state.store().stream(&id).await.expect("stream").status,
            StreamStatus::Failed,
            "{payload}"
        );
        // A client that resumes gets the same events and the end, not an endless wait.
        let again = tokio::time::timeout(
            Duration::from_secs(10),
            read_sse(
                h.get(&format!("/v1/streams/{id}"))
                    .header("last-event-id", "1")
                    .send()
                    .await
                    .expect("send"),
                usize::MAX,
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{payload}: the resumed stream did not end"));
        assert_eq!(again, events[1..], "{payload}");
    }
    assert_eq!(streams_open(&h).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_but_harmless_chunks_pass_and_content_after_finish_is_dropped() {
    let h = Harness::start().await;
    for (i, payload) in [
        "{}",
        "{\"choices\": 5}",
        "{\"choices\": []}",
        "{\"choices\": [{\"index\": 0, \"delta\": {\"content\": 5}}]}",
        "{\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": 7}]}",
    ]
    .iter()
    .enumerate()
    {
        let model = format!("odd-{i}");
        h.replay.insert(&model, script_with(payload));
        let (id, events) = stream(&h, &model).await;
        assert!(
            events.iter().all(|e| error_code(e).is_none()),
            "{payload}: {events:?}"
        );
        assert_eq!(events.last().expect("events").data, "[DONE]", "{payload}");
        assert_eq!(
            h.state.store().stream(&id).await.expect("stream").status,
            StreamStatus::Completed,
            "{payload}"
        );
    }
    // Content after finish_reason: the answer ends at the finish, the extra text is dropped.
    let good = Script::chat(&["Hello ", "world"]);
    let n = good.steps.len();
    let mut steps: Vec<Step> = good.steps[..n - 1].to_vec();
    steps.push(Step::Bytes(
        b"data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \" extra\"}}]}\n\n".to_vec(),
    ));
    steps.push(good.steps[n - 1].clone());
    h.replay.insert("after-finish", Script::new(steps));
    let (id, events) = stream(&h, "after-finish").await;
    assert!(events.iter().all(|e| error_code(e).is_none()), "{events:?}");
    assert_eq!(text_of(&events), "Hello world");
    assert_eq!(
        h.state.store().stream(&id).await.expect("stream").status,
        StreamStatus::Completed
    );
    assert_eq!(streams_open(&h).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_event_id_past_the_largest_id_is_a_400_not_a_full_replay() {
    let h = Harness::start().await;
    h.replay.insert("ok", Script::chat(&["Hello"]));
    let (id, _) = stream(&h, "ok").await;
    for bad in ["9223372036854775808", "18446744073709551616", "-1", "abc"] {
        let r = h
            .get(&format!("/v1/streams/{id}"))
            .header("last-event-id", bad)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 400, "{bad}");
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"]["code"], "invalid_request", "{bad}");
        assert_eq!(body["error"]["param"], "Last-Event-ID", "{bad}");
    }
    let r = h
        .get(&format!(
            "/v1/streams/{id}?last_event_id=9223372036854775807"
        ))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert!(read_sse(r, usize::MAX).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_method_is_a_405_in_the_json_envelope() {
    let h = Harness::start().await;
    let r = h.get("/v1/chat/completions").send().await.expect("send");
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "method_not_allowed");
    assert_eq!(
        body["error"]["message"],
        "GET is not allowed on /v1/chat/completions"
    );
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

/// An EPUB whose one chapter declares a 100 KB entity and references it 2,000 times (200 MB
/// expanded) in a 3 KB upload.
fn entity_bomb() -> Vec<u8> {
    let container = r#"<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#;
    let opf = r#"<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:bomb</dc:identifier><dc:title>Bomb</dc:title></metadata>
<manifest><item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c"/></spine></package>"#;
    let chapter = format!(
        "<!DOCTYPE html [<!ENTITY e \"{}\">]>\n<html><body><p>{}</p></body></html>",
        "x".repeat(100_000),
        "&e;".repeat(2_000)
    );
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in [
        ("mimetype", "application/epub+zip"),
        ("META-INF/container.xml", container),
        ("OEBPS/content.opf", opf),
        ("OEBPS/c.xhtml", chapter.as_str()),
    ] {
        w.start_file(name, deflated).expect("zip");
        w.write_all(data.as_bytes()).expect("zip");
    }
    w.finish().expect("zip").into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entity_bomb_upload_is_a_413_naming_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    let bomb = entity_bomb();
    assert!(bomb.len() < 4_000, "{}", bomb.len());
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        h.post("/v1/books")
            .header("content-type", "application/epub+zip")
            .body(bomb)
            .send(),
    )
    .await
    .expect("the upload is answered quickly")
    .expect("send");
    assert_eq!(r.status(), 413);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["code"], "invalid_epub", "{body}");
    assert_eq!(body["error"]["param"], "max_entity_bytes_per_document");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains("OEBPS/c.xhtml"), "{message}");
    assert!(message.contains("line 2"), "{message}");
    let health = h.get("/healthz").send().await.expect("send");
    assert_eq!(health.status(), 200);
    let listed: Value = h
        .get("/v1/books")
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["data"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_past_its_ingest_time_is_a_413_and_frees_its_slot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let index = dir.path().to_owned();
    // A deadline already passed: the first check stops the job.
    let h = Harness::with(
        |s| {
            s.with_index(&index)
                .with_limits(crate::support::limits(|l| {
                    l.ingest_timeout_ms = 0;
                    l.max_concurrent_ingests = 1;
                }))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let alice = std::fs::read(crate::support::shared_dir().join("fixtures/epub/alice.epub"))
        .expect("alice");
    // Twice: the pool's only slot is given back after a stopped job.
    for _ in 0..2 {
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            h.post("/v1/books")
                .header("content-type", "application/epub+zip")
                .body(alice.clone())
                .send(),
        )
        .await
        .expect("the upload is answered")
        .expect("send");
        assert_eq!(r.status(), 413);
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"]["code"], "invalid_epub", "{body}");
        assert_eq!(body["error"]["param"], "ingest_timeout_ms", "{body}");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(
            message.contains("ingest_timeout_ms: the book took longer than 0 ms to read and cut (stopped before "),
            "{message}"
        );
        assert!(
            message.contains(".xhtml") || message.contains(".html"),
            "{message}"
        );
    }
    let listed: Value = h
        .get("/v1/books")
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["data"], json!([]), "nothing was added");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_past_its_byte_or_line_budget_ends_with_an_error_event() {
    let h = Harness::with(
        |s| {
            s.with_limits(crate::support::limits(|l| {
                l.max_upstream_bytes = 4_000;
                l.max_upstream_line_bytes = 1_000;
            }))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    // 100 chunks of about 150 bytes: past 4,000 bytes after some 25 of them.
    let words: Vec<String> = (0..100).map(|i| format!("w{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    h.replay.insert("flood", Script::chat(&words));
    let (_, events) = stream(&h, "flood").await;
    let last = events.last().expect("events");
    assert_eq!(
        error_code(last).as_deref(),
        Some("upstream_too_large"),
        "{last:?}"
    );
    assert!(last.data.contains("more than 4000 bytes"), "{}", last.data);
    // What was taken before the budget stays: the answer's start, in order.
    let text = text_of(&events);
    assert!(text.starts_with("w0 w1 w2 "), "{text}");
    assert!(!text.contains("w99"), "{text}");

    h.replay.insert(
        "long-line",
        script_with(&format!("{{\"x\": \"{}\"}}", "y".repeat(2_000))),
    );
    let (_, events) = stream(&h, "long-line").await;
    let last = events.last().expect("events");
    assert_eq!(
        error_code(last).as_deref(),
        Some("upstream_malformed"),
        "{last:?}"
    );
    assert!(
        last.data.contains("is longer than 1000 bytes"),
        "{}",
        last.data
    );
    assert_eq!(text_of(&events), "Hello ");
    assert_eq!(streams_open(&h).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_does_not_read_neither_stalls_the_answer_nor_loses_it() {
    let h = Harness::start().await;
    let words: Vec<String> = (0..3_000).map(|i| format!("w{i} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    h.replay.insert("long", Script::chat(&words));
    let r = h
        .post("/v1/chat/completions")
        .json(&chat("long"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let id = r.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    // The client reads nothing; the generation runs to its end anyway (it writes to the
    // stream's log, and the reader's feed pulls pages of it only as its socket takes them).
    let mut finished = false;
    for _ in 0..500 {
        let s = h.state.store().stream(&id).await.expect("stream").status;
        if s == StreamStatus::Completed {
            finished = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        finished,
        "the answer did not complete while its reader was idle"
    );
    // Then the slow reader gets every word, in order.
    let events = tokio::time::timeout(Duration::from_secs(20), read_sse(r, usize::MAX))
        .await
        .expect("the stream is read");
    assert_eq!(text_of(&events), words.concat());
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
}
