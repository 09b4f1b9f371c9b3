//! A named stream's text deltas, each read against the last one: [`TextDeltas`].
//!
//! Anthropic writes the text deltas of one content block alike: the same members in the same
//! order, and only the text differs. A delta whose text around its text's string literal is
//! the last one's is read by that literal alone ([`LikeLast`]); its block index is the last
//! one's. Any other (the first, another block's, one whose text has escapes kept as the
//! next one's model) is read whole with [`TextDelta::read`]. Either way a delta reads as
//! [`TextDelta::read`] reads it. A Responses delta carries its own `sequence_number`, so it is
//! always read whole.

use std::ops::Range;

use super::chat_chunk::offset;
use super::like_last::{LikeLast, Misses};
use super::{Dialect, TextDelta};

/// Reads one stream's text deltas as [`TextDelta::read`] does, an Anthropic delta written like
/// the last one by its text alone.
///
/// ```
/// use citeflow_core::provider::{Dialect, TextDeltas};
/// let mut deltas = TextDeltas::new(Dialect::Anthropic);
/// for (data, text) in [
///     (r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Par"}}"#, "Par"),
///     (r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"is [1]"}}"#, "is [1]"),
/// ] {
///     assert_eq!(deltas.read(data).expect("a text delta").text(), text);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct TextDeltas {
    dialect: Dialect,
    /// The last delta read whole whose text had no escape.
    last: Option<LikeLast>,
    /// Its block index.
    index: Option<u64>,
    /// Deltas in a row not written like the last one.
    misses: Misses,
}

impl TextDeltas {
    /// A reader of `dialect`'s text deltas (see [`TextDelta::read`]).
    #[must_use]
    pub fn new(dialect: Dialect) -> Self {
        TextDeltas {
            dialect,
            last: None,
            index: None,
            misses: Misses::default(),
        }
    }

    /// `data` (an SSE event's data) as a text delta, or `None` when it is any other event:
    /// what [`TextDelta::read`] gives.
    #[must_use]
    pub fn read<'a>(&mut self, data: &'a str) -> Option<TextDelta<'a>> {
        if self.dialect != Dialect::Anthropic || self.misses.given_up() {
            return TextDelta::read(self.dialect, data);
        }
        if let Some(same) = self.last.as_ref().and_then(|l| l.read(data)) {
            self.misses.hit();
            return Some(TextDelta {
                data,
                dialect: self.dialect,
                text: same.value,
                index: self.index,
                part: None,
                delta_at: None,
                sequence_at: None,
            });
        }
        let t = TextDelta::read(self.dialect, data)?;
        if self.last.is_some() && self.misses.miss() {
            self.last = None;
            return Some(t);
        }
        if let Some(at) = literal_at(data, t.text()) {
            LikeLast::keep(&mut self.last, data, at);
            self.index = t.index;
        }
        Some(t)
    }
}

/// Where `text`, read from `data` without an escape (borrowed from it), is as a string
/// literal in `data` (quotes included); `None` for a text decoded from escapes (which lies
/// elsewhere).
fn literal_at(data: &str, text: &str) -> Option<Range<usize>> {
    let at = offset(data, text)?;
    let literal = at.checked_sub(1)?..at + text.len() + 1;
    let bytes = data.as_bytes();
    (bytes.get(literal.start) == Some(&b'"') && bytes.get(literal.end - 1) == Some(&b'"'))
        .then_some(literal)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// An Anthropic event: a text delta of one of a few ways of writing it, or another event.
    fn event() -> impl Strategy<Value = String> {
        let text = prop_oneof![
            "(\\PC|[\"\\\\\n\u{1}]|草枕|【1】){0,8}"
                .prop_map(|s| serde_json::to_string(&s).expect("string")),
            "[\"\\\\a-z0-9,:{}\\[\\] \u{1}u]{0,12}",
            Just(r#""a"},"x":{"text":"b""#.to_owned()),
            Just(r#""a","text":"b""#.to_owned()),
        ];
        let around = prop::sample::select(vec![
            (
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"#,
                "}}",
            ),
            (
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"#,
                "}}",
            ),
            (
                r#"{"type": "content_block_delta", "delta": {"type": "text_delta", "text": "#,
                "}}\n",
            ),
            (
                r#"{"delta":{"type":"text_delta","text":"#,
                r#"},"type":"content_block_delta","index":1}"#,
            ),
            (
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","text":"#,
                "}}",
            ),
            (
                r#"{"type":"content_block_delta","index":0,"delta":{"text":"#,
                r#","type":"text_delta"},"index":5}"#,
            ),
        ]);
        prop_oneof![
            4 => (around, text).prop_map(|((pre, post), t)| format!("{pre}{t}{post}")),
            1 => Just(r#"{"type":"content_block_stop","index":0}"#.to_owned()),
        ]
    }

    proptest! {
        /// Any sequence of events reads as each read whole.
        #[test]
        fn every_delta_reads_as_it_reads_whole(events in prop::collection::vec(event(), 1..14)) {
            let mut reader = TextDeltas::new(Dialect::Anthropic);
            for data in events {
                prop_assert_eq!(reader.read(&data), TextDelta::read(Dialect::Anthropic, &data), "{}", data);
            }
        }
    }

    #[test]
    fn a_delta_written_like_the_last_is_read_by_its_text() {
        let mut reader = TextDeltas::new(Dialect::Anthropic);
        let delta = |t: &str| {
            format!(
                r#"{{"type":"content_block_delta","index":3,"delta":{{"type":"text_delta","text":{t}}}}}"#
            )
        };
        let first = delta(r#""Paris""#);
        assert_eq!(
            reader.read(&first).map(|t| t.text().to_owned()),
            Some("Paris".into())
        );
        for (t, want) in [
            (r#""is \"big\"""#, "is \"big\""),
            (r#""草枕【1】""#, "草枕【1】"),
        ] {
            let data = delta(t);
            let got = reader.read(&data).expect("a text delta");
            assert_eq!((got.text(), got.index()), (want, Some(3)));
            assert_eq!(Some(got), TextDelta::read(Dialect::Anthropic, &data));
        }
        // Read by their text: the delta kept is still the first.
        assert_eq!(
            reader.last.as_ref().map(LikeLast::data),
            Some(first.as_str())
        );
        // Another member after the text (a whole read's text delta), and what is not one
        // string where the text was (nothing).
        let other = delta(r#""a"},"x":{"text":"b""#);
        let got = reader.read(&other).expect("a text delta");
        assert_eq!(got.text(), "a");
        assert_eq!(Some(got), TextDelta::read(Dialect::Anthropic, &other));
        for bad in ["\"a\u{1}\"", r#""a\""#, "7", r#""a","text":"b""#] {
            assert_eq!(reader.read(&delta(bad)), None, "{bad}");
        }
    }

    #[test]
    fn a_responses_delta_is_read_whole() {
        let mut reader = TextDeltas::new(Dialect::OpenaiResponses);
        for n in 0..4 {
            let data = format!(
                r#"{{"type":"response.output_text.delta","sequence_number":{n},"item_id":"m","content_index":0,"delta":"t{n}"}}"#
            );
            assert_eq!(
                reader.read(&data),
                TextDelta::read(Dialect::OpenaiResponses, &data)
            );
            assert!(reader.last.is_none());
        }
    }
}
