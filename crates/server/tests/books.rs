//! Books: a real tantivy index of fixture EPUBs, `GET /v1/books`, `POST /v1/books`, and chats
//! whose sources are passages retrieved from a book (`citeflow.book`).

use std::path::Path;
use std::sync::Arc;

use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::{fingerprint, BookPassage, Index};
use citeflow_replay::Script;
use citeflow_store::MemoryStore;
use serde_json::{json, Value};

use crate::support::{citeflow_events, limits, read_sse, shared_dir, text_of, Harness};

const ALICE: &str = "alice.epub";
const KUSAMAKURA: &str = "kusamakura-japanese-vertical-writing.epub";

fn epub(name: &str) -> Vec<u8> {
    let p = shared_dir().join("fixtures/epub").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// Indexes fixture books into `dir` as `citeflow ingest --index` does; returns their passages.
fn build_index(dir: &Path, names: &[&str]) -> Vec<Vec<BookPassage>> {
    let mut index = Index::open_or_create(dir).expect("index");
    let settings = ChunkSettings::default();
    names
        .iter()
        .map(|name| {
            let bytes = epub(name);
            let book = Book::open(&bytes, &Limits::default()).expect("fixture opens");
            let passages = BookPassage::from_book(&book, &settings);
            index
                .add_book(&passages, &fingerprint(&bytes, &settings))
                .expect("indexed");
            passages
        })
        .collect()
}

/// The passages the server will retrieve (the same index, the same query).
fn expected_hits(dir: &Path, key: &str, question: &str, k: usize) -> Vec<BookPassage> {
    let index = Index::open_or_create(dir).expect("index");
    let hits = index.search_book(key, question, k).expect("search");
    assert!(!hits.is_empty(), "no passage of {key} matches {question:?}");
    hits.into_iter().map(|h| h.passage).collect()
}

async fn books_of(h: &Harness) -> Vec<Value> {
    let r = h.get("/v1/books").send().await.expect("send");
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["object"], "list");
    v["data"].as_array().expect("data").clone()
}

/// The system prompt of the last request the upstream received.
fn system_prompt(h: &Harness) -> String {
    let sent = h
        .replay
        .requests()
        .pop()
        .expect("a request reached the upstream");
    assert_eq!(sent["messages"][0]["role"], "system", "{sent}");
    assert!(sent.get("citeflow").is_none() && sent.get("sources").is_none());
    sent["messages"][0]["content"]
        .as_str()
        .expect("text")
        .to_owned()
}

