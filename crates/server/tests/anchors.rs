//! Claim anchors on every route (issue 43): with `citeflow.settings.anchors`, each citation's
//! `anchor` event (the sentence of its source that supports the claim) reaches the client in
//! the route's own wire format as soon as the answer's sentence closes, before the `done`
//! event; bad anchor settings are 400 `invalid_setting`.

use std::sync::Arc;

use citeflow_replay::{Replay, Script, Step};
use citeflow_store::MemoryStore;
use serde_json::{json, Value};

use crate::support::{read_sse, Harness, Received};

const SEINE: &str = "Paris is the capital of France. The Seine flows through Paris and then \
                     into the English Channel. The city has about two million people.";
/// The sentence of [`SEINE`] the first claim stands on.
const SEINE_QUOTE: &str = "The Seine flows through Paris and then into the English Channel.";
const RHONE: &str = "Lyon is a city in France. The Rhône and the Saône meet at Lyon.";

/// The answer, cut so that the first sentence closes in the second piece and the stream goes
/// on after it.
const PIECES: [&str; 4] = [
    "The Seine flows through Paris",
    " [[source_1]]. At Lyon",
    " the Rhône meets the Saône [[source_2]]",
    " in the south.",
];

fn sources() -> Value {
    json!([
        {"id": "source_1", "title": "Seine", "url": "https://example.org/seine", "text": SEINE},
        {"id": "source_2", "title": "Lyon", "url": "https://example.org/lyon", "text": RHONE}
    ])
}

/// A Responses API stream of one message whose text is `pieces`.
fn responses_script(pieces: &[&str]) -> Script {
    let text: String = pieces.concat();
    let item = |content: Value, status: &str| {
        json!({"id": "msg_1", "type": "message", "status": status, "role": "assistant",
            "content": content})
    };
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    let response = |status: &str, output: Value| {
        json!({"id": "resp_1", "object": "response", "status": status, "model": "m",
            "output": output})
    };
    let mut lines = vec![
        json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": item(json!([]), "in_progress")}),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
    ];
    for p in pieces {
        lines.push(
            json!({"type": "response.output_text.delta", "item_id": "msg_1",
            "output_index": 0, "content_index": 0, "delta": p}),
        );
    }
    lines.extend([
        json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "text": text}),
        json!({"type": "response.content_part.done", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "part": part}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": item(json!([part]), "completed")}),
        json!({"type": "response.completed",
            "response": response("completed", json!([item(json!([part]), "completed")]))}),
    ]);
    let mut body = String::new();
    for (i, mut l) in lines.into_iter().enumerate() {
        l["sequence_number"] = json!(i);
        body.push_str(&l.to_string());
        body.push('\n');
    }
    Script::from_chunk_lines(&body)
}

/// Characters `start..end` of `s`.
fn chars(s: &str, start: &Value, end: &Value) -> String {
    let (a, b) = (
        start.as_u64().expect("start") as usize,
        end.as_u64().expect("end") as usize,
    );
    s.chars().skip(a).take(b - a).collect()
}

/// Checks the anchor of source_1: its quote is the supporting sentence, at its place in the
/// source's text, and the claim is the answer's first sentence.
fn check_seine_anchor(anchor: &Value) {
    assert_eq!(anchor["type"], "anchor", "{anchor}");
    assert_eq!(anchor["number"], 1, "{anchor}");
    let quote = &anchor["quote"];
    assert_eq!(quote["text"], SEINE_QUOTE, "{anchor}");
    assert_eq!(quote["origin"], "source", "{anchor}");
    assert_eq!(
        chars(SEINE, &quote["char_start"], &quote["char_end"]),
        SEINE_QUOTE
    );
    let bytes = quote["byte_start"].as_u64().expect("byte_start") as usize
        ..quote["byte_end"].as_u64().expect("byte_end") as usize;
    assert_eq!(&SEINE[bytes], SEINE_QUOTE);
    assert_eq!(anchor["verdict"], "supported", "{anchor}");
    let support = anchor["support"].as_f64().expect("support");
    assert!((0.0..=1.0).contains(&support), "{anchor}");
    let claim = &anchor["claim"];
    assert_eq!(
        chars(
            "The Seine flows through Paris [1].",
            &claim["char_start"],
            &claim["char_end"]
        ),
        "The Seine flows through Paris [1]."
    );
}

