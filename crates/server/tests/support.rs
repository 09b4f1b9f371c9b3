//! The test harness: a replaying upstream, a citeflow server, an SSE reader.

use std::path::PathBuf;
use std::sync::Arc;

use citeflow_replay as replay;
use citeflow_replay::Replay;
pub(crate) use citeflow_replay::{read_sse, text_of, Received};
use citeflow_server::{router, AppState, Limits, ServerSettings};
use citeflow_store::{MemoryStore, Store};
use serde_json::Value;

/// The shared fixtures directory: `CITEFLOW_SHARED_DIR`, else `../shared` beside the checkout.
pub(crate) fn shared_dir() -> PathBuf {
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

pub(crate) struct Harness {
    pub(crate) base: String,
    pub(crate) replay: Replay,
    pub(crate) state: AppState,
    pub(crate) client: reqwest::Client,
}

impl Harness {
    pub(crate) async fn start() -> Harness {
        Harness::with(|s| s, Arc::new(MemoryStore::new())).await
    }

    pub(crate) async fn with(
        configure: impl FnOnce(ServerSettings) -> ServerSettings,
        store: Arc<dyn Store>,
    ) -> Harness {
        let replay = Replay::new();
        let upstream = replay.spawn().await.expect("upstream");
        Harness::on_upstream(replay, &upstream, configure, store).await
    }

    pub(crate) async fn on_upstream(
        replay: Replay,
        upstream: &str,
        configure: impl FnOnce(ServerSettings) -> ServerSettings,
        store: Arc<dyn Store>,
    ) -> Harness {
        let settings = configure(ServerSettings::new(upstream));
        let state = AppState::new(settings, store);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let app = router(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Harness {
            base,
            replay,
            state,
            client: citeflow_replay::client(),
        }
    }

    pub(crate) fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.post(format!("{}{path}", self.base))
    }

    pub(crate) fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.get(format!("{}{path}", self.base))
    }
}

pub(crate) fn limits(f: impl FnOnce(&mut Limits)) -> Limits {
    let mut l = Limits::default();
    f(&mut l);
    l
}

/// The citeflow events of received chunks, in order.
pub(crate) fn citeflow_events(events: &[Received]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .filter_map(|v| v.pointer("/citeflow/events").cloned())
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .collect()
}

/// The events made comparable between two runs (see [`replay::comparable`]).
pub(crate) fn normalized(events: &[Received], stream_id: &str) -> Vec<(Option<u64>, String)> {
    events
        .iter()
        .map(|e| (e.id, replay::comparable(&e.data, stream_id)))
        .collect()
}

/// A small seeded generator (xorshift) for reproducible random drops.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The seed: `CITEFLOW_CHUNK_SEED` or a fixed default; printed so a failure can be replayed.
pub(crate) fn seed() -> u64 {
    let s = std::env::var("CITEFLOW_CHUNK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c1fe);
    eprintln!("CITEFLOW_CHUNK_SEED={s}");
    s
}

/// An error body without its `error.request_id`, which must be there (a new `req_…` id, or the
/// caller's `x-request-id`): for snapshots that stay the same from run to run.
pub(crate) fn without_request_id(mut body: serde_json::Value) -> serde_json::Value {
    let error = body["error"].as_object_mut().expect("an error envelope");
    let id = error.remove("request_id").expect("error.request_id");
    assert!(
        id.as_str().is_some_and(|s| !s.is_empty()),
        "request_id {id}"
    );
    body
}
