//! The citeflow server as a library: an OpenAI-compatible streaming proxy that rewrites
//! citation markers into stable numbers, with sessions, resumable streams, a book index and a
//! durable store.
//!
//! [`ServerSettings`] (with its [`Limits`], [`PromptDefaults`] and [`StoreLocation`])
//! configures it; [`AppState`] holds the settings, the [`citeflow_store::Store`], the optional
//! book index (`citeflow-index`, for `/v1/books` and `citeflow.book`), the upstream client and
//! the [`Metrics`]; [`router`] builds the axum service from the one table of routes,
//! [`ROUTES`] (tests call it directly), and [`launch`] serves it on a listener until a shutdown
//! future resolves (binaries call it).
//!
//! Three routes answer: `POST /v1/chat/completions`, `POST /v1/responses` and
//! `POST /v1/messages` (each in its own wire format, or the AI SDK UI message stream). Every
//! answer goes through one runner: the upstream's events read through a
//! `citeflow_core::provider::ProviderStream`, numbers taken from the store's atomic
//! allocation, and, when streamed, each rewritten event logged before any client sees it, by a
//! task of its own that goes on when the client leaves. Clients follow that log;
//! `GET /v1/streams/{id}`, `GET /v1/responses/{id}` and `GET /v1/messages/{id}` resume it after
//! `Last-Event-ID`. The upstream API's other resources ([`FORWARDED`]) pass through; any other
//! path is a 404, a wrong method a 405 with `Allow`. Errors use one envelope, [`ApiError`].

//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use citeflow_server::{launch, ServerSettings, StoreLocation};
//!
//! let settings = ServerSettings::new("http://127.0.0.1:8089/v1")
//!     .with_store(StoreLocation::Sqlite("citeflow.db".into()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! launch(settings, listener, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(())
//! # }
//! ```

mod answer;
mod budget;
mod code;
mod cut;
mod error;
mod ids;
mod intake;
mod library;
mod metrics;
mod ops;
mod plan;
mod quota;
mod routes;
mod settings;
mod sse;
mod state;
mod tenancy;
mod tls;
mod unrecorded;
mod upstream;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Router;
use citeflow_store::{MemoryStore, Store, StoreError};

pub use answer::stream::recover_interrupted;
pub use error::ApiError;
pub use metrics::Metrics;
pub use routes::{Route, FORWARDED, ROUTES};
pub use settings::{Limits, PromptDefaults, ServerSettings, StoreLocation};
pub use state::AppState;
pub use tls::install_crypto_provider;

/// The OpenAPI document served at `GET /openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

/// The axum service over `state`.
pub fn router(state: AppState) -> Router {
    routes::add_all(Router::new())
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            intake::conn::body_deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            intake::guard::browser_guard,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state.metrics),
            metrics::track,
        ))
        .layer(axum::middleware::from_fn(intake::request_id::request_id))
        .with_state(state)
}

async fn healthz() -> impl IntoResponse {
    axum::Json(serde_json::json!({"status": "ok"}))
}

/// How long `/readyz` waits for the store (and the upstream) before calling it down.
const READYZ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `GET /readyz`: 200 when the store answers a read and takes a small write (its write
/// probe, whose answer is kept for a second) and, with `readyz_upstream`, the upstream's
/// `GET /models` answers below 500, each within 2 s; else 503. The body names each check.
async fn readyz(State(state): State<AppState>) -> Response {
    let read = match tokio::time::timeout(READYZ_TIMEOUT, state.store.stream("readyz-probe")).await
    {
        Ok(Ok(_) | Err(StoreError::NotFound { .. })) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "no answer within {} ms",
            READYZ_TIMEOUT.as_millis()
        )),
    };
    let store = match read {
        Ok(()) => {
            state
                .write_probe
                .check(state.store.as_ref(), READYZ_TIMEOUT)
                .await
        }
        Err(e) => Err(e),
    };
    let upstream = if state.settings.readyz_upstream {
        let url = format!("{}/models", state.settings.upstream);
        let mut req = state.http.get(&url).timeout(READYZ_TIMEOUT);
        if let Some(k) = &state.settings.upstream_api_key {
            req = req.bearer_auth(k);
        }
        Some(match req.send().await {
            Ok(r) if r.status().as_u16() < 500 => Ok(()),
            Ok(r) => Err(format!("GET {url}: {}", r.status())),
            Err(e) => Err(format!("GET {url}: {e}")),
        })
    } else {
        None
    };
    let ready = store.is_ok() && upstream.as_ref().is_none_or(Result::is_ok);
    let show = |r: &Result<(), String>| match r {
        Ok(()) => serde_json::json!("ok"),
        Err(e) => serde_json::json!({"error": e}),
    };
    let mut body = serde_json::json!({
        "status": if ready { "ready" } else { "not_ready" },
        "store": show(&store),
    });
    if let Some(u) = &upstream {
        body["upstream"] = show(u);
    }
    let status = if ready {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.render(),
    )
}

