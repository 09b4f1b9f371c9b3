//! The common OpenAI chat chunk, located in its own text: [`ChatChunk`].
//!
//! Nearly every chunk of a streamed chat answer is one choice, index 0, whose `delta` holds a
//! string `content`: no finish, no annotations, no error, no usage, no `citeflow` of its own.
//! For such a chunk the OpenAI chat dialect's reader gives nothing but that text (and what
//! Perplexity's top-level `citations` and `search_results` list, which are not looked at
//! here). [`ChatChunk::read`] reads the chunk into the dialect's own structs (one reader of a
//! chat chunk: `openai_chat::Chunk`, borrowed, nothing else decoded), recognises the plain
//! chunk there, and says where its parts are, so that an adapter that sends the chunk on (a
//! proxy) can write the rewrite into the upstream's own text ([`ChatChunk::splice`]): the
//! content string replaced, the delta given its `annotations` (right after the content), the
//! chunk its `citeflow` member, every other byte as the upstream sent it. Any other chunk (or
//! any doubt: a repeated key, an array where an object belongs, a metadata member that is not
//! a scalar) is `None`, for the dialect's general reading.

use std::borrow::Cow;
use std::ops::Range;

use serde::Serialize;

use super::json::{List, MetaValue, Obj, Str, U64};
use super::openai_chat::Chunk;

/// The chunk members kept as an answer's metadata, in [`ChatChunk::meta`]'s order.
pub const CHAT_META_KEYS: [&str; 5] = ["id", "object", "created", "model", "system_fingerprint"];

/// A plain chat chunk: its decoded content, and where its parts are in its text.
#[derive(Debug, Clone)]
pub struct ChatChunk<'a> {
    /// The chunk's text, as [`ChatChunk::read`] was given it.
    pub(super) data: &'a str,
    /// The decoded `choices[0].delta.content`.
    pub(super) content: Cow<'a, str>,
    /// The members named in [`CHAT_META_KEYS`], as read.
    pub(super) meta: [MetaValue<'a>; 5],
    /// Byte range of the content's string literal (quotes included).
    pub(super) content_at: Range<usize>,
    /// Byte offset of the chunk's closing `}`.
    pub(super) chunk_end: usize,
}

/// Where `part` (a slice of `whole`) starts in `whole`.
pub(super) fn offset(whole: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (at + part.len() <= whole.len()).then_some(at)
}

impl<'a> ChatChunk<'a> {
    /// `data` (an SSE event's data) as a plain chat chunk, or `None` when it is anything else.
    #[must_use]
    pub fn read(data: &'a str) -> Option<Self> {
        let body = data.trim_end_matches([' ', '\t', '\n', '\r']);
        if !body
            .trim_start_matches([' ', '\t', '\n', '\r'])
            .starts_with('{')
        {
            return None;
        }
        let chunk: Chunk<'a> = serde_json::from_str(data).ok()?;
        if chunk.error.is_given() || chunk.citeflow.is_given() || !chunk.usage.is_null() {
            return None;
        }
        let List::Is(choices) = chunk.choices else {
            return None;
        };
        let [Obj::Is(choice)] = <[_; 1]>::try_from(choices).ok()? else {
            return None;
        };
        if !matches!(choice.index, U64::Absent | U64::Null | U64::Is(0))
            || choice.finish_reason.0
            || choice.text.is_given()
        {
            return None;
        }
        let Obj::Is(delta) = choice.delta else {
            return None;
        };
        if !matches!(delta.annotations, List::Absent) {
            return None;
        }
        let (Str::Is(content), Some(content_raw)) = (delta.content.value, delta.content.raw.0)
        else {
            return None;
        };
        let meta = [
            chunk.id,
            chunk.object,
            chunk.created,
            chunk.model,
            chunk.system_fingerprint,
        ];
        if meta.contains(&MetaValue::Composite) {
            return None;
        }
        let cs = offset(data, content_raw)?;
        Some(ChatChunk {
            data,
            content,
            meta,
            content_at: cs..cs + content_raw.len(),
            chunk_end: body.len() - 1,
        })
    }

    /// The decoded `choices[0].delta.content`: the text to write to the stream.
    #[must_use]
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The members named in [`CHAT_META_KEYS`] (in that order), [`MetaValue::Absent`] when
    /// absent; never [`MetaValue::Composite`] (such a chunk is not plain).
    #[must_use]
    pub fn meta(&self) -> &[MetaValue<'a>; 5] {
        &self.meta
    }

    /// Byte range of the content's string literal in the chunk's text (quotes included).
    #[must_use]
    pub fn content_range(&self) -> Range<usize> {
        self.content_at.clone()
    }

