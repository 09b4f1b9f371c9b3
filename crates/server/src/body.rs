//! Reading JSON bodies under the size limit, and checking sources against the limits.

use axum::body::Body;
use citeflow_core::Source;
use serde_json::Value;

use crate::conn::body_error;
use crate::error::ApiError;
use crate::settings::Limits;

/// The body as JSON, refused past `max_body_bytes`.
pub(crate) async fn read_json(body: Body, limits: &Limits) -> Result<Value, ApiError> {
    let max_bytes = limits.max_body_bytes;
    let bytes = axum::body::to_bytes(body, max_bytes)
        .await
        .map_err(|e| body_error(e, ApiError::BodyTooLarge { max_bytes }))?;
    if bytes.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::invalid(format!("request body is not valid JSON: {e}"), None))
}

/// Parses a `sources` array and checks the count and text limits.
pub(crate) fn sources(value: Option<Value>, limits: &Limits) -> Result<Vec<Source>, ApiError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let list: Vec<Source> = serde_json::from_value(value)
        .map_err(|e| ApiError::invalid(format!("sources: {e}"), Some("sources")))?;
    if list.len() > limits.max_sources {
        return Err(ApiError::TooManySources {
            count: list.len(),
            max: limits.max_sources,
        });
    }
    for s in &list {
        let bytes =
            s.text.as_ref().map_or(0, String::len) + s.snippet.as_ref().map_or(0, String::len);
        if bytes > limits.max_source_text_bytes {
            return Err(ApiError::SourceTooLarge {
                id: s.id.clone(),
                bytes,
                max: limits.max_source_text_bytes,
            });
        }
    }
    Ok(list)
}
