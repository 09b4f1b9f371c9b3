//! Resume with Last-Event-ID, generation after the client leaves, numbering across answers.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use citeflow_replay::Script;
use citeflow_store::StreamStatus;
use serde_json::{json, Value};

use crate::support::{
    citeflow_events, normalized, read_sse, seed, shared_dir, text_of, Harness, Received, Rng,
};

fn request(model: &str) -> Value {
    json!({
        "model": model, "stream": true,
        "messages": [{"role": "user", "content": "q"}],
        "sources": (1..=5).map(|i| json!({"id": format!("source_{i}"), "title": format!("T{i}")})).collect::<Vec<_>>(),
        "citeflow": {"marker": "rank", "inject_prompt": false},
    })
}

fn stream_id(resp: &reqwest::Response) -> String {
    resp.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("ascii")
        .to_owned()
}

async fn resume(h: &Harness, id: &str, last: Option<u64>) -> reqwest::Response {
    let mut req = h.get(&format!("/v1/streams/{id}"));
    if let Some(l) = last {
        req = req.header("Last-Event-ID", l.to_string());
    }
    let resp = req.send().await.expect("resume");
    assert_eq!(resp.status(), 200);
    resp
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_dropped_at_random_points_resume_to_the_uninterrupted_events() {
    let h = Harness::start().await;
    let raw = std::fs::read(shared_dir().join("fixtures/streams/smollm2-41.sse")).expect("read");
    h.replay.insert("paced", Script::from_sse(&raw).paced(1));
    let resp = h
        .post("/v1/chat/completions")
        .json(&request("paced"))
        .send()
        .await
        .expect("send");
    let id = stream_id(&resp);
    let whole = read_sse(resp, usize::MAX).await;
    let want = normalized(&whole, &id);
    assert!(citeflow_events(&whole)
        .iter()
        .any(|e| e["type"] == "citation"));
    let mut rng = Rng(seed());
    for round in 0..6 {
        let resp = h
            .post("/v1/chat/completions")
            .json(&request("paced"))
            .send()
            .await
            .expect("send");
        let id = stream_id(&resp);
        let mut got: Vec<Received> = read_sse(resp, 1 + rng.below(40) as usize).await;
        let mut drops = 1;
        while got.last().map(|e| e.data.as_str()) != Some("[DONE]") {
            let last = got.last().and_then(|e| e.id);
            let resp = resume(&h, &id, last).await;
            got.extend(read_sse(resp, 1 + rng.below(60) as usize).await);
            drops += 1;
        }
        assert_eq!(
            normalized(&got, &id),
            want,
            "round {round} with {drops} drops"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generation_goes_on_after_the_client_leaves() {
    let h = Harness::start().await;
    let raw = std::fs::read(shared_dir().join("fixtures/streams/smollm2-39.sse")).expect("read");
    h.replay.insert("left", Script::from_sse(&raw).paced(2));
    let resp = h
        .post("/v1/chat/completions")
        .json(&request("left"))
        .send()
        .await
        .expect("send");
    let id = stream_id(&resp);
    let first = read_sse(resp, 2).await;
    assert_eq!(first.len(), 2);
    for _ in 0..500 {
        if h.state.store().stream(&id).await.expect("stream").status == StreamStatus::Completed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        h.state.store().stream(&id).await.expect("stream").status,
        StreamStatus::Completed
    );
    let all = read_sse(resume(&h, &id, None).await, usize::MAX).await;
    assert_eq!(all[..2], first[..]);
    assert_eq!(all.last().map(|e| e.data.as_str()), Some("[DONE]"));
    let rest = read_sse(resume(&h, &id, Some(2)).await, usize::MAX).await;
    assert_eq!(rest[..], all[2..]);
    // The query form works too, and a bad id is refused.
    let q = h
        .get(&format!("/v1/streams/{id}?last_event_id=3"))
        .send()
        .await
        .expect("send");
    assert_eq!(read_sse(q, usize::MAX).await[..], all[3..]);
    let bad = h
        .get(&format!("/v1/streams/{id}"))
        .header("Last-Event-ID", "abc")
        .send()
        .await
        .expect("send");
    assert_eq!(bad.status(), 400);
}

async fn answer(h: &Harness, model: &str, pieces: &[&str], citeflow: Value) -> Vec<Received> {
    h.replay.insert(model, Script::chat(pieces));
    let body = json!({
        "model": model, "stream": true,
        "messages": [{"role": "user", "content": "q"}],
        "citeflow": citeflow,
    });
    let resp = h
        .post("/v1/chat/completions")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    read_sse(resp, usize::MAX).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_answers_share_numbers_and_chat_answers_start_fresh() {
    let h = Harness::start().await;
    let s: Value = h
        .post("/v1/sessions")
        .json(&json!({"query": "first", "sources": [{"id": "source_3"}, {"id": "source_7"}]}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let sid = s["id"].as_str().expect("id").to_owned();
    let a = answer(
        &h,
        "a1",
        &["A [[source_7]] B [[source_3]]."],
        json!({"session": sid, "scope": "session"}),
    )
    .await;
    assert_eq!(text_of(&a), "A [1] B [2].");
    let round: Value = h
        .post(&format!("/v1/sessions/{sid}/rounds"))
        .json(&json!({"query": "second", "sources": [{"id": "source_9"}]}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(round["round"], 2);
    let b = answer(
        &h,
        "a2",
        &["C [[source_9]] D [[source_3]]."],
        json!({"session": sid, "scope": "session"}),
    )
    .await;
    assert_eq!(text_of(&b), "C [3] D [2].");
    let c = answer(
        &h,
        "a3",
        &["E [[source_9]]."],
        json!({"session": sid, "scope": "answer"}),
    )
    .await;
    assert_eq!(text_of(&c), "E [1].");
    let view: Value = h
        .get(&format!("/v1/sessions/{sid}"))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let table: Vec<(u64, String)> = view["numbering"]
        .as_array()
        .expect("numbering")
        .iter()
        .map(|e| {
            (
                e["number"].as_u64().expect("n"),
                e["source_id"].as_str().expect("id").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        table,
        [
            (1, "source_7".into()),
            (2, "source_3".into()),
            (3, "source_9".into())
        ]
    );
    assert_eq!(view["rounds"][1]["query"], "second");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_streams_of_one_session_never_give_a_number_twice() {
    let h = Harness::start().await;
    let ids: Vec<Value> = (1..=12)
        .map(|i| json!({"id": format!("source_{i}")}))
        .collect();
    let s: Value = h
        .post("/v1/sessions")
        .json(&json!({"sources": ids}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let sid = s["id"].as_str().expect("id").to_owned();
    let mut tasks = Vec::new();
    for t in 0..16u64 {
        let order: Vec<String> = (0..12)
            .map(|k| format!("x [[source_{}]]", (k * 5 + t * 7) % 12 + 1))
            .collect();
        let text = order.join(" ");
        let model = format!("par{t}");
        h.replay.insert(
            &model,
            Script::chat(&text.split_inclusive(' ').collect::<Vec<_>>()),
        );
        let req = h.post("/v1/chat/completions").json(&json!({
            "model": model, "stream": true, "messages": [{"role": "user", "content": "q"}],
            "citeflow": {"session": sid, "scope": "session"},
        }));
        tasks.push(tokio::spawn(async move {
            read_sse(req.send().await.expect("send"), usize::MAX).await
        }));
    }
    let mut by_source: HashMap<String, u64> = HashMap::new();
    for t in tasks {
        for e in citeflow_events(&t.await.expect("task")) {
            if e["type"] == "citation" {
                let n = e["number"].as_u64().expect("n");
                let id = e["source_id"].as_str().expect("id").to_owned();
                assert_eq!(
                    *by_source.entry(id.clone()).or_insert(n),
                    n,
                    "{id} got two numbers"
                );
            }
        }
    }
    let numbers: HashSet<u64> = by_source.values().copied().collect();
    assert_eq!(numbers.len(), 12);
    assert_eq!(numbers, (1..=12).collect());
}

/// Many live followers on the SQLite store must never starve the generations they follow
/// (a follower once spun on "new events" the live tail did not hold yet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_streams_on_sqlite_all_finish() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = citeflow_store_sqlite::SqliteStore::open(dir.path().join("c.db")).expect("open");
    let h = Harness::with(|s| s, std::sync::Arc::new(store)).await;
    let raw = std::fs::read(shared_dir().join("fixtures/streams/smollm2-29.sse")).expect("read");
    h.replay.insert("many", Script::from_sse(&raw).paced(1));
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let req = h.post("/v1/chat/completions").json(&request("many"));
            tokio::spawn(async move { read_sse(req.send().await.expect("send"), usize::MAX).await })
        })
        .collect();
    let all = tokio::time::timeout(
        Duration::from_secs(60),
        futures_util::future::join_all(tasks),
    )
    .await
    .expect("every stream finishes");
    for events in all {
        let events = events.expect("task");
        assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    }
}
