//! Feeds a generated answer in fixed-size chunks, polling after each, and prints the cost per
//! chunk. Under `valgrind --tool=callgrind` it gives instruction counts, which stay exact on a
//! loaded machine where wall-clock figures do not.
//!
//! `cargo run --release -p citeflow-core --example chunk_cost -- plain|cited CHUNK_BYTES TOTAL_BYTES [into|owned]`
//!
//! `into` (the default) polls with `Rewriter::poll_event_into`, appending the text to one
//! buffer that is cleared after each chunk as a caller writing it out would; `owned` polls
//! with `Rewriter::poll_event`, which returns each text as an owned `String`.

use std::time::Instant;

use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map_or("plain", String::as_str);
    let chunk: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let size: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1 << 20);
    let owned = args.get(4).is_some_and(|m| m == "owned");
    let mut text = String::new();
    let mut i = 0;
    while text.len() < size {
        if kind == "plain" {
            text.push_str(
                "Plain answer text without any citation markers, just words and punctuation.\n",
            );
        } else {
            text.push_str("the capital of France is Paris, a city on the Seine. Its population grew quickly during the nineteenth century and today ");
            text.push_str(&format!("[[source_{}]] ", i % 20 + 1));
        }
        i += 1;
    }
    let sources = Sources::from_vec(
        (1..=20)
            .map(|i| Source::new(format!("source_{i}")).with_url(format!("https://e.x/{i}")))
            .collect(),
    )
    .expect("sources");
    let start = Instant::now();
    let mut citations = 0usize;
    let mut rw = Rewriter::new(Settings::default(), sources, Numbering::new());
    let mut out = String::new();
    let mut out_bytes = 0usize;
    let mut poll = |rw: &mut Rewriter, citations: &mut usize| {
        if owned {
            while let Some(e) = rw.poll_event() {
                *citations += usize::from(matches!(e, Event::Citation { .. }));
                if let Event::Text { text } = e {
                    out_bytes += text.len();
                }
            }
        } else {
            while let Some(e) = rw.poll_event_into(&mut out) {
                *citations += usize::from(matches!(e, Event::Citation { .. }));
            }
            out_bytes += out.len();
            out.clear();
        }
    };
    for c in text.as_bytes().chunks(chunk) {
        rw.write(c).expect("write");
        poll(&mut rw, &mut citations);
    }
    rw.end().expect("end");
    poll(&mut rw, &mut citations);
    assert!(out_bytes > text.len() / 2, "the output is the text");
    let secs = start.elapsed().as_secs_f64();
    let chunks = text.len().div_ceil(chunk);
    println!(
        "{kind}, {chunk}-byte chunks, {}: {:.1} MB/s, {:.1} ns a chunk, {chunks} chunks, {citations} citations",
        if owned { "poll_event" } else { "poll_event_into" },
        text.len() as f64 / secs / 1e6,
        secs * 1e9 / chunks as f64,
    );
}
