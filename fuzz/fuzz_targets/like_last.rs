//! Fuzzes the readers that read an event against the last one of its stream (`ChatChunks`,
//! `TextDeltas`): each event of any sequence must read as it reads whole (`ChatChunk::read`,
//! `TextDelta::read`). The input is records cut at U+001E; each record is given as it is, then
//! in place of the first record's string (a chat chunk's content, an Anthropic delta's text),
//! so that most events are written like the last one with any text where its literal was (seed
//! it with `fuzz/seed-like-last.sh`).
#![no_main]

use citeflow_core::provider::{ChatChunk, ChatChunks, Dialect, TextDelta, TextDeltas};
use libfuzzer_sys::fuzz_target;

/// What a reader of a chat chunk sees of it.
type Seen = (String, Vec<String>, std::ops::Range<usize>, usize);

fn seen(c: &ChatChunk<'_>) -> Seen {
    (
        c.content().to_owned(),
        c.meta().iter().map(|m| format!("{m:?}")).collect(),
        c.content_range(),
        c.chunk_end(),
    )
}

/// Where `part` (a slice of `whole`) starts in `whole`.
fn offset(whole: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (at + part.len() <= whole.len()).then_some(at)
}

/// The text before and after `first`'s string literal `at..at + len` (quotes excluded).
fn around(first: &str, at: usize, len: usize) -> Option<(String, String)> {
    Some((
        first.get(..at.checked_sub(1)?)?.to_owned(),
        first.get(at + len + 1..)?.to_owned(),
    ))
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let mut records = text.split('\u{1e}');
    let Some(first) = records.next() else {
        return;
    };
    let mut chunks = ChatChunks::default();
    let mut deltas = TextDeltas::new(Dialect::Anthropic);
    let mut check = |data: &str| {
        assert_eq!(
            chunks.read(data).as_ref().map(seen),
            ChatChunk::read(data).as_ref().map(seen),
            "{data}"
        );
        assert_eq!(
            deltas.read(data),
            TextDelta::read(Dialect::Anthropic, data),
            "{data}"
        );
    };
    let chat = ChatChunk::read(first).and_then(|c| {
        let r = c.content_range();
        around(first, r.start + 1, r.len() - 2)
    });
    let delta = TextDelta::read(Dialect::Anthropic, first)
        .and_then(|t| around(first, offset(first, t.text())?, t.text().len()));
    check(first);
    for r in records {
        check(r);
        for (before, after) in chat.iter().chain(&delta) {
            check(&format!("{before}{r}{after}"));
        }
    }
});
