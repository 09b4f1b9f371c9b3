//! A stream's plain chat chunks, each read against the last one: [`ChatChunks`].
//!
//! An OpenAI-compatible server writes the chunks of one answer alike: the same `id`, `model`
//! and `created`, the same members in the same order, and only the content differs (llama.cpp,
//! vLLM, Ollama and citeflow's own model do). A chunk whose text around its content's string
//! literal is the last plain chunk's is read by that literal alone ([`LikeLast`]), its metadata
//! found at the last one's places in its own text. Any other chunk (the first, one that differs
//! elsewhere, such as OpenAI's per-chunk `obfuscation`) is read whole with [`ChatChunk::read`]
//! and becomes the one the next is read against. Either way a chunk reads as
//! [`ChatChunk::read`] reads it.

use std::borrow::Cow;
use std::ops::Range;

use super::chat_chunk::{offset, ChatChunk};
use super::json::MetaValue;
use super::like_last::{LikeLast, Misses};

/// Reads one stream's chat chunks as [`ChatChunk::read`] does, a chunk written like the last
/// plain one by its content alone.
///
/// ```
/// use citeflow_core::provider::ChatChunks;
/// let mut chunks = ChatChunks::default();
/// for (data, text) in [
///     (r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Par"}}]}"#, "Par"),
///     (r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"is [1]"}}]}"#, "is [1]"),
/// ] {
///     assert_eq!(chunks.read(data).expect("a plain chunk").content(), text);
/// }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ChatChunks {
    /// The last plain chunk read whole.
    last: Option<LikeLast>,
    /// Its closing `}` and metadata members.
    shape: Option<Shape>,
    /// Plain chunks in a row not written like the last one.
    misses: Misses,
}

/// What else a plain chunk read whole holds, by place.
#[derive(Debug, Clone)]
struct Shape {
    /// Byte offset of its closing `}`.
    chunk_end: usize,
    /// Its metadata members.
    meta: [Meta; 5],
}

