//! Fuzzes the provider stream readers: the fuzzer's bytes choose a dialect and build a stream
//! of that API's events (text with non-ASCII characters, citations with any offsets, search
//! results, blocks, odd shapes), framed as JSONL or SSE and cut anywhere. Nothing may panic,
//! and any cut must give the events of the whole stream.
#![no_main]

use citeflow_core::provider::ProviderStream;
use citeflow_core::{Event, Numbering, Settings, Sources};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }
    fn num(&mut self) -> u64 {
        match self.byte() % 8 {
            0 => u64::from(self.byte()) << 40,
            _ => u64::from(self.byte() % 64),
        }
    }
    fn text(&mut self) -> String {
        const PIECES: [&str; 12] = [
            "a", " ", "é", "漢", "😀", "[", "]", "(", ")", "[[source_1]]", "【1】", "\n",
        ];
        let n = self.byte() % 8;
        (0..n).map(|_| PIECES[usize::from(self.byte()) % PIECES.len()]).collect()
    }
}

fn payload(dialect: u8, b: &mut Bytes<'_>) -> Value {
    let k = b.byte() % 6;
    let t = b.text();
    let (s, e) = (b.num(), b.num());
    let url = format!("https://e.org/{}", b.byte() % 4);
    match dialect % 7 {
        0 => match k {
            0 => json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": t}}),
            1 | 2 => json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
            3 => json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {"type": "web_search_result_location", "url": url, "title": t, "cited_text": t}}}),
            4 => json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {"type": "char_location", "document_index": s, "start_char_index": s, "end_char_index": e}}}),
            _ => json!({"type": "content_block_stop", "index": 0}),
        },
        1 => match k {
            0 | 1 | 2 => json!({"type": "response.output_text.delta", "item_id": "m", "content_index": b.byte() % 2, "delta": t}),
            3 => json!({"type": "response.output_text.annotation.added", "item_id": "m", "content_index": 0, "annotation": {"type": "url_citation", "url": url, "start_index": s, "end_index": e}}),
            4 => json!({"type": "response.output_text.annotation.added", "item_id": "m", "content_index": 0, "annotation": {"type": "file_citation", "file_id": "f", "filename": t, "index": s}}),
            _ => json!({"type": "response.output_text.done", "item_id": "m", "content_index": 0}),
        },
        2 => match k {
            0 => json!({"type": "content-start", "index": 0}),
            1 | 2 | 3 => json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": t}}}}),
            _ => json!({"type": "citation-start", "index": 0, "delta": {"message": {"citations": {"start": s, "end": e, "text": t, "sources": [{"type": "document", "id": url, "document": {"title": t}}]}}}}),
        },
        3 => match k {
            0 | 1 | 2 => json!({"candidates": [{"content": {"parts": [{"text": t}]}}]}),
            _ => json!({"candidates": [{"groundingMetadata": {"groundingChunks": [{"web": {"uri": url, "title": t}}], "groundingSupports": [{"segment": {"startIndex": s, "endIndex": e}, "groundingChunkIndices": [0]}]}}]}),
        },
        4 => match k {
            0 => json!({"event_type": "step.start", "index": 1, "step": {"type": "model_output"}}),
            1 | 2 | 3 => json!({"event_type": "step.delta", "index": 1, "delta": {"type": "text", "text": t}}),
            _ => json!({"event_type": "step.delta", "index": 1, "delta": {"type": "text_annotation_delta", "annotations": [{"type": "url_citation", "url": url, "start_index": s, "end_index": e}]}}),
        },
        5 => match k {
            0 | 1 | 2 => json!({"contentBlockDelta": {"contentBlockIndex": b.byte() % 3, "delta": {"text": t}}}),
            3 => json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"citation": {"title": t, "location": {"documentPage": {"documentIndex": s, "start": s, "end": e}}}}}}),
            _ => json!({"contentBlockStop": {"contentBlockIndex": b.byte() % 3}}),
        },
        _ => match k {
            0 | 1 | 2 => json!({"choices": [{"index": 0, "delta": {"content": t}}], "citations": [url]}),
            3 => json!({"choices": [{"index": 0, "delta": {"annotations": [{"type": "url_citation", "url_citation": {"url": url, "start_index": s, "end_index": e}}]}}]}),
            4 => json!(t),
            _ => json!({"choices": 3}),
        },
    }
}

fn run(bytes: &[u8], cuts: &[usize]) -> Result<Vec<Event>, String> {
    let mut s = ProviderStream::new(Settings::default(), Sources::new(), Numbering::new());
    let mut events = Vec::new();
    let mut at = 0;
    for &c in cuts.iter().chain([&bytes.len()]) {
        let c = c.clamp(at, bytes.len());
        s.write(&bytes[at..c]).map_err(|e| e.to_string())?;
        at = c;
        events.extend(std::iter::from_fn(|| s.poll_event()));
    }
    s.end().map_err(|e| e.to_string())?;
    events.extend(std::iter::from_fn(|| s.poll_event()));
    Ok(merged(events))
}

fn merged(events: Vec<Event>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for e in events {
        if let (Event::Text { text }, Some(Event::Text { text: last })) = (&e, out.last_mut()) {
            last.push_str(text);
            continue;
        }
        out.push(e);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let dialect = b.byte();
    let sse = b.byte() % 2 == 1;
    let n = b.byte() % 24;
    let mut stream = Vec::new();
    for _ in 0..n {
        let line = payload(dialect, &mut b).to_string();
        if sse {
            stream.extend_from_slice(b"data: ");
        }
        stream.extend_from_slice(line.as_bytes());
        stream.extend_from_slice(if sse { b"\n\n" } else { b"\n" });
    }
    let cuts: Vec<usize> = (0..b.byte() % 6).map(|_| usize::from(b.byte()) * 7).collect();
    let whole = run(&stream, &[]);
    let cut = run(&stream, &cuts);
    assert_eq!(whole, cut);
});
