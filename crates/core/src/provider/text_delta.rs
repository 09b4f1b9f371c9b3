//! A named stream's event that is answer text alone, read by its dialect's own structs:
//! [`TextDelta`].
//!
//! Nearly every event of a streamed Anthropic Messages answer is a `content_block_delta` of a
//! `text_delta`, which the dialect's reader turns into that text and nothing else. An adapter
//! that rewrites such a stream (a proxy) gives the text to
//! [`ProviderStream::write_text`](super::ProviderStream::write_text) and writes the rewritten
//! text as its own event, with no tree made of the upstream's; any other event (or any doubt)
//! is `None`, for the dialect's general reading.

use std::borrow::Cow;

use super::{anthropic, Dialect};

/// An event that is answer text alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextDelta<'a> {
    text: Cow<'a, str>,
    index: Option<u64>,
}

impl<'a> TextDelta<'a> {
    /// `data` (an SSE event's data) as a text delta of `dialect`, or `None` when it is any
    /// other event. Read for [`Dialect::Anthropic`] (a `content_block_delta` whose `delta` is
    /// a `text_delta` with a string `text`); `None` for every other dialect.
    #[must_use]
    pub fn read(dialect: Dialect, data: &'a str) -> Option<Self> {
        match dialect {
            Dialect::Anthropic => {
                anthropic::text_delta(data).map(|(text, index)| TextDelta { text, index })
            }
            _ => None,
        }
    }

    /// The decoded text (what the dialect's reader gives as the event's text).
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The content block's `index`, when the event names one.
    #[must_use]
    pub fn index(&self) -> Option<u64> {
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderEvent, Reader};

    /// What the dialect's general reading of the same event gives as its text.
    fn by_reader(data: &str) -> Option<String> {
        let v: serde_json::Value = serde_json::from_str(data).ok()?;
        let mut r = Reader::new(Dialect::Anthropic);
        let mut out = Vec::new();
        r.read(&v, 1, &mut out).ok()?;
        match out.as_slice() {
            [] => Some(String::new()),
            [ProviderEvent::Text { text }] => Some(text.clone()),
            _ => None,
        }
    }

    #[test]
    fn a_text_delta_is_its_text_as_the_reader_reads_it() {
        for data in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris"}}"#,
            r#"{"delta":{"text":"caf\u00e9\n\"q\"","type":"text_delta"},"type":"content_block_delta","index":3}"#,
            r#" {"type":"content_block_delta","delta":{"type":"text_delta","text":""}} "#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"【1】草枕","extra":[1,{"a":null}]},"more":true}"#,
        ] {
            let p = TextDelta::read(Dialect::Anthropic, data).expect(data);
            assert_eq!(Some(p.text().to_owned()), by_reader(data), "{data}");
        }
        let p = TextDelta::read(
            Dialect::Anthropic,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"a"}}"#,
        );
        assert_eq!(p.and_then(|p| p.index()), Some(3));
    }

    #[test]
    fn any_other_event_is_none() {
        for data in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":"text"}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"a","text":"b"}}"#,
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}"#,
            r#"["content_block_delta"]"#,
            "",
        ] {
            assert_eq!(TextDelta::read(Dialect::Anthropic, data), None, "{data}");
        }
        let chat = r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#;
        assert_eq!(TextDelta::read(Dialect::OpenaiChat, chat), None);
    }
}