/// The line of the context block that shows a passage: marker, chapter and CFI, title.
fn context_line(p: &BookPassage) -> String {
    format!(
        "[[{}]] (chapter: {}, CFI: {}) {}: ",
        p.id,
        p.chapter_title.as_deref().expect("chapter title"),
        p.cfi,
        p.title
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books_are_listed_with_their_passages_and_chapters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let books = build_index(dir.path(), &[ALICE, KUSAMAKURA]);
    let h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    let listed = books_of(&h).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    for passages in &books {
        let first = &passages[0];
        let b = listed
            .iter()
            .find(|b| b["key"] == first.book_key.as_str())
            .unwrap_or_else(|| panic!("{} not listed in {listed:?}", first.book_key));
        assert_eq!(b["object"], "citeflow.book");
        assert_eq!(b["title"], first.book_title.as_str());
        assert_eq!(b["url"], first.url.as_str());
        assert_eq!(b["passages"], passages.len());
        let chapters = b["chapters"].as_array().expect("chapters");
        let last = passages.last().expect("passages");
        assert_eq!(
            chapters.last().expect("a chapter")["title"],
            json!(last.chapter_title)
        );
        let counted: u64 = chapters
            .iter()
            .map(|c| c["passages"].as_u64().expect("count"))
            .sum();
        assert_eq!(counted, passages.len() as u64);
    }
    assert!(listed[0]["title"]
        .as_str()
        .expect("title")
        .starts_with("Alice"));
    assert!(listed[1]["title"].as_str().expect("title").contains("草枕"));

    // Without an index the list is empty, not an error (the page probes it).
    let bare = Harness::start().await;
    assert!(books_of(&bare).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_with_a_book_cites_its_passages_with_chapter_and_cfi() {
    let dir = tempfile::tempdir().expect("tempdir");
    let books = build_index(dir.path(), &[ALICE, KUSAMAKURA]);
    let key = books[0][0].book_key.clone();
    let question = "What did the Rabbit take out of its waistcoat-pocket?";
    let hits = expected_hits(dir.path(), &key, question, 4);
    assert!(hits.len() >= 2);
    let h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    // The model cites the second passage first, with the marker cut across chunks.
    let (a, b) = (&hits[1], &hits[0]);
    let cut = a.id.len() / 2;
    h.replay.insert(
        "book",
        Script::chat(&[
            "It took out a watch [[",
            &a.id[..cut],
            &format!("{}]] and ran on [[{}]].", &a.id[cut..], b.id),
        ]),
    );
    let resp = h
        .post("/v1/chat/completions")
        .json(&json!({
            "model": "book", "stream": true,
            "messages": [{"role": "user", "content": question}],
            "citeflow": {"book": key, "top_k": 4},
        }))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events = read_sse(resp, usize::MAX).await;
    assert_eq!(text_of(&events), "It took out a watch [1] and ran on [2].");

    // The prompt shows exactly the retrieved passages of that book, each with its chapter
    // title and CFI, in retrieval order; nothing of the other book.
    let system = system_prompt(&h);
    let mut at = 0;
    for p in &hits {
        let line = context_line(p);
        let found = system[at..]
            .find(&line)
            .unwrap_or_else(|| panic!("{line} missing (in order) from\n{system}"));
        at += found + line.len();
    }
    let context_lines = system.lines().filter(|l| l.starts_with("[[")).count();
    assert_eq!(context_lines, hits.len(), "{system}");
    assert!(!system.contains(&books[1][0].book_key));

    // The source list carries chapter and CFI of the cited passages, in citation order.
    let done = citeflow_events(&events)
        .into_iter()
        .find(|e| e["type"] == "done")
        .expect("done event");
    let list = done["sources"].as_array().expect("sources");
    assert_eq!(list.len(), 2);
    for (entry, p) in list.iter().zip([a, b]) {
        let s = &entry["source"];
        assert_eq!(s["id"], p.id.as_str());
        assert_eq!(s["title"], p.title.as_str());
        assert_eq!(s["url"], p.url.as_str());
        assert_eq!(s["locator"]["chapter_title"], json!(p.chapter_title));
        assert_eq!(s["locator"]["cfi"], p.cfi.as_str());
        assert!(s["locator"]["cfi"]
            .as_str()
            .expect("cfi")
            .starts_with("epubcfi(/6/"));
    }
    assert_eq!(done["report"]["verified"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_japanese_book_with_given_sources_and_full_width_ranks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let books = build_index(dir.path(), &[ALICE, KUSAMAKURA]);
    let key = books[1][0].book_key.clone();
    let question = "智に働けば角が立つ";
    let hits = expected_hits(dir.path(), &key, question, 2);
    assert!(hits[0].text.contains(question), "{}", hits[0].text);
    let h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    // Ranks: 1 is the given source, 2 and 3 the passages.
    h.replay
        .insert("kusa", Script::chat(&["冒頭です【2】。", "別の話【1】。"]));
    let resp = h
        .post("/v1/chat/completions")
        .json(&json!({
            "model": "kusa", "stream": true,
            "messages": [{"role": "user", "content": question}],
            "sources": [{"id": "note_1", "title": "A note", "text": "草枕は1906年の小説。"}],
            "citeflow": {"book": key, "top_k": 2, "marker": "rank_full_width", "style": "full_width"},
        }))
        .send()
        .await
        .expect("send");
    let events = read_sse(resp, usize::MAX).await;
    assert_eq!(text_of(&events), "冒頭です【1】。別の話【2】。");
    let system = system_prompt(&h);
    let given = system.find("【1】 A note: ").expect("given source first");
    let first = format!(
        "【2】 (章:{}, CFI:{}) ",
        hits[0].chapter_title.as_deref().expect("chapter"),
        hits[0].cfi
    );
    let passage = system
        .find(&first)
        .unwrap_or_else(|| panic!("{first} missing from\n{system}"));
    assert!(given < passage);
    let done = citeflow_events(&events)
        .into_iter()
        .find(|e| e["type"] == "done")
        .expect("done");
    let list = done["sources"].as_array().expect("list");
    assert_eq!(list[0]["source"]["id"], hits[0].id.as_str());
    assert_eq!(list[0]["source"]["locator"]["cfi"], hits[0].cfi.as_str());
    assert_eq!(list[1]["source"]["id"], "note_1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_session_the_retrieval_is_a_round_with_the_question_as_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let books = build_index(dir.path(), &[ALICE]);
    let key = books[0][0].book_key.clone();
    let h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    let s: Value = h
        .post("/v1/sessions")
        .json(&json!({}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let sid = s["id"].as_str().expect("id").to_owned();
    h.replay.insert("s", Script::chat(&["ok"]));
    for (i, q) in [
        "Who is the Queen of Hearts?",
        "What did the Cheshire Cat say?",
    ]
    .iter()
    .enumerate()
    {
        let r = h
            .post("/v1/chat/completions")
            .json(&json!({
                "model": "s", "stream": true,
                "messages": [{"role": "user", "content": q}],
                "citeflow": {"session": sid, "scope": "session", "book": key, "top_k": 3},
            }))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        read_sse(r, usize::MAX).await;
        let view: Value = h
            .get(&format!("/v1/sessions/{sid}"))
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        let rounds = view["rounds"].as_array().expect("rounds");
        assert_eq!(rounds.len(), i + 1);
        let round = &rounds[i];
        assert_eq!(round["query"], *q);
        let expected = expected_hits(dir.path(), &key, q, 3);
        let ids: Vec<&str> = round["sources"]
            .as_array()
            .expect("sources")
            .iter()
            .map(|s| s["id"].as_str().expect("id"))
            .collect();
        let want: Vec<&str> = expected.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, want);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_book_search_gives_the_passages_a_chat_with_the_book_shows_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let books = build_index(dir.path(), &[ALICE, KUSAMAKURA]);
    let key = books[0][0].book_key.clone();
    let question = "What did the Rabbit take out of its waistcoat-pocket?";
    let hits = expected_hits(dir.path(), &key, question, 4);
    let h = Harness::with(|s| s.with_index(dir.path()), Arc::new(MemoryStore::new())).await;
    let r = h
        .post(&format!("/v1/books/{key}/search"))
        .json(&json!({"query": question, "top_k": 4}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let found: Value = r.json().await.expect("json");
    assert_eq!(found["object"], "list");
    assert_eq!(found["book"], key.as_str());
    let data = found["data"].as_array().expect("data");
    let ids: Vec<&str> = data.iter().filter_map(|s| s["id"].as_str()).collect();
    let want: Vec<&str> = hits.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, want, "the index's passages, best first");
    for (s, p) in data.iter().zip(&hits) {
        assert_eq!(s["locator"]["cfi"], p.cfi.as_str());
        assert_eq!(s["locator"]["chapter_title"], json!(p.chapter_title));
    }

    // Sent back as `sources`, they give the model the same prompt as `citeflow.book` does.
    h.replay.insert("book", Script::chat(&["Ok."]));
    let ask = |extra: Value| {
        let mut body = json!({"model": "book", "stream": true,
            "messages": [{"role": "user", "content": question}]});
        body.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        body
    };
    let mut prompts = Vec::new();
    for extra in [
        json!({"citeflow": {"book": key, "top_k": 4}}),
        json!({"sources": data, "citeflow": {"render": "client"}}),
    ] {
        let r = h
            .post("/v1/chat/completions")
            .json(&ask(extra))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        read_sse(r, usize::MAX).await;
        prompts.push(system_prompt(&h));
    }
    assert_eq!(prompts[0], prompts[1]);

    // Japanese text is searched with the CJK tokenizer.
    let jp = books[1][0].book_key.clone();
    let r = h
        .post(&format!("/v1/books/{jp}/search"))
        .json(&json!({"query": "智に働けば角が立つ"}))
        .send()
        .await
        .expect("send");
    let v: Value = r.json().await.expect("json");
    let first = v["data"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(first.contains("智に働けば"), "{v}");

    for (path, body, status, code, param) in [
        (
            "/v1/books/no-such-book-123456/search".to_owned(),
            json!({"query": "rabbit"}),
            404,
            "book_not_found",
            None,
        ),
        (
            format!("/v1/books/{key}/search"),
            json!({"query": "  "}),
            400,
            "invalid_request",
            Some("query"),
        ),
        (
            format!("/v1/books/{key}/search"),
            json!({"query": "rabbit", "top_k": 0}),
            400,
            "invalid_request",
            Some("top_k"),
        ),
        (
            format!("/v1/books/{key}/search"),
            json!({"q": "rabbit"}),
            400,
            "invalid_request",
            None,
        ),
    ] {
        let r = h.post(&path).json(&body).send().await.expect("send");
        assert_eq!(r.status().as_u16(), status, "{path} {body}");
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], code, "{v}");
        assert_eq!(v["error"]["param"].as_str(), param, "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_books_and_bad_options_are_errors_before_streaming() {
    let dir = tempfile::tempdir().expect("tempdir");
    let books = build_index(dir.path(), &[ALICE]);
    let key = books[0][0].book_key.clone();
    let h = Harness::with(
        |s| {
            s.with_index(dir.path())
                .with_limits(limits(|l| l.max_sources = 4))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let bare = Harness::start().await;
    let ask = |citeflow: Value| {
        json!({"model": "m", "stream": true,
               "messages": [{"role": "user", "content": "the rabbit"}], "citeflow": citeflow})
    };
    for (harness, body, status, code, param) in [
        (
            &h,
            ask(json!({"book": "no-such-book-123456"})),
            404,
            "book_not_found",
            Some("citeflow.book"),
        ),
        (
            &bare,
            ask(json!({"book": key})),
            404,
            "book_not_found",
            Some("citeflow.book"),
        ),
        (
            &h,
            ask(json!({"book": key, "top_k": 0})),
            400,
            "invalid_request",
            Some("citeflow.top_k"),
        ),
        (
            &h,
            ask(json!({"book": key, "top_k": 33})),
            400,
            "invalid_request",
            Some("citeflow.top_k"),
        ),
        (
            &h,
            ask(json!({"top_k": 3})),
            400,
            "invalid_request",
            Some("citeflow.top_k"),
        ),
        (
            &h,
            ask(json!({"book": key, "top_k": 5})),
            400,
            "too_many_sources",
            Some("sources"),
        ),
        (
            &h,
            json!({"model": "m", "messages": [{"role": "system", "content": "x"}], "citeflow": {"book": key}}),
            400,
            "invalid_request",
            Some("messages"),
        ),
    ] {
        let r = harness
            .post("/v1/chat/completions")
            .json(&body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), status, "{body}");
        assert!(r.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("application/json"));
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], code, "{v}");
        assert_eq!(v["error"]["param"].as_str(), param, "{v}");
    }
    assert!(h.replay.requests().is_empty() && bare.replay.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uploaded_epub_is_indexed_once_and_bad_uploads_say_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    build_index(dir.path(), &[ALICE]);
    let h = Harness::with(
        |s| {
            s.with_index(dir.path())
                .with_limits(limits(|l| l.max_book_bytes = 300_000))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let upload = |bytes: Vec<u8>| {
        h.post("/v1/books")
            .header("content-type", "application/epub+zip")
            .body(bytes)
            .send()
    };
    let r = upload(epub(KUSAMAKURA)).await.expect("send");
    assert_eq!(r.status(), 201);
    let added: Value = r.json().await.expect("json");
    assert_eq!(added["added"], true);
    assert!(added["title"].as_str().expect("title").contains("草枕"));
    assert!(added["passages"].as_u64().expect("count") > 10);
    let r = upload(epub(KUSAMAKURA)).await.expect("send");
    assert_eq!(r.status(), 200);
    let again: Value = r.json().await.expect("json");
    assert_eq!(
        (again["added"].clone(), &again["key"]),
        (json!(false), &added["key"])
    );
    assert_eq!(books_of(&h).await.len(), 2);

    // The uploaded book answers at once.
    let key = added["key"].as_str().expect("key");
    h.replay.insert("k", Script::chat(&["ok"]));
    let r = h
        .post("/v1/chat/completions")
        .json(&json!({"model": "k", "stream": true,
                      "messages": [{"role": "user", "content": "智に働けば角が立つ"}],
                      "citeflow": {"book": key, "top_k": 1}}))
        .send()
        .await
        .expect("send");
    read_sse(r, usize::MAX).await;
    assert!(system_prompt(&h).contains(&format!("[[{key}#p")));

    for (bytes, status, code) in [
        (b"PK\x03\x04 not really a zip".to_vec(), 400, "invalid_epub"),
        (b"hello".to_vec(), 400, "invalid_epub"),
        (Vec::new(), 400, "invalid_request"),
        (epub(ALICE), 413, "body_too_large"),
    ] {
        let r = upload(bytes).await.expect("send");
        assert_eq!(r.status().as_u16(), status);
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(!v["error"]["message"].as_str().expect("message").is_empty());
    }

    let bare = Harness::start().await;
    let r = bare
        .post("/v1/books")
        .header("content-type", "application/epub+zip")
        .body(epub(KUSAMAKURA))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 409);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "no_book_index");
}

/// `GET /v1/books/{key}/read?cfi=…` for `cfi`.
async fn read_at(h: &Harness, key: &str, cfi: &str) -> (u16, Value) {
    let r = h
        .get(&format!("/v1/books/{key}/read"))
        .query(&[("cfi", cfi)])
        .send()
        .await
        .expect("send");
    let status = r.status().as_u16();
    (status, r.json().await.expect("json"))
}

/// The marked segments of a reading, paragraphs joined by a blank line.
fn marked_segments(v: &Value) -> String {
    let mut parts = Vec::new();
    for p in v["paragraphs"].as_array().expect("paragraphs") {
        let marked: String = p["segments"]
            .as_array()
            .expect("segments")
            .iter()
            .filter(|s| s["marked"] == true)
            .map(|s| s["text"].as_str().expect("text"))
            .collect();
        if !marked.is_empty() {
            parts.push(marked);
        }
    }
    parts.join("\n\n")
}

#[tokio::test]
async fn a_cited_passage_opens_its_chapter_with_the_passage_marked() {
    let dir = tempfile::tempdir().expect("tempdir");
    // An index written without the book files, as citeflow before 0.1 wrote it.
    let alice = build_index(dir.path(), &[ALICE]).remove(0);
    let h = Harness::with(
        |s| {
            s.with_index(dir.path())
                .with_limits(limits(|l| l.max_reading_chars = 2_000))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let key = alice[0].book_key.clone();
    let p = &alice[alice.len() / 2];
    let (status, v) = read_at(&h, &key, &p.cfi.to_string()).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (404, json!("book_file_missing")),
        "{v}"
    );
    assert!(v["error"]["message"]
        .as_str()
        .expect("message")
        .contains("add the book again"));

    // Adding it again (unchanged, so not re-indexed) keeps its file.
    let r = h
        .post("/v1/books")
        .header("content-type", "application/epub+zip")
        .body(epub(ALICE))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    for p in [&alice[0], &alice[alice.len() / 2], &alice[alice.len() - 1]] {
        let (status, v) = read_at(&h, &key, &p.cfi.to_string()).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["object"], "citeflow.reading");
        assert_eq!(v["book"], json!(key));
        assert_eq!(v["title"], "Alice's Adventures in Wonderland");
        assert_eq!(v["chapter_index"], json!(p.chapter_index));
        assert_eq!(v["chapter_title"], json!(p.chapter_title));
        assert_eq!(v["href"], json!(p.href));
        assert_eq!(v["marked_text"], json!(p.text), "{}", p.cfi);
        assert_eq!(marked_segments(&v), p.text, "{}", p.cfi);
        // Cut to about max_reading_chars around the passage; what is cut is counted.
        let shown: usize = v["paragraphs"]
            .as_array()
            .expect("paragraphs")
            .iter()
            .flat_map(|q| q["segments"].as_array().expect("segments").clone())
            .map(|s| s["text"].as_str().expect("text").chars().count())
            .sum();
        assert!(
            shown <= 2_000 || shown <= p.text.chars().count() + 2_000,
            "{shown}"
        );
        let first = v["paragraphs"][0]["index"].as_u64().expect("index");
        assert_eq!(v["omitted"]["before"], json!(first));
    }
    let middle = &alice[alice.len() / 2];
    let (_, v) = read_at(&h, &key, &middle.cfi.to_string()).await;
    let omitted = &v["omitted"];
    assert!(
        omitted["before"].as_u64().expect("n") + omitted["after"].as_u64().expect("n") > 0,
        "a 2,000-character window cuts a chapter of Alice: {omitted}"
    );
    // The chapters before and after: titled, and their CFIs open them at their start.
    let next = &v["next_chapter"];
    assert_eq!(next["index"], json!(middle.chapter_index + 1), "{v}");
    let (status, n) = read_at(&h, &key, next["cfi"].as_str().expect("cfi")).await;
    assert_eq!(status, 200, "{n}");
    assert_eq!(n["chapter_index"], next["index"]);
    assert_eq!(n["chapter_title"], next["title"]);
    assert_eq!(n["previous_chapter"]["index"], json!(middle.chapter_index));
    let last = alice.last().expect("a passage");
    let (_, end) = read_at(&h, &key, &last.cfi.to_string()).await;
    assert_eq!(
        end["next_chapter"],
        Value::Null,
        "the last chapter has none after it"
    );
    assert!(end["previous_chapter"]["title"].is_string());

    // Each paragraph's CFI opens the book at that paragraph.
    let para = &v["paragraphs"][1];
    let (status, at) = read_at(&h, &key, para["cfi"].as_str().expect("cfi")).await;
    assert_eq!(status, 200);
    assert_eq!(at["mark"]["start"]["paragraph"], para["index"]);
    assert_eq!(at["mark"]["start"]["offset"], 0);

    // A Japanese vertical book, uploaded: its text, direction and language.
    let r = h
        .post("/v1/books")
        .header("content-type", "application/epub+zip")
        .body(epub(KUSAMAKURA))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 201);
    let k: Value = r.json().await.expect("json");
    let k = k["key"].as_str().expect("key").to_owned();
    let hit = &h
        .post(&format!("/v1/books/{k}/search"))
        .json(&json!({"query": "智に働けば角が立つ", "top_k": 1}))
        .send()
        .await
        .expect("send")
        .json::<Value>()
        .await
        .expect("json")["data"][0];
    let (status, v) = read_at(&h, &k, hit["locator"]["cfi"].as_str().expect("cfi")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["marked_text"], hit["text"]);
    assert!(v["marked_text"]
        .as_str()
        .expect("text")
        .contains("智に働けば角が立つ"));
    assert_eq!(v["page_progression"], "rtl");
    assert_eq!(v["language"], "ja-jp");
    // Ruby readings are not in the text: each base is a segment with its reading.
    assert_eq!(marked_segments(&v), hit["text"].as_str().expect("text"));
    let segments: Vec<&Value> = v["paragraphs"]
        .as_array()
        .expect("paragraphs")
        .iter()
        .flat_map(|q| q["segments"].as_array().expect("segments"))
        .collect();
    let chi = segments
        .iter()
        .find(|s| s["text"] == "智")
        .expect("智 is a base");
    assert_eq!(
        (chi["ruby"].clone(), chi["marked"].clone()),
        (json!("ち"), json!(true))
    );
    assert!(segments.iter().filter(|s| s.get("ruby").is_some()).count() > 20);

    // Errors name what was wrong.
    for (query, status, code, param, says) in [
        ("", 400, "invalid_request", json!("cfi"), "cfi is missing"),
        (
            "?cfi=epubcfi(/6/4!/4/x)",
            400,
            "invalid_request",
            json!("cfi"),
            "at byte 16: expected a number",
        ),
        (
            "?cfi=epubcfi(/6/400!/4/2/1:0)",
            404,
            "cfi_not_found",
            json!("cfi"),
            "(/400) has no target",
        ),
        (
            "?cfi=epubcfi(/6/4)&page=2",
            400,
            "invalid_request",
            Value::Null,
            "unknown field `page`",
        ),
    ] {
        let r = h
            .get(&format!("/v1/books/{key}/read{query}"))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), status, "{query}");
        let e: Value = r.json().await.expect("json");
        assert_eq!(
            (&e["error"]["code"], &e["error"]["param"]),
            (&json!(code), &param),
            "{e}"
        );
        let message = e["error"]["message"].as_str().expect("message");
        assert!(message.contains(says), "{query}: {message}");
    }
    let (status, v) = read_at(&h, "nope-000000", "epubcfi(/6/4)").await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (404, &json!("book_not_found"))
    );
    let (status, v) = read_at(&Harness::start().await, &key, "epubcfi(/6/4)").await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (404, &json!("book_not_found"))
    );
}

/// Twenty uploads of one book at once, with `ingests` read at a time: each answers 200 or
/// 201 with the same book, exactly one adds it, and the index (opened afresh from its
/// directory) holds it once, with its file kept whole and no temporary file left.
async fn same_book_uploaded_at_once(ingests: usize) {
    const UPLOADS: usize = 20;
    let dir = tempfile::tempdir().expect("tempdir");
    build_index(dir.path(), &[ALICE]);
    let h = Harness::with(
        |s| {
            s.with_index(dir.path())
                .with_limits(limits(|l| l.max_concurrent_ingests = ingests))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let bytes = epub(KUSAMAKURA);
    let uploads = (0..UPLOADS).map(|_| {
        h.post("/v1/books")
            .header("content-type", "application/epub+zip")
            .body(bytes.clone())
            .send()
    });
    let mut answers = Vec::new();
    for r in futures_util::future::join_all(uploads).await {
        let r = r.expect("send");
        let status = r.status().as_u16();
        let v: Value = r.json().await.expect("json");
        answers.push((status, v));
    }
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 201),
        "ingests {ingests}: statuses {statuses:?}, answers {answers:?}"
    );
    let added: Vec<&Value> = answers
        .iter()
        .filter(|(_, v)| v["added"] == json!(true))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(added.len(), 1, "ingests {ingests}: statuses {statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1);
    let key = added[0]["key"].as_str().expect("key").to_owned();
    let passages = added[0]["passages"].as_u64().expect("passages");
    assert!(passages > 10);
    for (status, v) in &answers {
        assert_eq!(
            (
                v["key"].as_str(),
                v["passages"].as_u64(),
                v["added"] == json!(true)
            ),
            (Some(key.as_str()), Some(passages), *status == 201),
            "{v}"
        );
    }

    // The server lists it once, beside the book it had.
    let listed = books_of(&h).await;
    let keys: Vec<&str> = listed.iter().filter_map(|b| b["key"].as_str()).collect();
    assert_eq!(keys.iter().filter(|k| **k == key).count(), 1, "{keys:?}");
    assert_eq!(listed.len(), 2, "{keys:?}");

    // The index on disk: the book's passages once, its file whole, nothing temporary left.
    drop(h);
    let index = Index::open_or_create(dir.path()).expect("index");
    let books = index.books().expect("books");
    let book = books.iter().find(|b| b.key == key).expect("the book");
    assert_eq!(book.passages as u64, passages);
    let alice = books.iter().find(|b| b.key != key).expect("alice");
    assert_eq!(index.len(), passages + alice.passages as u64);
    assert_eq!(index.epub(&key).expect("read").as_deref(), Some(&bytes[..]));
    let mut files: Vec<String> = std::fs::read_dir(dir.path().join("epub"))
        .expect("epub dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, [format!("{key}.epub")]);
}

// https://github.com/citeflow/citeflow/issues/38
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn regression_38_one_book_uploaded_twenty_times_at_once_is_added_once() {
    same_book_uploaded_at_once(2).await;
    same_book_uploaded_at_once(20).await;
}

/// The `.part` files of uploads being received, in the index directory's `uploads/`.
fn spooled(dir: &Path) -> Vec<u64> {
    std::fs::read_dir(dir.join("uploads"))
        .expect("uploads dir")
        .map(|e| e.expect("entry"))
        .filter(|e| e.file_name().to_string_lossy().ends_with(".part"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .collect()
}

// https://github.com/citeflow/citeflow/issues/38
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn regression_38_uploads_wait_for_the_pool_on_disk_and_leave_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    build_index(dir.path(), &[ALICE]);
    let bytes = epub(KUSAMAKURA);
    let max_book_bytes = bytes.len() + 10;
    let h = Harness::with(
        |s| {
            s.with_index(dir.path()).with_limits(limits(|l| {
                l.max_concurrent_ingests = 1;
                l.max_book_bytes = max_book_bytes;
            }))
        },
        Arc::new(MemoryStore::new()),
    )
    .await;
    let upload = |body: reqwest::Body| {
        h.post("/v1/books")
            .header("content-type", "application/epub+zip")
            .body(body)
            .send()
    };

    // Twelve uploads at the size limit, read one at a time: the ones waiting for the pool
    // wait as whole files on disk, not in memory.
    let mut uploads = futures_util::future::join_all((0..12).map(|_| upload(bytes.clone().into())));
    let mut most_waiting = 0;
    let answers = loop {
        tokio::select! {
            answers = &mut uploads => break answers,
            () = tokio::time::sleep(std::time::Duration::from_millis(5)) => {
                let whole = spooled(dir.path())
                    .into_iter()
                    .filter(|n| *n == bytes.len() as u64)
                    .count();
                most_waiting = most_waiting.max(whole);
            }
        }
    };
    let mut statuses = Vec::new();
    for r in answers {
        statuses.push(r.expect("send").status().as_u16());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [[200; 11].as_slice(), &[201]].concat());
    assert!(
        most_waiting >= 2,
        "at most {most_waiting} whole uploads seen on disk"
    );
    assert_eq!(spooled(dir.path()), Vec::<u64>::new());

    // Past the limit: refused by its declared length, or (sent in chunks without one) as
    // soon as it passes the limit; nothing is kept.
    let mut over = bytes.clone();
    over.resize(max_book_bytes + 1, 0);
    let r = upload(over.clone().into()).await.expect("send");
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "body_too_large");
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        over.chunks(16 << 10).map(|c| Ok(c.to_vec())).collect();
    let r = upload(reqwest::Body::wrap_stream(futures_util::stream::iter(
        chunks,
    )))
    .await
    .expect("send");
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "body_too_large");
    assert_eq!(spooled(dir.path()), Vec::<u64>::new());

    // A client that leaves in the middle of its upload: its file goes with it.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tx.send(Ok(bytes[..100_000].to_vec()))
        .await
        .expect("first half");
    let body = reqwest::Body::wrap_stream(tokio_stream_of(rx));
    let pending = tokio::spawn(upload(body));
    let start = std::time::Instant::now();
    while spooled(dir.path()) != [100_000] {
        assert!(start.elapsed().as_secs() < 10, "{:?}", spooled(dir.path()));
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    pending.abort();
    drop(tx);
    let start = std::time::Instant::now();
    while !spooled(dir.path()).is_empty() {
        assert!(start.elapsed().as_secs() < 10, "{:?}", spooled(dir.path()));
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // The book is there once, as the uploads left it.
    let listed = books_of(&h).await;
    assert_eq!(listed.len(), 2);
}

/// A receiver as a stream of body chunks.
fn tokio_stream_of<T: Send + 'static>(
    rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
}
