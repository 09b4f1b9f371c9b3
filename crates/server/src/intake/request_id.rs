//! A request id for every request: the caller's `x-request-id` (1 to 128 visible ASCII
//! characters) or a new `req_…`; a tracing span carries it, so every log line of the request
//! names it; the response carries it in `x-request-id`, and an error body in
//! `error.request_id`. (A stream's generation runs on after its request and logs its
//! `stream_id` instead.) The request's start (`debug`) and end (its status and latency: `error`
//! for a 5xx, else `debug`) are logged in that span.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
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
    let started = Instant::now();
    let mut resp = async {
        tracing::debug!("started processing request");
        next.run(req).await
    }
    .instrument(span.clone())
    .await;
    log_response(&span, resp.status(), started.elapsed());
    if resp.status().as_u16() >= 400 && is_json(&resp) {
        resp = with_id_in_error(resp, &id).await;
    }
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(HEADER, v);
    }
    resp
}

/// The request's end in its span: at `error` for a server error (5xx), else at `debug`. Its
/// streamed body is not wrapped (a layer around the body would read the clock at each frame):
/// a stream's own end and failures are logged by its generation, under its `stream_id`.
fn log_response(span: &tracing::Span, status: StatusCode, latency: Duration) {
    let latency_ms = latency.as_secs_f64() * 1e3;
    span.in_scope(|| {
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), latency_ms, "response failed");
        } else {
            tracing::debug!(
                status = status.as_u16(),
                latency_ms,
                "finished processing request"
            );
        }
    });
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, PoisonError};

    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;

    /// The log's lines, written where the test reads them.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut v = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            v.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl tracing_subscriber::fmt::MakeWriter<'_> for Lines {
        type Writer = Lines;
        fn make_writer(&self) -> Lines {
            self.clone()
        }
    }

    /// What a request answered with `status` logs at `level`.
    async fn logged(status: StatusCode, level: tracing::Level) -> String {
        let lines = Lines::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(lines.clone())
            .with_max_level(level)
            .with_ansi(false)
            .finish();
        let _on = tracing::subscriber::set_default(subscriber);
        let app = Router::new()
            .route("/x", get(move || async move { status }))
            .layer(axum::middleware::from_fn(request_id));
        let req = Request::get("/x")
            .header(HEADER, "req_t1")
            .body(Body::empty())
            .expect("request");
        let resp = app.oneshot(req).await.expect("response");
        assert_eq!(resp.status(), status);
        assert_eq!(resp.headers()[HEADER], "req_t1");
        let out = lines
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        String::from_utf8(out).expect("utf-8")
    }

    #[tokio::test]
    async fn a_request_is_logged_in_its_span_a_server_error_at_error() {
        let out = logged(StatusCode::BAD_GATEWAY, tracing::Level::INFO).await;
        let line = out.lines().next().unwrap_or_default();
        for part in [
            "ERROR",
            "request_id=req_t1",
            "path=/x",
            "response failed",
            "status=502",
        ] {
            assert!(line.contains(part), "{part}: {out}");
        }
        assert_eq!(out.lines().count(), 1, "{out}");
        assert_eq!(logged(StatusCode::OK, tracing::Level::INFO).await, "");
        let out = logged(StatusCode::NOT_FOUND, tracing::Level::DEBUG).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].contains("DEBUG") && lines[0].contains("started processing request"));
        for part in [
            "DEBUG",
            "request_id=req_t1",
            "finished processing request",
            "status=404",
            "latency_ms=",
        ] {
            assert!(lines[1].contains(part), "{part}: {out}");
        }
    }
}
