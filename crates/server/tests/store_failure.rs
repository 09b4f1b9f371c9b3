//! A store failure in the middle of a stream (issue 15): writes are retried with a bound,
//! then the stream ends with an error event; a resuming client gets an error, never an
//! endless wait; the failure is recorded once the store takes writes again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use citeflow_core::{Numbering, Source};
use citeflow_replay::{Replay, Script};
use citeflow_store::{
    Allocation, MemoryStore, NumberScope, SessionRecord, Store, StoreError, StoredEvent,
    StreamRecord, StreamStatus,
};
use serde_json::{json, Value};

use crate::support::{read_sse, Harness};

/// A memory store whose event and status writes fail while `down` is set.
#[derive(Default)]
struct FlakyStore {
    inner: MemoryStore,
    down: AtomicBool,
}

impl FlakyStore {
    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("disk full (test)".into()));
        }
        Ok(())
    }
}

#[async_trait]
impl Store for FlakyStore {
    async fn create_session(&self, s: SessionRecord) -> Result<(), StoreError> {
        self.inner.create_session(s).await
    }
    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        self.inner.session(id).await
    }
    async fn count_sessions(&self, owner: &str) -> Result<u64, StoreError> {
        self.inner.count_sessions(owner).await
    }
    async fn append_round(
        &self,
        id: &str,
        query: Option<String>,
        sources: Vec<Source>,
        now_ms: u64,
    ) -> Result<SessionRecord, StoreError> {
        self.inner.append_round(id, query, sources, now_ms).await
    }
    async fn touch_session(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        self.inner.touch_session(id, now_ms).await
    }
    async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        self.inner.delete_session(id).await
    }
    async fn allocate(
        &self,
        scope: &NumberScope,
        key: &str,
        source_id: &str,
    ) -> Result<Allocation, StoreError> {
        self.inner.allocate(scope, key, source_id).await
    }
    async fn numbering(&self, scope: &NumberScope) -> Result<Numbering, StoreError> {
        self.inner.numbering(scope).await
    }
    async fn create_stream(&self, stream: StreamRecord) -> Result<(), StoreError> {
        self.inner.create_stream(stream).await
    }
    async fn stream(&self, id: &str) -> Result<StreamRecord, StoreError> {
        self.inner.stream(id).await
    }
    async fn append_events(&self, id: &str, events: Vec<StoredEvent>) -> Result<(), StoreError> {
        self.check()?;
        self.inner.append_events(id, events).await
    }
    async fn finish_stream(&self, id: &str, status: StreamStatus) -> Result<(), StoreError> {
        self.check()?;
        self.inner.finish_stream(id, status).await
    }
    async fn events_after(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.inner.events_after(id, after, limit).await
    }
    async fn wait_for_events(&self, id: &str, after: u64) -> Result<(), StoreError> {
        self.inner.wait_for_events(id, after).await
    }
    async fn running_streams(&self) -> Result<Vec<String>, StoreError> {
        self.inner.running_streams().await
    }
    async fn purge_idle(&self, before: u64) -> Result<u64, StoreError> {
        self.inner.purge_idle(before).await
    }
}

/// The code of an error event: chat's and Messages' envelope (`error.code`), the Responses
/// API's `error` event (`code`), or the AI SDK's `error` part (`errorText`: `code: message`).
fn error_code(data: &str) -> Option<String> {
    let v: Value = serde_json::from_str(data).ok()?;
    if let Some(t) = v.get("errorText").and_then(Value::as_str) {
        return t.split_once(':').map(|(code, _)| code.to_owned());
    }
    v.pointer("/error/code")
        .or_else(|| v.get("code"))?
        .as_str()
        .map(str::to_owned)
}

/// One answer route: where a streamed answer is asked for, and where it is resumed.
struct Route {
    post: &'static str,
    body: Value,
    resume: &'static str,
    /// Asks for the AI SDK UI message stream (`Accept`), on the answer and on resume.
    ui: bool,
}

