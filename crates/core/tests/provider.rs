//! Provider streams: the recorded ones in `../shared/fixtures/streams/` cut anywhere, and
//! generated ones with non-ASCII text, spans and late citations.

use std::path::PathBuf;

use citeflow_core::provider::{Framing, ProviderStream};
use citeflow_core::{Event, Numbering, Settings, Sources};
use proptest::prelude::*;
use serde_json::{json, Value};

fn shared_dir() -> PathBuf {
    std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

pub(crate) fn recordings() -> Vec<(String, Vec<u8>)> {
    let dir = shared_dir().join("fixtures/streams");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("shared fixtures (set CITEFLOW_SHARED_DIR)") {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".chunks.txt") {
            out.push((name, std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    assert_eq!(out.len(), 17, "the 17 provider recordings");
    out
}

/// The recording as an SSE stream: `data: <payload>` and a blank line per payload.
fn as_sse(jsonl: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in jsonl.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.extend_from_slice(b"\n\n");
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

/// Every event of `bytes` fed in pieces cut at `cuts`, as JSON.
fn run(bytes: &[u8], cuts: &[usize]) -> Vec<Value> {
    run_with(&Settings::default(), bytes, cuts)
}

/// As [`run`], with `settings`.
pub(crate) fn run_with(settings: &Settings, bytes: &[u8], cuts: &[usize]) -> Vec<Value> {
    let mut s = ProviderStream::new(settings.clone(), Sources::new(), Numbering::new());
    let mut events = Vec::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for c in cuts.into_iter().chain([bytes.len()]) {
        s.write(&bytes[at..c]).unwrap();
        at = c;
        events.extend(std::iter::from_fn(|| s.poll_event()));
    }
    s.end().unwrap();
    events.extend(std::iter::from_fn(|| s.poll_event()));
    merge_text(events)
}

/// Events as JSON with adjacent texts merged (how text is cut depends on the chunking).
pub(crate) fn merge_text(events: Vec<Event>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for e in events {
        let v = serde_json::to_value(&e).unwrap();
        if v["type"] == "text" {
            if let Some(last) = out.last_mut().filter(|l| l["type"] == "text") {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap(),
                    v["text"].as_str().unwrap()
                );
                last["text"] = Value::String(joined);
                continue;
            }
        }
        out.push(v);
    }
    out
}

#[test]
fn recordings_read_as_jsonl_and_as_sse_give_the_same_events() {
    for (name, data) in recordings() {
        let jsonl = run(&data, &[]);
        let sse = run(&as_sse(&data), &[]);
        assert_eq!(jsonl, sse, "{name}");
        assert!(jsonl.iter().any(|e| e["type"] == "text"), "{name}: no text");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Cut anywhere, inside JSON and inside UTF-8 characters, every recording gives the same
    /// events as read whole.
    #[test]
    fn recordings_cut_anywhere_give_the_same_events(
        cuts in proptest::collection::vec(any::<usize>(), 1..40),
    ) {
        for (name, data) in recordings() {
            let sse = as_sse(&data);
            let whole = run(&sse, &[]);
            let cut = run(&sse, &cuts);
            prop_assert_eq!(&whole, &cut, "{}", name);
        }
    }
}

/// `text[start..end]` in `unit`.
fn slice(text: &str, start: u64, end: u64, unit: &str) -> String {
    match unit {
        "bytes" => text[start as usize..end as usize].to_owned(),
        "chars" => text
            .chars()
            .skip(start as usize)
            .take((end - start) as usize)
            .collect(),
        _ => {
            let u: Vec<u16> = text.encode_utf16().collect();
            String::from_utf16(&u[start as usize..end as usize]).unwrap()
        }
    }
}

/// Checks the offset and late-binding properties of one run's events.
fn check(events: &[Value]) -> Result<(), TestCaseError> {
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for c in events.iter().filter(|e| e["type"] == "citation") {
        let number = format!("[{}]", c["number"]);
        let late = c["provider"]["late"] == true;
        let span = &c["provider"]["span"];
        if span.is_object() {
            let cut = |u: &str| {
                slice(
                    &streamed,
                    span["start"][u].as_u64().unwrap(),
                    span["end"][u].as_u64().unwrap(),
                    u,
                )
            };
            prop_assert_eq!(cut("bytes"), cut("chars"));
            prop_assert_eq!(cut("bytes"), cut("utf16"));
        }
        if late {
            let end = span["end"]["bytes"].as_u64().unwrap() as usize;
            prop_assert_eq!(c["byte_offset"].as_u64().unwrap() as usize, end);
            let start = if c["provider"]["replaces_span"] == true {
                span["start"]["bytes"].as_u64().unwrap() as usize
            } else {
                end
            };
            edits.push((start, end, number));
        } else {
            for (k, unit) in [
                ("byte_offset", "bytes"),
                ("char_offset", "chars"),
                ("utf16_offset", "utf16"),
            ] {
                let at = c[k].as_u64().unwrap();
                prop_assert_eq!(
                    slice(&streamed, at, at + number.len() as u64, unit),
                    number.clone()
                );
            }
        }
    }
    let done = events.last().unwrap();
    prop_assert_eq!(&done["type"], "done");
    match done["text"].as_str() {
        None => prop_assert!(edits.is_empty(), "late citations need done.text"),
        Some(text) => {
            // The final text is the streamed text with each late number at its span's end:
            // nothing shown was changed.
            let mut want = String::new();
            let mut at = 0;
            edits.sort_by_key(|e| e.1);
            for (s, e, n) in &edits {
                want.push_str(&streamed[at..*s]);
                want.push_str(n);
                at = *e;
            }
            want.push_str(&streamed[at..]);
            prop_assert_eq!(text, want.as_str());
        }
    }
    Ok(())
}

#[test]
fn recorded_citations_point_where_they_say() {
    for (name, data) in recordings() {
        let events = run(&data, &[]);
        check(&events).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// A Cohere stream over `pieces` with citations of `spans` (characters), after the text.
fn cohere_stream(pieces: &[String], spans: &[(usize, usize, usize)]) -> Vec<u8> {
    let mut lines = vec![
        json!({"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
    ];
    for p in pieces {
        lines.push(json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": p}}}}));
    }
    lines.push(json!({"type": "content-end", "index": 0}));
    for (s, e, doc) in spans {
        lines.push(json!({"type": "citation-start", "index": 0, "delta": {"message": {"citations": {
            "start": s, "end": e, "text": "q",
            "sources": [{"type": "document", "id": format!("doc:{doc}"), "document": {"title": format!("Doc {doc}")}}]
        }}}}));
    }
    lines.push(json!({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}));
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// A Responses stream where each annotation (characters) follows the delta `after`.
fn responses_stream(pieces: &[String], spans: &[(usize, usize, usize)], after: usize) -> Vec<u8> {
    let mut lines = vec![json!({"type": "response.created", "response": {}})];
    for (i, p) in pieces.iter().enumerate() {
        lines.push(json!({"type": "response.output_text.delta", "item_id": "m", "content_index": 0, "delta": p}));
        if i == after.min(pieces.len() - 1) {
            for (s, e, doc) in spans {
                lines.push(json!({"type": "response.output_text.annotation.added", "item_id": "m", "content_index": 0,
                    "annotation": {"type": "url_citation", "start_index": s, "end_index": e,
                        "url": format!("https://example.org/{doc}"), "title": format!("Doc {doc}")}}));
            }
        }
    }
    lines.push(json!({"type": "response.output_text.done", "item_id": "m", "content_index": 0}));
    lines.push(json!({"type": "response.completed", "response": {}}));
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn piece() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z .é漢😀\\[\\]()]{0,12}").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Non-ASCII text, spans anywhere, citations before and after their text: every citation's
    /// three offsets slice the same text, late numbers never change shown text, and any byte
    /// chunking gives the same events.
    #[test]
    fn generated_streams_keep_offsets_and_shown_text(
        pieces in proptest::collection::vec(piece(), 1..8),
        raw_spans in proptest::collection::vec((any::<usize>(), any::<usize>(), 0usize..4), 0..5),
        after in 0usize..8,
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        responses in any::<bool>(),
    ) {
        let total: usize = pieces.iter().map(|p| p.chars().count()).sum();
        let spans: Vec<(usize, usize, usize)> = raw_spans
            .into_iter()
            .map(|(a, b, d)| {
                let (a, b) = (a % (total + 1), b % (total + 1));
                (a.min(b), a.max(b).max(a.min(b) + 1), d)
            })
            .collect();
        let bytes = if responses {
            responses_stream(&pieces, &spans, after)
        } else {
            cohere_stream(&pieces, &spans)
        };
        let whole = run(&bytes, &[]);
        check(&whole)?;
        let cut = run(&bytes, &cuts);
        prop_assert_eq!(&whole, &cut);
        let sse = run(&as_sse(&bytes), &cuts);
        prop_assert_eq!(&whole, &sse);
    }
}

#[test]
fn a_payload_of_no_known_api_is_an_error_naming_its_line() {
    let mut s = ProviderStream::new(Settings::default(), Sources::new(), Numbering::new())
        .with_framing(Framing::Jsonl);
    let e = s.write(b"\n{\"foo\": 1, \"bar\": 2}\n").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("line 2: cannot tell which provider API"),
        "{msg}"
    );
    assert!(msg.contains("keys: bar, foo"), "{msg}");

    let mut s = ProviderStream::new(Settings::default(), Sources::new(), Numbering::new());
    s.write(b"{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n")
        .unwrap();
    let e = s.write(b"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":7}}\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 2: anthropic payload: expected `text` to be a string"
    );
    // The error is fatal: later input is refused, naming the first error.
    let e = s.write(b"{\"type\":\"ping\"}\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "the rewriter failed earlier: line 2: anthropic payload: expected `text` to be a string"
    );
    let mut s = ProviderStream::new(Settings::default(), Sources::new(), Numbering::new())
        .with_dialect(citeflow_core::provider::Dialect::Anthropic);
    let e = s.write(b"42\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1: anthropic payload: expected a JSON object, got a number"
    );
}

#[test]
fn an_unknown_stream_with_no_text_is_not_a_silent_empty_answer() {
    let mut s = ProviderStream::new(Settings::default(), Sources::new(), Numbering::new());
    s.write(b"{\"type\":\"message_start\",\"message\":{}}\n{\"type\":\"brand_new_event\"}\n")
        .unwrap();
    let e = s.end().unwrap_err();
    assert_eq!(
        e.to_string(),
        "the anthropic stream had no answer text; event types not read: brand_new_event"
    );
}

#[test]
fn the_same_source_cited_many_times_keeps_one_number_and_markers_share_the_table() {
    // A marker the model wrote and a provider citation of the same url share one number.
    let sources = Sources::from_vec(vec![citeflow_core::Source::new("source_1")
        .with_url("https://Example.org:443/a?utm_source=openai#x")])
    .unwrap();
    let mut s = ProviderStream::new(Settings::default(), sources, Numbering::new());
    let lines = [
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Marker [[source_1]]. Cited"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {
            "type": "web_search_result_location", "url": "https://example.org/a", "title": "A", "cited_text": "q1"}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {
            "type": "web_search_result_location", "url": "https://example.org/a", "title": "A", "cited_text": "q2"}}}),
        json!({"type": "content_block_stop", "index": 0}),
    ];
    for l in lines {
        s.write_payload(&l, 1).unwrap();
    }
    s.end().unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| s.poll_event()).collect();
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Marker [1]. Cited[1]");
    let Some(Event::Done { sources, .. }) = events.last() else {
        panic!("no done")
    };
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].citations, 2);
}

