//! A named stream's event that is answer text alone, read by its dialect's own structs:
//! [`TextDelta`].
//!
//! Nearly every event of a streamed Anthropic Messages answer is a `content_block_delta` of a
//! `text_delta`, and nearly every one of an OpenAI Responses answer an `output_text.delta`:
//! the dialect's reader turns each into its text (and, for Responses, the part it belongs to)
//! and nothing else. An adapter that rewrites such a stream (a proxy) gives the event to
//! [`ProviderStream::write_text_delta`](super::ProviderStream::write_text_delta), which does
//! what reading the whole event does, and writes the rewritten text as its own event (for
//! Responses, [`TextDelta::splice`]: the upstream's event with its `delta` and
//! `sequence_number` replaced), with no tree made of the upstream's. Any other event (or any
//! doubt) is `None`, for the dialect's general reading.

use std::borrow::Cow;
use std::ops::Range;

use super::{anthropic, openai_responses, Dialect};

/// An event that is answer text alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextDelta<'a> {
    pub(super) data: &'a str,
    pub(super) dialect: Dialect,
    pub(super) text: Cow<'a, str>,
    pub(super) index: Option<u64>,
    pub(super) part: Option<(Cow<'a, str>, u64)>,
    pub(super) delta_at: Option<Range<usize>>,
    pub(super) sequence_at: Option<Range<usize>>,
}

impl<'a> TextDelta<'a> {
    /// `data` (an SSE event's data) as a text delta of `dialect`, or `None` when it is any
    /// other event. Read for [`Dialect::Anthropic`] (a `content_block_delta` whose `delta` is
    /// a `text_delta` with a string `text`) and [`Dialect::OpenaiResponses`] (an
    /// `output_text.delta` with a string `delta`); `None` for every other dialect.
    #[must_use]
    pub fn read(dialect: Dialect, data: &'a str) -> Option<Self> {
        let mut t = TextDelta {
            data,
            dialect,
            text: Cow::Borrowed(""),
            index: None,
            part: None,
            delta_at: None,
            sequence_at: None,
        };
        match dialect {
            Dialect::Anthropic => {
                (t.text, t.index) = anthropic::text_delta(data)?;
            }
            Dialect::OpenaiResponses => {
                let d = openai_responses::text_delta(data)?;
                t.text = d.text;
                t.part = Some(d.part);
                t.delta_at = Some(d.delta_at);
                t.sequence_at = d.sequence_at;
            }
            _ => return None,
        }
        Some(t)
    }

    /// The dialect it was read as.
    #[must_use]
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The event's text, as given to [`TextDelta::read`].
    #[must_use]
    pub fn data(&self) -> &'a str {
        self.data
    }

    /// The decoded text (what the dialect's reader gives as the event's text).
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Anthropic: the content block's `index`, when the event names one.
    #[must_use]
    pub fn index(&self) -> Option<u64> {
        self.index
    }

    /// Responses: the part the text belongs to, `(item_id, content_index)` as the dialect's
    /// reader takes them (`""` and 0 when absent).
    #[must_use]
    pub fn part(&self) -> Option<(&str, u64)> {
        self.part.as_ref().map(|(id, ci)| (id.as_ref(), *ci))
    }

    /// Responses: the event's text with its `delta` replaced by `text` and its
    /// `sequence_number` by `sequence_number` (added last when it had none); every other byte
    /// as the upstream sent it. `None` for an Anthropic delta (whose event an adapter writes
    /// itself).
    #[must_use]
    pub fn splice(&self, text: &str, sequence_number: u64) -> Option<String> {
        let delta_at = self.delta_at.clone()?;
        let seq = sequence_number.to_string();
        let mut out = Vec::with_capacity(self.data.len() + text.len() + 16);
        let data = self.data.as_bytes();
        let mut edits = [
            (delta_at, Edit::Text(text)),
            match &self.sequence_at {
                Some(at) => (at.clone(), Edit::Raw(&seq)),
                None => {
                    let end = self.data.trim_end().len().checked_sub(1)?;
                    (end..end, Edit::Member(&seq))
                }
            },
        ];
        edits.sort_by_key(|(at, _)| at.start);
        let mut from = 0;
        for (at, edit) in edits {
            out.extend_from_slice(data.get(from..at.start)?);
            match edit {
                Edit::Text(t) => {
                    // A string always serializes.
                    let _ = serde_json::to_writer(&mut out, t);
                }
                Edit::Raw(r) => out.extend_from_slice(r.as_bytes()),
                Edit::Member(r) => {
                    out.extend_from_slice(b",\"sequence_number\":");
                    out.extend_from_slice(r.as_bytes());
                }
            }
            from = at.end;
        }
        out.extend_from_slice(data.get(from..)?);
        // Slices of a `str` cut at ASCII delimiters, and serde_json's UTF-8.
        String::from_utf8(out).ok()
    }
}

