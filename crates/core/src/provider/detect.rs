//! What [`super::Dialect::detect`] looks at in a payload: its top-level keys and the string
//! values of `object` and `type` ([`TopLevel`]), read from a parsed tree or straight from the
//! payload's JSON text (no tree for the first payload of a stream whose dialect is not given).

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::json::Str;

/// A payload's top level, as far as dialect detection needs it.
#[derive(Debug, Default)]
pub(crate) struct TopLevel<'a> {
    /// Its keys, each once.
    pub(crate) keys: Vec<Cow<'a, str>>,
    /// `object`, when a string.
    pub(crate) object: Option<Cow<'a, str>>,
    /// `type`, when a string.
    pub(crate) kind: Option<Cow<'a, str>>,
}

impl<'a> TopLevel<'a> {
    /// A parsed object's top level.
    pub(crate) fn of_tree(o: &'a Map<String, Value>) -> Self {
        let string = |k: &str| o.get(k).and_then(Value::as_str).map(Cow::Borrowed);
        TopLevel {
            keys: o.keys().map(|k| Cow::Borrowed(k.as_str())).collect(),
            object: string("object"),
            kind: string("type"),
        }
    }

    /// A JSON object's top level read from its text, its values skipped unparsed (but
    /// `object`'s and `type`'s); `None` when the text is not a JSON object or repeats a key
    /// (a tree keeps the last of repeated keys: read it as a tree).
    pub(crate) fn of_text(data: &'a str) -> Option<Self> {
        serde_json::from_str(data).ok()
    }

    /// Whether `key` is one of its keys.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }
}

/// Fails on anything but an object, and on a repeated key.
struct TopLevelVisitor;

impl<'de> Visitor<'de> for TopLevelVisitor {
    type Value = TopLevel<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object without repeated keys")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel<'de>, A::Error> {
        let mut top = TopLevel::default();
        while let Some(key) = map.next_key::<Str<'de>>()? {
            let Str::Is(key) = key else {
                return Err(serde::de::Error::custom("a key that is not a string"));
            };
            if top.has(&key) {
                return Err(serde::de::Error::custom("a repeated key"));
            }
            match &*key {
                "object" | "type" => {
                    let value = match map.next_value::<Str<'de>>()? {
                        Str::Is(s) => Some(s),
                        _ => None,
                    };
                    if key == "object" {
                        top.object = value;
                    } else {
                        top.kind = value;
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            top.keys.push(key);
        }
        Ok(top)
    }
}

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(TopLevelVisitor)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::provider::Dialect;

    /// The text and the tree of the same payload detect the same dialect.
    #[test]
    fn text_and_tree_agree() {
        let cases = [
            r#"{"event_type":"x"}"#,
            r#"{"candidates":[]}"#,
            r#"{"usageMetadata":{}}"#,
            r#"{"promptFeedback":{}}"#,
            r#"{"contentBlockDelta":{"delta":{"text":"a"}}}"#,
            r#"{"contentBlockDelta":{},"p":1,"q":2}"#,
            r#"{"metadata":{},"p":"x"}"#,
            r#"{"choices":[]}"#,
            r#"{"object":"chat.completion.chunk"}"#,
            r#"{"object":"text_completion"}"#,
            r#"{"object":7}"#,
            r#"{"type":"response.output_text.delta"}"#,
            r#"{"type":"message_start"}"#,
            r#"{"type":"message","content":[]}"#,
            r#"{"type":"message"}"#,
            r#"{"type":"content-delta"}"#,
            r#"{"type":null}"#,
            r#"{"type":"p\u0069ng"}"#,
            r#"{"x":{"type":"ping"}}"#,
            r#"{}"#,
        ];
        for data in cases {
            let tree: Value = serde_json::from_str(data).unwrap();
            assert_eq!(
                Dialect::detect_text(data),
                Some(Dialect::detect(&tree)),
                "{data}"
            );
        }
        for data in [r#"{"type":"ping","type":"x"}"#, "[1]", "\"s\"", "nul"] {
            assert_eq!(Dialect::detect_text(data), None, "{data}");
        }
    }
}
