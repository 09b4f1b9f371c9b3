//! Each dialect's typed reading of a payload's text gives what reading its tree gives: the
//! same events, errors and unknown types, for every payload of the recorded streams and for
//! each of them with one value swapped for a value of another kind.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::read::ProviderEvent;
use super::reader::{Dialect, Reader};

fn shared_dir() -> PathBuf {
    std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

/// Each recording's payloads.
fn recordings() -> Vec<(String, Vec<Value>)> {
    let dir = shared_dir().join("fixtures/streams");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".chunks.txt") {
            let text = std::fs::read_to_string(&p).unwrap();
            let lines = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            out.push((name, lines));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        out.len(),
        17,
        "the 17 provider recordings in {}",
        dir.display()
    );
    // Gemini generateContent has no recording: a stream of its shape.
    out.push((
        "gemini (written here)".into(),
        vec![
            json!({"candidates": [{"content": {"parts": [{"text": "Caf\u{e9} "}, {"text": "x", "thought": true}]}}]}),
            json!({"candidates": [{"content": {"parts": [{"text": "is open."}]}, "groundingMetadata": {
                "webSearchQueries": ["cafe", 3],
                "groundingChunks": [{"web": {"uri": "https://a.example/", "title": "A"}}, {"retrievedContext": {"uri": "", "title": "R", "text": "snip"}}],
                "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 5, "text": "Café"}, "groundingChunkIndices": [0, 1]}, {"segment": {"endIndex": 3}}]}}]}),
            json!({"usageMetadata": {"totalTokenCount": 3}}),
        ],
    ));
    out
}

/// Every value of `v` (depth first, the root left out), by its path.
fn paths(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                at.push(Step::Key(k.clone()));
                out.push(at.clone());
                paths(x, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(Step::Index(i));
                out.push(at.clone());
                paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn at_mut<'v>(v: &'v mut Value, path: &[Step]) -> &'v mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

type Outcome = (Result<(), String>, Vec<ProviderEvent>, Vec<String>);

/// Reads `payload` both ways from `reader`'s state; `None` when the text is left to the tree.
fn both(reader: &Reader, text: &str, payload: &Value) -> Option<(Outcome, Outcome)> {
    let mut typed = reader.clone();
    let mut out = Vec::new();
    let r = typed.read_text(text, 1, &mut out);
    if matches!(r, Ok(false)) {
        assert!(out.is_empty(), "{text}");
        return None;
    }
    let a = (
        r.map(drop).map_err(|e| e.to_string()),
        out,
        typed.unknown_types().to_vec(),
    );
    let mut tree = reader.clone();
    let mut out = Vec::new();
    let r = tree.read(payload, 1, &mut out);
    let b = (
        r.map_err(|e| e.to_string()),
        out,
        tree.unknown_types().to_vec(),
    );
    Some((a, b))
}

#[test]
fn typed_text_reads_as_the_tree_reads_with_any_value_swapped() {
    let swaps = [
        json!(null),
        json!(7),
        json!(-1),
        json!(1.5),
        json!(true),
        json!("x\u{e9}\n"),
        json!([]),
        json!({}),
        json!([1, "a"]),
    ];
    let mut compared = 0usize;
    for (name, payloads) in recordings() {
        let dialect = Dialect::detect(&payloads[0]).unwrap_or(Dialect::Gemini);
        let mut reader = Reader::new(dialect);
        // A stride keeps the test short: about 40 payloads of each stream are mutated.
        let stride = payloads.len().div_ceil(40);
        for (i, payload) in payloads.iter().enumerate() {
            let text = payload.to_string();
            let (a, b) = both(&reader, &text, payload).expect("a recorded payload reads typed");
            assert_eq!(a, b, "{name} payload {i}");
            compared += 1;
            if i % stride == 0 {
                let mut all = Vec::new();
                paths(payload, &mut Vec::new(), &mut all);
                for path in all.iter().take(300) {
                    for swap in &swaps {
                        let mut p = payload.clone();
                        *at_mut(&mut p, path) = swap.clone();
                        let text = p.to_string();
                        if let Some((a, b)) = both(&reader, &text, &p) {
                            assert_eq!(a, b, "{name} payload {i} as {text}");
                            compared += 1;
                        }
                    }
                }
            }
            let _ = reader.read(payload, 1, &mut Vec::new());
        }
    }
    assert!(compared > 10_000, "{compared}");
}

#[test]
fn text_the_typed_read_leaves_to_the_tree_is_read_as_the_tree_reads_it() {
    let mut r = Reader::new(Dialect::Anthropic);
    let mut out = Vec::new();
    // A duplicate key: the tree keeps the last.
    let dup =
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"a","text":"b"}}"#;
    assert!(!r.read_text(dup, 1, &mut out).unwrap());
    assert!(out.is_empty());
    r.read(&serde_json::from_str(dup).unwrap(), 1, &mut out)
        .unwrap();
    assert_eq!(out, [ProviderEvent::Text { text: "b".into() }]);
    // Not an object, not JSON.
    assert!(!r.read_text("[1]", 1, &mut out).unwrap());
    assert!(!r.read_text("{\"type\": tru", 1, &mut out).unwrap());
    // Escapes are read (copied), not borrowed.
    out.clear();
    let esc =
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"caf\u00e9\n\"q\""}}"#;
    assert!(r.read_text(esc, 1, &mut out).unwrap());
    assert_eq!(
        out,
        [ProviderEvent::Text {
            text: "café\n\"q\"".into()
        }]
    );
}

/// Every event of a stream fed its payloads one by one, errors last.
fn stream_events(payloads: &[Value], json: bool) -> Vec<String> {
    use crate::{Numbering, Settings, Sources};
    let sources = Sources::from_vec(Vec::new()).unwrap();
    let mut s = super::ProviderStream::new(Settings::default(), sources, Numbering::new());
    let mut out = Vec::new();
    let drain = |s: &mut super::ProviderStream, out: &mut Vec<String>| {
        while let Some(e) = s.poll_event() {
            out.push(serde_json::to_string(&e).unwrap());
        }
    };
    for (i, p) in payloads.iter().enumerate() {
        let line = i as u64 + 1;
        let r = if json {
            s.write_payload_json(&p.to_string(), line)
        } else {
            s.write_payload(p, line)
        };
        drain(&mut s, &mut out);
        if let Err(e) = r {
            out.push(format!("error: {e}"));
            return out;
        }
    }
    if let Err(e) = s.end() {
        out.push(format!("error: {e}"));
    }
    drain(&mut s, &mut out);
    out
}

#[test]
fn a_stream_fed_json_text_gives_the_events_of_one_fed_parsed_payloads() {
    for (name, payloads) in recordings() {
        let tree = stream_events(&payloads, false);
        assert!(tree.len() > 2, "{name}: {tree:?}");
        assert_eq!(stream_events(&payloads, true), tree, "{name}");
    }
    // Text that is not JSON is a typed error naming its line; what came before stays.
    use crate::{Numbering, Settings, Sources};
    let sources = Sources::from_vec(Vec::new()).unwrap();
    let mut s = super::ProviderStream::new(Settings::default(), sources, Numbering::new());
    s.write_payload_json(r#""Hello ""#, 1).unwrap();
    let e = s.write_payload_json("{\"choices\": [", 2).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    // A duplicate key is read as the tree reads it: the last wins.
    let mut s = super::ProviderStream::new(
        Settings::default(),
        Sources::from_vec(Vec::new()).unwrap(),
        Numbering::new(),
    );
    let dup = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","text":"b"}}"#;
    s.write_payload_json(
        r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c"}}"#,
        1,
    )
    .unwrap();
    s.write_payload_json(
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        2,
    )
    .unwrap();
    s.write_payload_json(dup, 3).unwrap();
    s.end().unwrap();
    let mut text = String::new();
    while let Some(e) = s.poll_event() {
        if let crate::Event::Text { text: t, .. } = e {
            text.push_str(&t);
        }
    }
    assert_eq!(text, "b");
}