/// The final answer of a stream of payloads.
fn final_answer(lines: &[Value]) -> (String, Vec<Value>) {
    let mut bytes = Vec::new();
    for l in lines {
        bytes.extend_from_slice(l.to_string().as_bytes());
        bytes.push(b'\n');
    }
    let events = run(&bytes, &[]);
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let done = events.last().unwrap();
    let text = done["text"].as_str().map_or(streamed, str::to_owned);
    (text, events)
}

#[test]
fn gemini_grounding_counts_bytes_of_non_ascii_text() {
    // "東京は日本の首都です。" is 33 bytes; "東京は日本の首都です" (the cited segment) 30.
    let lines = [
        json!({"candidates": [{"content": {"parts": [{"text": "東京は日本の"}], "role": "model"}}]}),
        json!({"candidates": [{"content": {"parts": [{"text": "首都です。人口は多い。"}], "role": "model"},
            "groundingMetadata": {
                "webSearchQueries": ["東京 首都"],
                "groundingChunks": [
                    {"web": {"uri": "https://ja.wikipedia.org/wiki/東京", "title": "wikipedia.org"}},
                    {"web": {"uri": "https://example.jp/tokyo", "title": "example.jp"}}
                ],
                "groundingSupports": [
                    {"segment": {"startIndex": 0, "endIndex": 30, "text": "東京は日本の首都です"}, "groundingChunkIndices": [0, 1]},
                    {"segment": {"startIndex": 33, "endIndex": 48, "text": "人口は多い"}, "groundingChunkIndices": [1]}
                ]}, "finishReason": "STOP"}]}),
    ];
    let (text, events) = final_answer(&lines);
    assert_eq!(text, "東京は日本の首都です[1][2]。人口は多い[2]。");
    let citations: Vec<&Value> = events.iter().filter(|e| e["type"] == "citation").collect();
    assert_eq!(citations.len(), 3);
    let span = &citations[0]["provider"]["span"];
    assert_eq!(span["end"], json!({"bytes": 30, "chars": 10, "utf16": 10}));
    assert_eq!(citations[0]["provider"]["quote"], "東京は日本の首都です");
    check(&events).unwrap();
}

