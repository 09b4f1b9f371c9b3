//! Fuzzes the SSE decoder: the fuzzer's first bytes choose the line limit and where to cut, the
//! rest is the stream (any bytes: `\r\n`, UTF-8 cut anywhere, bytes that are not UTF-8, lines
//! over the limit). Nothing may panic, and the stream fed in pieces must give the events, lines
//! and error of the stream fed whole.
#![no_main]

use citeflow_core::sse::{SseDecoder, SseError, SseEvent};
use libfuzzer_sys::fuzz_target;

/// Feeds `pieces` then ends, stopping at the first error: the events with their lines, and
/// the error.
fn decode<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
    max_line_bytes: usize,
) -> (Vec<(SseEvent, u64)>, Option<SseError>) {
    let mut d = SseDecoder::new(max_line_bytes);
    let mut error = None;
    for piece in pieces {
        if let Err(e) = d.write(piece) {
            error = Some(e);
            break;
        }
    }
    if error.is_none() {
        error = d.end().err();
    }
    (std::iter::from_fn(|| d.poll_event_at()).collect(), error)
}

fuzz_target!(|data: &[u8]| {
    let [limit, step, stream @ ..] = data else {
        return;
    };
    let max_line_bytes = match limit % 4 {
        0 => 1 << 20,
        _ => usize::from(*limit),
    };
    let whole = decode([stream], max_line_bytes);
    let cut = decode(stream.chunks(usize::from(step % 16) + 1), max_line_bytes);
    assert_eq!(cut, whole);
});
