//! Helpers: JS values from and to JSON text.

use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

/// A JS value parsed from JSON text, as the extern type a binding takes.
pub(crate) fn js<T: JsCast>(json: &str) -> T {
    js_sys::JSON::parse(json)
        .expect("valid json")
        .unchecked_into()
}

/// A JS string as the extern type a binding takes.
pub(crate) fn s<T: JsCast>(text: &str) -> T {
    JsValue::from_str(text).unchecked_into()
}

/// The JSON value of a JS value.
pub(crate) fn json(v: &JsValue) -> Value {
    let text = js_sys::JSON::stringify(v)
        .expect("stringify")
        .as_string()
        .expect("a string");
    serde_json::from_str(&text).expect("json")
}

/// The `name` and `code` of a thrown error.
pub(crate) fn name_code(e: &JsValue) -> (String, String) {
    let get = |k: &str| {
        js_sys::Reflect::get(e, &k.into())
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_default()
    };
    (get("name"), get("code"))
}