async fn openapi() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], OPENAPI_JSON)
}

async fn no_route(req: Request) -> ApiError {
    ApiError::NoRoute {
        method: req.method().to_string(),
        path: req.uri().path().to_owned(),
    }
}

/// A 405 in the JSON error envelope (axum adds the `Allow` header).
async fn wrong_method(req: Request) -> ApiError {
    ApiError::MethodNotAllowed {
        method: req.method().to_string(),
        path: req.uri().path().to_owned(),
    }
}

/// Why [`launch`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The store cannot be opened or recovered.
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The book index cannot be opened.
    #[error("book index: {0}")]
    Index(#[from] citeflow_index::IndexError),
    /// Serving failed.
    #[error("serve: {0}")]
    Serve(#[from] std::io::Error),
    /// No API key, and a listener another machine can reach, without
    /// [`ServerSettings::with_allow_no_auth`].
    #[error(
        "refusing to serve without an API key on {addr}, which other machines can reach: \
         pass --api-key KEY, listen on a loopback address (127.0.0.1 or [::1]), or pass \
         --allow-no-auth to serve anyone who can reach the port"
    )]
    NoAuthOnNetwork {
        /// The address of the listener.
        addr: std::net::SocketAddr,
    },
}

/// Checks that a server with these settings may listen on `addr`: with no API key it serves
/// anyone who reaches the port, so only a loopback address is allowed, unless the settings
/// say [`ServerSettings::with_allow_no_auth`]. [`launch`] calls it; a binary can call it
/// before it announces the address.
///
/// # Errors
/// [`LaunchError::NoAuthOnNetwork`].
pub fn check_exposure(
    settings: &ServerSettings,
    addr: std::net::SocketAddr,
) -> Result<(), LaunchError> {
    if settings.api_keys.is_empty()
        && !settings.allow_no_auth
        && !addr.ip().to_canonical().is_loopback()
    {
        return Err(LaunchError::NoAuthOnNetwork { addr });
    }
    Ok(())
}

/// Opens the store named by the settings (`limits` gives the SQLite store's WAL limit).
///
/// # Errors
/// [`StoreError`] when it cannot be opened.
pub fn open_store(location: &StoreLocation, limits: &Limits) -> Result<Arc<dyn Store>, StoreError> {
    Ok(match location {
        StoreLocation::Memory => Arc::new(MemoryStore::new()),
        StoreLocation::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
            let mut options = citeflow_store_sqlite::SqliteOptions::default();
            options.wal_max_bytes = limits.sqlite_wal_max_bytes;
            Arc::new(citeflow_store_sqlite::SqliteStore::open_with(
                path, &options,
            )?)
        }
        StoreLocation::Redis(url) => Arc::new(citeflow_store_redis::RedisStore::open(url)?),
    })
}

/// Serves the API on `listener` until `shutdown` resolves: opens the store and the book index
/// (if the settings name one), marks streams a
/// previous run left running as interrupted, purges idle sessions hourly, then serves. When
/// `shutdown` resolves it stops accepting, lets the streams being generated finish for up to
/// [`Limits::shutdown_grace_ms`], then ends the SSE responses still open with a
/// `shutting_down` error event (resumable with `Last-Event-ID`), and logs how many streams
/// finished and how many were interrupted.
///
/// # Errors
/// [`LaunchError`] when the store or the book index cannot be opened or the listener fails.
pub async fn launch(
    settings: ServerSettings,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), LaunchError> {
    check_exposure(&settings, listener.local_addr()?)?;
    let store = open_store(&settings.store, &settings.limits)?;
    let state = AppState::try_new(settings, store)?;
    let n = recover_interrupted(&state).await?;
    if n > 0 {
        tracing::warn!(
            streams = n,
            "marked streams of a previous run as interrupted"
        );
    }
    let purge = {
        let state = state.clone();
        tokio::spawn(async move {
            let ttl = state.settings.limits.session_idle_ttl_ms;
            loop {
                let cutoff = state::now_ms().saturating_sub(ttl);
                match state.store.purge_idle(cutoff).await {
                    Ok(n) if n > 0 => tracing::info!(records = n, "purged idle records"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "purge failed"),
                }
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
        })
    };
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, upstream = %state.settings.upstream, "citeflow serving");
    }
    let app = router(state.clone());
    // The signal stops the accept loop and starts the grace period of the open streams.
    let (signalled_tx, signalled_rx) = tokio::sync::watch::channel(false);
    let stop_accepting = async move {
        shutdown.await;
        let _ = signalled_tx.send(true);
    };
    let signalled = {
        let mut rx = signalled_rx.clone();
        async move {
            if rx.wait_for(|s| *s).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    let limits = state.settings.limits.clone();
    ops::shutdown::drive(
        &state,
        intake::conn::serve(listener, app, &limits, stop_accepting),
        signalled,
    )
    .await;
    purge.abort();
    Ok(())
}
