//! The chat page: `GET /` and its assets under `/assets/`, and the WebAssembly build of
//! `citeflow-wasm` under `/wasm/` for the page's client-side rendering mode, all compiled into
//! the binary (no CDN, no file read at run time: an installed or copied `citeflow` works
//! offline).
//!
//! The page is plain JavaScript with no build step. In the default mode it only displays what
//! the server sends: the rewritten text and the citation events of each chunk. In the
//! client-side mode it asks with `citeflow.render = "client"` (raw markers pass through) and
//! feeds the text to the WASM core. The WASM files are the `wasm-bindgen --target web` output
//! vendored in `crates/server/assets/wasm/`; `scripts/test-install.sh` rebuilds them from the
//! source and fails when they differ (`CITEFLOW_BLESS=1` refreshes them).

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("../../web/index.html");
const APP_JS: &str = include_str!("../../web/app.js");
const APP_CSS: &str = include_str!("../../web/app.css");
const ICON_SVG: &str = include_str!("../../web/icon.svg");

/// Scripts only from this origin (plus compiling WebAssembly), no inline script, requests
/// only to this origin.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
                   img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
                   frame-ancestors 'none'; form-action 'self'";

/// The files of the WASM web build that the page loads: (name, content type, bytes).
const WASM_FILES: &[(&str, &str, &[u8])] = &[
    (
        "citeflow_wasm.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/wasm/citeflow_wasm.js"),
    ),
    (
        "citeflow_wasm_bg.wasm",
        "application/wasm",
        include_bytes!("../../assets/wasm/citeflow_wasm_bg.wasm"),
    ),
];

fn page(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)),
            (
                HeaderName::from_static("x-content-type-options"),
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
        .into_response()
}

pub(crate) async fn index() -> Response {
    page("text/html; charset=utf-8", INDEX_HTML)
}

pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "app.js" => page("text/javascript; charset=utf-8", APP_JS),
        "app.css" => page("text/css; charset=utf-8", APP_CSS),
        "icon.svg" => page("image/svg+xml", ICON_SVG),
        _ => not_found(),
    }
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(CONTENT_TYPE, "text/plain; charset=utf-8")],
        "not found\n",
    )
        .into_response()
}

pub(crate) async fn wasm(Path(file): Path<String>) -> Response {
    let Some(&(_, content_type, bytes)) = WASM_FILES.iter().find(|(n, _, _)| *n == file) else {
        return not_found();
    };
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                HeaderName::from_static("x-content-type-options"),
                HeaderValue::from_static("nosniff"),
            ),
        ],
        bytes,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;
    use crate::{AppState, ServerSettings};

    async fn get(path: &str) -> Response {
        let state = AppState::new(
            ServerSettings::new("http://127.0.0.1:9/v1"),
            Arc::new(citeflow_store::MemoryStore::new()),
        );
        crate::router(state)
            .oneshot(Request::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("response")
    }

    #[tokio::test]
    async fn the_page_and_its_assets_are_served_with_a_strict_policy() {
        let r = get("/").await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(r.headers()[CONTENT_SECURITY_POLICY], CSP);
        let r = get("/assets/app.js").await;
        assert_eq!(r.headers()[CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert_eq!(
            get("/assets/missing.js").await.status(),
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn the_embedded_wasm_build_is_served() {
        let r = get("/wasm/citeflow_wasm_bg.wasm").await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], "application/wasm");
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .expect("body");
        // A WebAssembly module: magic number and version 1.
        assert_eq!(&body[..8], b"\0asm\x01\0\0\0");
        let r = get("/wasm/citeflow_wasm.js").await;
        assert_eq!(r.headers()[CONTENT_TYPE], "text/javascript; charset=utf-8");
        let js = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .expect("body");
        // The glue loads the module next to itself.
        assert!(String::from_utf8_lossy(&js).contains("citeflow_wasm_bg.wasm"));
    }

    #[tokio::test]
    async fn only_the_two_files_of_the_wasm_build_are_read() {
        for path in [
            "/wasm/citeflow_wasm.d.ts",
            "/wasm/..%2F..%2FCargo.toml",
            "/wasm/package.json",
        ] {
            assert_eq!(get(path).await.status(), StatusCode::NOT_FOUND, "{path}");
        }
    }

    #[test]
    fn the_page_links_only_embedded_assets() {
        for asset in ["/assets/app.js", "/assets/app.css", "/assets/icon.svg"] {
            assert!(INDEX_HTML.contains(asset), "{asset}");
        }
        assert!(!INDEX_HTML.contains("http://") && !INDEX_HTML.contains("https://"));
        assert!(!APP_JS.contains("import(\"http") && !APP_CSS.contains("@import"));
    }
}
