//! `POST /v1/responses`: the OpenAI Responses API, forwarded to `{upstream}/responses`.
//!
//! The request planned ([`Plan::new`]), the instructions given the sources, the upstream always
//! asked to stream; its events answered by the Responses wire
//! ([`ResponsesWire`]), or the AI SDK UI stream. A
//! non-streaming request gets `response.completed`'s response. `GET /v1/responses/{id}`
//! resumes a stream.

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use citeflow_core::provider::Dialect;
use serde_json::{Map, Value};

use super::relay::{relay, Api, Relayed};
use crate::answer::responses::ResponsesWire;
use crate::answer::stream::{self, citeflow_of};
use crate::error::ApiError;
use crate::intake::body::ApiJson;
use crate::plan::{Plan, Route};
use crate::state::AppState;
use crate::tenancy::Owner;
use crate::upstream::upstream_key;

/// `POST /v1/responses`.
pub(crate) async fn create(
    State(state): State<AppState>,
    owner: Result<Owner, ApiError>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Response, ApiError> {
    // The body is read before the key is checked (as this route always did).
    let route = Route::Provider {
        native: Vec::new(),
        native_passages: false,
    };
    let mut plan = Plan::new(&state, owner?, &headers, body, route).await?;
    if let Some(system) = &plan.system {
        let instructions = match plan.body.get("instructions").and_then(Value::as_str) {
            Some(i) if !i.is_empty() => format!("{system}\n\n{i}"),
            _ => system.clone(),
        };
        plan.body
            .insert("instructions".into(), Value::String(instructions));
    }
    plan.body.insert("stream".into(), Value::Bool(true));
    let mut req = state
        .http
        .post(format!("{}/responses", state.settings.upstream))
        .json(&plan.body);
    if let Some(k) = upstream_key(&state, &headers) {
        req = req.bearer_auth(k);
    }
    let api = Api {
        dialect: Dialect::OpenaiResponses,
        wire: ResponsesWire::new,
        is_block_end: |v: &Value| {
            v.get("type").and_then(Value::as_str) == Some("response.output_text.done")
        },
    };
    let events = match relay(&state, &plan, req, api).await? {
        Relayed::Streamed(r) => return Ok(r),
        Relayed::Whole(_, events) => events,
    };
    let mut answer = events
        .last()
        .and_then(|e| e.get("response"))
        .cloned()
        .ok_or_else(|| ApiError::UpstreamMalformed("no response.completed".into()))?;
    answer["citeflow"] = citeflow_of(&events, plan.session_id.as_deref());
    state.metrics.completions.inc(crate::metrics::OPENAI);
    Ok(Json(answer).into_response())
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct ResumeQuery {
    last_event_id: Option<String>,
    /// The Responses API's resume cursor: the `sequence_number` of the last event seen.
    starting_after: Option<u64>,
}

/// `GET /v1/responses/{stream_id}`: the stream again after `Last-Event-ID` (or
/// `starting_after`, a `sequence_number`), with named events.
pub(crate) async fn resume(
    State(state): State<AppState>,
    owner: Owner,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<ResumeQuery>,
) -> Result<Response, ApiError> {
    let last = q
        .last_event_id
        .or_else(|| q.starting_after.map(|s| s.saturating_add(1).to_string()));
    stream::resume::<ResponsesWire>(&state, &owner, &headers, id, last.as_deref()).await
}
