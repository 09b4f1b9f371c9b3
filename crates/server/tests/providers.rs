//! The provider-shaped routes against a replaying upstream fed by the recorded provider
//! streams: `POST /v1/responses`, `POST /v1/messages`, the `/v1/*` pass-through and the AI
//! SDK UI message stream.

#[expect(
    dead_code,
    unused_imports,
    reason = "the shared harness has helpers these tests do not use"
)]
#[path = "support.rs"]
mod support;

use std::collections::BTreeSet;
use std::sync::Arc;

use citeflow_replay::{Replay, Script};
use citeflow_store::MemoryStore;
use serde_json::{json, Value};
use support::{read_sse, shared_dir, Harness, Received};

const RESPONSES: &str = "openai-web-search-tool.1.chunks.txt";
const MESSAGES: &str = "anthropic-web-search-tool.1.chunks.txt";

async fn harness(key: Option<&str>) -> (Harness, String) {
    let replay = Replay::new();
    replay
        .load_dir(&shared_dir().join("fixtures/streams"), 0)
        .expect("fixtures");
    let upstream = replay.spawn().await.expect("upstream");
    let anthropic = upstream.clone();
    let keys: Vec<String> = key.into_iter().map(str::to_owned).collect();
    let h = Harness::on_upstream(
        replay,
        &upstream,
        move |s| {
            s.with_anthropic_upstream(Some(anthropic))
                .with_api_keys(keys)
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    (h, upstream)
}

fn json_of(events: &[Received]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| serde_json::from_str(&e.data).ok())
        .collect()
}

fn chars(s: &str, start: u64, end: u64) -> String {
    s.chars()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect()
}

/// The text of a streamed Responses answer's deltas.
fn streamed_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().expect("delta"))
        .collect()
}

