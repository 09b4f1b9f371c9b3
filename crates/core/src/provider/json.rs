//! The JSON helpers every dialect reader shares: typed fields of a payload, and the
//! [`Problem`] a reader reports. A leaf: it imports no other module of `provider`.

use serde_json::Value;

/// Why a dialect reader refused a payload.
#[derive(Debug)]
pub(crate) enum Problem {
    /// The payload's shape is not what the API sends.
    Shape(String),
    /// The stream reported an error.
    Upstream(String),
}

pub(crate) type ReadResult = Result<(), Problem>;

/// `expected` as a [`Problem::Shape`].
pub(crate) fn shape(expected: impl Into<String>) -> Problem {
    Problem::Shape(expected.into())
}

/// A string field, or a shape problem naming it.
pub(crate) fn str_field<'a>(v: &'a Value, key: &str) -> Result<&'a str, Problem> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| shape(format!("`{key}` to be a string")))
}

/// An optional string field (absent or null is `None`; another type is a problem).
pub(crate) fn opt_str<'a>(v: &'a Value, key: &str) -> Result<Option<&'a str>, Problem> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(shape(format!("`{key}` to be a string"))),
    }
}

/// An optional non-negative integer field.
pub(crate) fn opt_u64(v: &Value, key: &str) -> Result<Option<u64>, Problem> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| shape(format!("`{key}` to be a non-negative integer"))),
    }
}

/// The object under `key`, or a problem.
pub(crate) fn obj<'a>(v: &'a Value, key: &str) -> Result<&'a Value, Problem> {
    v.get(key)
        .filter(|x| x.is_object())
        .ok_or_else(|| shape(format!("`{key}` to be an object")))
}

/// The array under `key` (absent or null is empty).
pub(crate) fn arr<'a>(v: &'a Value, key: &str) -> Result<&'a [Value], Problem> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(shape(format!("`{key}` to be an array"))),
    }
}

/// "an array", "a number", … for messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The top-level keys of a payload, for [`ProviderError::UnknownDialect`](super::error::ProviderError::UnknownDialect).
pub(crate) fn keys_of(v: &Value) -> String {
    match v.as_object() {
        Some(o) => {
            let keys: Vec<&str> = o.keys().take(8).map(String::as_str).collect();
            keys.join(", ")
        }
        None => json_kind(v).to_owned(),
    }
}
