//! The upstream API's other resources (`/v1/models`, `/v1/embeddings`, `/v1/files`, … each of
//! [`FORWARDED`](crate::routes::FORWARDED), and any path under them): forwarded to the upstream
//! as they are, with this server's auth and body limit, the upstream's status, headers of
//! content and body (streamed) passed back unchanged. Any other `/v1` path never gets here: the
//! router answers it 404 `unknown_route`.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use crate::error::ApiError;
use crate::state::AppState;
use crate::tenancy::Owner;
use crate::upstream::upstream_key;

/// Request headers passed on (besides the key, which is this server's unless
/// `--forward-client-key`).
const REQUEST_HEADERS: &[&str] = &[
    "content-type",
    "accept",
    "openai-beta",
    "openai-organization",
    "openai-project",
    "anthropic-version",
    "anthropic-beta",
];

/// Response headers passed back.
const RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "content-disposition",
    "openai-processing-ms",
    "x-request-id",
    "request-id",
];

/// `GET`, `POST` and `DELETE` of `/v1/{resource}` and `/v1/{resource}/{*rest}`, for each
/// resource of [`FORWARDED`](crate::routes::FORWARDED).
pub(crate) async fn forward(State(state): State<AppState>, _: Owner, req: Request) -> Response {
    match run(state, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn run(state: AppState, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    let limits = &state.settings.limits;
    // The body's share of the budget is held until the upstream has answered (it has then
    // taken the body).
    let (body, _share) = state
        .body_budget
        .read(body, limits.max_body_bytes, crate::intake::conn::body_error)
        .await?
        .into_bytes();
    let path = parts
        .uri
        .path()
        .strip_prefix("/v1")
        .unwrap_or(parts.uri.path());
    let mut url = format!("{}{path}", state.settings.upstream);
    if let Some(q) = parts.uri.query() {
        url.push('?');
        url.push_str(q);
    }
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes())
        .map_err(|_| ApiError::invalid("unsupported method", None))?;
    let mut up = state.http.request(method, &url);
    for name in REQUEST_HEADERS {
        if let Some(v) = parts.headers.get(*name).and_then(|v| v.to_str().ok()) {
            up = up.header(*name, v);
        }
    }
    if let Some(k) = upstream_key(&state, &parts.headers) {
        up = up.bearer_auth(k);
    }
    if !body.is_empty() {
        up = up.body(body);
    }
    let timeout_ms = limits.upstream_response_timeout_ms;
    let resp = match tokio::time::timeout(Duration::from_millis(timeout_ms), up.send()).await {
        Err(_) => return Err(ApiError::UpstreamTimeout { timeout_ms }),
        Ok(Err(e)) if e.is_timeout() => return Err(ApiError::UpstreamTimeout { timeout_ms }),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "upstream request failed");
            return Err(ApiError::UpstreamUnreachable);
        }
        Ok(Ok(r)) => r,
    };
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut out = Response::builder().status(status);
    for name in RESPONSE_HEADERS {
        if let Some(v) = resp.headers().get(*name) {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                axum::http::HeaderValue::from_bytes(v.as_bytes()),
            ) {
                out = out.header(n, v);
            }
        }
    }
    // The body streams through, each piece under the idle time-out.
    let idle = Duration::from_millis(limits.upstream_idle_timeout_ms);
    let stream = futures_util::stream::unfold(resp.bytes_stream(), move |mut s| async move {
        match tokio::time::timeout(idle, s.next()).await {
            Ok(Some(Ok(b))) => Some((Ok::<_, std::io::Error>(b), s)),
            Ok(Some(Err(e))) => Some((Err(std::io::Error::other(e.to_string())), s)),
            Ok(None) => None,
            Err(_) => Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the upstream went silent",
                )),
                s,
            )),
        }
    });
    out.body(Body::from_stream(stream))
        .map_err(|e| ApiError::Internal(e.to_string()))
}