/// One replacement of [`TextDelta::splice`].
enum Edit<'t> {
    /// A JSON string of this text.
    Text(&'t str),
    /// This JSON text.
    Raw(&'t str),
    /// A `sequence_number` member of this value, added.
    Member(&'t str),
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::provider::{ProviderEvent, Reader};

    /// What the dialect's general reading of the same event gives: its text, and whether it
    /// started a part.
    fn by_reader(dialect: Dialect, data: &str) -> Option<(String, bool)> {
        let v: Value = serde_json::from_str(data).ok()?;
        let mut r = Reader::new(dialect);
        let mut out = Vec::new();
        r.read(&v, 1, &mut out).ok()?;
        let started = matches!(out.first(), Some(ProviderEvent::PartStart));
        let text = match &out[usize::from(started)..] {
            [] => String::new(),
            [ProviderEvent::Text { text }] => text.clone(),
            _ => return None,
        };
        Some((text, started))
    }

    #[test]
    fn an_anthropic_text_delta_is_its_text_as_the_reader_reads_it() {
        for data in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris"}}"#,
            r#"{"delta":{"text":"caf\u00e9\n\"q\"","type":"text_delta"},"type":"content_block_delta","index":3}"#,
            r#" {"type":"content_block_delta","delta":{"type":"text_delta","text":""}} "#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"【1】草枕","extra":[1,{"a":null}]},"more":true}"#,
        ] {
            let p = TextDelta::read(Dialect::Anthropic, data).expect(data);
            assert_eq!(
                Some((p.text().to_owned(), false)),
                by_reader(Dialect::Anthropic, data),
                "{data}"
            );
            assert_eq!(p.part(), None);
            assert_eq!(p.splice("x", 1), None);
        }
        let p = TextDelta::read(
            Dialect::Anthropic,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"a"}}"#,
        );
        assert_eq!(p.and_then(|p| p.index()), Some(3));
    }

    #[test]
    fn a_responses_text_delta_is_its_text_and_part_as_the_reader_reads_them() {
        for (data, part) in [
            (
                r#"{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Paris","logprobs":[]}"#,
                ("msg_1", 0),
            ),
            (
                r#"{"delta":"caf\u00e9\n","type":"response.output_text.delta","content_index":2,"item_id":"m"}"#,
                ("m", 2),
            ),
            (
                r#"{"type":"response.output_text.delta","item_id":5,"content_index":1.5,"delta":""}"#,
                ("", 0),
            ),
        ] {
            let p = TextDelta::read(Dialect::OpenaiResponses, data).expect(data);
            assert_eq!(
                Some((p.text().to_owned(), true)),
                by_reader(Dialect::OpenaiResponses, data),
                "{data}"
            );
            assert_eq!(p.part(), Some(part), "{data}");
        }
    }

    #[test]
    fn a_responses_splice_is_the_event_with_the_new_delta_and_number() {
        for data in [
            r#"{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Paris","logprobs":[]}"#,
            r#" {"delta": "caf\u00e9\n", "type": "response.output_text.delta", "sequence_number": 12, "obfuscation": "x\"y"} "#,
            r#"{"type":"response.output_text.delta","delta":"a"}"#,
        ] {
            let p = TextDelta::read(Dialect::OpenaiResponses, data).expect(data);
            for text in ["", "Paris [1]", "【1】草枕 \"q\" \\ \n\u{1}"] {
                let out = p.splice(text, 41).expect("spliced");
                let mut want: Value = serde_json::from_str(data).expect("json");
                want["delta"] = json!(text);
                want["sequence_number"] = json!(41);
                let got: Value = serde_json::from_str(&out).expect(&out);
                assert_eq!(got, want, "{data} with {text:?}: {out}");
            }
        }
    }

    fn member(key: &str, value: &Value) -> String {
        format!("{}:{value}", Value::from(key))
    }

    proptest::proptest! {
        /// Any Responses delta (members in any order, any text, with or without a
        /// `sequence_number`, whitespace between tokens): read as the dialect's reader reads
        /// it, and spliced into what editing its tree gives.
        #[test]
        fn any_responses_delta_reads_and_splices_as_its_tree(
            text in "(\\PC|[\"\\\\\n\t\u{1}]|草枕|【1】){0,10}",
            new in "(\\PC|[\"\\\\\n\u{1f}]|【2】){0,10}",
            seq in proptest::option::of(0u64..1 << 40),
            next in 0u64..u64::MAX,
            order in proptest::sample::subsequence(vec![0, 1, 2, 3, 4], 5),
            ws in "[ \n]{0,2}",
        ) {
            let mut members = vec![
                member("type", &json!("response.output_text.delta")),
                member("item_id", &json!("msg_1")),
                member("content_index", &json!(0)),
                member("delta", &json!(text)),
                member("logprobs", &json!([])),
            ];
            members = order.iter().map(|&i| members[i].clone()).collect();
            if let Some(s) = seq {
                members.insert(members.len() / 2, member("sequence_number", &json!(s)));
            }
            let data = format!("{ws}{{{ws}{}{ws}}}{ws}", members.join(&format!(",{ws}")));
            let p = TextDelta::read(Dialect::OpenaiResponses, &data).expect("read");
            proptest::prop_assert_eq!(
                Some((p.text().to_owned(), true)),
                by_reader(Dialect::OpenaiResponses, &data)
            );
            proptest::prop_assert_eq!(p.part(), Some(("msg_1", 0)));
            let out = p.splice(&new, next).expect("spliced");
            let mut want: Value = serde_json::from_str(&data).expect("json");
            want["delta"] = json!(new);
            want["sequence_number"] = json!(next);
            let got: Value = serde_json::from_str(&out).expect("spliced json");
            proptest::prop_assert_eq!(got, want);
        }
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
        for data in [
            r#"{"type":"response.output_text.delta","delta":5}"#,
            r#"{"type":"response.output_text.delta"}"#,
            r#"{"type":"response.output_text.annotation.added","annotation":{}}"#,
            r#"{"type":"response.output_text.delta","delta":"a","delta":"b"}"#,
            r#"{"type":"response.output_text.delta","delta":"a""#,
        ] {
            assert_eq!(
                TextDelta::read(Dialect::OpenaiResponses, data),
                None,
                "{data}"
            );
        }
        let chat = r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#;
        assert_eq!(TextDelta::read(Dialect::OpenaiChat, chat), None);
    }
}
