//! Fuzzes `ChatChunk`, the plain chat chunk read and rewritten in its own text: any text it
//! reads must be JSON whose `choices[0].delta.content` is the content it read, and its splice
//! must be JSON that means the chunk with that content replaced, the annotations added to the
//! delta and the `citeflow` member added (what the server's general path makes of it). The
//! fuzzer's first byte chooses the new content and whether there are annotations; the rest is
//! the chunk's text (seed it with recorded chat chunks: `fuzz/seed-chat-chunk.sh`).
#![no_main]

use citeflow_core::provider::ChatChunk;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|bytes: &[u8]| {
    let Some((&choice, rest)) = bytes.split_first() else {
        return;
    };
    let Ok(data) = std::str::from_utf8(rest) else {
        return;
    };
    let Some(p) = ChatChunk::read(data) else {
        return;
    };
    let mut whole: Value = serde_json::from_str(data).expect("a chunk ChatChunk reads is JSON");
    assert_eq!(
        whole["choices"][0]["delta"]["content"].as_str(),
        Some(p.content()),
        "{data}"
    );
    let new_text = ["", "x", "「草」[1]", "\"\\\n\u{1}"][usize::from(choice % 4)];
    let annotations: Vec<Value> = if choice & 4 == 0 {
        Vec::new()
    } else {
        vec![json!({"type": "url_citation", "url_citation": {"url": "https://a", "start_index": 0, "end_index": 1}})]
    };
    let citeflow = json!({"stream_id": "s", "events": []});
    let out = p.splice(new_text, &annotations, &citeflow.to_string());
    let got: Value = serde_json::from_str(&out).expect("the splice is JSON");
    let delta = &mut whole["choices"][0]["delta"];
    delta["content"] = json!(new_text);
    if !annotations.is_empty() {
        delta["annotations"] = json!(annotations);
    }
    whole["citeflow"] = citeflow;
    assert_eq!(got, whole, "{data}");
});
