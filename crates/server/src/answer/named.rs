//! The frames of the named streams (Responses, Messages): each event named by its `type`, as
//! the Anthropic SDKs read the `event:` line; errors as `error` events.

use bytes::Bytes;
use citeflow_store::{StoreError, StoredEvent};
use serde_json::json;

use crate::ops::shutdown;
use crate::sse;

/// A logged event of a named stream (Responses, Messages) as its frame, named by its `type`
/// (the Anthropic SDKs read the `event:` line); the log's read error as an `error` event.
pub(crate) fn frame(e: Result<&StoredEvent, &StoreError>) -> Bytes {
    match e {
        Ok(e) => {
            let name = serde_json::from_str::<Typed<'_>>(&e.data).ok();
            let name = name.as_ref().and_then(|t| t.r#type.as_deref());
            sse::event(Some(e.id), name, &e.data)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot read stream log");
            let data = json!({"type": "error", "error": {"type": "api_error",
                "message": "the stream log cannot be read; reconnect with Last-Event-ID"}});
            sse::event(None, Some("error"), &data.to_string())
        }
    }
}

/// A named stream's failure event, as it was logged.
pub(crate) fn failure(data: &str) -> Bytes {
    sse::event(None, Some("error"), data)
}

/// The shutdown's last event of a named stream (named `error`, as their errors are).
pub(crate) fn shutdown_frame() -> Bytes {
    let data = json!({"type": "error", "error": {"type": "api_error",
        "code": shutdown::CODE.as_str(), "message": shutdown::MESSAGE}});
    sse::event(None, Some("error"), &data.to_string())
}

/// The `type` of an event, read without a tree.
#[derive(serde::Deserialize)]
struct Typed<'a> {
    #[serde(borrow)]
    r#type: Option<std::borrow::Cow<'a, str>>,
}
