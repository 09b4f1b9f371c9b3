//! `citeflow.book` on the provider-shaped routes (issue 16 §2): on `POST /v1/messages` the
//! book's passages go to Claude as `search_result` blocks, and its `search_result_location`
//! citations map back to the passage, numbered, with chapter and CFI; on `POST /v1/responses`
//! they join the sources shown in the instructions.

use std::sync::Arc;

use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::{fingerprint, BookPassage, Index};
use citeflow_replay::{Replay, Script, Step};
use citeflow_store::MemoryStore;
use serde_json::{json, Value};

use crate::support::{read_sse, shared_dir, Harness};

const QUESTION: &str = "What did the White Rabbit take out of its waistcoat-pocket?";

/// An index of alice.epub in `dir`; the book's key.
fn alice_index(dir: &std::path::Path) -> String {
    let bytes = std::fs::read(shared_dir().join("fixtures/epub/alice.epub")).expect("alice");
    let book = Book::open(&bytes, &Limits::default()).expect("opens");
    let settings = ChunkSettings::default();
    let passages = BookPassage::from_book(&book, &settings);
    let mut index = Index::open_or_create(dir).expect("index");
    index
        .add_book(&passages, &fingerprint(&bytes, &settings))
        .expect("indexed");
    passages[0].book_key.clone()
}

/// An Anthropic stream: a plain text block, then a block that cites `source` (a
/// `search_result_location`, sent before its text as Claude does).
fn claude_citing(source: &str) -> Script {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "From the book: "}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "text", "text": "", "citations": []}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta",
            "citation": {"type": "search_result_location", "source": source, "title": "Alice",
                "cited_text": "took a watch out of its waistcoat-pocket",
                "search_result_index": 0, "start_block_index": 0, "end_block_index": 0}}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "text_delta", "text": "the Rabbit took a watch out of its pocket."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
            "stop_sequence": null}, "usage": {"output_tokens": 12}}),
        json!({"type": "message_stop"}),
    ];
    Script::new(
        events
            .iter()
            .map(|e| {
                Step::Bytes(format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()).into())
            })
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_book_on_messages_goes_as_search_results_and_citations_map_back_to_passages() {
    let dir = tempfile::tempdir().expect("tmp");
    let key = alice_index(dir.path());
    let replay = Replay::new();
    let upstream = replay.spawn().await.expect("upstream");
    let anthropic = upstream.clone();
    let path = dir.path().to_owned();
    let h = Harness::on_upstream(
        replay,
        &upstream,
        move |s| s.with_index(&path).with_anthropic_upstream(Some(anthropic)),
        Arc::new(MemoryStore::new()),
    )
    .await;
    // The passages the server retrieves for the question (its own search route).
    let found: Value = h
        .post(&format!("/v1/books/{key}/search"))
        .json(&json!({"query": QUESTION, "top_k": 3}))
        .send()
        .await
        .expect("search")
        .json()
        .await
        .expect("json");
    let hits = found["data"].as_array().expect("data").clone();
    assert_eq!(hits.len(), 3, "{found}");
    let cited = hits[1].clone();
    let cited_id = cited["id"].as_str().expect("id");
    h.replay.insert("claude-book", claude_citing(cited_id));

    let body = json!({"model": "claude-book", "max_tokens": 100, "stream": true,
        "citeflow": {"book": key, "top_k": 3},
        "messages": [{"role": "user", "content": QUESTION}]});
    let resp = h
        .post("/v1/messages")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events: Vec<Value> = read_sse(resp, usize::MAX)
        .await
        .iter()
        .filter_map(|e| serde_json::from_str(&e.data).ok())
        .collect();

    // Upstream: no system text (no other sources), the passages as search_result blocks
    // before the question, nothing of citeflow's own fields.
    let sent = h.replay.requests().pop().expect("request");
    assert!(sent.get("system").is_none(), "{sent}");
    assert!(sent.get("citeflow").is_none() && sent.get("sources").is_none());
    let content = sent["messages"][0]["content"].as_array().expect("blocks");
    assert_eq!(content.len(), 4, "{sent}");
    for (block, hit) in content.iter().zip(&hits) {
        assert_eq!(block["type"], "search_result");
        assert_eq!(block["source"], hit["id"]);
        assert_eq!(block["content"][0]["text"], hit["text"]);
        assert_eq!(block["citations"]["enabled"], true);
        let chapter = hit["locator"]["chapter_title"].as_str().expect("chapter");
        assert!(
            block["title"].as_str().expect("title").contains(chapter),
            "{block}"
        );
    }
    assert_eq!(content[3], json!({"type": "text", "text": QUESTION}));

    // Client: the cited block ends with [1]; the citation passes on as sent; the done
    // event lists the passage as number 1 with its chapter and CFI.
    let text: String = events
        .iter()
        .filter(|e| e["delta"]["type"] == "text_delta")
        .map(|e| e["delta"]["text"].as_str().expect("text"))
        .collect();
    assert_eq!(
        text,
        "From the book: the Rabbit took a watch out of its pocket.[1]"
    );
    assert!(events
        .iter()
        .any(|e| e["delta"]["citation"]["source"] == cited["id"]));
    let done = events
        .iter()
        .filter_map(|e| e["citeflow"]["events"].as_array())
        .flatten()
        .find(|e| e["type"] == "done")
        .expect("done")
        .clone();
    let listed = done["sources"].as_array().expect("sources");
    assert_eq!(listed.len(), 1, "{done}");
    assert_eq!(listed[0]["number"], 1);
    assert_eq!(listed[0]["source"]["id"], cited["id"]);
    assert_eq!(listed[0]["source"]["locator"], cited["locator"]);
    assert!(cited["locator"]["cfi"]
        .as_str()
        .expect("cfi")
        .starts_with("epubcfi("));

    // Not streaming: the same text.
    let mut plain = body.clone();
    plain["stream"] = json!(false);
    let msg: Value = h
        .post("/v1/messages")
        .json(&plain)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let joined: String = msg["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    assert_eq!(joined, text);

    // Responses: the passages join the sources shown in the instructions, each with its
    // marker, chapter and CFI.
    let recorded = std::fs::read_to_string(
        shared_dir().join("fixtures/streams/openai-web-search-tool.1.chunks.txt"),
    )
    .expect("recording");
    h.replay
        .insert("gpt-book", Script::from_chunk_lines(&recorded));
    let r = h
        .post("/v1/responses")
        .json(
            &json!({"model": "gpt-book", "input": QUESTION, "instructions": "Be brief.",
            "citeflow": {"book": key, "top_k": 3}}),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let sent = h.replay.requests().pop().expect("request");
    let instructions = sent["instructions"].as_str().expect("instructions");
    assert!(instructions.ends_with("\n\nBe brief."), "{instructions}");
    for hit in &hits {
        let id = hit["id"].as_str().expect("id");
        let cfi = hit["locator"]["cfi"].as_str().expect("cfi");
        assert!(
            instructions.contains(&format!("[[{id}]]")),
            "{instructions}"
        );
        assert!(instructions.contains(cfi), "{instructions}");
    }

    // An unknown book is a plain error before anything goes upstream.
    let mut unknown = body.clone();
    unknown["citeflow"]["book"] = json!("no-such-book");
    let r = h
        .post("/v1/messages")
        .json(&unknown)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 404);
}
