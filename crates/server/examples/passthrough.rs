//! The floor for the load benchmark: the smallest streaming HTTP proxy on citeflow's own stack
//! (tokio, axum, hyper, reqwest), which forwards `POST /v1/chat/completions` to the upstream
//! and copies the answer's bytes back unchanged: no parsing, no rewriting, no store. What it
//! costs is what any proxy written this way costs on this machine; what citeflow costs above
//! it is citeflow's own work.
//!
//! With `--log PATH` it is the floor of a proxy that keeps a durable log, as citeflow does with
//! its default store: each answer is a stream in citeflow's own SQLite store at `PATH`, and
//! every complete SSE event the upstream sent is appended to it (the events of one read in one
//! append, as citeflow appends a read's chunks) before its bytes go to the client. Nothing is
//! parsed beyond the blank line that ends an event and nothing is rewritten, so what citeflow
//! costs above this one is its citation work and its own glue, with the log's cost on both
//! sides.
//!
//! `passthrough UPSTREAM_URL [--log PATH]` listens on a free loopback port and prints
//! `http://127.0.0.1:PORT/v1`.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use citeflow_store::{Store, StoredEvent, StreamRecord, StreamStatus};
use futures_util::stream::{BoxStream, StreamExt};

/// citeflow's allocator (`crates/cli/src/main.rs`): a floor measured with another one would say
/// something about the allocators.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Clone)]
struct Proxy {
    client: reqwest::Client,
    upstream: String,
    /// The durable log, with `--log`.
    log: Option<Arc<dyn Store>>,
    /// Numbers the logged streams.
    streams: Arc<AtomicU64>,
}

async fn chat(State(p): State<Proxy>, body: Bytes) -> Response {
    let resp = p
        .client
        .post(format!("{}/chat/completions", p.upstream))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    let r = match resp {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = r.status().as_u16();
    let bytes: BoxStream<'static, reqwest::Result<Bytes>> = match &p.log {
        None => r.bytes_stream().boxed(),
        Some(log) => {
            let id = format!("s{}", p.streams.fetch_add(1, Ordering::Relaxed));
            if let Err(e) = log.create_stream(record(&id)).await {
                return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response();
            }
            logged(Arc::clone(log), id, r.bytes_stream().boxed())
        }
    };
    Response::builder()
        .status(status)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(bytes))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn record(id: &str) -> StreamRecord {
    StreamRecord {
        id: id.to_owned(),
        owner: "bench".into(),
        session_id: None,
        status: StreamStatus::Running,
        created_ms: 0,
    }
}

/// The upstream's bytes, each read's complete SSE events appended to stream `id` of the log
/// before they are passed on (a partial event waits for the read that completes it); the
/// stream is marked finished at the end.
fn logged(
    log: Arc<dyn Store>,
    id: String,
    upstream: BoxStream<'static, reqwest::Result<Bytes>>,
) -> BoxStream<'static, reqwest::Result<Bytes>> {
    struct S {
        log: Arc<dyn Store>,
        id: String,
        upstream: BoxStream<'static, reqwest::Result<Bytes>>,
        /// Bytes after the last complete event.
        pending: Vec<u8>,
        next: u64,
    }
    let s = S {
        log,
        id,
        upstream,
        pending: Vec::new(),
        next: 1,
    };
    futures_util::stream::unfold(Some(s), |s| async move {
        let mut s = s?;
        match s.upstream.next().await {
            Some(Ok(b)) => {
                s.pending.extend_from_slice(&b);
                let mut events = Vec::new();
                while let Some(end) = memchr::memmem::find(&s.pending, b"\n\n") {
                    let event: Vec<u8> = s.pending.drain(..end + 2).collect();
                    events.push(StoredEvent {
                        id: s.next,
                        data: String::from_utf8_lossy(&event).into_owned(),
                    });
                    s.next += 1;
                }
                if !events.is_empty() {
                    if let Err(e) = s.log.append_events(&s.id, events).await {
                        eprintln!("append: {e}");
                        return None;
                    }
                }
                Some((Ok(b), Some(s)))
            }
            Some(Err(e)) => Some((Err(e), None)),
            None => {
                let _ = s.log.finish_stream(&s.id, StreamStatus::Completed).await;
                None
            }
        }
    })
    .boxed()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let upstream = args
        .first()
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:8089/v1".into());
    let log: Option<Arc<dyn Store>> = match args.iter().position(|a| a == "--log") {
        Some(i) => {
            let path = args.get(i + 1).expect("--log PATH");
            let store = citeflow_store_sqlite::SqliteStore::open(path)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            Some(Arc::new(store))
        }
        None => None,
    };
    let proxy = Proxy {
        client: citeflow_replay::client(),
        upstream: upstream.trim_end_matches('/').to_owned(),
        log,
        streams: Arc::new(AtomicU64::new(0)),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/v1", listener.local_addr()?);
    std::io::stdout().flush()?;
    axum::serve(listener, app).await
}
