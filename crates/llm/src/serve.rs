//! The HTTP face of a model: `POST /v1/chat/completions` (SSE or whole), `GET /v1/models`,
//! `GET /metrics`, `GET /healthz`, on a loopback listener.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use crate::error::{GenerateError, ModelError};
use crate::generate::{FinishReason, Generate, Piece};
use crate::openai::{ChatRequest, ChunkMeta};
use crate::policy::AgentPolicy;
use crate::stats::ModelMetrics;
use crate::tool_calls::{read_whole, CallEvent, CallReader};

/// What the handlers share.
#[derive(Clone)]
pub struct ModelState {
    generator: Arc<dyn Generate>,
    metrics: Arc<ModelMetrics>,
    default_max_tokens: usize,
    policy: AgentPolicy,
}

impl ModelState {
    /// State over `generator`; answers without `max_tokens` stop after `default_max_tokens`.
    pub fn new(generator: Arc<dyn Generate>, default_max_tokens: usize) -> Self {
        ModelState {
            generator,
            metrics: Arc::new(ModelMetrics::default()),
            default_max_tokens,
            policy: AgentPolicy::default(),
        }
    }

    /// How `tool_choice: "auto"` turns are shaped ([`AgentPolicy`]).
    ///
    /// ### Default
    /// [`AgentPolicy::Search`].
    pub fn with_agent_policy(mut self, policy: AgentPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The metrics the handlers update.
    pub fn metrics(&self) -> Arc<ModelMetrics> {
        Arc::clone(&self.metrics)
    }
}

impl std::fmt::Debug for ModelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelState")
            .field("model", &self.generator.model_id())
            .field("default_max_tokens", &self.default_max_tokens)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

struct ErrorResponse(GenerateError);

impl IntoResponse for ErrorResponse {
    fn into_response(self) -> Response {
        let (status, message) = if self.0.is_client_error() {
            (StatusCode::BAD_REQUEST, self.0.to_string())
        } else {
            tracing::error!(error = %self.0, "generation failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error".to_owned(),
            )
        };
        (
            status,
            Json(json!({"error": {"code": self.0.code(), "message": message}})),
        )
            .into_response()
    }
}

/// The axum service over `state`.
pub fn router(state: ModelState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .with_state(state)
}

async fn models(State(state): State<ModelState>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": state.generator.model_id(), "object": "model", "created": 0, "owned_by": "citeflow"}],
    }))
}

async fn metrics(State(state): State<ModelState>) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}

fn meta(state: &ModelState) -> ChunkMeta {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ChunkMeta {
        id: format!("chatcmpl-{:x}{:08x}", now.as_secs(), now.subsec_nanos()),
        created: now.as_secs(),
        model: state.generator.model_id().to_owned(),
    }
}

async fn completions(
    State(state): State<ModelState>,
    body: axum::body::Bytes,
) -> Result<Response, ErrorResponse> {
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        ErrorResponse(GenerateError::Invalid {
            message: format!("the body is not JSON: {e}"),
        })
    })?;
    let req = ChatRequest::parse_with(&value, state.default_max_tokens, state.policy)
        .map_err(ErrorResponse)?;
    let tool_calls = req.tool_calls;
    let mut rx = state.generator.start(req.job).map_err(|e| {
        state.metrics.observe_failure();
        ErrorResponse(e)
    })?;
    // Wait for the first piece, so a refused job is an HTTP error, not a broken stream.
    let first = match rx.recv().await {
        Some(Piece::Failed(e)) => {
            state.metrics.observe_failure();
            return Err(ErrorResponse(e));
        }
        other => other,
    };
    let meta = meta(&state);
    if req.stream {
        Ok(stream(state, meta, first, rx, tool_calls))
    } else {
        whole(state, meta, first, rx, tool_calls).await
    }
}

async fn whole(
    state: ModelState,
    meta: ChunkMeta,
    first: Option<Piece>,
    mut rx: mpsc::Receiver<Piece>,
    tool_calls: bool,
) -> Result<Response, ErrorResponse> {
    let mut text = String::new();
    let mut next = first;
    while let Some(piece) = next {
        match piece {
            Piece::Text(t) => text.push_str(&t),
            Piece::Done { finish, stats } => {
                state.metrics.observe(&stats);
                let body = match read_whole(&text, tool_calls) {
                    Ok(calls) => meta.completion_calls(&calls, calls_finish(finish), &stats),
                    Err(text) => meta.completion(&text, finish, &stats),
                };
                return Ok(Json(body).into_response());
            }
            Piece::Failed(e) => {
                state.metrics.observe_failure();
                return Err(ErrorResponse(e));
            }
        }
        next = rx.recv().await;
    }
    state.metrics.observe_failure();
    Err(ErrorResponse(GenerateError::Model {
        reason: "the model stopped without finishing".to_owned(),
    }))
}