#[test]
fn chat_annotations_replace_the_models_link_or_follow_their_span() {
    let link = "([example.org](https://example.org/a?utm_source=openai))";
    let lines = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Café facts "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": link}}]}),
        json!({"choices": [{"index": 0, "delta": {"annotations": [{"type": "url_citation", "url_citation": {
            "start_index": 11, "end_index": 11 + link.chars().count(), "url": "https://example.org/a?utm_source=openai", "title": "Example"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": " and more."}, "finish_reason": "stop"}]}),
    ];
    let (text, events) = final_answer(&lines);
    assert_eq!(text, "Café facts [1] and more.");
    // The link was still held when its annotation came: it never reached the screen.
    assert!(events
        .iter()
        .all(|e| e["type"] != "text" || !e["text"].as_str().unwrap().contains("](")));
    assert_eq!(
        events.last().unwrap()["sources"][0]["source"]["title"],
        "Example"
    );
}

#[test]
fn openai_chat_completion_of_a_local_model_is_plain_text() {
    let lines = [
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "a [x](y) b"}}]}),
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ];
    let (text, _) = final_answer(&lines);
    assert_eq!(text, "a [x](y) b");
}

/// Every event of `bytes` (cut at `cuts`) with numbers handed out by the caller, as a shared
/// store would: each [`Event::NumberNeeded`] answered at once with the key's number.
fn run_with_store(bytes: &[u8], cuts: &[usize]) -> Vec<Value> {
    run_with_store_settings(&Settings::default(), bytes, cuts)
}

/// As [`run`], with numbers from a store (`settings` with external numbers).
pub(crate) fn run_with_store_settings(
    settings: &Settings,
    bytes: &[u8],
    cuts: &[usize],
) -> Vec<Value> {
    let settings = settings
        .clone()
        .with_number_source(citeflow_core::NumberSource::External);
    let mut s = ProviderStream::new(settings, Sources::new(), Numbering::new());
    let mut store: Vec<String> = Vec::new();
    let mut events = Vec::new();
    let mut pump = |s: &mut ProviderStream, events: &mut Vec<Event>| {
        while let Some(e) = s.poll_event() {
            if let Event::NumberNeeded { key, .. } = &e {
                let n = match store.iter().position(|k| k == key) {
                    Some(i) => i + 1,
                    None => {
                        store.push(key.clone());
                        store.len()
                    }
                };
                s.provide_number(key, u32::try_from(n).unwrap()).unwrap();
                continue;
            }
            events.push(e);
        }
    };
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for c in cuts.into_iter().chain([bytes.len()]) {
        s.write(&bytes[at..c]).unwrap();
        at = c;
        pump(&mut s, &mut events);
    }
    s.end().unwrap();
    pump(&mut s, &mut events);
    merge_text(events)
}

#[test]
fn numbers_from_a_store_give_the_same_events_as_local_numbers() {
    // Several citations of one block (Anthropic, Bedrock), url-only ones at a part's end (xAI)
    // and late ones each wait for their number; the work after them waits too, in order.
    for (name, bytes) in recordings() {
        let local = run(&bytes, &[]);
        for cuts in [vec![], vec![1, 100, 1_000, 5_000, 20_000]] {
            let stored = run_with_store(&bytes, &cuts);
            assert_eq!(stored, local, "{name} cut at {cuts:?}");
        }
    }
}
