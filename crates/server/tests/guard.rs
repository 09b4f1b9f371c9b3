//! Safe defaults (issue 15): no API key means loopback only unless allowed; browser requests
//! need the route's content type and an allowed `Origin`.

use std::sync::Arc;

use citeflow_server::{check_exposure, launch, LaunchError, ServerSettings};
use citeflow_store::MemoryStore;
use serde_json::{json, Value};

use crate::support::Harness;

async fn answer(r: reqwest::RequestBuilder) -> (u16, Value) {
    let r = r.send().await.expect("send");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn without_api_keys_only_loopback_is_served_unless_allowed() {
    let open = ServerSettings::new("http://127.0.0.1:9/v1");
    let public = "0.0.0.0:8080".parse().expect("addr");
    let lan = "192.168.1.20:8080".parse().expect("addr");
    for addr in [public, lan] {
        let e = check_exposure(&open, addr).expect_err("refused");
        assert!(matches!(e, LaunchError::NoAuthOnNetwork { .. }), "{e}");
        let message = e.to_string();
        assert!(message.contains(&addr.to_string()), "{message}");
        assert!(message.contains("--allow-no-auth"), "{message}");
        assert!(message.contains("--api-key"), "{message}");
    }
    for addr in ["127.0.0.1:8080", "[::1]:8080", "[::ffff:127.0.0.1]:80"] {
        check_exposure(&open, addr.parse().expect("addr")).expect(addr);
    }
    let keyed = open.clone().with_api_keys(vec!["k".into()]);
    check_exposure(&keyed, public).expect("keys");
    check_exposure(&open.clone().with_allow_no_auth(true), public).expect("allowed");

    // launch refuses the listener before it serves anything.
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0")
        .await
        .expect("bind");
    let e = launch(open, listener, std::future::pending())
        .await
        .expect_err("refused");
    assert!(matches!(e, LaunchError::NoAuthOnNetwork { .. }), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_requests_need_an_allowed_origin_and_their_content_type() {
    let h = Harness::with(
        |s| s.with_allowed_origins(vec!["https://app.example".into()]),
        Arc::new(MemoryStore::new()),
    )
    .await;
    let session = || h.post("/v1/sessions");
    let body = json!({"sources": [{"id": "a", "text": "x"}]}).to_string();

    // Another site's page: 403 forbidden_origin, whatever the content type.
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let (status, v) = answer(
            session()
                .header("origin", origin)
                .header("content-type", "application/json")
                .body(body.clone()),
        )
        .await;
        assert_eq!(status, 403, "{origin}: {v}");
        assert_eq!(v["error"]["code"], "forbidden_origin");
        assert_eq!(v["error"]["param"], "Origin");
        assert!(v["error"]["message"].as_str().expect("m").contains(origin));
    }
    let (status, v) = answer(h.get("/v1/books").header("origin", "http://evil.example")).await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (403, &json!("forbidden_origin"))
    );

    // The server's own page and an allowed origin.
    let own = h.base.clone();
    for origin in [own.as_str(), "https://app.example"] {
        let (status, v) = answer(
            session()
                .header("origin", origin)
                .header("content-type", "application/json")
                .body(body.clone()),
        )
        .await;
        assert_eq!(status, 201, "{origin}: {v}");
    }

    // A body a form or a no-cors fetch can send: 415, before anything else.
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
    ] {
        let mut r = session().body(body.clone());
        if let Some(t) = content_type {
            r = r.header("content-type", t);
        }
        let (status, v) = answer(r).await;
        assert_eq!(status, 415, "{content_type:?}: {v}");
        assert_eq!(v["error"]["code"], "unsupported_media_type");
        assert_eq!(v["error"]["param"], "Content-Type");
        assert!(v["error"]["message"]
            .as_str()
            .expect("m")
            .contains("application/json"));
    }
    let (status, _) = answer(
        session()
            .header("content-type", "Application/JSON; charset=utf-8")
            .body(body.clone()),
    )
    .await;
    assert_eq!(status, 201);
    // No body: nothing to check.
    let (status, _) = answer(session()).await;
    assert_eq!(status, 201);
    // An upload must say it is an EPUB.
    let (status, v) = answer(
        h.post("/v1/books")
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await;
    assert_eq!(status, 415, "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .expect("m")
        .contains("application/epub+zip"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_checks_the_store_and_optionally_the_upstream() {
    let h = crate::support::Harness::with(
        |s| s.with_readyz_upstream(true),
        std::sync::Arc::new(citeflow_store::MemoryStore::new()),
    )
    .await;
    let r = h.get("/readyz").send().await.expect("send");
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.expect("json");
    assert_eq!(
        v,
        serde_json::json!({"status": "ready", "store": "ok", "upstream": "ok"})
    );
    // An upstream that is not there: 503 naming it; the store alone still answers.
    let down = crate::support::Harness::with(
        |s| {
            citeflow_server::ServerSettings::new("http://127.0.0.1:9/v1")
                .with_readyz_upstream(true)
                .with_limits(s.limits().clone())
        },
        std::sync::Arc::new(citeflow_store::MemoryStore::new()),
    )
    .await;
    let r = down.get("/readyz").send().await.expect("send");
    assert_eq!(r.status(), 503);
    let v: serde_json::Value = r.json().await.expect("json");
    assert_eq!(
        (v["status"].as_str(), v["store"].as_str()),
        (Some("not_ready"), Some("ok")),
        "{v}"
    );
    assert!(
        v["upstream"]["error"]
            .as_str()
            .expect("error")
            .starts_with("GET http://127.0.0.1:9/v1/models"),
        "{v}"
    );
}