/// Checks a streamed Responses answer; returns (text, annotations).
fn check_responses(events: &[Value]) -> (String, Vec<Value>) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], json!(i), "{e}");
    }
    let text = streamed_text(events);
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .expect("output_text.done");
    assert_eq!(done["text"].as_str(), Some(text.as_str()));
    let annotations: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.annotation.added")
        .map(|e| e["annotation"].clone())
        .collect();
    assert!(!annotations.is_empty());
    let mut numbers = BTreeSet::new();
    for a in &annotations {
        assert_eq!(a["type"], "url_citation");
        let n = a["number"].as_u64().expect("number");
        let cited = chars(
            &text,
            a["start_index"].as_u64().expect("start"),
            a["end_index"].as_u64().expect("end"),
        );
        assert_eq!(cited, format!("[{n}]"), "{a}");
        numbers.insert(n);
    }
    // Dense numbers, and no link left that an annotation replaced.
    assert_eq!(
        numbers.iter().copied().collect::<Vec<_>>(),
        (1..=numbers.len() as u64).collect::<Vec<_>>()
    );
    assert!(!text.contains("utm_source=openai"), "{text}");
    let completed = events.last().expect("events");
    assert_eq!(completed["type"], "response.completed");
    let out = completed["response"]["output"]
        .as_array()
        .expect("output")
        .iter()
        .find(|o| o["type"] == "message")
        .expect("message");
    assert_eq!(out["content"][0]["text"].as_str(), Some(text.as_str()));
    assert_eq!(out["content"][0]["annotations"], json!(annotations));
    let done = completed["citeflow"]["events"]
        .as_array()
        .expect("events")
        .last()
        .expect("done")
        .clone();
    assert_eq!(done["type"], "done");
    assert_eq!(
        done["sources"].as_array().expect("sources").len(),
        numbers.len()
    );
    (text, annotations)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_stream_numbers_provider_annotations_in_standard_events() {
    let (h, _) = harness(None).await;
    let resp = h
        .post("/v1/responses")
        .json(&json!({"model": RESPONSES, "input": "tech news?", "stream": true}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let received = read_sse(resp, usize::MAX).await;
    for (i, r) in received.iter().enumerate() {
        assert_eq!(r.id, Some(i as u64 + 1));
    }
    let (text, annotations) = check_responses(&json_of(&received));
    // 12 provider annotations of 7 distinct pages.
    assert_eq!(annotations.len(), 12, "{text}");
    let distinct: BTreeSet<u64> = annotations
        .iter()
        .map(|a| a["number"].as_u64().expect("n"))
        .collect();
    assert_eq!(distinct.len(), 7);

    // Not streaming: the same text and annotations in the response object.
    let body: Value = h
        .post("/v1/responses")
        .json(&json!({"model": RESPONSES, "input": "tech news?"}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let msg = body["output"]
        .as_array()
        .expect("output")
        .iter()
        .find(|o| o["type"] == "message")
        .expect("message");
    assert_eq!(msg["content"][0]["text"].as_str(), Some(text.as_str()));
    assert_eq!(msg["content"][0]["annotations"], json!(annotations));
    assert!(body["citeflow"]["events"].as_array().expect("events").len() > 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_only_annotations_are_numbered_at_the_end_of_their_part() {
    // xAI's Responses streams: url_citation annotations with a url only (no offsets), several
    // for one part, all placed when the part ends; a session-less stream numbers them itself.
    let (h, _) = harness(None).await;
    for (model, pages) in [
        ("xai-web-search-tool.1.chunks.txt", 5),
        ("xai-13218-web-search-provider-tool-result.1.chunks.txt", 9),
    ] {
        let resp = h
            .post("/v1/responses")
            .json(&json!({"model": model, "input": "x", "stream": true}))
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 200);
        let events = json_of(&read_sse(resp, usize::MAX).await);
        assert!(
            !events.iter().any(|e| e["type"] == "error"),
            "{model}: {:?}",
            events.iter().find(|e| e["type"] == "error")
        );
        let (text, annotations) = check_responses(&events);
        assert_eq!(annotations.len(), pages, "{model}: {text}");
        let tail: String = (1..=pages).map(|n| format!("[{n}]")).collect();
        assert!(text.trim_end().ends_with(&tail), "{model}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_resume_after_a_drop_equals_an_uninterrupted_run() {
    let (h, _) = harness(None).await;
    let resp = h
        .post("/v1/responses")
        .json(&json!({"model": RESPONSES, "input": "q", "stream": true}))
        .send()
        .await
        .expect("send");
    let full_sid = resp.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let full = read_sse(resp, usize::MAX).await;
    let resp = h
        .post("/v1/responses")
        .json(&json!({"model": RESPONSES, "input": "q", "stream": true}))
        .send()
        .await
        .expect("send");
    let id = resp.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let first = read_sse(resp, 60).await;
    let last = first.last().and_then(|e| e.id).expect("id");
    let rest = read_sse(
        h.get(&format!("/v1/responses/{id}"))
            .header("last-event-id", last.to_string())
            .send()
            .await
            .expect("resume"),
        usize::MAX,
    )
    .await;
    let norm = |events: &[Received], sid: &str| -> Vec<(Option<u64>, String)> {
        events
            .iter()
            .map(|e| (e.id, e.data.replace(sid, "STREAM")))
            .collect()
    };
    let mut resumed = norm(&first, &id);
    resumed.extend(norm(&rest, &id));
    assert_eq!(resumed, norm(&full, &full_sid));
    // The Responses API's own cursor works too.
    let seq = 9;
    let after = read_sse(
        h.get(&format!("/v1/responses/{id}?starting_after={seq}"))
            .send()
            .await
            .expect("resume"),
        1,
    )
    .await;
    let v: Value = serde_json::from_str(&after[0].data).expect("json");
    assert_eq!(v["sequence_number"], json!(seq + 1));
}

/// One `Last-Event-ID` parser serves every resume route: the chat stream's, the Responses
/// one's and the Messages one's give the same 400 for the same bad id (they had drifted: past
/// `i64::MAX` the provider-shaped routes did not say why), and `starting_after` at `u64::MAX`
/// is that 400 too, not an overflow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_resume_route_reads_last_event_id_alike() {
    let (h, _) = harness(None).await;
    let mut ids = Vec::new();
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "smollm2-01.sse", "stream": true,
                "messages": [{"role": "user", "content": "q"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": RESPONSES, "input": "q", "stream": true}),
        ),
        (
            "/v1/messages",
            json!({"model": MESSAGES, "max_tokens": 100, "stream": true,
                "messages": [{"role": "user", "content": "q"}]}),
        ),
    ] {
        let resp = h.post(path).json(&body).send().await.expect("send");
        assert_eq!(resp.status(), 200, "{path}");
        let id = resp.headers()["x-citeflow-stream-id"]
            .to_str()
            .expect("id")
            .to_owned();
        read_sse(resp, usize::MAX).await;
        ids.push(match path {
            "/v1/chat/completions" => format!("/v1/streams/{id}"),
            _ => format!("{path}/{id}"),
        });
    }
    for (bad, why) in [
        ("9223372036854775808", "is past the largest event id"),
        ("18446744073709551616", "is past the largest event id"),
        ("-1", "is not an event id of this server (decimal digits)"),
        ("abc", "is not an event id of this server (decimal digits)"),
    ] {
        let mut messages = Vec::new();
        for route in &ids {
            for (header, query) in [(Some(bad), ""), (None, bad)] {
                let mut req = h.get(&format!("{route}?last_event_id={query}"));
                if let Some(v) = header {
                    req = req.header("last-event-id", v);
                }
                let r = req.send().await.expect("send");
                assert_eq!(r.status(), 400, "{route} {bad}");
                let body: Value = r.json().await.expect("json");
                assert_eq!(body["error"]["code"], "invalid_request", "{route} {bad}");
                assert_eq!(body["error"]["param"], "Last-Event-ID", "{route} {bad}");
                let message = body["error"]["message"].as_str().expect("message");
                assert!(message.contains(why), "{route} {bad}: {message}");
                messages.push(message.to_owned());
            }
        }
        messages.dedup();
        assert_eq!(messages.len(), 1, "{messages:?}");
    }
    let r = h
        .get(&format!("{}?starting_after={}", ids[1], u64::MAX))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"]["param"], "Last-Event-ID", "{body}");
}

/// Checks a streamed Messages answer; returns (text, number of sources).
fn check_messages(events: &[Value]) -> (String, usize) {
    let mut text = String::new();
    let mut open = None;
    let mut citation_deltas = 0;
    for e in events {
        match e["type"].as_str().expect("type") {
            "content_block_start" => open = e["index"].as_u64(),
            "content_block_delta" => {
                assert_eq!(e["index"].as_u64(), open, "{e}");
                if e["delta"]["type"] == "text_delta" {
                    text.push_str(e["delta"]["text"].as_str().expect("text"));
                }
                if e["delta"]["type"] == "citations_delta" {
                    citation_deltas += 1;
                }
            }
            "content_block_stop" => {
                assert_eq!(e["index"].as_u64(), open);
                open = None;
            }
            _ => {}
        }
    }
    assert!(citation_deltas > 0);
    let stop = events.last().expect("events");
    assert_eq!(stop["type"], "message_stop");
    let done = stop["citeflow"]["events"]
        .as_array()
        .expect("events")
        .last()
        .expect("done")
        .clone();
    assert_eq!(done["type"], "done");
    let n = done["sources"].as_array().expect("sources").len();
    for k in 1..=n {
        assert!(text.contains(&format!("[{k}]")), "[{k}] in {text}");
    }
    assert!(!text.contains(&format!("[{}]", n + 1)));
    (text, n)
}

/// The text blocks of a non-streamed Messages answer, joined.
fn message_text(msg: &Value) -> String {
    msg["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().expect("text"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_stream_numbers_citations_and_keeps_the_wire_format() {
    let (h, _) = harness(Some("sk-test")).await;
    let body = json!({"model": MESSAGES, "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "tech news?"}]});
    let denied = h
        .post("/v1/messages")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(denied.status(), 401);
    let resp = h
        .post("/v1/messages")
        .header("x-api-key", "sk-test")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let full = read_sse(resp, usize::MAX).await;
    let (text, n) = check_messages(&json_of(&full));
    assert_eq!(n, 4, "{text}");

    // Resume after event 20: the rest equals the uninterrupted run.
    let rest = read_sse(
        h.get(&format!("/v1/messages/{id}"))
            .header("x-api-key", "sk-test")
            .header("last-event-id", "20")
            .send()
            .await
            .expect("resume"),
        usize::MAX,
    )
    .await;
    assert_eq!(rest, full[20..].to_vec());

    // Not streaming: one message with the same text.
    let mut body = body;
    body["stream"] = json!(false);
    let msg: Value = h
        .post("/v1/messages")
        .header("x-api-key", "sk-test")
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let joined = message_text(&msg);
    assert_eq!(joined, text);
    assert_eq!(msg["type"], "message");
    assert!(msg["stop_reason"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passthrough_reaches_the_upstream_byte_for_byte() {
    let (h, upstream) = harness(Some("sk-test")).await;
    let direct = citeflow_replay::client()
        .get(format!("{upstream}/models"))
        .send()
        .await
        .expect("direct")
        .bytes()
        .await
        .expect("bytes");
    let denied = h.get("/v1/models").send().await.expect("send");
    assert_eq!(denied.status(), 401);
    let via = h
        .get("/v1/models")
        .bearer_auth("sk-test")
        .send()
        .await
        .expect("send");
    assert_eq!(via.status(), 200);
    assert_eq!(via.bytes().await.expect("bytes"), direct);
    let req = json!({"model": "e", "input": ["a b", "ü"]});
    let direct = h
        .client
        .post(format!("{upstream}/embeddings"))
        .json(&req)
        .send()
        .await
        .expect("direct")
        .bytes()
        .await
        .expect("bytes");
    let via = h
        .post("/v1/embeddings")
        .bearer_auth("sk-test")
        .json(&req)
        .send()
        .await
        .expect("send");
    assert_eq!(via.status(), 200);
    assert_eq!(via.bytes().await.expect("bytes"), direct);
    let missing = h
        .get("/v1/files/nope")
        .bearer_auth("sk-test")
        .send()
        .await
        .expect("send");
    assert_eq!(missing.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ai_sdk_stream_sends_each_source_before_its_number() {
    let (h, _) = harness(None).await;
    for (path, model) in [("/v1/responses", RESPONSES), ("/v1/messages", MESSAGES)] {
        let resp = h
            .post(path)
            .json(&json!({"model": model, "input": "q", "max_tokens": 10,
                "messages": [{"role": "user", "content": "q"}],
                "citeflow": {"protocol": "ai-sdk"}}))
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["x-vercel-ai-ui-message-stream"], "v1");
        let events = read_sse(resp, usize::MAX).await;
        assert_eq!(events.last().expect("events").data, "[DONE]");
        let parts = json_of(&events);
        assert_eq!(parts[0]["type"], "start");
        assert_eq!(parts.last().expect("parts")["type"], "finish");
        let mut text = String::new();
        let mut sources = BTreeSet::new();
        for p in &parts {
            match p["type"].as_str().expect("type") {
                "source-url" | "source-document" => {
                    let id: u64 = p["sourceId"].as_str().expect("id").parse().expect("n");
                    assert!(sources.insert(id), "one part per source: {p}");
                }
                "text-delta" => {
                    text.push_str(p["delta"].as_str().expect("delta"));
                    for n in 1..=20u64 {
                        if text.contains(&format!("[{n}]")) {
                            assert!(sources.contains(&n), "[{n}] before its source");
                        }
                    }
                }
                _ => {}
            }
        }
        assert!(sources.len() >= 4, "{path}: {sources:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_numbers_provider_citations_from_the_store_like_a_lone_stream() {
    // In a session the numbers come from the store: a block's several citations (Anthropic)
    // and a part's url-only ones (xAI) each wait for theirs, and the answer is the same.
    let (h, _) = harness(None).await;
    for (route, model, body) in [
        (
            "/v1/messages",
            MESSAGES,
            json!({"max_tokens": 100, "messages": [{"role": "user", "content": "tech news?"}]}),
        ),
        (
            "/v1/responses",
            "xai-13218-web-search-provider-tool-result.1.chunks.txt",
            json!({"input": "x"}),
        ),
    ] {
        let mut body = body;
        body["model"] = json!(model);
        body["stream"] = json!(true);
        let alone = json_of(
            &read_sse(
                h.post(route).json(&body).send().await.expect("send"),
                usize::MAX,
            )
            .await,
        );
        let session: Value = h
            .post("/v1/sessions")
            .json(&json!({}))
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        body["citeflow"] = json!({"session": session["id"], "scope": "session"});
        let resp = h.post(route).json(&body).send().await.expect("send");
        assert_eq!(resp.status(), 200, "{route}");
        let in_session = json_of(&read_sse(resp, usize::MAX).await);
        assert!(
            !in_session.iter().any(|e| e["type"] == "error"),
            "{route}: {:?}",
            in_session.iter().find(|e| e["type"] == "error")
        );
        let (text, n) = if route == "/v1/messages" {
            let (a, an) = check_messages(&alone);
            let (t, tn) = check_messages(&in_session);
            assert_eq!((t.as_str(), tn), (a.as_str(), an), "{route}");
            (t, tn)
        } else {
            let (a, aa) = check_responses(&alone);
            let (t, ta) = check_responses(&in_session);
            assert_eq!((t.as_str(), ta.len()), (a.as_str(), aa.len()), "{route}");
            (t, ta.len())
        };
        assert!(n >= 4, "{route}: {n} in {text}");
        // The session's table holds the numbers the answer shows.
        let s: Value = h
            .get(&format!(
                "/v1/sessions/{}",
                session["id"].as_str().expect("id")
            ))
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        let table = s["numbering"].as_array().expect("numbering");
        assert!(table.len() >= 4, "{route}: {s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_results_and_documents_in_the_request_are_the_sources_claude_cites() {
    let (h, _) = harness(None).await;
    let ev = |v: Value| {
        format!(
            "event: {}\ndata: {v}\n\n",
            v["type"].as_str().expect("type")
        )
    };
    let mut sse = String::new();
    for v in [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude", "content": [], "stop_reason": null, "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation":
            {"type": "search_result_location", "source": "kb://doc-7", "title": "Doc 7", "search_result_index": 0,
             "start_block_index": 0, "end_block_index": 1, "cited_text": "The sky is blue."}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "The sky is blue."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation":
            {"type": "char_location", "document_index": 0, "document_title": "Facts",
             "start_char_index": 0, "end_char_index": 13, "cited_text": "Water is wet."}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " Water is wet."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ] {
        sse.push_str(&ev(v));
    }
    h.replay
        .insert("native-sources", Script::from_sse(sse.as_bytes()));
    let body = json!({"model": "native-sources", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": [
            {"type": "search_result", "source": "kb://doc-7", "title": "Doc 7",
             "content": [{"type": "text", "text": "The sky is blue."}], "citations": {"enabled": true}},
            {"type": "document", "title": "Facts", "source": {"type": "text", "media_type": "text/plain",
             "data": "Water is wet."}, "citations": {"enabled": true}},
            {"type": "text", "text": "What do we know?"}]}]});
    let resp = h
        .post("/v1/messages")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events = json_of(&read_sse(resp, usize::MAX).await);
    let (text, _) = check_messages(&events);
    assert_eq!(text, "The sky is blue.[1] Water is wet.[2]");
    let done = events
        .iter()
        .flat_map(|e| {
            e["citeflow"]["events"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|e| e["type"] == "done")
        .expect("done");
    let listed: Vec<(u64, &str, &str, &str)> = done["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .map(|s| {
            (
                s["number"].as_u64().expect("number"),
                s["source"]["id"].as_str().expect("id"),
                s["source"]["title"].as_str().expect("title"),
                s["source"]["text"]
                    .as_str()
                    .expect("the text given in the request"),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            (1, "kb://doc-7", "Doc 7", "The sky is blue."),
            (2, "document:0", "Facts", "Water is wet.")
        ]
    );
    // Claude has them in its own form: the system text does not repeat them.
    let sent = h
        .replay
        .requests()
        .into_iter()
        .rfind(|r| r["model"] == "native-sources")
        .expect("request");
    assert!(sent.get("system").is_none(), "{sent}");
}

/// The recording with its text deltas re-cut into pieces of `sizes` characters (in turn) and
/// each annotation sent `lag` deltas later, never past its part's end.
fn recut_responses(lines: &str, sizes: &[usize], lag: usize) -> String {
    let mut out: Vec<Value> = Vec::new();
    let mut waiting: Vec<(usize, Value)> = Vec::new();
    let mut turn = 0;
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("json");
        match v["type"].as_str().unwrap_or_default() {
            "response.output_text.delta" => {
                let chars: Vec<char> = v["delta"].as_str().expect("delta").chars().collect();
                let mut at = 0;
                while at < chars.len() {
                    let n = sizes[turn % sizes.len()];
                    turn += 1;
                    let mut piece = v.clone();
                    piece["delta"] = json!(chars[at..(at + n).min(chars.len())]
                        .iter()
                        .collect::<String>());
                    at += n;
                    out.push(piece);
                    for w in &mut waiting {
                        w.0 = w.0.saturating_sub(1);
                    }
                    while waiting.first().is_some_and(|w| w.0 == 0) {
                        out.push(waiting.remove(0).1);
                    }
                }
            }
            "response.output_text.annotation.added" => waiting.push((lag, v)),
            t => {
                if t == "response.output_text.done" {
                    out.extend(waiting.drain(..).map(|w| w.1));
                }
                out.push(v);
            }
        }
    }
    out.iter().map(|v| format!("{v}\n")).collect()
}

/// The final answer of a Responses run (`response.completed`'s message, or the response
/// object): its text, and each annotation's number, which must slice exactly `[n]` in it.
fn final_answer(response: &Value) -> (String, Vec<u64>) {
    let msg = response["output"]
        .as_array()
        .expect("output")
        .iter()
        .find(|o| o["type"] == "message")
        .expect("message");
    let text = msg["content"][0]["text"].as_str().expect("text").to_owned();
    let mut numbers = Vec::new();
    for a in msg["content"][0]["annotations"]
        .as_array()
        .expect("annotations")
    {
        let n = a["number"].as_u64().expect("number");
        let cited = chars(
            &text,
            a["start_index"].as_u64().expect("start"),
            a["end_index"].as_u64().expect("end"),
        );
        assert_eq!(cited, format!("[{n}]"), "{a}\n{text}");
        numbers.push(n);
    }
    (text, numbers)
}

/// The numbers `[n]` of `text` in order of first appearance.
fn first_appearances(text: &str) -> Vec<u64> {
    let mut seen = Vec::new();
    for (i, _) in text.match_indices('[') {
        let digits: String = text[i + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if !digits.is_empty() && text[i + 1 + digits.len()..].starts_with(']') {
            let n: u64 = digits.parse().expect("digits");
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
    }
    seen
}

/// Issue 39: the OpenAI web-search recording with its deltas re-cut down to one character and
/// its annotations sent later, through `POST /v1/responses`: every cited link becomes its
/// number in the stream and in `response.completed` alike, numbers dense in first-appearance
/// order; with a hold of 16 bytes (citations bound late) `response.completed` and the
/// non-streamed response still carry the final text, with annotations slicing `[n]` in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_39_responses_under_any_cutting_and_lag_give_the_final_answer() {
    let recording = std::fs::read_to_string(shared_dir().join("fixtures/streams").join(RESPONSES))
        .expect("recording");
    let (h, _) = harness(None).await;
    let cases = [
        ("recut-1", vec![1], 0),
        ("recut-1-3-lag-4", vec![1, 3, 2], 4),
        ("recut-2-lag-40", vec![2], 40),
    ];
    for (name, sizes, lag) in &cases {
        h.replay.insert(
            name,
            Script::from_chunk_lines(&recut_responses(&recording, sizes, *lag)),
        );
    }
    let want_numbers: Vec<u64> = (1..=7).collect();
    let mut finals = Vec::new();
    for (name, _, _) in &cases {
        for hold in [None, Some(16)] {
            let mut body = json!({"model": name, "input": "tech news?", "stream": true});
            if let Some(b) = hold {
                body["citeflow"] = json!({"settings": {"max_link_hold_bytes": b}});
            }
            let resp = h
                .post("/v1/responses")
                .json(&body)
                .send()
                .await
                .expect("send");
            assert_eq!(resp.status(), 200);
            let events = json_of(&read_sse(resp, usize::MAX).await);
            let completed = events.last().expect("events");
            assert_eq!(completed["type"], "response.completed", "{name}");
            let (text, numbers) = final_answer(&completed["response"]);
            assert_eq!(numbers.len(), 12, "{name} {hold:?}: {text}");
            assert_eq!(
                first_appearances(&text),
                want_numbers,
                "{name} {hold:?}: {text}"
            );
            assert!(
                !text.contains("utm_source=openai"),
                "{name} {hold:?}: {text}"
            );
            let streamed = streamed_text(&events);
            let done = events
                .iter()
                .find(|e| e["type"] == "response.output_text.done")
                .expect("done");
            assert_eq!(done["text"].as_str(), Some(text.as_str()), "{name}");
            if hold.is_none() {
                // Within the hold nothing is bound late: the stream is the final answer.
                assert_eq!(streamed, text, "{name}");
                check_responses(&events);
            } else {
                assert!(streamed.contains("utm_source=openai"), "{name}: bound late");
                // Not streamed: the same final answer.
                body["stream"] = json!(false);
                let object: Value = h
                    .post("/v1/responses")
                    .json(&body)
                    .send()
                    .await
                    .expect("send")
                    .json()
                    .await
                    .expect("json");
                assert_eq!(
                    final_answer(&object),
                    (text.clone(), numbers.clone()),
                    "{name}"
                );
            }
            finals.push(text);
        }
    }
    // The final answer depends on neither the cutting, nor the lag, nor the hold.
    assert!(finals.windows(2).all(|w| w[0] == w[1]), "{finals:#?}");
}

/// The Anthropic recording with its text deltas re-cut into pieces of `size` characters and
/// every `citations_delta` moved to the end of its content block.
fn recut_messages(lines: &str, size: usize) -> String {
    let mut out: Vec<Value> = Vec::new();
    let mut waiting: Vec<Value> = Vec::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("json");
        match (v["type"].as_str(), v["delta"]["type"].as_str()) {
            (Some("content_block_delta"), Some("text_delta")) => {
                let chars: Vec<char> = v["delta"]["text"].as_str().expect("text").chars().collect();
                for piece in chars.chunks(size) {
                    let mut p = v.clone();
                    p["delta"]["text"] = json!(piece.iter().collect::<String>());
                    out.push(p);
                }
            }
            (Some("content_block_delta"), Some("citations_delta")) => waiting.push(v),
            (Some("content_block_stop"), _) => {
                out.append(&mut waiting);
                out.push(v);
            }
            _ => out.push(v),
        }
    }
    out.iter().map(|v| format!("{v}\n")).collect()
}

/// Issue 39: `POST /v1/messages` gives the same text and list whatever the cutting of the text
/// deltas and wherever in its block a citation comes, streamed and not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_39_messages_under_any_cutting_and_timing_give_the_same_answer() {
    let recording = std::fs::read_to_string(shared_dir().join("fixtures/streams").join(MESSAGES))
        .expect("recording");
    let (h, _) = harness(None).await;
    let mut answers = Vec::new();
    for (model, size) in [
        (MESSAGES.to_owned(), 0),
        ("messages-recut-1".into(), 1),
        ("messages-recut-3".into(), 3),
    ] {
        if size > 0 {
            h.replay.insert(
                &model,
                Script::from_chunk_lines(&recut_messages(&recording, size)),
            );
        }
        let body = json!({"model": model, "max_tokens": 100, "stream": true,
            "messages": [{"role": "user", "content": "tech news?"}]});
        let resp = h
            .post("/v1/messages")
            .json(&body)
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 200);
        let events = json_of(&read_sse(resp, usize::MAX).await);
        let (text, n) = check_messages(&events);
        let shown = first_appearances(&text);
        assert_eq!(shown, (1..=n as u64).collect::<Vec<_>>(), "{model}: {text}");
        let mut body = body;
        body["stream"] = json!(false);
        let msg: Value = h
            .post("/v1/messages")
            .json(&body)
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        let joined = message_text(&msg);
        assert_eq!(joined, text, "{model}: not streamed");
        answers.push((text, n));
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:#?}");
}

/// The Responses route's text deltas, read without a tree (the core's `TextDelta`): a marker
/// cut across deltas, escapes, a delta without `sequence_number`, a member of the upstream's
/// own (`obfuscation`), and a second part. The deltas keep the upstream's members, carry the
/// rewritten text and the next `sequence_number`, and name their own part.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_text_deltas_keep_the_upstreams_members_in_order() {
    let (h, _) = harness(None).await;
    let delta = |seq: Option<u64>, item: &str, text: &str| {
        let mut d = json!({"type": "response.output_text.delta", "item_id": item,
            "output_index": 0, "content_index": 0, "delta": text, "logprobs": [],
            "obfuscation": "x\"y"});
        if let Some(s) = seq {
            d["sequence_number"] = json!(s);
        }
        d
    };
    let part = |item: &str| {
        json!({"type": "response.content_part.added", "item_id": item, "output_index": 0,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
    };
    let done = |item: &str, text: &str| {
        json!({"type": "response.output_text.done", "item_id": item, "output_index": 0,
            "content_index": 0, "text": text})
    };
    let lines = [
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "r", "output": []}}),
        part("m1"),
        delta(Some(2), "m1", "Paris [[sou"),
        delta(None, "m1", "rce_7]] is \"big\"\n"),
        delta(Some(9), "m1", "草枕【"),
        done("m1", "Paris [[source_7]] is \"big\"\n草枕【"),
        part("m2"),
        delta(Some(11), "m2", "The Seine [[source_3]]."),
        done("m2", "The Seine [[source_3]]."),
        json!({"type": "response.completed", "response": {"id": "r", "output": [
            {"type": "message", "id": "m1", "content": [{"type": "output_text",
                "text": "Paris [[source_7]] is \"big\"\n草枕【", "annotations": []}]},
            {"type": "message", "id": "m2", "content": [{"type": "output_text",
                "text": "The Seine [[source_3]].", "annotations": []}]}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    h.replay
        .insert("text-deltas", Script::from_chunk_lines(&text.join("\n")));
    let body = json!({"model": "text-deltas", "input": "q", "stream": true,
        "sources": [{"id": "source_3"}, {"id": "source_7"}]});
    let resp = h
        .post("/v1/responses")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events = json_of(&read_sse(resp, usize::MAX).await);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], json!(i), "{e}");
    }
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .collect();
    let parts: Vec<(&str, &str)> = deltas
        .iter()
        .map(|d| (d["item_id"].as_str().unwrap(), d["delta"].as_str().unwrap()))
        .collect();
    let streamed: String = parts.iter().map(|(_, t)| *t).collect();
    assert_eq!(streamed, "Paris [1] is \"big\"\n草枕【The Seine [2].");
    assert!(parts
        .iter()
        .all(|(item, t)| (*item == "m2") == t.contains("Seine")));
    // The upstream's deltas keep their members (text held back to a part's end, here `【`,
    // goes out then in an event of citeflow's own).
    let own: Vec<&&Value> = deltas
        .iter()
        .filter(|d| d["obfuscation"] == "x\"y" && d["logprobs"] == json!([]))
        .collect();
    assert!(own.len() >= 4, "{deltas:?}");
    // Not streamed: the same rewritten text, part by part.
    let mut body = body;
    body["stream"] = json!(false);
    let object: Value = h
        .post("/v1/responses")
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let texts: Vec<&str> = object["output"]
        .as_array()
        .expect("output")
        .iter()
        .map(|o| o["content"][0]["text"].as_str().expect("text"))
        .collect();
    assert_eq!(texts, ["Paris [1] is \"big\"\n草枕【", "The Seine [2]."]);
}

/// The Messages route's `text_delta`s, read without a tree: a marker cut across deltas and
/// escapes give the rewritten text as the open block's own `text_delta`s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_text_deltas_carry_the_rewritten_text() {
    let (h, _) = harness(None).await;
    let delta = |text: &str| {
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": text}})
    };
    let lines = [
        json!({"type": "message_start", "message": {"id": "m", "type": "message",
            "role": "assistant", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        delta("Paris [[sou"),
        delta("rce_7]] is \"big\"\n"),
        delta("草枕 [[source_3]]."),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    h.replay
        .insert("text-deltas", Script::from_chunk_lines(&text.join("\n")));
    let body = json!({"model": "text-deltas", "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": "q"}],
        "sources": [{"id": "source_3"}, {"id": "source_7"}]});
    let resp = h
        .post("/v1/messages")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events = json_of(&read_sse(resp, usize::MAX).await);
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta")
        .collect();
    assert!(deltas
        .iter()
        .all(|d| d["index"] == 0 && d["delta"]["type"] == "text_delta"));
    let streamed: String = deltas
        .iter()
        .map(|d| d["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "Paris [1] is \"big\"\n草枕 [2].");
    // Not streamed: the message put together from the same text.
    let mut body = body;
    body["stream"] = json!(false);
    let message: Value = h
        .post("/v1/messages")
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(message["content"][0]["type"], "text", "{message}");
    assert_eq!(
        message["content"][0]["text"],
        streamed.as_str(),
        "{message}"
    );
}
