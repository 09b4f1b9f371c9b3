//! Browser safety: a request that carries an `Origin` must come from an allowed origin (the
//! server's own page, or one named by [`ServerSettings::with_allowed_origins`]); a request
//! with a body must say it is JSON (or an EPUB, for `POST /v1/books`). A web page on another
//! origin can then neither drive the API with a form or a `no-cors` fetch (whose content
//! types are `text/plain`, form encodings or none) nor read its answers.
//!
//! [`ServerSettings::with_allowed_origins`]: crate::ServerSettings::with_allowed_origins

use axum::body::HttpBody;
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, TRANSFER_ENCODING};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;

/// The content type an upload of a book must carry.
pub(crate) const EPUB_TYPE: &str = "application/epub+zip";
/// The content type every other body must carry.
pub(crate) const JSON_TYPE: &str = "application/json";

/// The middleware: 403 `forbidden_origin`, 415 `unsupported_media_type`, else the route.
pub(crate) async fn browser_guard(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let body = !req.body().is_end_stream();
    if let Err(e) = check(&state, req.method(), req.uri().path(), req.headers(), body) {
        return e.into_response();
    }
    next.run(req).await
}

fn check(
    state: &AppState,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: bool,
) -> Result<(), ApiError> {
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("?");
        if !origin_allowed(&state.settings.allowed_origins, headers, origin) {
            return Err(ApiError::ForbiddenOrigin {
                origin: origin.chars().take(200).collect(),
            });
        }
    }
    if has_body(method, headers, body) {
        let expected = if path == "/v1/books" {
            EPUB_TYPE
        } else {
            JSON_TYPE
        };
        let given = headers
            .get(CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or("?"))
            .unwrap_or("");
        if media_type(given) != expected {
            return Err(ApiError::UnsupportedMediaType {
                given: given.chars().take(200).collect(),
                expected,
            });
        }
    }
    Ok(())
}

/// Whether a request carries a body: a method that may have one, and a non-zero
/// `Content-Length`, a `Transfer-Encoding`, or a body that is not at its end (`body`; HTTP/2).
fn has_body(method: &Method, headers: &HeaderMap, body: bool) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    let length = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok());
    if length.is_some_and(|v| v.trim() == "0") {
        return false;
    }
    body || length.is_some() || headers.contains_key(TRANSFER_ENCODING)
}

/// `type/subtype` of a content type, lowercased, without parameters.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// An origin is allowed when it is the server's own (`http://` or `https://` and the `Host`
/// the request was sent to) or one of `allowed` (compared without case or a trailing `/`).
fn origin_allowed(allowed: &[String], headers: &HeaderMap, origin: &str) -> bool {
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
    if let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()) {
        let host = host.to_ascii_lowercase();
        if origin == format!("http://{host}") || origin == format!("https://{host}") {
            return true;
        }
    }
    allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(&origin))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_own_origin_and_listed_ones_are_allowed() {
        let h = headers(&[("host", "127.0.0.1:8080")]);
        let listed = vec!["https://app.example".to_owned()];
        assert!(origin_allowed(&[], &h, "http://127.0.0.1:8080"));
        assert!(origin_allowed(&[], &h, "HTTP://127.0.0.1:8080/"));
        assert!(!origin_allowed(&[], &h, "http://127.0.0.1:8081"));
        assert!(!origin_allowed(&[], &h, "null"));
        assert!(!origin_allowed(&[], &h, "http://evil.example"));
        assert!(origin_allowed(&listed, &h, "https://app.example"));
        assert!(!origin_allowed(&listed, &h, "http://app.example"));
        assert!(!origin_allowed(
            &listed,
            &headers(&[]),
            "http://127.0.0.1:8080"
        ));
    }

    #[test]
    fn bodies_need_their_media_type() {
        assert_eq!(
            media_type("Application/JSON; charset=utf-8"),
            "application/json"
        );
        assert_eq!(media_type(""), "");
        let sized = headers(&[("content-length", "2")]);
        assert!(has_body(&Method::POST, &sized, false));
        let chunked = headers(&[("transfer-encoding", "chunked")]);
        assert!(has_body(&Method::DELETE, &chunked, false));
        assert!(!has_body(
            &Method::POST,
            &headers(&[("content-length", "0")]),
            true
        ));
        assert!(!has_body(&Method::POST, &headers(&[]), false));
        assert!(has_body(&Method::POST, &headers(&[]), true));
        assert!(!has_body(&Method::GET, &sized, true));
    }
}