/// A metadata member of the last chunk.
#[derive(Debug, Clone)]
enum Meta {
    /// A string that the chunk's text holds as it is (no escape), at this byte range.
    At(Range<usize>),
    /// Any other value (a string with escapes owns its text).
    Value(MetaValue<'static>),
}

impl ChatChunks {
    /// `data` (an SSE event's data) as a plain chat chunk, or `None` when it is anything else:
    /// what [`ChatChunk::read`] gives.
    #[must_use]
    pub fn read<'a>(&mut self, data: &'a str) -> Option<ChatChunk<'a>> {
        if self.misses.given_up() {
            return ChatChunk::read(data);
        }
        if let Some(c) = self.read_like(data) {
            self.misses.hit();
            return Some(c);
        }
        let c = ChatChunk::read(data)?;
        if self.last.is_some() && self.misses.miss() {
            self.last = None;
            self.shape = None;
            return Some(c);
        }
        self.remember(&c);
        Some(c)
    }

    /// `data` read against the last plain chunk, when it is written like it.
    fn read_like<'a>(&self, data: &'a str) -> Option<ChatChunk<'a>> {
        let (last, shape) = (self.last.as_ref()?, self.shape.as_ref()?);
        let same = last.read(data)?;
        let mut meta: [MetaValue<'a>; 5] = Default::default();
        for (m, kept) in meta.iter_mut().zip(&shape.meta) {
            *m = match kept {
                Meta::At(r) => MetaValue::Str(Cow::Borrowed(
                    data.get(same.moved(r.start)..same.moved(r.end))?,
                )),
                Meta::Value(v) => v.clone(),
            };
        }
        let chunk_end = same.moved(shape.chunk_end);
        Some(ChatChunk {
            data,
            content: same.value,
            meta,
            content_at: same.literal,
            chunk_end,
        })
    }

    /// Keeps `c` (read whole) to read the next chunks against.
    fn remember(&mut self, c: &ChatChunk<'_>) {
        let meta = std::array::from_fn(|i| match &c.meta[i] {
            MetaValue::Str(Cow::Borrowed(s)) => match offset(c.data, s) {
                Some(at) => Meta::At(at..at + s.len()),
                None => Meta::Value(MetaValue::Str(Cow::Owned((*s).to_owned()))),
            },
            m => Meta::Value(m.clone().into_owned()),
        });
        LikeLast::keep(&mut self.last, c.data, c.content_at.clone());
        self.shape = Some(Shape {
            chunk_end: c.chunk_end,
            meta,
        });
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Everything a reader of the chunk sees, and the splice it makes.
    fn seen(c: &ChatChunk<'_>) -> (String, Vec<MetaValue<'static>>, Range<usize>, usize, String) {
        (
            c.content().to_owned(),
            c.meta().iter().map(|m| m.clone().into_owned()).collect(),
            c.content_range(),
            c.chunk_end(),
            c.splice::<u8>("[1] é\"", &[], "{\"x\":1}"),
        )
    }

    /// A chunk the way one server writes them all: `pre` before the content, `post` after it.
    fn chunk(pre: &str, literal: &str, post: &str) -> String {
        format!("{pre}{literal}{post}")
    }

    /// Texts around a content literal, as servers write them: spaces, metadata of every kind
    /// (escaped strings too), members before and after the choices, trailing whitespace.
    fn around() -> impl Strategy<Value = (String, String)> {
        (
            prop::sample::select(vec![
                r#"{"id":"c1","model":"m","created":5,"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"#,
                r#"{"id": "chatcmpl-a", "model": "SmolLM2", "created": 1795305754, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "#,
                r#"{"choices":[{"delta":{"role":"assistant","content":"#,
                r#"{"id":"c\u00e9","created":-5,"model":1.5e3,"system_fingerprint":null,"choices":[{"delta":{"content":"#,
            ]),
            prop::sample::select(vec![
                r#"}}]}"#,
                r#"}, "logprobs": null, "finish_reason": null}]}"#,
                r#"},"finish_reason":null}],"object":"x","system_fingerprint":"fp_\"1"}"#,
                "}}],\"id\":\"late\"}\n ",
                r#"}}],"usage":{"total_tokens":1}}"#,
                r#"}}], "model": "m"}"#,
            ]),
        )
            .prop_map(|(a, b)| (a.to_owned(), b.to_owned()))
    }

    /// What may stand where the content's literal was: strings (escapes, CJK, control
    /// characters) and what only looks like one (tokens that end the string early, another
    /// member, a number).
    fn literal() -> impl Strategy<Value = String> {
        prop_oneof![
            "(\\PC|[\"\\\\\n\u{1}]|草枕|【1】){0,8}"
                .prop_map(|s| serde_json::to_string(&s).expect("string")),
            "[\"\\\\a-z0-9,:{}\\[\\] \u{1}u]{0,12}",
            Just(r#""a","content":"b""#.to_owned()),
            Just(r#""a"  "#.to_owned()),
            Just(r#""\u00e9\ud83d\ude00""#.to_owned()),
            Just(r#""\ud800""#.to_owned()),
            Just("\"".to_owned()),
            Just("7".to_owned()),
        ]
    }

    static HITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    proptest! {
        /// Any sequence of chunks reads as each read whole: written alike or not, plain or
        /// not, with any text where the content was.
        #[test]
        fn every_chunk_reads_as_it_reads_whole(
            chunks in prop::collection::vec((around(), literal(), 0..4u8), 1..12),
        ) {
            let mut reader = ChatChunks::default();
            for ((pre, post), lit, noise) in chunks {
                let data = match noise {
                    0 => format!(" {}", chunk(&pre, &lit, &post)),
                    1 => chunk(&pre, &lit, &post).replacen("\"c1\"", "\"c2\"", 1),
                    _ => chunk(&pre, &lit, &post),
                };
                let whole = ChatChunk::read(&data);
                let kept = reader.last.as_ref().map(|l| l.data().to_owned());
                let read = reader.read(&data);
                if whole.is_some() && kept.is_some() && reader.last.as_ref().map(LikeLast::data) == kept.as_deref() {
                    HITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                prop_assert_eq!(read.as_ref().map(seen), whole.as_ref().map(seen), "{}", data);
            }
        }
    }

    /// The property above reads chunks against the last one, not only whole.
    #[test]
    fn the_property_reads_chunks_by_their_content() {
        every_chunk_reads_as_it_reads_whole();
        assert!(HITS.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }

    /// Chunks that differ elsewhere each time are read whole, and stop being compared.
    #[test]
    fn chunks_that_differ_elsewhere_each_time_are_read_whole() {
        let mut reader = ChatChunks::default();
        for i in 0..10 {
            let data = format!(
                r#"{{"choices":[{{"delta":{{"content":"t{i}"}}}}],"obfuscation":"{}"}}"#,
                "x".repeat(i)
            );
            let c = reader.read(&data).expect("plain");
            assert_eq!(c.content(), format!("t{i}"));
            assert_eq!(
                reader.last.is_some(),
                i < usize::from(Misses::GIVE_UP),
                "{i}"
            );
        }
    }

    #[test]
    fn a_chunk_written_like_the_last_is_read_by_its_content() {
        let pre = r#"{"id":"c1","model":"m","choices":[{"delta":{"content":"#;
        let post = r#"}}],"system_fingerprint":"fp"}"#;
        let mut reader = ChatChunks::default();
        let first = chunk(pre, r#""Paris""#, post);
        assert_eq!(reader.read(&first).expect("plain").content(), "Paris");
        let longer = chunk(pre, r#""is the capital \"[1]\" 草""#, post);
        let c = reader.read(&longer).expect("plain");
        assert_eq!(c.content(), "is the capital \"[1]\" 草");
        assert_eq!(c.meta()[4], MetaValue::Str("fp".into()));
        assert_eq!(&longer[c.content_range()], r#""is the capital \"[1]\" 草""#);
        assert_eq!(c.chunk_end(), longer.len() - 1);
        // Read by its content: the chunk kept is still the first.
        assert_eq!(
            reader.last.as_ref().map(LikeLast::data),
            Some(first.as_str())
        );
        // Not one string where the content was: read whole, which refuses it too.
        for bad in [
            r#""a","content":"b""#,
            "\"a\u{1}\"",
            "\"",
            "7",
            r#""a\"#,
            r#""\x""#,
        ] {
            let data = chunk(pre, bad, post);
            assert!(reader.read(&data).is_none(), "{data}");
            assert!(ChatChunk::read(&data).is_none(), "{data}");
        }
    }
}
