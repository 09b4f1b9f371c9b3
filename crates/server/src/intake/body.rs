//! Reading JSON bodies under the size limit and the shared memory budget ([`ApiJson`]), and
//! checking sources against the limits.

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use citeflow_core::Source;
use serde_json::{Map, Value};

use crate::budget::BodyBudget;
use crate::error::ApiError;
use crate::intake::conn::body_error;
use crate::settings::Limits;
use crate::state::AppState;

/// A request body read as JSON under [`Limits::max_body_bytes`] and the shared
/// [`BodyBudget`] (an empty body is `{}`), then as `T` ([`ApiRequest`]); every refusal is an
/// [`ApiError`]: `body_too_large`, `request_timeout`, `overloaded`, or `invalid_request` with
/// the message of `T`'s route.
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub(crate) T);

/// A request body the API reads as JSON: how it is read from the JSON value, and how a
/// value of the wrong shape is answered.
pub(crate) trait ApiRequest: Sized {
    /// `body` as this request.
    ///
    /// # Errors
    /// `invalid_request` naming what does not fit.
    fn from_json(body: Value) -> Result<Self, ApiError>;
}

impl<T: ApiRequest> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let body = read_json(req.into_body(), &state.settings.limits, &state.body_budget).await?;
        T::from_json(body).map(ApiJson)
    }
}

/// A provider-shaped body (chat completions, responses, messages): any object, passed on to
/// the upstream once the citeflow fields are taken out.
impl ApiRequest for Map<String, Value> {
    fn from_json(body: Value) -> Result<Self, ApiError> {
        match body {
            Value::Object(map) => Ok(map),
            _ => Err(ApiError::invalid(
                "request body must be a JSON object",
                None,
            )),
        }
    }
}

/// The body as JSON, refused past `max_body_bytes`; its share of the budget goes back once
/// it is parsed.
async fn read_json(body: Body, limits: &Limits, budget: &BodyBudget) -> Result<Value, ApiError> {
    let received = budget.read(body, limits.max_body_bytes, body_error).await?;
    if received.len() == 0 {
        return Ok(Value::Object(Default::default()));
    }
    received
        .json()
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
    for (i, s) in list.iter().enumerate() {
        let bytes =
            s.text.as_ref().map_or(0, String::len) + s.snippet.as_ref().map_or(0, String::len);
        if bytes > limits.max_source_text_bytes {
            return Err(ApiError::SourceTooLarge {
                id: s.id.clone(),
                bytes,
                max: limits.max_source_text_bytes,
            });
        }
        if let Some((field, bytes)) =
            field_sizes(s).find(|(_, n)| *n > limits.max_source_field_bytes)
        {
            return Err(ApiError::SourceFieldTooLarge {
                param: format!("sources[{i}].{field}"),
                bytes,
                max: limits.max_source_field_bytes,
            });
        }
    }
    Ok(list)
}

/// The size in bytes of each field of a source other than its text: the id, title, url, key,
/// the locator's strings, and the metadata (all keys and values together).
fn field_sizes(s: &Source) -> impl Iterator<Item = (&'static str, usize)> + '_ {
    let len = |v: &Option<String>| v.as_ref().map_or(0, String::len);
    let locator = s.locator.as_ref();
    [
        ("id", s.id.len()),
        ("title", len(&s.title)),
        ("url", len(&s.url)),
        ("key", len(&s.key)),
        (
            "locator.chapter_title",
            locator.map_or(0, |l| len(&l.chapter_title)),
        ),
        ("locator.cfi", locator.map_or(0, |l| len(&l.cfi))),
        ("locator.page", locator.map_or(0, |l| len(&l.page))),
        (
            "metadata",
            s.metadata.iter().map(|(k, v)| k.len() + v.len()).sum(),
        ),
    ]
    .into_iter()
}
