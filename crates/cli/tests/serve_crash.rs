//! `citeflow serve` killed with SIGKILL mid-stream and restarted on the same SQLite file:
//! every event already sent replays with the same ids and numbers, the stream is marked
//! interrupted, and the session's numbering goes on where it was.

use std::path::Path;
use std::process::Command;

use citeflow_replay::{self as replay, Replay, Script};
use serde_json::{json, Value};

use crate::{shared_dir, start_serve, Server};

fn serve(upstream: &str, db: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_citeflow"));
    cmd.args(["serve", "--upstream", upstream, "--listen", "127.0.0.1:0"])
        .arg("--store")
        .arg(format!("sqlite:{}", db.display()))
        .arg("--index")
        .arg(db.with_extension("index"));
    start_serve(cmd, None)
}

/// (id, data) of each SSE event, reading at most `max`; every event has an id.
async fn read_sse(resp: reqwest::Response, max: usize) -> Vec<(u64, String)> {
    replay::read_sse(resp, max)
        .await
        .into_iter()
        .map(|e| (e.id.expect("every event has an id"), e.data))
        .collect()
}

fn citations(events: &[(u64, String)]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| v.pointer("/citeflow/events").cloned())
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .filter(|e| e["type"] == "citation")
        .map(|e| {
            (
                e["number"].as_u64().unwrap_or(0),
                e["source_id"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn sigkill_mid_stream_loses_nothing_and_renumbers_nothing() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let raw = std::fs::read(shared_dir().join("fixtures/streams/smollm2-41.sse")).expect("read");
        let replay = Replay::new();
        replay.insert("slow", Script::from_sse(&raw).paced(15));
        replay.insert("again", Script::chat(&["Again [3] and [1] and [5]."]));
        let upstream = replay.spawn().await.expect("upstream");
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("citeflow.db");
        let http = citeflow_replay::client();

        let server = serve(&upstream, &db);
        let sources: Vec<Value> = (1..=5).map(|i| json!({"id": format!("source_{i}")})).collect();
        let session: Value = http
            .post(format!("{}/v1/sessions", server.base))
            .json(&json!({"sources": sources}))
            .send().await.expect("send").json().await.expect("json");
        let sid = session["id"].as_str().expect("session id").to_owned();
        let chat = |model: &str| json!({
            "model": model, "stream": true, "messages": [{"role": "user", "content": "q"}],
            "citeflow": {"session": sid, "scope": "session", "marker": "rank", "inject_prompt": false},
        });
        let resp = http
            .post(format!("{}/v1/chat/completions", server.base))
            .json(&chat("slow"))
            .send().await.expect("send");
        assert_eq!(resp.status(), 200);
        let stream_id = resp.headers()["x-citeflow-stream-id"].to_str().expect("ascii").to_owned();
        let before = read_sse(resp, 60).await;
        assert_eq!(before.len(), 60);
        assert!(!citations(&before).is_empty(), "the first 60 events cite something");
        drop(server); // SIGKILL (Child::kill) while the upstream is still streaming.

        let server = serve(&upstream, &db);
        let resp = http
            .get(format!("{}/v1/streams/{stream_id}", server.base))
            .send().await.expect("send");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["x-citeflow-stream-status"], "interrupted");
        let after = read_sse(resp, usize::MAX).await;
        assert_eq!(after[..60], before[..], "replayed events have the same ids and data");
        let ids: Vec<u64> = after.iter().map(|e| e.0).collect();
        assert_eq!(ids, (1..=after.len() as u64).collect::<Vec<_>>());
        let last: Value = serde_json::from_str(&after.last().expect("event").1).expect("json");
        assert_eq!(last["error"]["code"], "stream_interrupted", "{last}");
        let tail = read_sse(
            http.get(format!("{}/v1/streams/{stream_id}", server.base))
                .header("Last-Event-ID", "60")
                .send().await.expect("send"),
            usize::MAX,
        )
        .await;
        assert_eq!(tail[..], after[60..]);

        // The session's numbering survived: a new answer reuses the numbers already shown.
        let shown: std::collections::HashMap<String, u64> =
            citations(&after).into_iter().map(|(n, id)| (id, n)).collect();
        let resp = http
            .post(format!("{}/v1/chat/completions", server.base))
            .json(&chat("again"))
            .send().await.expect("send");
        let again = citations(&read_sse(resp, usize::MAX).await);
        for (n, id) in &again {
            if let Some(old) = shown.get(id) {
                assert_eq!(old, n, "{id} was renumbered");
            }
        }
        let view: Value = http
            .get(format!("{}/v1/sessions/{sid}", server.base))
            .send().await.expect("send").json().await.expect("json");
        let numbers: Vec<u64> = view["numbering"].as_array().expect("numbering").iter().map(|e| e["number"].as_u64().unwrap_or(0)).collect();
        assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>(), "dense numbering");
    });
}
