//! Moving values across the boundary: JS values travel as JSON text, so every record has
//! exactly the core's serde JSON shape (the same the server, the CLI and Python use).

use citeflow_core::{Event, NumberEntry};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};

use crate::error::BindingError;

/// `JSON.stringify(value)`; `None` for `undefined` and `null`.
pub(crate) fn stringify(value: &JsValue) -> Result<Option<String>, BindingError> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let s = js_sys::JSON::stringify(value).map_err(|e| {
        BindingError::type_error(
            "not_json",
            format!(
                "value cannot be converted to JSON: {}",
                e.as_string()
                    .or_else(|| e.dyn_ref::<js_sys::Error>().map(|e| e.message().into()))
                    .unwrap_or_default()
            ),
        )
    })?;
    Ok(s.as_string())
}

/// Reads a JS value as `T` through its JSON text; `None` for `undefined` and `null`.
pub(crate) fn from_js<T: DeserializeOwned>(
    value: &JsValue,
    what: &str,
    err: fn(String) -> BindingError,
) -> Result<Option<T>, BindingError> {
    match stringify(value)? {
        None => Ok(None),
        Some(json) => serde_json::from_str(&json)
            .map(Some)
            .map_err(|e| err(format!("{what}: {e}"))),
    }
}

/// A plain JS object (or array, string, number) with the serde JSON shape of `value`.
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, BindingError> {
    parse(&serde_json::to_string(value).map_err(internal)?)
}

/// `JSON.parse` of JSON text made by this crate.
fn parse(json: &str) -> Result<JsValue, BindingError> {
    js_sys::JSON::parse(json).map_err(|_| BindingError::new("Error", "internal", "bad json"))
}

/// A serde_json failure to write JSON (never for the core's types in practice).
fn internal(e: serde_json::Error) -> BindingError {
    BindingError::new("Error", "internal", e.to_string())
}

/// Events as a JS array: as [`to_js`] (their JSON text from `citeflow-wasm-json`, compiled for
/// speed), with a new empty array made without JSON when there are none (most calls of a
/// stream release nothing, or only text).
pub(crate) fn events_to_js(events: &[Event]) -> Result<JsValue, BindingError> {
    if events.is_empty() {
        return Ok(js_sys::Array::new().into());
    }
    parse(&citeflow_wasm_json::events(events).map_err(internal)?)
}

/// Numbering entries as a JS array, as [`to_js`] (their JSON text from `citeflow-wasm-json`).
pub(crate) fn entries_to_js(entries: &[NumberEntry]) -> Result<JsValue, BindingError> {
    parse(&citeflow_wasm_json::number_entries(entries).map_err(internal)?)
}

/// The bytes of a `string` (UTF-8) or `Uint8Array` chunk.
pub(crate) fn chunk_bytes(chunk: &JsValue) -> Result<Vec<u8>, BindingError> {
    if let Some(s) = chunk.as_string() {
        return Ok(s.into_bytes());
    }
    if let Some(a) = chunk.dyn_ref::<js_sys::Uint8Array>() {
        return Ok(a.to_vec());
    }
    Err(BindingError::type_error(
        "invalid_chunk",
        format!(
            "chunk must be a string or a Uint8Array, got {}",
            chunk
                .js_typeof()
                .as_string()
                .unwrap_or_else(|| "an unknown value".into())
        ),
    ))
}

/// A JS number that must be a whole number in `0..=2^53-1` (a byte offset or sequence number).
pub(crate) fn whole_number(value: f64, what: &str) -> Result<u64, BindingError> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if value.fract() == 0.0 && (0.0..=MAX_SAFE).contains(&value) {
        // Exact: a whole number within the safe-integer range.
        Ok(value as u64)
    } else {
        Err(BindingError::new(
            "RangeError",
            "invalid_number",
            format!("{what} must be a whole number from 0 to 2^53-1, got {value}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_must_be_safe_whole_numbers() {
        assert_eq!(whole_number(42.0, "seq").unwrap(), 42);
        assert_eq!(
            whole_number(-1.0, "seq").unwrap_err().code,
            "invalid_number"
        );
        assert!(whole_number(1.5, "seq").is_err());
        assert!(whole_number(f64::NAN, "seq").is_err());
        assert!(whole_number(f64::INFINITY, "seq").is_err());
    }
}
