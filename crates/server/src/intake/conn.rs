//! Serving HTTP/1 connections with bounds: a read time-out for request headers (hyper's
//! `header_read_timeout`), one for request bodies (a deadline on the body stream, 408
//! `request_timeout`), and at most `max_connections` connections at once (a semaphore
//! taken before each accept), so slow or idle clients cannot hold sockets for ever.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use futures_util::StreamExt;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::budget::READ_AHEAD;
use crate::error::ApiError;
use crate::settings::Limits;
use crate::state::AppState;

/// The error a request body yields when it was not read in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body was not received within {timeout_ms} ms")]
pub(crate) struct BodyTimeout {
    pub(crate) timeout_ms: u64,
}

/// The middleware: the request body ends with a [`BodyTimeout`] error when it is not read
/// within `body_read_timeout_ms`.
pub(crate) async fn body_deadline(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let timeout_ms = state.settings.limits.body_read_timeout_ms;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
    let (parts, body) = req.into_parts();
    let data = body.into_data_stream();
    let timed = futures_util::stream::unfold(Some(data), move |data| async move {
        let mut data = data?;
        match tokio::time::timeout_at(deadline, data.next()).await {
            Ok(Some(Ok(bytes))) => Some((Ok(bytes), Some(data))),
            Ok(Some(Err(e))) => Some((Err(axum::BoxError::from(e)), None)),
            Ok(None) => None,
            Err(_) => Some((Err(BodyTimeout { timeout_ms }.into()), None)),
        }
    });
    next.run(Request::from_parts(parts, Body::from_stream(timed)))
        .await
}

/// What a body read error means: [`ApiError::RequestTimeout`] when the body was too slow,
/// else `otherwise` (such as `body_too_large` for the length limit).
pub(crate) fn body_error(e: axum::Error, otherwise: ApiError) -> ApiError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(c) = cause {
        if let Some(t) = c.downcast_ref::<BodyTimeout>() {
            return ApiError::RequestTimeout {
                timeout_ms: t.timeout_ms,
            };
        }
        cause = c.source();
    }
    otherwise
}

/// Serves `app` on `listener` until `shutdown` resolves, under the connection limits of
/// `limits`; then stops accepting and waits for the open connections to finish.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: &Limits,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(limits.header_read_timeout_ms))
        // A body's chunks are at most this large, so one read ahead of the body budget
        // covers the next (hyper's default is 408 KiB); request heads fit well within it.
        .max_buf_size(READ_AHEAD);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, do not spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(app.clone());
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
