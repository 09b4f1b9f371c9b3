//! The common upstream chunk, read and rewritten without a `serde_json::Value`.
//!
//! Nearly every chunk of a chat answer is one choice, index 0, whose `delta` holds a string
//! `content`: no finish, no annotations, no error, no usage, no `citeflow` of its own.
//! [`read`] recognises such a chunk by reading only those fields (borrowed, nothing else
//! decoded), and [`Plain::splice`] writes its rewrite into the upstream's own text. The content
//! string is replaced, the delta gets its `annotations`, and the chunk gets its `citeflow`
//! member. Every other byte stays as the upstream sent it. Any other chunk (or any doubt:
//! a repeated key, an array where an object belongs) is `None`, and goes the general way,
//! through a `Value`, with the same meaning.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// The chunk members kept as the answer's metadata, in [`Plain::meta`]'s order.
pub(crate) const META_KEYS: [&str; 5] = ["id", "object", "created", "model", "system_fingerprint"];

/// A plain chunk: where its parts are in the upstream's text.
#[derive(Debug)]
pub(crate) struct Plain<'a> {
    /// The decoded `choices[0].delta.content`.
    pub(crate) content: Cow<'a, str>,
    /// The members named in [`META_KEYS`], as the upstream wrote them, when present.
    pub(crate) meta: [Option<&'a RawValue>; 5],
    /// Byte range of the content's string literal (quotes included).
    content_at: (usize, usize),
    /// Byte offset of the delta's closing `}`.
    delta_end: usize,
    /// Byte offset of the chunk's closing `}`.
    chunk_end: usize,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    choices: Vec<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    object: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    created: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    model: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    system_fingerprint: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    usage: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    citeflow: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow)]
    delta: &'a RawValue,
    #[serde(default, borrow, deserialize_with = "present")]
    finish_reason: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    content: &'a RawValue,
    #[serde(default, borrow, deserialize_with = "present")]
    annotations: Option<&'a RawValue>,
}

/// A member that is there, even as `null` (serde's `Option` would make `null` absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn is_null(v: Option<&RawValue>) -> bool {
    v.is_none_or(|v| v.get() == "null")
}

fn is_object(v: &RawValue) -> bool {
    v.get().starts_with('{')
}

/// Where `part` (a slice of `whole`) starts in `whole`.
fn offset(whole: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (at + part.len() <= whole.len()).then_some(at)
}

/// A JSON string literal's text (borrowed when it has no escapes).
fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let s = raw.get();
    if !s.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(s) {
        Ok(b) => Some(Cow::Borrowed(b)),
        Err(_) => serde_json::from_str::<String>(s).ok().map(Cow::Owned),
    }
}

/// `data` as a plain chunk, or `None` when it is anything else.
pub(crate) fn read(data: &str) -> Option<Plain<'_>> {
    let body = data.trim_end_matches([' ', '\t', '\n', '\r']);
    if !body
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    let chunk: Chunk<'_> = serde_json::from_str(data).ok()?;
    let [choice] = chunk.choices.as_slice() else {
        return None;
    };
    if chunk.error.is_some() || chunk.citeflow.is_some() || !is_null(chunk.usage) {
        return None;
    }
    if !is_object(choice) {
        return None;
    }
    let c: Choice<'_> = serde_json::from_str(choice.get()).ok()?;
    if c.index.is_some_and(|i| i != 0) || !is_null(c.finish_reason) || c.text.is_some() {
        return None;
    }
    if !is_object(c.delta) {
        return None;
    }
    let d: Delta<'_> = serde_json::from_str(c.delta.get()).ok()?;
    if d.annotations.is_some() {
        return None;
    }
    let content = json_str(d.content)?;
    let cs = offset(data, d.content.get())?;
    let ds = offset(data, c.delta.get())?;
    Some(Plain {
        content,
        meta: [
            chunk.id,
            chunk.object,
            chunk.created,
            chunk.model,
            chunk.system_fingerprint,
        ],
        content_at: (cs, cs + d.content.get().len()),
        delta_end: ds + c.delta.get().len() - 1,
        chunk_end: body.len() - 1,
    })
}

impl Plain<'_> {
    /// The upstream's chunk `data` (the one [`read`] was given) with its content replaced by
    /// `text`, `annotations` added to its delta when there are any, and the member
    /// `citeflow` added with the JSON text `citeflow`.
    pub(crate) fn splice(
        &self,
        data: &str,
        text: &str,
        annotations: &[Value],
        citeflow: &str,
    ) -> String {
        let (cs, ce) = self.content_at;
        let mut out = Vec::with_capacity(data.len() + text.len() + 96);
        out.extend_from_slice(&data.as_bytes()[..cs]);
        push_json(&mut out, text);
        out.extend_from_slice(&data.as_bytes()[ce..self.delta_end]);
        if !annotations.is_empty() {
            out.extend_from_slice(b",\"annotations\":");
            push_json(&mut out, annotations);
        }
        out.extend_from_slice(&data.as_bytes()[self.delta_end..self.chunk_end]);
        out.extend_from_slice(b",\"citeflow\":");
        out.extend_from_slice(citeflow.as_bytes());
        out.push(b'}');
        // Slices of a `str` cut at ASCII delimiters, and serde_json's UTF-8: checked once here,
        // the fallback never runs.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

/// Appends `v`'s JSON text (it cannot fail: strings and `Value`s always serialise).
fn push_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(out, v);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

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
            let p = read(&data).expect("a plain chunk");
            prop_assert_eq!(p.content.as_ref(), text.as_str());
            let annotations = if cited {
                let at = json!({"url": "https://a", "start_index": 0, "end_index": 3});
                vec![json!({"type": "url_citation", "url_citation": at})]
            } else {
                Vec::new()
            };
            let citeflow = json!({"stream_id": "s", "events": [{"type": "citation", "number": 1}]});
            let out = p.splice(&data, &new_text, &annotations, &citeflow.to_string());
            let got: Value = serde_json::from_str(&out).expect("the splice is JSON");
            prop_assert_eq!(got, by_value(&data, &new_text, &annotations, &citeflow));
        }
    }

    #[test]
    fn meta_members_are_found_as_written() {
        let data = r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#;
        let p = read(data).expect("plain");
        let meta: Vec<Option<&str>> = p.meta.iter().map(|m| m.map(RawValue::get)).collect();
        assert_eq!(
            meta,
            [
                Some("\"c1\""),
                Some("\"chat.completion.chunk\""),
                Some("5"),
                Some("\"m\""),
                Some("null")
            ]
        );
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
            "[DONE]".to_owned(),
            "not json".to_owned(),
            String::new(),
        ];
        for data in cases {
            assert!(read(&data).is_none(), "{data}");
        }
        assert!(read(&one(&format!(r#"{{"delta":{delta}}}"#))).is_some());
    }
}
