//! Test support for citeflow: a replaying upstream for tests and benchmarks, an OpenAI-style
//! server that answers `POST …/chat/completions` (and the responses and messages routes) with
//! a scripted SSE stream named by the request's `model`.
//!
//! [`Replay`] holds the [`Script`]s (each a status and [`Step`]s) by model name and serves them
//! ([`Replay::spawn`]); [`read_sse`] reads a response's SSE events as a test client does
//! ([`Received`]). The `replay_upstream` example serves a directory of recorded streams. Not
//! published: the server, the CLI and the store tests use it as a dev-dependency.
//!
//! Besides the scripts, every `Replay` answers the scripted agent models (`agent-search`,
//! `agent-search-ja`, see [`agent_reply`]): they read the request to decide whether to call a
//! tool or to answer citing the markers of the tool results (on `/v1/responses` in the
//! Responses API's shapes, see [`responses_agent_reply`]); and the RAG models
//! (`cite-sources`, `cite-sources-ja`, see [`cite_sources_reply`]) that cite by rank the
//! `Source N:` labels of their prompt.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use serde_json::{json, Value};

mod agent;
mod book_agent;
mod cite_sources;
mod responses_agent;
pub use agent::{agent_reply, answer_text, marker_ids, AgentReply, AGENT_MODELS};
pub use book_agent::{book_answer, book_reply, ANSWER_SENTENCES, BOOK_MODEL};
pub use cite_sources::{cite_sources_reply, cite_sources_text, source_labels, CITE_SOURCES_MODELS};
pub use responses_agent::{responses_agent_reply, WEB_SENTENCE, WEB_URLS};

/// A reqwest client for the tests' loopback servers.
///
/// reqwest is built in this workspace without a crypto provider of its own (the server's
/// `rustls-no-provider`), so `reqwest::Client::new()` panics in a process that has not installed
/// one yet. This installs ring first, the one provider of the workspace, unless one is
/// installed already.
pub fn client() -> reqwest::Client {
    // `Err` only when a provider is installed already, which is what is wanted.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// One step of a scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes as one body chunk.
    Bytes(Vec<u8>),
    /// Wait.
    SleepMs(u64),
    /// Stop sending and keep the connection open forever.
    Hang,
    /// Break the connection (an error ends the body).
    Cut,
}

/// A scripted answer: a status, then steps (only for status 200).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// The HTTP status.
    pub status: u16,
    /// Hang before sending the headers.
    pub hang_before_headers: bool,
    /// The body steps.
    pub steps: Vec<Step>,
}

impl Script {
    /// A 200 answer of these steps.
    pub fn new(steps: Vec<Step>) -> Self {
        Script {
            status: 200,
            hang_before_headers: false,
            steps,
        }
    }

    /// An error status with an OpenAI error body.
    pub fn error(status: u16, message: &str) -> Self {
        Script {
            status,
            hang_before_headers: false,
            steps: vec![Step::Bytes(
                json!({"error": {"message": message, "type": "server_error"}})
                    .to_string()
                    .into_bytes(),
            )],
        }
    }

    /// Raw SSE bytes (a recorded `.sse` file), one body chunk per event as recorded.
    pub fn from_sse(raw: &[u8]) -> Self {
        let mut steps = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i + 1 < raw.len() {
            if raw[i] == b'\n' && raw[i + 1] == b'\n' {
                steps.push(Step::Bytes(raw[start..i + 2].to_vec()));
                start = i + 2;
                i += 2;
            } else {
                i += 1;
            }
        }
        if start < raw.len() {
            steps.push(Step::Bytes(raw[start..].to_vec()));
        }
        Script::new(steps)
    }

