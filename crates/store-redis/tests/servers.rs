//! Two `citeflow serve` processes on one Redis: a stream started on server A resumes on
//! server B with Last-Event-ID, and the events equal an uninterrupted run.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use citeflow_replay::{self as replay, read_sse, Received, Replay, Script};
use serde_json::{json, Value};

use crate::support::{fresh_prefix, redis_url};

/// The `citeflow` binary: `CITEFLOW_BIN`, else beside this test's target directory.
fn citeflow_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("CITEFLOW_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("citeflow");
    assert!(
        bin.is_file(),
        "{} not found: build it first (cargo build -p citeflow-cli) or set CITEFLOW_BIN",
        bin.display()
    );
    bin
}

fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    assert!(
        dir.join("fixtures/streams").is_dir(),
        "shared fixtures not found at {} (set CITEFLOW_SHARED_DIR)",
        dir.display()
    );
    dir
}

/// A `citeflow serve` child process; killed on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
}

impl Server {
    pub(crate) fn start(upstream: &str, store: &str) -> Server {
        let mut child = Command::new(citeflow_bin())
            .args(["serve", "--upstream", upstream, "--listen", "127.0.0.1:0"])
            .args(["--store", store])
            .env("CITEFLOW_LOG", "warn")
            .env_remove("CITEFLOW_API_KEYS")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn citeflow");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read address");
        let base = line
            .trim()
            .strip_prefix("citeflow listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Server { child, base }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn request(model: &str, session: &str) -> Value {
    json!({
        "model": model, "stream": true,
        "messages": [{"role": "user", "content": "q"}],
        "citeflow": {"session": session, "scope": "session", "marker": "rank", "inject_prompt": false},
    })
}

pub(crate) fn stream_id(resp: &reqwest::Response) -> String {
    resp.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("ascii")
        .to_owned()
}

pub(crate) fn normalized(events: &[Received], stream_id: &str) -> Vec<(Option<u64>, String)> {
    events
        .iter()
        .map(|e| (e.id, replay::comparable(&e.data, stream_id)))
        .collect()
}

async fn new_session(client: &reqwest::Client, base: &str) -> String {
    let sources: Vec<Value> = (1..=5)
        .map(|i| json!({"id": format!("source_{i}"), "title": format!("T{i}")}))
        .collect();
    let resp = client
        .post(format!("{base}/v1/sessions"))
        .json(&json!({"sources": sources}))
        .send()
        .await
        .expect("create session");
    assert!(resp.status().is_success(), "{:?}", resp.text().await);
    let v: Value = resp.json().await.expect("json");
    v["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn a_stream_started_on_one_server_resumes_on_another() {
    let Some(url) = redis_url("a_stream_started_on_one_server_resumes_on_another") else {
        return;
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{sep}prefix={}", fresh_prefix("servers"));
    let replay = Replay::new();
    let raw = std::fs::read(shared_dir().join("fixtures/streams/smollm2-41.sse")).expect("read");
    replay.insert("paced", Script::from_sse(&raw).paced(2));
    let upstream = replay.spawn().await.expect("upstream");
    let a = Server::start(&upstream, &store);
    let b = Server::start(&upstream, &store);
    let client = citeflow_replay::client();

    // The uninterrupted run, on A, in a session of its own.
    let session = new_session(&client, &a.base).await;
    let resp = client
        .post(format!("{}/v1/chat/completions", a.base))
        .json(&request("paced", &session))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let id = stream_id(&resp);
    let whole = read_sse(resp, usize::MAX).await;
    assert_eq!(whole.last().map(|e| e.data.as_str()), Some("[DONE]"));
    assert!(
        whole.iter().any(|e| e.data.contains("\"citation\"")),
        "the recorded answer cites sources"
    );
    let want = normalized(&whole, &id);

    // Started on A, dropped, resumed on B (then A, B, … at each drop).
    for (round, first) in [3usize, 10, 25].into_iter().enumerate() {
        let session = new_session(&client, &b.base).await;
        let resp = client
            .post(format!("{}/v1/chat/completions", a.base))
            .json(&request("paced", &session))
            .send()
            .await
            .expect("send");
        let id = stream_id(&resp);
        let mut got = read_sse(resp, first).await;
        let mut drops = 0;
        while got.last().map(|e| e.data.as_str()) != Some("[DONE]") {
            drops += 1;
            let server = if drops % 2 == 1 { &b } else { &a };
            let last = got.last().and_then(|e| e.id).expect("an event id");
            let resp = client
                .get(format!("{}/v1/streams/{id}", server.base))
                .header("Last-Event-ID", last.to_string())
                .send()
                .await
                .expect("resume");
            assert_eq!(resp.status(), 200);
            got.extend(read_sse(resp, 7 + round * 5).await);
        }
        assert!(drops >= 1);
        assert_eq!(normalized(&got, &id), want, "round {round}, {drops} drops");
        // B sees the session's numbering that A's stream allocated.
        let s: Value = client
            .get(format!("{}/v1/sessions/{session}", b.base))
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        assert!(
            !s["numbering"].as_array().expect("numbering").is_empty(),
            "{s}"
        );
    }
}

/// `GET /readyz` of a server, polled until it answers `want` (at most `secs` seconds).
async fn readyz_until(base: &str, want: u16, secs: u64) -> (u16, Value) {
    let client = citeflow_replay::client();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let r = client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .expect("readyz answers");
        let got = (r.status().as_u16(), r.json::<Value>().await.expect("json"));
        if got.0 == want || std::time::Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Redis: CITEFLOW_TEST_REDIS_URL (scripts/test-redis.sh starts one)"]
async fn readyz_is_503_while_redis_is_down_and_200_when_it_is_back() {
    let Some(url) = redis_url("readyz") else {
        return;
    };
    if crate::support::is_cluster_url(&url) {
        return; // a standalone Redis of its own, once
    }
    let mut redis = crate::support::OwnRedis::start();
    let server = Server::start("http://127.0.0.1:9/v1", &redis.url());
    let (status, v) = readyz_until(&server.base, 200, 10).await;
    assert_eq!(
        (status, v),
        (200, json!({"status": "ready", "store": "ok"}))
    );
    redis.kill();
    let (status, v) = readyz_until(&server.base, 503, 10).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["status"], "not_ready", "{v}");
    assert!(v["store"]["error"].is_string(), "{v}");
    // The server itself keeps answering.
    let health = citeflow_replay::client()
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status(), 200);
    redis.restart();
    let (status, v) = readyz_until(&server.base, 200, 20).await;
    assert_eq!(
        (status, v),
        (200, json!({"status": "ready", "store": "ok"}))
    );
}