fn routes() -> Vec<Route> {
    vec![
        Route {
            post: "/v1/chat/completions",
            body: json!({"model": "m", "stream": true,
                         "messages": [{"role": "user", "content": "q"}]}),
            resume: "/v1/streams",
            ui: false,
        },
        Route {
            post: "/v1/chat/completions",
            body: json!({"model": "m", "stream": true,
                         "messages": [{"role": "user", "content": "q"}]}),
            resume: "/v1/streams",
            ui: true,
        },
        Route {
            post: "/v1/responses",
            body: json!({"model": "openai-web-search-tool.1.chunks.txt", "stream": true,
                         "input": "q"}),
            resume: "/v1/responses",
            ui: false,
        },
        Route {
            post: "/v1/messages",
            body: json!({"model": "anthropic-web-search-tool.1.chunks.txt", "stream": true,
                         "max_tokens": 64, "messages": [{"role": "user", "content": "q"}]}),
            resume: "/v1/messages",
            ui: false,
        },
    ]
}

/// A harness over a flaky store whose replaying upstream has a chat script and the recorded
/// provider streams, for every route.
async fn harness(store: Arc<FlakyStore>) -> Harness {
    let replay = Replay::new();
    replay
        .load_dir(&crate::support::shared_dir().join("fixtures/streams"), 0)
        .expect("fixtures");
    replay.insert("m", Script::chat(&["Hello ", "world"]));
    let upstream = replay.spawn().await.expect("upstream");
    let anthropic = upstream.clone();
    Harness::on_upstream(
        replay,
        &upstream,
        move |s| s.with_anthropic_upstream(Some(anthropic)),
        store,
    )
    .await
}

/// On every route: a store that takes no event ends the live answer with the route's error
/// event (bounded retries, never a wait); resuming while it is down is a 503; once it is back
/// the failure is recorded, the stream is `failed`, and a resuming client gets the error
/// event; no stream is left counted open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failure_mid_stream_ends_it_with_an_error_never_a_wait() {
    for route in routes() {
        let store = Arc::new(FlakyStore::default());
        let h = harness(store.clone()).await;
        store.down.store(true, Ordering::SeqCst);
        const UI: &str = "text/event-stream, x-vercel-ai-ui-message-stream";
        let accept = if route.ui { UI } else { "text/event-stream" };
        let r = h
            .post(route.post)
            .header("accept", accept)
            .json(&route.body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200, "{}", route.post);
        let id = r.headers()["x-citeflow-stream-id"]
            .to_str()
            .expect("id")
            .to_owned();
        // The live client gets the error event and the response ends (bounded retries).
        let events = tokio::time::timeout(Duration::from_secs(10), read_sse(r, usize::MAX))
            .await
            .expect("the stream ends");
        let last = events.last().expect("an event");
        assert_eq!(
            error_code(&last.data).as_deref(),
            Some("store_unavailable"),
            "{}: {events:?}",
            route.post
        );

        // Still down: resuming is a 503, not a wait.
        let url = format!("{}/{id}", route.resume);
        let resume = || h.get(&url).header("accept", accept).send();
        let r = tokio::time::timeout(Duration::from_secs(10), resume())
            .await
            .expect("answered")
            .expect("send");
        assert_eq!(r.status(), 503, "{url}");
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], "store_unavailable");

        // The store is back: the failure is recorded and a resuming client gets the error
        // event.
        store.down.store(false, Ordering::SeqCst);
        let r = tokio::time::timeout(Duration::from_secs(10), resume())
            .await
            .expect("answered")
            .expect("send");
        assert_eq!(r.status(), 200, "{url}");
        let events = tokio::time::timeout(Duration::from_secs(10), read_sse(r, usize::MAX))
            .await
            .expect("the stream ends");
        let last = events.last().expect("an event");
        assert_eq!(
            error_code(&last.data).as_deref(),
            Some("store_unavailable"),
            "{url}: {events:?}"
        );
        assert_eq!(
            h.state.store().stream(&id).await.expect("stream").status,
            StreamStatus::Failed,
            "{url}"
        );
        // The generation task lowers the gauge as it ends, which may be just after the
        // client read the last event: wait for it (bounded), never for a fixed time.
        let (n, open) = crate::metrics::open_streams_settled(&h.state).await;
        assert_eq!(n, 0.0, "{url}: {open}");
    }
}
