//! Reads every `data:` line of a recorded chat stream (SSE) with [`ChatChunk::read`], `ROUNDS`
//! times, and prints the time per chunk. Under `valgrind --tool=callgrind` it gives the
//! instructions a plain chunk's read costs (`ChatChunk::read`'s inclusive count over the
//! chunks), which stay exact on a loaded machine where the time does not.
//!
//! With `stream` after `ROUNDS` the chunks are read as one stream's, with [`ChatChunks`]: a
//! chunk written like the last plain one is read by its content alone.
//!
//! `cargo run --release -p citeflow-core --example chat_chunk_read -- FILE.sse [ROUNDS] [stream]`

use std::time::Instant;

use citeflow_core::provider::{ChatChunk, ChatChunks};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("a recorded .sse stream");
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let stream = args.get(3).is_some_and(|a| a == "stream");
    let text = std::fs::read_to_string(path).expect("the stream's text");
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .collect();
    let start = Instant::now();
    let (mut plain, mut bytes) = (0usize, 0usize);
    for _ in 0..rounds {
        let mut chunks = ChatChunks::default();
        for d in &data {
            let d = std::hint::black_box(d);
            let c = if stream {
                chunks.read(d)
            } else {
                ChatChunk::read(d)
            };
            if let Some(c) = c {
                plain += 1;
                bytes += c.content().len() + c.content_range().len();
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let n = data.len() * rounds;
    println!(
        "{} chunks ({plain} plain, {bytes} content bytes): {:.1} ns a chunk",
        n,
        secs * 1e9 / n as f64
    );
}
