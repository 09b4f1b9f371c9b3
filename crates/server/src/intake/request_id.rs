//! A request id for every request: the caller's `x-request-id` (1 to 128 visible ASCII
//! characters) or a new `req_…`; a tracing span carries it, so every log line of the request
//! names it; the response carries it in `x-request-id`, and an error body in
//! `error.request_id`. (A stream's generation runs on after its request and logs its
//! `stream_id` instead.)

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::state::random_id;

/// The header read and written.
const HEADER: &str = "x-request-id";

/// Largest error body the id is written into.
const MAX_ERROR_BODY: usize = 64 << 10;

fn valid(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

/// The middleware.
pub(crate) async fn request_id(req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid(v))
        .map_or_else(|| random_id("req_"), str::to_owned);
    // At ERROR level so that it is on whenever any line is logged (a `warn` filter would
    // turn an `info` span off, and the lines would lose their id).
    let span = tracing::error_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        path = %req.uri().path()
    );
    let mut resp = next.run(req).instrument(span).await;
    if resp.status().as_u16() >= 400 && is_json(&resp) {
        resp = with_id_in_error(resp, &id).await;
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(HEADER, v);
    }
    resp
}

fn is_json(resp: &Response) -> bool {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// The error envelope with `error.request_id` added (other bodies unchanged).
async fn with_id_in_error(resp: Response, id: &str) -> Response {
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ERROR_BODY).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let body = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut v) if v.get("error").is_some_and(serde_json::Value::is_object) => {
            v["error"]["request_id"] = serde_json::Value::String(id.to_owned());
            parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            Body::from(v.to_string())
        }
        _ => Body::from(bytes),
    };
    Response::from_parts(parts, body)
}
