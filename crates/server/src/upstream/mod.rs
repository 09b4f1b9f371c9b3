//! The upstream call every answering route makes ([`send`]: the timeout, the metrics, a non-2xx
//! answer as a typed error) and the key sent with it ([`upstream_key`]).

pub(crate) mod events;

use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use serde_json::Value;

use crate::error::ApiError;
use crate::state::AppState;

/// Sends `body` to `url` with these headers and waits for the response headers; a non-2xx
/// answer is an [`ApiError::UpstreamStatus`].
pub(crate) async fn send(
    state: &AppState,
    req: reqwest::RequestBuilder,
) -> Result<reqwest::Response, ApiError> {
    let timeout_ms = state.settings.limits.upstream_response_timeout_ms;
    let started = Instant::now();
    let (client, req) = req.build_split();
    let up = req.as_ref().map_or(crate::metrics::OPENAI, |r| {
        state.metrics.upstream_of(r.url().as_str())
    });
    let resp = tokio::time::timeout(Duration::from_millis(timeout_ms), async move {
        client.execute(req?).await
    })
    .await;
    state
        .metrics
        .observe_upstream_latency(up, started.elapsed());
    let fail = |e: ApiError| {
        state.metrics.upstream_errors.inc(up);
        e
    };
    let resp = match resp {
        Err(_) => return Err(fail(ApiError::UpstreamTimeout { timeout_ms })),
        Ok(Err(e)) if e.is_timeout() => return Err(fail(ApiError::UpstreamTimeout { timeout_ms })),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "upstream request failed");
            return Err(fail(ApiError::UpstreamUnreachable));
        }
        Ok(Ok(r)) => r,
    };
    if !resp.status().is_success() {
        let status = resp.status().as_u16();
        let text = tokio::time::timeout(Duration::from_millis(timeout_ms), resp.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| text.chars().take(200).collect());
        return Err(fail(ApiError::UpstreamStatus { status, message }));
    }
    Ok(resp)
}

/// The caller's key, to forward upstream with `--forward-client-key`: the bearer token, or
/// `x-api-key`.
pub(crate) fn client_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(|k| k.trim().to_owned())
}

/// The key to send upstream: the caller's with `--forward-client-key`, else the server's.
pub(crate) fn upstream_key(state: &AppState, headers: &HeaderMap) -> Option<String> {
    if state.settings.forward_client_key {
        client_key(headers)
    } else {
        state.settings.upstream_api_key.clone()
    }
}