/// A turn of calls that ended by itself finishes with `tool_calls`.
fn calls_finish(finish: FinishReason) -> FinishReason {
    match finish {
        FinishReason::Stop => FinishReason::ToolCalls,
        other => other,
    }
}

fn sse(data: &str) -> Result<axum::body::Bytes, Infallible> {
    Ok(axum::body::Bytes::from(format!("data: {data}\n\n")))
}

fn stream(
    state: ModelState,
    meta: ChunkMeta,
    first: Option<Piece>,
    mut rx: mpsc::Receiver<Piece>,
    tool_calls: bool,
) -> Response {
    let (tx, body_rx) = mpsc::channel::<Result<axum::body::Bytes, Infallible>>(64);
    tokio::spawn(async move {
        if tx.send(sse(&meta.role_chunk().to_string())).await.is_err() {
            return;
        }
        let mut finished = false;
        let mut next = first;
        let mut reader = CallReader::new(tool_calls);
        while let Some(piece) = next {
            let data = match piece {
                Piece::Text(t) => {
                    reader.write(&t);
                    let mut frames = String::new();
                    while let Some(e) = reader.poll_event() {
                        let chunk = match e {
                            CallEvent::Text(t) => meta.text_chunk(&t),
                            CallEvent::Start { index, name } => meta.call_start_chunk(index, &name),
                            CallEvent::Arguments { index, fragment } => {
                                meta.call_arguments_chunk(index, &fragment)
                            }
                        };
                        if !frames.is_empty() {
                            frames.push_str("\n\ndata: ");
                        }
                        frames.push_str(&chunk.to_string());
                    }
                    if frames.is_empty() {
                        next = rx.recv().await;
                        continue;
                    }
                    frames
                }
                Piece::Done { finish, stats } => {
                    state.metrics.observe(&stats);
                    finished = true;
                    let finish = if reader.has_calls() {
                        calls_finish(finish)
                    } else {
                        finish
                    };
                    meta.finish_chunk(finish, &stats).to_string()
                }
                Piece::Failed(e) => {
                    state.metrics.observe_failure();
                    tracing::error!(error = %e, "generation failed mid-stream");
                    json!({"error": {"code": e.code(), "message": "internal error"}}).to_string()
                }
            };
            // A client that went away drops `rx`, which stops the model.
            if tx.send(sse(&data)).await.is_err() {
                return;
            }
            next = rx.recv().await;
        }
        if finished {
            let _ = tx.send(sse("[DONE]")).await;
        }
    });
    let body = Body::from_stream(tokio_stream_from(body_rx));
    Response::builder()
        .header(CONTENT_TYPE, "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// A model served on a loopback port, running until [`LocalServer::shutdown`] or drop.
#[derive(Debug)]
pub struct LocalServer {
    addr: SocketAddr,
    metrics: Arc<ModelMetrics>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl LocalServer {
    /// Serves `state` on `listener` in a task of the current tokio runtime.
    ///
    /// # Errors
    /// [`ModelError::Listen`] when the listener has no local address.
    pub fn start(state: ModelState, listener: TcpListener) -> Result<Self, ModelError> {
        let addr = listener.local_addr().map_err(|source| ModelError::Listen {
            addr: "listener".to_owned(),
            source,
        })?;
        let metrics = state.metrics();
        let (stop, stopped) = oneshot::channel::<()>();
        let app = router(state);
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "local model server failed");
            }
        });
        Ok(LocalServer {
            addr,
            metrics,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// Binds `127.0.0.1:0` (a free port) and serves `state` there.
    ///
    /// # Errors
    /// [`ModelError::Listen`] when no port can be bound.
    pub async fn start_loopback(state: ModelState) -> Result<Self, ModelError> {
        let listener =
            TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|source| ModelError::Listen {
                    addr: "127.0.0.1:0".to_owned(),
                    source,
                })?;
        Self::start(state, listener)
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OpenAI base URL: `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The model's metrics (shown at `/metrics` here; append [`ModelMetrics::render`] to
    /// another exposition to show them there).
    pub fn metrics(&self) -> Arc<ModelMetrics> {
        Arc::clone(&self.metrics)
    }

    /// Stops accepting, finishes open answers and waits for the server task.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
