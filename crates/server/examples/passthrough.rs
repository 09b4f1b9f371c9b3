//! The floor for the load benchmark: the smallest streaming HTTP proxy on citeflow's own stack
//! (tokio, axum, hyper, reqwest), which forwards `POST /v1/chat/completions` to the upstream
//! and copies the answer's bytes back unchanged: no parsing, no rewriting, no store. What it
//! costs is what any proxy written this way costs on this machine; what citeflow costs above
//! it is citeflow's own work.
//!
//! `passthrough UPSTREAM_URL` listens on a free loopback port and prints `http://127.0.0.1:PORT/v1`.

use std::io::Write;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;

#[derive(Clone)]
struct Proxy {
    client: reqwest::Client,
    upstream: String,
}

async fn chat(State(p): State<Proxy>, body: Bytes) -> Response {
    let resp = p
        .client
        .post(format!("{}/chat/completions", p.upstream))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    match resp {
        Ok(r) => Response::builder()
            .status(r.status().as_u16())
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(r.bytes_stream()))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let upstream = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8089/v1".into());
    let proxy = Proxy {
        client: reqwest::Client::new(),
        upstream: upstream.trim_end_matches('/').to_owned(),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(proxy);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/v1", listener.local_addr()?);
    std::io::stdout().flush()?;
    axum::serve(listener, app).await
}