/// `(index of the received event, citeflow event)` for every citeflow event of `received`
/// found at `pointer` of its payload.
fn events_at(received: &[Received], pointer: &str) -> Vec<(usize, Value)> {
    received
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let v: Value = serde_json::from_str(&e.data).ok()?;
            let events = v.pointer(pointer)?.as_array()?.clone();
            Some(events.into_iter().map(move |e| (i, e)))
        })
        .flatten()
        .collect()
}

/// The index of the first received event whose payload's text holds `needle`.
fn first_holding(received: &[Received], needle: &str) -> usize {
    received
        .iter()
        .position(|e| e.data.contains(needle))
        .unwrap_or_else(|| panic!("no event holds {needle:?}: {received:?}"))
}

/// Checks the citeflow events of a stream: source_1's anchor arrives in the event at the
/// index it gives, which is before the text of the last piece and before `done`; `done`'s
/// list carries the anchors too.
fn check_stream(received: &[Received], events: &[(usize, Value)]) {
    let (at, anchor) = events
        .iter()
        .find(|(_, e)| e["type"] == "anchor" && e["source_id"] == "source_1")
        .unwrap_or_else(|| panic!("no anchor of source_1: {events:?}"));
    check_seine_anchor(anchor);
    let (done_at, done) = events
        .iter()
        .find(|(_, e)| e["type"] == "done")
        .expect("done");
    assert!(at < done_at, "the anchor came at {at}, done at {done_at}");
    let last_piece = first_holding(received, "in the south");
    assert!(
        *at <= last_piece,
        "the anchor came at {at}, after the last piece's text at {last_piece}"
    );
    let listed = done["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .find(|l| l["number"] == 1)
        .expect("source 1 listed");
    assert_eq!(listed["anchors"][0]["quote"]["text"], SEINE_QUOTE, "{done}");
    // The second claim is anchored too, once its sentence closes.
    let lyon = events
        .iter()
        .find(|(_, e)| e["type"] == "anchor" && e["source_id"] == "source_2")
        .expect("anchor of source_2");
    assert_eq!(
        lyon.1["quote"]["text"], "The Rhône and the Saône meet at Lyon.",
        "{lyon:?}"
    );
}

fn settings_on() -> Value {
    json!({"anchors": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anchors_reach_chat_chunks_as_their_sentence_closes() {
    let h = Harness::start().await;
    h.replay.insert("anchors-chat", Script::chat(&PIECES));
    let whole = json!({"id": "chatcmpl-x", "object": "chat.completion", "created": 1,
        "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": PIECES.concat()}}]});
    h.replay.insert(
        "anchors-chat-whole",
        Script::new(vec![Step::Bytes(whole.to_string().into_bytes())]),
    );
    let request = |stream: bool| {
        let model = if stream {
            "anchors-chat"
        } else {
            "anchors-chat-whole"
        };
        json!({"model": model, "stream": stream, "sources": sources(),
            "messages": [{"role": "user", "content": "Tell me about rivers."}],
            "citeflow": {"settings": settings_on()}})
    };
    let r = h
        .post("/v1/chat/completions")
        .json(&request(true))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let received = read_sse(r, usize::MAX).await;
    check_stream(&received, &events_at(&received, "/citeflow/events"));

    // Not streamed: the anchors are among the citeflow events, where the citations are.
    let body: Value = h
        .post("/v1/chat/completions")
        .json(&request(false))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let events = body["citeflow"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events: {body}"));
    let anchor = events
        .iter()
        .find(|e| e["type"] == "anchor" && e["source_id"] == "source_1")
        .unwrap_or_else(|| panic!("no anchor: {body}"));
    check_seine_anchor(anchor);

    // Off by default: no anchor event.
    let mut off = request(true);
    off["citeflow"] = json!({});
    let r = h
        .post("/v1/chat/completions")
        .json(&off)
        .send()
        .await
        .expect("send");
    let received = read_sse(r, usize::MAX).await;
    let events = events_at(&received, "/citeflow/events");
    assert!(events.iter().all(|(_, e)| e["type"] != "anchor"));
    assert!(events.iter().any(|(_, e)| e["type"] == "done"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anchors_reach_the_responses_stream_and_its_completed_response() {
    let h = Harness::start().await;
    h.replay
        .insert("anchors-responses", responses_script(&PIECES));
    let request = |stream: bool| {
        json!({"model": "anchors-responses", "stream": stream, "input": "Tell me about rivers.",
            "sources": sources(), "citeflow": {"settings": settings_on()}})
    };
    let r = h
        .post("/v1/responses")
        .json(&request(true))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let received = read_sse(r, usize::MAX).await;
    check_stream(&received, &events_at(&received, "/citeflow/events"));

    let body: Value = h
        .post("/v1/responses")
        .json(&request(false))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let events = body["citeflow"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events: {body}"));
    let anchor = events
        .iter()
        .find(|e| e["type"] == "anchor" && e["source_id"] == "source_1")
        .unwrap_or_else(|| panic!("no anchor: {body}"));
    check_seine_anchor(anchor);
}

/// The AI SDK UI message stream's parts of `received`.
fn parts_of(received: &[Received]) -> Vec<Value> {
    received
        .iter()
        .filter_map(|e| serde_json::from_str(&e.data).ok())
        .collect()
}

/// Checks a UI message stream: one `data-citeflow-anchor` part per anchor, source_1's
/// before the last piece's text and before the `done` event's part.
fn check_ui_stream(received: &[Received]) {
    let parts = parts_of(received);
    let anchors: Vec<(usize, &Value)> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| p["type"] == "data-citeflow-anchor")
        .map(|(i, p)| (i, &p["data"]))
        .collect();
    assert_eq!(anchors.len(), 2, "{parts:?}");
    let (at, seine) = anchors
        .iter()
        .find(|(_, a)| a["source_id"] == "source_1")
        .expect("source_1's anchor part");
    check_seine_anchor(seine);
    let last_piece = parts
        .iter()
        .position(|p| p["type"] == "text-delta" && p["delta"].to_string().contains("south"))
        .expect("the last piece");
    assert!(*at < last_piece, "anchor part {at}, last text {last_piece}");
    let done = parts
        .iter()
        .position(|p| {
            p["type"] == "data-citeflow"
                && p["data"]["events"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|e| e["type"] == "done"))
        })
        .expect("done part");
    assert!(*at < done, "anchor part {at}, done {done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anchors_reach_the_ai_sdk_stream_as_data_parts() {
    let h = Harness::start().await;
    // Pieces paced apart, so that each reaches the client in its own parts.
    h.replay
        .insert("anchors-ui-responses", responses_script(&PIECES).paced(20));
    h.replay
        .insert("anchors-ui-chat", Script::chat(&PIECES).paced(20));
    let r = h
        .post("/v1/responses")
        .json(&json!({"model": "anchors-ui-responses", "stream": true,
            "input": "Tell me about rivers.", "sources": sources(),
            "citeflow": {"settings": settings_on(), "protocol": "ai-sdk"}}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    check_ui_stream(&read_sse(r, usize::MAX).await);

    let r = h
        .post("/v1/chat/completions")
        .json(
            &json!({"model": "anchors-ui-chat", "stream": true, "sources": sources(),
            "messages": [{"role": "user", "content": "Tell me about rivers."}],
            "citeflow": {"settings": settings_on(), "protocol": "ai-sdk"}}),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    check_ui_stream(&read_sse(r, usize::MAX).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_anchor_settings_are_400_invalid_setting_naming_the_field() {
    let replay = Replay::new();
    let upstream = replay.spawn().await.expect("upstream");
    let anthropic = upstream.clone();
    let h = Harness::on_upstream(
        replay,
        &upstream,
        move |s| s.with_anthropic_upstream(Some(anthropic)),
        Arc::new(MemoryStore::new()),
    )
    .await;
    h.replay.insert("anchors-bad", Script::chat(&PIECES));
    let routes = [
        (
            "/v1/chat/completions",
            json!({"model": "anchors-bad", "messages": [{"role": "user", "content": "q"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "anchors-bad", "input": "q"}),
        ),
        (
            "/v1/messages",
            json!({"model": "anchors-bad", "max_tokens": 10,
                "messages": [{"role": "user", "content": "q"}]}),
        ),
    ];
    for (path, body) in routes {
        for (settings, says) in [
            (json!({"anchors": "yes"}), "anchors: invalid type"),
            (
                json!({"max_anchor_source_bytes": 5}),
                "max_anchor_source_bytes 5",
            ),
            (
                json!({"max_anchor_source_bytes": -1}),
                "max_anchor_source_bytes",
            ),
        ] {
            let mut body = body.clone();
            body["sources"] = sources();
            body["citeflow"] = json!({"settings": settings});
            let r = h.post(path).json(&body).send().await.expect("send");
            assert_eq!(r.status(), 400, "{path} {settings}");
            let e: Value = r.json().await.expect("json");
            assert_eq!(
                e["error"]["code"], "invalid_setting",
                "{path} {settings}: {e}"
            );
            let message = e["error"]["message"].as_str().expect("message");
            assert!(message.contains(says), "{path} {settings}: {e}");
            assert_eq!(e["error"]["param"], "citeflow.settings", "{path}: {e}");
        }
    }
}

/// A book passage's anchor carries the CFI range of its quote, which the book's reading route
/// opens with exactly the quoted sentence marked: on the chat route with the passages given
/// as sources (from the search route), and with `citeflow.book` on the Responses route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_book_passages_anchor_carries_the_cfi_of_its_quoted_sentence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    let bytes = std::fs::read(
        crate::support::shared_dir()
            .join("fixtures/epub/kusamakura-japanese-vertical-writing.epub"),
    )
    .expect("kusamakura");
    let r = h
        .post("/v1/books")
        .header("content-type", "application/epub+zip")
        .body(bytes)
        .send()
        .await
        .expect("upload");
    assert_eq!(r.status(), 201);
    let key = r.json::<Value>().await.expect("json")["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let found: Value = h
        .post(&format!("/v1/books/{key}/search"))
        .json(&json!({"query": "智に働けば角が立つ", "top_k": 3}))
        .send()
        .await
        .expect("search")
        .json()
        .await
        .expect("json");
    let passage = found["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|p| {
            p["text"]
                .as_str()
                .is_some_and(|t| t.contains("智に働けば角が立つ。"))
        })
        .unwrap_or_else(|| panic!("no passage with the sentence: {found}"))
        .clone();
    let id = passage["id"].as_str().expect("id").to_owned();
    let text = passage["text"].as_str().expect("text").to_owned();
    let claim = format!("語り手は、智に働けば角が立つと考えた [[{id}]]。");
    h.replay.insert(
        "book-anchor",
        Script::chat(&[&claim[..12], &claim[12..], "それから山を下りた。"]),
    );
    let r = h
        .post("/v1/chat/completions")
        .json(
            &json!({"model": "book-anchor", "stream": true, "sources": [passage],
            "messages": [{"role": "user", "content": "草枕の冒頭は?"}],
            "citeflow": {"settings": {"anchors": true}, "inject_prompt": false}}),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let received = read_sse(r, usize::MAX).await;
    let events = events_at(&received, "/citeflow/events");
    let anchor = &events
        .iter()
        .find(|(_, e)| e["type"] == "anchor")
        .unwrap_or_else(|| panic!("no anchor: {events:?}"))
        .1;
    let quote = &anchor["quote"];
    let quoted = quote["text"].as_str().expect("quote text");
    assert!(quoted.contains("智に働けば角が立つ。"), "{anchor}");
    assert_eq!(
        chars(&text, &quote["char_start"], &quote["char_end"]),
        quoted
    );
    let cfi = quote["cfi"]
        .as_str()
        .unwrap_or_else(|| panic!("no quote cfi: {anchor}"));
    assert_ne!(
        cfi,
        passage["locator"]["cfi"].as_str().expect("passage cfi")
    );
    let r = h
        .get(&format!("/v1/books/{key}/read"))
        .query(&[("cfi", cfi)])
        .send()
        .await
        .expect("read");
    assert_eq!(r.status(), 200);
    let reading: Value = r.json().await.expect("json");
    assert_eq!(reading["marked_text"], quoted, "{cfi}");
    // The done event's list carries the same CFI.
    let done = &events
        .iter()
        .find(|(_, e)| e["type"] == "done")
        .expect("done")
        .1;
    assert_eq!(
        done["sources"][0]["anchors"][0]["quote"]["cfi"], cfi,
        "{done}"
    );

    // citeflow.book on the Responses route: the retrieved passage's anchor has its CFI too.
    h.replay.insert(
        "book-anchor-responses",
        responses_script(&[&claim[..12], &claim[12..], "それから山を下りた。"]),
    );
    let r = h
        .post("/v1/responses")
        .json(&json!({"model": "book-anchor-responses", "stream": true,
            "input": "智に働けば角が立つ",
            "citeflow": {"book": key, "top_k": 3, "settings": {"anchors": true}}}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let received = read_sse(r, usize::MAX).await;
    let events = events_at(&received, "/citeflow/events");
    let anchor = &events
        .iter()
        .find(|(_, e)| e["type"] == "anchor")
        .unwrap_or_else(|| panic!("no anchor: {events:?}"))
        .1;
    assert_eq!(anchor["quote"]["cfi"], cfi, "{anchor}");
}
