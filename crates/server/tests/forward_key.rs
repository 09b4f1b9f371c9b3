//! `--forward-client-key` (issue 16 §4): the caller's own key goes to the upstream instead of
//! the server's, on the chat route (streaming and not) and the `/v1/*` pass-through. The
//! upstream is a real HTTP server on loopback that answers with the `Authorization` it got.

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use citeflow_replay::Replay;
use citeflow_store::MemoryStore;
use serde_json::{json, Value};

use crate::support::{read_sse, text_of, Harness};

fn auth(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_owned()
}

/// Chat completions: the content is `key=<Authorization>`, streamed or not as asked.
async fn chat(headers: HeaderMap, body: axum::Json<Value>) -> axum::response::Response {
    let content = format!("key={}", auth(&headers));
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let chunk = |delta: Value, finish: Value| {
            let v = json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            format!("data: {v}\n\n")
        };
        let sse = chunk(json!({"content": content}), Value::Null)
            + &chunk(json!({}), json!("stop"))
            + "data: [DONE]\n\n";
        return ([("content-type", "text/event-stream")], sse).into_response();
    }
    axum::Json(
        json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": content}}]}),
    )
    .into_response()
}

async fn echo_upstream() -> String {
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .route(
            "/v1/models",
            get(|h: HeaderMap| async move { axum::Json(json!({"auth": auth(&h)})) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/v1")
}

/// What the upstream saw on chat (streamed and not) and models, for a caller with `key`.
async fn seen(h: &Harness, key: &str) -> [String; 3] {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "q"}]});
    let plain: Value = h
        .post("/v1/chat/completions")
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let resp = h
        .post("/v1/chat/completions")
        .bearer_auth(key)
        .json(&streamed)
        .send()
        .await
        .expect("send");
    let events = read_sse(resp, usize::MAX).await;
    let models: Value = h
        .get("/v1/models")
        .bearer_auth(key)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    [
        plain["choices"][0]["message"]["content"]
            .as_str()
            .expect("content")
            .to_owned(),
        text_of(&events),
        format!("key={}", models["auth"].as_str().expect("auth")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_key_reaches_the_upstream_only_with_forward_client_key() {
    let upstream = echo_upstream().await;
    let keys = vec!["sk-user-1".to_owned(), "sk-user-2".to_owned()];
    let server = Harness::on_upstream(
        Replay::new(),
        &upstream,
        {
            let keys = keys.clone();
            move |s| {
                s.with_api_keys(keys)
                    .with_upstream_api_key(Some("sk-server".into()))
            }
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let forwarding = Harness::on_upstream(
        Replay::new(),
        &upstream,
        move |s| {
            s.with_api_keys(keys)
                .with_upstream_api_key(Some("sk-server".into()))
                .with_forward_client_key(true)
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let all = |k: &str| [0, 1, 2].map(|_| format!("key=Bearer {k}"));
    assert_eq!(seen(&server, "sk-user-1").await, all("sk-server"));
    assert_eq!(seen(&forwarding, "sk-user-1").await, all("sk-user-1"));
    assert_eq!(seen(&forwarding, "sk-user-2").await, all("sk-user-2"));
}