    /// Byte offset of the chunk's closing `}` in its text.
    #[must_use]
    pub fn chunk_end(&self) -> usize {
        self.chunk_end
    }

    /// The chunk's text with its content replaced by `text`, `annotations` (serialized as a
    /// JSON array) added to its delta right after the content when there are any, and the
    /// member `citeflow` added with the JSON text `citeflow`; every other byte as it was.
    #[must_use]
    pub fn splice<T: Serialize>(&self, text: &str, annotations: &[T], citeflow: &str) -> String {
        let data = self.data.as_bytes();
        let Range { start, end } = self.content_at;
        let mut out = Vec::with_capacity(data.len() + text.len() + 96);
        out.extend_from_slice(&data[..start]);
        push_json(&mut out, text);
        if !annotations.is_empty() {
            out.extend_from_slice(b",\"annotations\":");
            push_json(&mut out, annotations);
        }
        out.extend_from_slice(&data[end..self.chunk_end]);
        out.extend_from_slice(b",\"citeflow\":");
        out.extend_from_slice(citeflow.as_bytes());
        out.push(b'}');
        // Slices of a `str` cut at ASCII delimiters, and serde_json's UTF-8: checked once here,
        // the fallback never runs.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// Appends `v`'s JSON text (strings and plain data always serialise; a type whose `Serialize`
/// fails writes what it wrote before failing).
fn push_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(out, v);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;
    use crate::provider::json::Doc;
    use crate::provider::openai_chat::Chat;
    use crate::provider::ProviderEvent;

    /// What the general path makes of the same chunk: the parsed chunk with the new content,
    /// the annotations and `citeflow`.
    fn by_value(data: &str, text: &str, annotations: &[Value], citeflow: &Value) -> Value {
        let mut v: Value = serde_json::from_str(data).expect("json");
        let delta = &mut v["choices"][0]["delta"];
        delta["content"] = json!(text);
        if !annotations.is_empty() {
            delta["annotations"] = json!(annotations);
        }
        v["citeflow"] = citeflow.clone();
        v
    }

    fn member(key: &str, value: &str) -> String {
        format!("{}:{value}", serde_json::to_string(key).expect("key"))
    }

    /// A plain chunk's text: members in any order, optional ones left out, any content
    /// (escapes, quotes, CJK, control characters), whitespace between tokens.
    fn plain_chunk() -> impl Strategy<Value = (String, String)> {
        let content = "(\\PC|[\"\\\\\n\t\u{1}]|草枕|【1】|\\[\\[a\\]\\]){0,12}";
        (
            content,
            proptest::sample::subsequence(vec![0, 1, 2, 3, 4, 5], 0..=6),
            any::<bool>(),
            any::<bool>(),
            "[ \n]{0,2}",
        )
            .prop_map(|(text, extra, index, finish, ws)| {
                let mut delta = vec![member("content", &serde_json::to_string(&text).unwrap())];
                if extra.contains(&0) {
                    delta.insert(0, member("role", "\"assistant\""));
                }
                let mut choice = vec![member(
                    "delta",
                    &format!("{{{}}}", delta.join(&format!(",{ws}"))),
                )];
                if index {
                    choice.insert(0, member("index", "0"));
                }
                if finish {
                    choice.push(member("finish_reason", "null"));
                }
                if extra.contains(&1) {
                    choice.push(member("logprobs", "{\"content\":[]}"));
                }
                let mut top = vec![member(
                    "choices",
                    &format!("[{ws}{{{}}}{ws}]", choice.join(",")),
                )];
                for (i, (k, v)) in [
                    ("id", "\"chatcmpl-1\""),
                    ("created", "17"),
                    ("model", "\"m\\u00e9\""),
                    ("usage", "null"),
                    ("x_extra", "[1,{\"a\":null}]"),
                ]
                .into_iter()
                .enumerate()
                {
                    if extra.contains(&(i + 1)) {
                        top.insert(i % (top.len() + 1), member(k, v));
                    }
                }
                (format!("{ws}{{{}}}{ws}", top.join(&format!(",{ws}"))), text)
            })
    }

    proptest! {
        /// A plain chunk is read, its content decoded exactly, and its splice means what the
        /// general path's `Value` means.
        #[test]
        fn splice_means_what_the_value_path_means(
            (data, text) in plain_chunk(),
            new_text in "(\\PC|\"|\\\\|草){0,8}",
            cited in any::<bool>(),
        ) {
            let p = ChatChunk::read(&data).expect("a plain chunk");
            prop_assert_eq!(p.content(), text.as_str());
            let annotations = if cited {
                let at = json!({"url": "https://a", "start_index": 0, "end_index": 3});
                vec![json!({"type": "url_citation", "url_citation": at})]
            } else {
                Vec::new()
            };
            let citeflow = json!({"stream_id": "s", "events": [{"type": "citation", "number": 1}]});
            let out = p.splice(&new_text, &annotations, &citeflow.to_string());
            let got: Value = serde_json::from_str(&out).expect("the splice is JSON");
            // The dialect's general reader reads the same chunk as this text and nothing else.
            let mut events = Vec::new();
            Chat::default().read(Doc::Text(&data), &mut events).expect("the dialect reads it");
            let texts: Vec<Option<&str>> = events
                .iter()
                .map(|e| match e {
                    ProviderEvent::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let want: Vec<Option<&str>> = Some(Some(text.as_str())).filter(|_| !text.is_empty()).into_iter().collect();
            prop_assert_eq!(texts, want);
            prop_assert_eq!(got, by_value(&data, &new_text, &annotations, &citeflow));
        }
    }

    #[test]
    fn meta_members_are_found_as_written() {
        let data = r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#;
        let p = ChatChunk::read(data).expect("plain");
        assert_eq!(
            *p.meta(),
            [
                MetaValue::Str("c1".into()),
                MetaValue::Str("chat.completion.chunk".into()),
                MetaValue::U64(5),
                MetaValue::Str("m".into()),
                MetaValue::Null
            ]
        );
    }

    #[test]
    fn meta_members_of_every_scalar_kind_are_read_as_a_tree_holds_them() {
        let data = r#"{"id":"c\u00e9","created":-5,"model":1.5e3,"object":true,"choices":[{"delta":{"content":"hi"}}]}"#;
        let p = ChatChunk::read(data).expect("plain");
        let tree: Value = serde_json::from_str(data).expect("json");
        for (k, m) in CHAT_META_KEYS.iter().zip(p.meta()) {
            assert_eq!(m.to_value().as_ref(), tree.get(*k), "{k}");
        }
        assert_eq!(p.meta()[4], MetaValue::Absent);
        assert_eq!(p.meta()[0], MetaValue::Str("cé".into()));
    }

    /// Everything the general path treats otherwise is left to it.
    #[test]
    fn any_other_chunk_is_not_plain() {
        let delta = r#"{"content":"x"}"#;
        let one = |choice: &str| format!(r#"{{"choices":[{choice}]}}"#);
        let cases = [
            one(&format!(r#"{{"index":1,"delta":{delta}}}"#)),
            one(&format!(r#"{{"delta":{delta},"finish_reason":"stop"}}"#)),
            one(&format!(r#"{{"delta":{delta},"text":"t"}}"#)),
            one(&format!(r#"{{"delta":{delta},"delta":{delta}}}"#)),
            one(&format!(r#"[0,{delta}]"#)),
            one(r#"{"delta":{"content":"x","annotations":null}}"#),
            one(r#"{"delta":{"content":5}}"#),
            one(r#"{"delta":{"content":null}}"#),
            one(r#"{"delta":{"role":"assistant"}}"#),
            one(r#"{"delta":"x"}"#),
            one(r#"{"delta":["x"]}"#),
            one(r#"{"index":"0","delta":{"content":"x"}}"#),
            format!(r#"{{"choices":[{{"delta":{delta}}},{{"delta":{delta}}}]}}"#),
            r#"{"choices":[]}"#.to_owned(),
            r#"{"choices":7}"#.to_owned(),
            format!(r#"{{"choices":[{{"delta":{delta}}}],"error":null}}"#),
            format!(r#"{{"choices":[{{"delta":{delta}}}],"usage":{{"completion_tokens":3}}}}"#),
            format!(r#"{{"choices":[{{"delta":{delta}}}],"citeflow":{{}}}}"#),
            format!(r#"{{"choices":[{{"delta":{delta}}}],"choices":[{{"delta":{delta}}}]}}"#),
            format!(r#"[[{{"delta":{delta}}}]]"#),
            format!(r#"{{"choices":[{{"delta":{delta}}}],"model":{{"name":"m"}}}}"#),
            format!(r#"{{"choices":[{{"delta":{delta}}}],"id":["c1"]}}"#),
            "[DONE]".to_owned(),
            "not json".to_owned(),
            String::new(),
        ];
        for data in cases {
            assert!(ChatChunk::read(&data).is_none(), "{data}");
        }
        assert!(ChatChunk::read(&one(&format!(r#"{{"delta":{delta}}}"#))).is_some());
    }
}