    /// A `.chunks.txt` recording (one JSON payload a line), framed as SSE, ending in `[DONE]`.
    pub fn from_chunk_lines(text: &str) -> Self {
        let mut steps: Vec<Step> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| Step::Bytes(format!("data: {l}\n\n").into_bytes()))
            .collect();
        steps.push(Step::Bytes(b"data: [DONE]\n\n".to_vec()));
        Script::new(steps)
    }

    /// A chat stream whose `delta.content` pieces are these, then a finish chunk and `[DONE]`.
    pub fn chat(pieces: &[&str]) -> Self {
        let chunk = |delta: Value, finish: Value| {
            let v = json!({
                "id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": 1_700_000_000,
                "model": "replay", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
            });
            Step::Bytes(format!("data: {v}\n\n").into_bytes())
        };
        let mut steps = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        for p in pieces {
            steps.push(chunk(json!({"content": p}), Value::Null));
        }
        steps.push(chunk(json!({}), json!("stop")));
        steps.push(Step::Bytes(b"data: [DONE]\n\n".to_vec()));
        Script::new(steps)
    }

    /// The same body re-cut into pieces of `n` bytes.
    pub fn rechunked(&self, n: usize) -> Self {
        let all: Vec<u8> = self
            .steps
            .iter()
            .flat_map(|s| match s {
                Step::Bytes(b) => b.clone(),
                _ => Vec::new(),
            })
            .collect();
        Script {
            steps: all
                .chunks(n.max(1))
                .map(|c| Step::Bytes(c.to_vec()))
                .collect(),
            ..self.clone()
        }
    }

    /// A pause of `ms` before every step.
    pub fn paced(mut self, ms: u64) -> Self {
        if ms == 0 {
            return self;
        }
        self.steps = self
            .steps
            .into_iter()
            .flat_map(|s| [Step::SleepMs(ms), s])
            .collect();
        self
    }

    /// The `delta.content` (or `text`) the script streams, concatenated.
    pub fn text(&self) -> String {
        let mut d = citeflow_core::sse::SseDecoder::default();
        for s in &self.steps {
            if let Step::Bytes(b) = s {
                let _ = d.write(b);
            }
        }
        let _ = d.end();
        let mut out = String::new();
        while let Some(e) = d.poll_event() {
            if let Ok(v) = serde_json::from_str::<Value>(&e.data) {
                if let Some(t) = citeflow_core::sse::chunk_text(&v) {
                    out.push_str(t);
                }
            }
        }
        out
    }
}

/// The upstream's shared state: scripts by model name, and the requests received.
#[derive(Debug, Default, Clone)]
pub struct Replay {
    scripts: Arc<Mutex<HashMap<String, Script>>>,
    requests: Arc<Mutex<Vec<Value>>>,
    stamp: bool,
    agent_pace_ms: u64,
}

impl Replay {
    /// No scripts.
    pub fn new() -> Self {
        Replay::default()
    }

    /// Adds `"replay_sent_us"` (wall clock, microseconds) to every JSON event as it is sent,
    /// so that a client can measure each chunk's latency (the benchmark does).
    pub fn with_stamps(mut self) -> Self {
        self.stamp = true;
        self
    }

    /// A pause of `ms` before each event of the agent models' streamed replies (so that a
    /// browser test sees the answer while it streams).
    pub fn with_agent_pace(mut self, ms: u64) -> Self {
        self.agent_pace_ms = ms;
        self
    }

    /// Registers the answer to requests with `"model": model`.
    pub fn insert(&self, model: &str, script: Script) {
        self.scripts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(model.to_owned(), script);
    }

    /// Loads every `*.sse` and `*.chunks.txt` of a directory, named by file name, with a pause
    /// of `pace_ms` before each event.
    ///
    /// # Errors
    /// An I/O error reading the directory.
    pub fn load_dir(&self, dir: &Path, pace_ms: u64) -> std::io::Result<usize> {
        let mut n = 0;
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            if name.ends_with(".sse") {
                self.insert(
                    &name,
                    Script::from_sse(&std::fs::read(&path)?).paced(pace_ms),
                );
                n += 1;
            } else if name.ends_with(".chunks.txt") {
                self.insert(
                    &name,
                    Script::from_chunk_lines(&std::fs::read_to_string(&path)?).paced(pace_ms),
                );
                n += 1;
            }
        }
        Ok(n)
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The upstream service.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/chat/completions", post(answer))
            .route("/v1/completions", post(answer))
            .route("/v1/responses", post(answer_responses))
            .route("/v1/messages", post(answer))
            .route("/v1/models", axum::routing::get(models))
            .route("/v1/embeddings", post(embeddings))
            .with_state(self.clone())
    }

    /// Serves on a loopback port in the background; returns the base URL (`…/v1`).
    ///
    /// # Errors
    /// An I/O error binding the port.
    pub async fn spawn(&self) -> std::io::Result<String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = self.router();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(format!("http://{addr}/v1"))
    }
}

async fn answer(State(replay): State<Replay>, body: axum::body::Bytes) -> Response {
    serve(replay, body, false).await
}

/// `POST /v1/responses`: the agent models answer in the Responses API's shapes.
async fn answer_responses(State(replay): State<Replay>, body: axum::body::Bytes) -> Response {
    serve(replay, body, true).await
}

