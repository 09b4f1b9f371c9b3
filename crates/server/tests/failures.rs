//! Upstream failures: before streaming an HTTP error, after it an error event; what was sent
//! stays in the log.

use std::sync::Arc;

use citeflow_replay::{Replay, Script, Step};
use citeflow_store::{MemoryStore, StreamStatus};
use serde_json::{json, Value};

use crate::support::{limits, read_sse, Harness, Received};

fn chat(model: &str) -> Value {
    json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "q"}]})
}

async fn fast_timeouts() -> Harness {
    Harness::with(
        |s| {
            s.with_limits(limits(|l| {
                l.upstream_response_timeout_ms = 300;
                l.upstream_idle_timeout_ms = 300;
            }))
        },
        Arc::new(MemoryStore::new()),
    )
    .await
}

async fn status_and_code(h: &Harness, model: &str) -> (u16, Value) {
    let r = h
        .post("/v1/chat/completions")
        .json(&chat(model))
        .send()
        .await
        .expect("send");
    let s = r.status().as_u16();
    (s, r.json().await.expect("json"))
}

/// Streams `model`; returns the events and checks that the log replays them exactly.
async fn stream_events(h: &Harness, model: &str) -> Vec<Received> {
    let r = h
        .post("/v1/chat/completions")
        .json(&chat(model))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let id = r.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let events = read_sse(r, usize::MAX).await;
    assert_eq!(
        h.state.store().stream(&id).await.expect("stream").status,
        StreamStatus::Failed
    );
    let again = read_sse(
        h.get(&format!("/v1/streams/{id}"))
            .send()
            .await
            .expect("send"),
        usize::MAX,
    )
    .await;
    assert_eq!(again, events, "the log holds what was sent");
    events
}

fn last_error(events: &[Received]) -> String {
    let v: Value = serde_json::from_str(&events.last().expect("event").data).expect("json");
    v["error"]["code"].as_str().expect("error code").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_a_502() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let h = Harness::on_upstream(
        Replay::new(),
        &format!("http://127.0.0.1:{port}/v1"),
        |s| s,
        Arc::new(MemoryStore::new()),
    )
    .await;
    let (s, body) = status_and_code(&h, "m").await;
    assert_eq!(s, 502);
    insta::assert_json_snapshot!(
        "upstream_unreachable",
        crate::support::without_request_id(body)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_error_statuses_come_back_before_streaming() {
    let h = fast_timeouts().await;
    h.replay.insert("e500", Script::error(500, "model crashed"));
    h.replay
        .insert("e400", Script::error(400, "max_tokens is too large"));
    let (s, body) = status_and_code(&h, "e500").await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (502, Some("upstream_error"))
    );
    let (s, body) = status_and_code(&h, "e400").await;
    assert_eq!(s, 400);
    insta::assert_json_snapshot!("upstream_400", crate::support::without_request_id(body));
    let mut hang = Script::chat(&["x"]);
    hang.hang_before_headers = true;
    h.replay.insert("hang", hang);
    let (s, body) = status_and_code(&h, "hang").await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (504, Some("upstream_timeout"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_mid_stream_end_with_an_error_event() {
    let h = fast_timeouts().await;
    let good = Script::chat(&["Hello ", "world [[source_1]]"]);
    let head: Vec<Step> = good.steps[..3].to_vec();
    // The pause lets the chunks before the failure leave the upstream on their own.
    let with = |tail: Vec<Step>| {
        Script::new(
            head.iter()
                .cloned()
                .chain([Step::SleepMs(50)])
                .chain(tail)
                .collect(),
        )
    };
    h.replay.insert(
        "malformed",
        with(vec![Step::Bytes(b"data: {not json\n\n".to_vec())]),
    );
    h.replay.insert("hang", with(vec![Step::Hang]));
    h.replay.insert("cut", with(vec![Step::Cut]));
    h.replay.insert("eof", with(vec![]));
    h.replay.insert(
        "inline-error",
        with(vec![Step::Bytes(
            b"data: {\"error\": {\"message\": \"overloaded\"}}\n\n".to_vec(),
        )]),
    );
    for (model, code) in [
        ("malformed", "upstream_malformed"),
        ("hang", "upstream_timeout"),
        ("cut", "upstream_cut"),
        ("eof", "upstream_cut"),
        ("inline-error", "upstream_error"),
    ] {
        let events = stream_events(&h, model).await;
        assert_eq!(last_error(&events), code, "{model}");
        assert_eq!(events.len(), 4, "{model}: three chunks, then the error");
        assert!(events[1].data.contains("Hello "), "{model}");
    }
}
