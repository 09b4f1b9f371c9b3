//! Routes, auth, limits, sessions, non-streaming answers, the OpenAPI document.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use citeflow_core::{GrammarMode, PromptMarker};
use citeflow_replay::{Script, Step};
use citeflow_server::{router, AppState, PromptDefaults, ServerSettings, OPENAPI_JSON, ROUTES};
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
    let mut routes: Vec<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    documented.sort();
    routes.sort();
    assert_eq!(documented, routes);
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

#[tokio::test]
async fn every_route_is_served() {
    for (method, path) in ROUTES {
        let path = path.replace("{id}", "missing");
        let req = Request::builder()
            .method(method.to_uppercase().as_str())
            .uri(&path)
            .header("content-type", "application/json")
            .body(Body::from("{}"))
            .expect("request");
        let (status, body) = oneshot(state(), req).await;
        assert_ne!(body["error"]["code"], "unknown_route", "{method} {path}");
        assert_ne!(status, 405, "{method} {path}");
    }
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