async fn serve(replay: Replay, body: axum::body::Bytes, responses: bool) -> Response {
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = req
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    replay
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(req);
    let last = replay
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .last()
        .cloned()
        .unwrap_or(Value::Null);
    let agent = if responses {
        responses_agent_reply(&last)
    } else {
        agent::agent_reply(&last).or_else(|| book_reply(&last))
    };
    let scripted = match agent.or_else(|| cite_sources_reply(&last)) {
        Some(AgentReply::Json(v)) => return axum::Json(v).into_response(),
        Some(AgentReply::Stream(script)) => Some(script.paced(replay.agent_pace_ms)),
        None => None,
    };
    let script = scripted.or_else(|| {
        replay
            .scripts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&model)
            .cloned()
    });
    let Some(script) = script else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"message": format!("no script for model {model}")}})),
        )
            .into_response();
    };
    if script.hang_before_headers {
        std::future::pending::<()>().await;
    }
    let status = StatusCode::from_u16(script.status).unwrap_or(StatusCode::OK);
    if status != StatusCode::OK {
        let bytes: Vec<u8> = script
            .steps
            .into_iter()
            .flat_map(|s| match s {
                Step::Bytes(b) => b,
                _ => Vec::new(),
            })
            .collect();
        return (status, [("content-type", "application/json")], bytes).into_response();
    }
    let stamp = replay.stamp;
    let stream =
        futures_util::stream::unfold(script.steps.into_iter(), move |mut steps| async move {
            loop {
                match steps.next()? {
                    Step::Bytes(b) if stamp => {
                        return Some((Ok::<_, std::io::Error>(Bytes::from(stamped(b))), steps))
                    }
                    Step::Bytes(b) => {
                        return Some((Ok::<_, std::io::Error>(Bytes::from(b)), steps))
                    }
                    Step::SleepMs(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                    Step::Hang => std::future::pending::<()>().await,
                    Step::Cut => {
                        return Some((
                            Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "cut")),
                            steps,
                        ))
                    }
                }
            }
        });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// `GET /v1/models`: a fixed list.
async fn models() -> Response {
    axum::Json(json!({"object": "list", "data": [
        {"id": "replay", "object": "model", "created": 1_700_000_000, "owned_by": "citeflow"}
    ]}))
    .into_response()
}

/// `POST /v1/embeddings`: one small vector per input string, derived from its bytes.
async fn embeddings(body: axum::body::Bytes) -> Response {
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let inputs: Vec<String> = match req.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let sum: u32 = s.bytes().map(u32::from).sum();
            let v = [s.len() as f64, f64::from(sum % 97) / 97.0, 0.5];
            json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    axum::Json(
        json!({"object": "list", "data": data, "model": req.get("model"),
        "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
    )
    .into_response()
}

/// `data: {…}` events get `"replay_sent_us": <now>` as their first field.
fn stamped(b: Vec<u8>) -> Vec<u8> {
    let Some(rest) = b.strip_prefix(b"data: {") else {
        return b;
    };
    let us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let mut out = format!("data: {{\"replay_sent_us\": {us}, ").into_bytes();
    out.extend_from_slice(rest);
    out
}

/// An SSE payload made comparable between two runs of one script: the stream id becomes
/// `STREAM` and the answer's timing stats (`citeflow.stats`, which differ from run to run)
/// are reduced to their keys. Everything else (ids, text, citations, numbers) is kept.
pub fn comparable(data: &str, stream_id: &str) -> String {
    let data = data.replace(stream_id, "STREAM");
    let Ok(mut v) = serde_json::from_str::<Value>(&data) else {
        return data;
    };
    let Some(stats) = v.pointer_mut("/citeflow/stats") else {
        return data;
    };
    let keys: Vec<String> = stats
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    *stats = json!(keys);
    v.to_string()
}

/// One SSE event as a test client received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The event's `id:` (citeflow's ids are numbers).
    pub id: Option<u64>,
    /// The event's `data:`.
    pub data: String,
}

/// The JSON payloads of received events, `[DONE]` left out. Panics on any other data that is
/// not JSON.
pub fn payloads(events: &[Received]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| {
            serde_json::from_str(&e.data)
                .unwrap_or_else(|err| panic!("event data is not JSON ({err}): {:?}", e.data))
        })
        .collect()
}

/// The answer text of received chunks (their content or text fields; data that is not JSON is
/// skipped).
pub fn text_of(events: &[Received]) -> String {
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .filter_map(|v| citeflow_core::sse::chunk_text(&v).map(str::to_owned))
        .collect()
}

/// Reads SSE events from a response until the body ends or `max` events arrived (then drops
/// the body, as a client that goes away does). For tests and benchmarks: panics on a broken
/// body, invalid SSE or an id that is not a number.
pub async fn read_sse(mut resp: reqwest::Response, max: usize) -> Vec<Received> {
    let mut dec = citeflow_core::sse::SseDecoder::default();
    let mut out = Vec::new();
    let mut ended = false;
    loop {
        while let Some(e) = dec.poll_event() {
            out.push(Received {
                id: e.id.as_deref().map(|i| i.parse().expect("numeric id")),
                data: e.data,
            });
            if out.len() >= max {
                return out;
            }
        }
        if ended {
            return out;
        }
        match resp.chunk().await.expect("body") {
            Some(b) => dec.write(&b).expect("valid sse"),
            None => {
                dec.end().expect("valid sse");
                ended = true;
            }
        }
    }
}
