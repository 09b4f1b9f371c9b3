//! Routes, auth, limits, sessions, non-streaming answers, the OpenAPI document.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use citeflow_core::{GrammarMode, PromptMarker};
use citeflow_replay::{Script, Step};
use citeflow_server::{
    router, AppState, PromptDefaults, ServerSettings, FORWARDED, OPENAPI_JSON, ROUTES,
};
use citeflow_store::MemoryStore;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::support::{citeflow_events, limits, read_sse, text_of, Harness};

async fn oneshot(state: AppState, req: Request<Body>) -> (u16, Value) {
    let resp = router(state).oneshot(req).await.expect("response");
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn state() -> AppState {
    AppState::new(
        ServerSettings::new("http://127.0.0.1:9/v1").with_limits(limits(|l| {
            l.max_body_bytes = 2_000;
            l.max_sources = 3;
            l.max_source_text_bytes = 50;
            l.max_source_field_bytes = 40;
        })),
        Arc::new(MemoryStore::new()),
    )
}

fn post(path: &str, body: &str) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .expect("request")
}

#[tokio::test]
async fn every_limit_has_its_own_error() {
    let (s, body) = oneshot(state(), post("/v1/sessions", &"x".repeat(3_000))).await;
    assert_eq!(s, 413);
    insta::assert_json_snapshot!("body_too_large", crate::support::without_request_id(body));
    let four: Vec<Value> = (0..4).map(|i| json!({"id": format!("s{i}")})).collect();
    let (s, body) = oneshot(
        state(),
        post("/v1/sessions", &json!({"sources": four}).to_string()),
    )
    .await;
    assert_eq!(s, 400);
    insta::assert_json_snapshot!("too_many_sources", crate::support::without_request_id(body));
    let big = json!({"sources": [{"id": "s1", "text": "y".repeat(60)}]});
    let (s, body) = oneshot(state(), post("/v1/sessions", &big.to_string())).await;
    assert_eq!(s, 400);
    insta::assert_json_snapshot!("source_too_large", crate::support::without_request_id(body));
    // Every field besides the text has its own bound, named with the source's place.
    for (source, param) in [
        (json!({"id": "i".repeat(41)}), "sources[1].id"),
        (
            json!({"id": "s", "title": "t".repeat(41)}),
            "sources[1].title",
        ),
        (
            json!({"id": "s", "url": format!("https://e.org/{}", "u".repeat(30))}),
            "sources[1].url",
        ),
        (
            json!({"id": "s", "locator": {"cfi": "c".repeat(41)}}),
            "sources[1].locator.cfi",
        ),
        (
            json!({"id": "s", "metadata": {"a": "v".repeat(20), "b": "w".repeat(19)}}),
            "sources[1].metadata",
        ),
    ] {
        let body = json!({"sources": [{"id": "ok"}, source]});
        let (s, body) = oneshot(state(), post("/v1/sessions", &body.to_string())).await;
        assert_eq!(s, 400, "{body}");
        assert_eq!(body["error"]["code"], "source_field_too_large", "{body}");
        assert_eq!(body["error"]["param"], param, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .ends_with("at most 40 are allowed"),
            "{body}"
        );
    }
    let fits = json!({"sources": [{"id": "s", "title": "t".repeat(40), "metadata": {"a": "v".repeat(20), "b": "w".repeat(18)}}]});
    let (s, body) = oneshot(state(), post("/v1/sessions", &fits.to_string())).await;
    assert_eq!(s, 201, "{body}");
    let chat = json!({"model": "m", "messages": [], "sources": four});
    let (s, body) = oneshot(state(), post("/v1/chat/completions", &chat.to_string())).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (400, Some("too_many_sources"))
    );
    let (s, body) = oneshot(state(), post("/v1/chat/completions", "{not json")).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (400, Some("invalid_request"))
    );
    let bad = json!({"model": "m", "messages": [], "citeflow": {"style": "nope"}});
    let (s, body) = oneshot(state(), post("/v1/chat/completions", &bad.to_string())).await;
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (400, Some("invalid_setting"))
    );
    let bad = json!({"model": "m", "messages": [], "citeflow": {"colour": 1}});
    let (s, body) = oneshot(state(), post("/v1/chat/completions", &bad.to_string())).await;
    assert_eq!(
        (s, body["error"]["param"].as_str()),
        (400, Some("citeflow"))
    );
    let (s, body) = oneshot(
        state(),
        Request::get("/nope").body(Body::empty()).expect("req"),
    )
    .await;
    assert_eq!(s, 404);
    insta::assert_json_snapshot!("unknown_route", crate::support::without_request_id(body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_longer_than_the_limit_ends_with_an_error_event() {
    let h = Harness::with(
        |s| s.with_limits(limits(|l| l.max_stream_duration_ms = 150)),
        Arc::new(MemoryStore::new()),
    )
    .await;
    h.replay.insert(
        "slow",
        Script::chat(&["a", "b", "c", "d", "e", "f"]).paced(60),
    );
    let resp = h
        .post("/v1/chat/completions")
        .json(&json!({"model": "slow", "stream": true, "messages": []}))
        .send()
        .await
        .expect("send");
    let events = read_sse(resp, usize::MAX).await;
    let last: Value = serde_json::from_str(&events.last().expect("event").data).expect("json");
    assert_eq!(last["error"]["code"], "stream_too_long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_tenants_get_404_and_strangers_401() {
    let h = Harness::with(
        |s| s.with_api_keys(vec!["key-a".into(), "key-b".into()]),
        Arc::new(MemoryStore::new()),
    )
    .await;
    let none = h
        .post("/v1/sessions")
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    assert_eq!(none.status(), 401);
    let body: Value = none.json().await.expect("json");
    insta::assert_json_snapshot!("unauthorized", crate::support::without_request_id(body));
    let wrong = h
        .post("/v1/sessions")
        .bearer_auth("key-c")
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    assert_eq!(wrong.status(), 401);
    let s: Value = h
        .post("/v1/sessions")
        .bearer_auth("key-a")
        .json(&json!({"sources": [{"id": "source_1"}]}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let sid = s["id"].as_str().expect("id");
    assert!(
        sid.len() >= 32,
        "{sid} is not long enough to be unguessable"
    );
    let path = format!("/v1/sessions/{sid}");
    assert_eq!(
        h.get(&path)
            .bearer_auth("key-a")
            .send()
            .await
            .expect("send")
            .status(),
        200
    );
    let other = h
        .get(&path)
        .bearer_auth("key-b")
        .send()
        .await
        .expect("send");
    assert_eq!(other.status(), 404);
    let body: Value = other.json().await.expect("json");
    assert_eq!(body["error"]["code"], "not_found");
    let del = h
        .client
        .delete(format!("{}{path}", h.base))
        .bearer_auth("key-b")
        .send()
        .await
        .expect("send");
    assert_eq!(del.status(), 404);
    let round = h
        .post(&format!("{path}/rounds"))
        .bearer_auth("key-b")
        .json(&json!({"sources": []}))
        .send()
        .await
        .expect("send");
    assert_eq!(round.status(), 404);
    let chat = json!({"model": "m", "stream": true, "messages": [], "citeflow": {"session": sid}});
    let r = h
        .post("/v1/chat/completions")
        .bearer_auth("key-b")
        .json(&chat)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 404);
    // A stream of key-a is invisible to key-b.
    h.replay.insert("m", Script::chat(&["hello [[source_1]]"]));
    let r = h
        .post("/v1/chat/completions")
        .bearer_auth("key-a")
        .json(&chat)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let stream_id = r.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert_eq!(text_of(&read_sse(r, usize::MAX).await), "hello [1]");
    let spath = format!("/v1/streams/{stream_id}");
    assert_eq!(
        h.get(&spath)
            .bearer_auth("key-b")
            .send()
            .await
            .expect("send")
            .status(),
        404
    );
    assert_eq!(
        h.get(&spath)
            .bearer_auth("key-a")
            .send()
            .await
            .expect("send")
            .status(),
        200
    );
    let del = h
        .client
        .delete(format!("{}{path}", h.base))
        .bearer_auth("key-a")
        .send()
        .await
        .expect("send");
    assert_eq!(del.status(), 204);
    assert_eq!(
        h.get(&path)
            .bearer_auth("key-a")
            .send()
            .await
            .expect("send")
            .status(),
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_show_rounds_and_the_prompt_names_every_source() {
    let h = Harness::start().await;
    let s: Value = h
        .post("/v1/sessions")
        .json(&json!({"query": "paris", "sources": [
            {"id": "source_3", "title": "Paris", "text": "Paris is the capital of France."},
            {"id": "b1", "title": "Alice", "locator": {"chapter_title": "Down the Rabbit-Hole", "cfi": "epubcfi(/6/8!/4/2/1:0)"}}
        ]}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let sid = s["id"].as_str().expect("id").to_owned();
    let mut shown = s.clone();
    shown["id"] = json!("SESSION");
    shown["created_ms"] = json!(0);
    insta::assert_json_snapshot!("session_view", shown);
    h.replay.insert("p", Script::chat(&["ok"]));
    let r = h
        .post("/v1/chat/completions")
        .json(&json!({"model": "p", "stream": true, "messages": [{"role": "user", "content": "q"}], "citeflow": {"session": sid}}))
        .send()
        .await
        .expect("send");
    read_sse(r, usize::MAX).await;
    let sent = h.replay.requests().pop().expect("request");
    let system = sent["messages"][0]["content"]
        .as_str()
        .expect("system prompt");
    assert!(
        system.contains("[[source_3]] Paris: Paris is the capital of France."),
        "{system}"
    );
    assert!(
        system
            .contains("[[b1]] (chapter: Down the Rabbit-Hole, CFI: epubcfi(/6/8!/4/2/1:0)) Alice"),
        "{system}"
    );
    assert!(sent.get("citeflow").is_none() && sent.get("sources").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_answers_are_rewritten_whole() {
    let h = Harness::start().await;
    let answer = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris [[source_7]] and [[source_99]]."}, "finish_reason": "stop"}]
    });
    h.replay.insert(
        "whole",
        Script::new(vec![Step::Bytes(answer.to_string().into_bytes())]),
    );
    let r: Value = h
        .post("/v1/chat/completions")
        .json(&json!({"model": "whole", "messages": [], "sources": [{"id": "source_7", "title": "Paris"}]}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    insta::assert_json_snapshot!("non_streaming", r);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_metrics_and_index_answer() {
    let h = Harness::start().await;
    h.replay
        .insert("m", Script::chat(&["a [[source_1]] b [[source_2]]"]));
    let r = h
        .post("/v1/chat/completions")
        .json(
            &json!({"model": "m", "stream": true, "messages": [], "sources": [{"id": "source_1"}]}),
        )
        .send()
        .await
        .expect("send");
    read_sse(r, usize::MAX).await;
    let health: Value = h
        .get("/healthz")
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(health["status"], "ok");
    let metrics = h
        .get("/metrics")
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("text");
    use crate::metrics::sum;
    for (name, want) in [
        ("citeflow_streams_started_total", 1.0),
        ("citeflow_citations_total", 1.0),
        ("citeflow_unresolved_total", 1.0),
        ("citeflow_upstream_latency_seconds_count", 1.0),
        ("citeflow_chunks_total", 3.0),
    ] {
        assert_eq!(sum(&metrics, name, &[]), want, "{name} in\n{metrics}");
    }
    assert!(sum(&metrics, "citeflow_added_latency_seconds_count", &[]) >= 1.0);
    assert_eq!(h.get("/").send().await.expect("send").status(), 200);
}

/// The source-list chunk carries the answer's time to first token and generation speed, and
/// `/metrics` counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_report_first_token_time_and_speed() {
    let h = Harness::start().await;
    h.replay.insert(
        "timed",
        Script::chat(&["The ", "cat [[source_1]]", " sat", "."]).paced(20),
    );
    let r = h
        .post("/v1/chat/completions")
        .json(&json!({"model": "timed", "stream": true, "messages": [],
            "sources": [{"id": "source_1"}]}))
        .send()
        .await
        .expect("send");
    let events = read_sse(r, usize::MAX).await;
    let stats: Vec<Value> = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .filter_map(|v| v.pointer("/citeflow/stats").cloned())
        .collect();
    assert_eq!(stats.len(), 1, "one stats object, with the source list");
    let s = &stats[0];
    assert_eq!(s["tokens"], 4, "{s}");
    assert_eq!(s["tokens_counted_by"], "chunks");
    let first = s["first_token_ms"].as_f64().expect("first_token_ms");
    assert!(first >= 0.0, "{s}");
    // Three more chunks at least 20 ms apart: no more than 3 / 0.04 s per second.
    let speed = s["tokens_per_second"].as_f64().expect("tokens_per_second");
    assert!(speed > 0.0 && speed <= 75.0, "{s}");
    let metrics = h
        .get("/metrics")
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("text");
    for (name, want) in [
        ("citeflow_first_token_seconds_count", 1.0),
        ("citeflow_generation_tokens_per_second_count", 1.0),
        ("citeflow_generated_tokens_total", 4.0),
    ] {
        let got = crate::metrics::sum(&metrics, name, &[]);
        assert_eq!(got, want, "{name} in\n{metrics}");
    }
}

#[test]
fn the_openapi_document_lists_exactly_the_routes() {
    let doc: Value = serde_json::from_str(OPENAPI_JSON).expect("valid json");
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in ["get", "post", "delete", "put", "patch"] {
            if item.get(method).is_some() {
                documented.push((method.to_owned(), path.clone()));
            }
        }
    }
    // The table the router is built from; OpenAPI writes `{*rest}` as `{rest}`.
    let mut routes: Vec<(String, String)> = ROUTES
        .iter()
        .filter(|r| r.is_documented())
        .map(|r| (r.method().to_owned(), r.path().replace("{*", "{")))
        .collect();
    documented.sort();
    routes.sort();
    assert_eq!(documented, routes);
    // The pass-through's resources are the router's.
    for path in ["/v1/{resource}", "/v1/{resource}/{rest}"] {
        let item = &doc["paths"][path];
        let resource = item["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .find(|p| p["name"] == "resource")
            .expect("resource");
        assert_eq!(resource["schema"]["enum"], json!(FORWARDED), "{path}");
    }
    let codes = doc
        .pointer("/components/schemas/Error/properties/error/properties/code/enum")
        .expect("codes");
    for code in [
        "too_many_sources",
        "upstream_cut",
        "stream_interrupted",
        "body_too_large",
        "book_not_found",
        "no_book_index",
        "invalid_epub",
    ] {
        assert!(
            codes.as_array().expect("array").contains(&json!(code)),
            "{code}"
        );
    }
    assert!(doc
        .pointer("/paths/~1/get/responses/200/content/text~1html")
        .is_some());
    let options = doc
        .pointer("/components/schemas/CiteflowOptions/properties")
        .expect("citeflow options");
    assert_eq!(options["render"]["enum"], json!(["server", "client"]));
    assert_eq!(options["book"]["type"], "string");
    assert_eq!(options["top_k"]["type"], "integer");
}

/// An upstream that answers every request 418 with what it was asked, and records it: a
/// route of the server's own that reaches it, or a pass-through that does not, fails the test.
struct Tripwire {
    url: String,
    calls: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Tripwire {
    async fn start() -> Tripwire {
        let calls: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let seen = Arc::clone(&calls);
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let seen = Arc::clone(&seen);
            async move {
                let call = format!("{} {}", req.method(), req.uri().path());
                seen.lock().expect("lock").push(call.clone());
                (
                    axum::http::StatusCode::IM_A_TEAPOT,
                    axum::Json(json!({"tripwire": call})),
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Tripwire {
            url: format!("http://{addr}/v1"),
            calls,
        }
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().expect("lock"))
    }
}

/// What an own route does with a request for a missing thing (with an empty JSON object as
/// its body, or the least the route reads).
struct Own {
    status: u16,
    code: Option<&'static str>,
    /// The one upstream request it makes (an answering route sends its own to the upstream of
    /// its API, and puts the upstream's error in its own envelope).
    upstream: Option<&'static str>,
}

/// The answer each route of the table gives: its own status and code.
fn own_answer(method: &str, path: &str) -> Own {
    let own = |status, code| Own {
        status,
        code,
        upstream: None,
    };
    match (method, path) {
        ("get", "/" | "/assets/{file}" | "/wasm/{file}") => own(200, None),
        ("get", "/healthz" | "/readyz" | "/metrics" | "/openapi.json" | "/v1/books") => {
            own(200, None)
        }
        ("post", "/v1/books") => own(415, Some("unsupported_media_type")),
        ("get", "/v1/books/{key}/read") | ("post", "/v1/books/{key}/search") => {
            own(404, Some("book_not_found"))
        }
        ("post", "/v1/chat/completions") => own(400, Some("invalid_request")),
        ("post", "/v1/responses") => Own {
            status: 418,
            code: Some("upstream_error"),
            upstream: Some("POST /v1/responses"),
        },
        ("post", "/v1/messages") => Own {
            status: 418,
            code: Some("upstream_error"),
            upstream: Some("POST /v1/messages"),
        },
        ("post", "/v1/sessions") => own(201, None),
        ("get", "/v1/sessions/{id}")
        | ("delete", "/v1/sessions/{id}")
        | ("post", "/v1/sessions/{id}/rounds")
        | ("get", "/v1/streams/{id}" | "/v1/responses/{id}" | "/v1/messages/{id}") => {
            own(404, Some("not_found"))
        }
        _ => panic!("no expected answer for {method} {path}: add the new route here"),
    }
}

/// Every row of the router's table is served by its own handler: each own route gives its own
/// answer and reaches the upstream only as it means to (an answering route, with its error
/// envelope around the upstream's), each pass-through path reaches the upstream with its path
/// and method and passes its answer back as it is. A row the router did not serve would answer 404 `unknown_route`.
#[tokio::test]
async fn every_route_is_served() {
    let upstream = Tripwire::start().await;
    let state = AppState::new(
        ServerSettings::new(&upstream.url).with_anthropic_upstream(Some(upstream.url.clone())),
        Arc::new(MemoryStore::new()),
    );
    let mut forwarded = 0;
    for route in ROUTES {
        for path in route.served_paths() {
            let file = match route.path() {
                "/wasm/{file}" => "citeflow_wasm.js",
                _ => "app.js",
            };
            let uri = path
                .replace("{id}", "missing")
                .replace("{key}", "missing")
                .replace("{file}", file)
                .replace("{*rest}", "x/y")
                + if route.path() == "/v1/books/{key}/read" {
                    "?cfi=epubcfi(/6/2)"
                } else {
                    ""
                };
            let method = route.method().to_uppercase();
            let req = Request::builder()
                .method(method.as_str())
                .uri(&uri)
                .header("content-type", "application/json")
                .body(Body::from(match route.path() {
                    "/v1/books/{key}/search" => r#"{"query": "q"}"#,
                    _ => "{}",
                }))
                .expect("request");
            let (status, body) = oneshot(state.clone(), req).await;
            let calls = upstream.take();
            if route.is_forwarded() {
                forwarded += 1;
                assert_eq!(status, 418, "{method} {uri}: {body}");
                assert_eq!(
                    body["tripwire"],
                    format!("{method} {uri}"),
                    "{method} {uri}"
                );
                assert_eq!(calls, [format!("{method} {uri}")], "{method} {uri}");
            } else {
                let own = own_answer(route.method(), route.path());
                assert_eq!(
                    calls,
                    Vec::from_iter(own.upstream.map(str::to_owned)),
                    "{method} {uri}: the upstream requests"
                );
                assert_eq!(status, own.status, "{method} {uri}: {body}");
                if let Some(code) = own.code {
                    assert_eq!(body["error"]["code"], code, "{method} {uri}: {body}");
                }
                assert_ne!(body["error"]["code"], "unknown_route", "{method} {uri}");
                assert_ne!(status, 405, "{method} {uri}");
            }
        }
    }
    assert_eq!(forwarded, 6 * FORWARDED.len());
}

/// A `/v1` path that is neither the server's nor a forwarded resource answers a typed 404
/// naming it, and a known path asked with a method it does not serve a typed 405 with `Allow`;
/// neither reaches the upstream (before, `/v1/{*path}` took any method and any path and
/// answered 502 for what the upstream did not have).
#[tokio::test]
async fn unknown_v1_paths_and_methods_get_typed_errors_not_the_upstream() {
    let upstream = Tripwire::start().await;
    let state = AppState::new(
        ServerSettings::new(&upstream.url),
        Arc::new(MemoryStore::new()),
    );
    let ask = |method: &str, uri: &str| {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(Body::from("{}"))
            .expect("request");
        router(state.clone()).oneshot(req)
    };
    for (method, uri) in [
        ("GET", "/v1/nope"),
        ("POST", "/v1/nope/deeper"),
        ("DELETE", "/v1/modelsx"),
        ("GET", "/v1"),
        ("GET", "/v1/"),
        ("GET", "/v1/chat/completions/x"),
        ("GET", "/v1/responses/x/input_items"),
        ("PUT", "/v1/nope"),
    ] {
        let resp = ask(method, uri).await.expect("response");
        assert_eq!(resp.status(), 404, "{method} {uri}");
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let body: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(
            body["error"]["code"], "unknown_route",
            "{method} {uri}: {body}"
        );
        assert_eq!(
            body["error"]["type"], "not_found_error",
            "{method} {uri}: {body}"
        );
        assert_eq!(
            body["error"]["message"],
            format!("no route for {method} {uri}"),
            "{body}"
        );
    }
    for (method, uri, allow) in [
        ("GET", "/v1/chat/completions", "POST"),
        ("DELETE", "/v1/responses/x", "GET,HEAD"),
        ("PUT", "/v1/sessions/x", "GET,HEAD,DELETE"),
        ("PUT", "/v1/models", "GET,HEAD,POST,DELETE"),
        ("PATCH", "/v1/files/file-1", "GET,HEAD,POST,DELETE"),
        ("POST", "/healthz", "GET,HEAD"),
    ] {
        let resp = ask(method, uri).await.expect("response");
        assert_eq!(resp.status(), 405, "{method} {uri}");
        let mut allowed: Vec<String> = resp.headers()["allow"]
            .to_str()
            .expect("ascii")
            .split(',')
            .map(|m| m.trim().to_owned())
            .collect();
        allowed.sort();
        let mut want: Vec<&str> = allow.split(',').collect();
        want.sort_unstable();
        assert_eq!(allowed, want, "{method} {uri}");
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let body: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
        assert_eq!(
            body["error"]["message"],
            format!("{method} is not allowed on {uri}"),
            "{body}"
        );
    }
    assert_eq!(upstream.take(), Vec::<String>::new());
}

/// `citeflow.grammar` sends a GBNF grammar for the markers upstream (llama.cpp's `grammar`);
/// a server's prompt defaults apply when a request names no marker or grammar.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grammar_for_the_markers_goes_upstream_when_asked() {
    let sources = json!([{"id": "source_1"}, {"id": "source_2"}]);
    let ask = |h: &Harness, citeflow: Value| {
        let body = json!({"model": "g", "stream": true,
            "messages": [{"role": "user", "content": "q"}],
            "sources": sources.clone(), "citeflow": citeflow});
        h.post("/v1/chat/completions").json(&body).send()
    };
    let h = Harness::start().await;
    h.replay.insert("g", Script::chat(&["ok [1]."]));
    let r = ask(
        &h,
        json!({"marker": "rank", "grammar": "cite_per_sentence"}),
    )
    .await
    .expect("send");
    read_sse(r, usize::MAX).await;
    let sent = h.replay.requests().pop().expect("request");
    let grammar = sent["grammar"].as_str().expect("grammar sent upstream");
    assert!(grammar.starts_with("root ::= "), "{grammar}");
    assert!(
        grammar.contains("\"[1]\"") && grammar.contains("\"[2]\""),
        "{grammar}"
    );
    assert!(sent.get("citeflow").is_none() && sent.get("sources").is_none());

    let r = ask(&h, json!({"grammar": "off"})).await.expect("send");
    read_sse(r, usize::MAX).await;
    assert!(h
        .replay
        .requests()
        .pop()
        .expect("request")
        .get("grammar")
        .is_none());

    let r = ask(&h, json!({"grammar": "loose"})).await.expect("send");
    assert_eq!(r.status(), 400);
    let err: Value = r.json().await.expect("json");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("loose"),
        "{err}"
    );

    // A server whose defaults are rank markers with a grammar (as for the local model).
    let h = Harness::with(
        |s| {
            s.with_prompt_defaults(PromptDefaults {
                marker: PromptMarker::Rank,
                grammar: Some(GrammarMode::WellFormed),
                few_shot: true,
                ..PromptDefaults::default()
            })
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    h.replay.insert("g", Script::chat(&["ok [2]."]));
    let r = ask(&h, json!({})).await.expect("send");
    let events = read_sse(r, usize::MAX).await;
    let sent = h.replay.requests().pop().expect("request");
    // Few-shot: a system message, worked examples (user, assistant), then the sources with the
    // question in place of the user's message.
    let messages = sent["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles.first(), Some(&"system"), "{roles:?}");
    assert_eq!(roles.last(), Some(&"user"), "{roles:?}");
    assert!(roles.contains(&"assistant"), "{roles:?}");
    let last = messages.last().expect("last")["content"]
        .as_str()
        .expect("text");
    assert!(last.contains("[2]") && last.contains('q'), "{last}");
    assert!(sent["grammar"]
        .as_str()
        .expect("grammar")
        .contains("\"[2]\""));
    // A request that offers tools gets no default grammar (its turn may be a tool call);
    // one that asks for a grammar gets it, and tool_choice none is no offer.
    let tools = json!([{"type": "function", "function": {"name": "search",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]);
    for (extra, citeflow, sent_grammar) in [
        (json!({"tools": tools.clone()}), json!({}), false),
        (
            json!({"tools": tools.clone()}),
            json!({"grammar": "well_formed"}),
            true,
        ),
        (
            json!({"tools": tools.clone(), "tool_choice": "none"}),
            json!({}),
            true,
        ),
        (json!({"tools": []}), json!({}), true),
    ] {
        h.replay.insert("g", Script::chat(&["ok [2]."]));
        let mut body = json!({"model": "g", "stream": true,
            "messages": [{"role": "user", "content": "q"}],
            "sources": sources.clone(), "citeflow": citeflow});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        let r = h
            .post("/v1/chat/completions")
            .json(&body)
            .send()
            .await
            .expect("send");
        read_sse(r, usize::MAX).await;
        let sent = h.replay.requests().pop().expect("request");
        assert_eq!(
            sent.get("grammar").is_some(),
            sent_grammar,
            "{extra} {sent}"
        );
        assert_eq!(
            sent.get("tools"),
            body.get("tools"),
            "tools go upstream as sent"
        );
    }
    let r = ask(&h, json!({"prompt": "sometimes"})).await.expect("send");
    assert_eq!(r.status(), 400);
    // The rank the model wrote resolved to the second source.
    let cited: Vec<Value> = citeflow_events(&events)
        .into_iter()
        .filter(|e| e["type"] == "citation")
        .collect();
    assert_eq!(cited.len(), 1, "{cited:?}");
    assert_eq!(cited[0]["source_id"], "source_2");
}
