//! `POST /v1/chat/completions`: the request planned ([`Plan::new`]), the upstream call, the
//! answer streamed ([`Generation`], or the AI SDK UI stream) or come whole; and
//! `GET /v1/streams/{id}`, a chat stream resumed.

use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use citeflow_core::provider::Dialect;
use serde_json::{json, Map, Value};

use crate::answer;
use crate::answer::ai_sdk::AiSdkWire;
use crate::answer::chat::Generation;
use crate::answer::engine::Engine;
use crate::answer::stream::{self, new_stream_id, open_stream, start};
use crate::error::ApiError;
use crate::intake::body::ApiJson;
use crate::metrics::OPENAI;
use crate::plan::{Plan, Route};
use crate::state::AppState;
use crate::tenancy::Owner;

/// Sends the request upstream with `key` (see [`crate::upstream::upstream_key`]) and waits for
/// the response headers.
pub(crate) async fn call_upstream(
    state: &AppState,
    body: &Map<String, Value>,
    key: Option<&str>,
) -> Result<reqwest::Response, ApiError> {
    let url = format!("{}/chat/completions", state.settings.upstream);
    let mut req = state.http.post(&url).json(body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    crate::upstream::send(state, req).await
}

pub(crate) async fn completions(
    State(state): State<AppState>,
    owner: Owner,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let plan = Plan::new(&state, owner, &headers, body, Route::Chat).await?;
    // A slot of the key's quota, taken before the upstream is called; it goes with the
    // generation task (or ends with this request when not streaming).
    let slot = state
        .quota
        .acquire(&plan.owner, state.settings.limits.max_streams_per_key)?;
    // The server's key, or with --forward-client-key the caller's.
    let key = crate::upstream::upstream_key(&state, &headers);
    if !plan.stream {
        return complete(state, plan, key.as_deref()).await;
    }
    let requested = Instant::now();
    let resp = call_upstream(&state, &plan.body, key.as_deref()).await?;
    let scope = plan.scope();
    let session = plan.session_id.as_deref();
    if plan.ai_sdk {
        let engine = Engine::new(
            &state,
            plan.settings,
            plan.sources,
            scope,
            Dialect::OpenaiChat,
        )
        .await?
        .with_quotes(plan.quotes);
        let stream_id = new_stream_id();
        open_stream(&state, &stream_id, &plan.owner, session).await?;
        let wire = AiSdkWire::new(engine, stream_id.clone(), |_| false);
        return Ok(start(&state, stream_id, wire, resp, slot, session));
    }
    let stream_id = new_stream_id();
    let generation = Generation::new(
        state.clone(),
        stream_id.clone(),
        (plan.settings, plan.sources),
        scope,
        plan.quotes,
        requested,
    )
    .await?;
    open_stream(&state, &stream_id, &plan.owner, session).await?;
    Ok(start(&state, stream_id, generation, resp, slot, session))
}

/// A non-streamed request: the upstream's whole completion is the chat answer come whole
/// ([`Generation::whole`]), run by the same runner as a stream: each choice rewritten on its
/// own (numbered in the session's table when the scope is the session's, else from 1), its
/// citations as `message.annotations`, the upstream's own numbered and mapped into the
/// rewritten text (bound late).
async fn complete(state: AppState, plan: Plan, key: Option<&str>) -> Result<Response, ApiError> {
    let resp = call_upstream(&state, &plan.body, key).await?;
    let timeout_ms = state.settings.limits.upstream_response_timeout_ms;
    let body: Value = tokio::time::timeout(Duration::from_millis(timeout_ms), resp.json())
        .await
        .map_err(|_| ApiError::UpstreamTimeout { timeout_ms })?
        .map_err(|e| ApiError::UpstreamMalformed(format!("not a JSON chat completion: {e}")))?;
    let scope = plan.scope();
    let mut answer = Generation::new(
        state.clone(),
        String::new(),
        (plan.settings, plan.sources),
        scope,
        plan.quotes,
        Instant::now(),
    )
    .await?
    .whole();
    let out = answer::collect_whole(&state, OPENAI, &mut answer, &body)
        .await
        .map_err(ApiError::from)?;
    let mut chunks = out
        .iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str::<Value>(d).map_err(|e| ApiError::Internal(e.to_string())));
    let mut completion = chunks
        .next()
        .transpose()?
        .ok_or_else(|| ApiError::Internal("the answer gave no completion".into()))?;
    let mut events = Vec::new();
    for chunk in std::iter::once(Ok(completion.clone())).chain(chunks) {
        let mut chunk = chunk?;
        if let Some(Value::Array(e)) = chunk.pointer_mut("/citeflow/events").map(Value::take) {
            events.extend(e);
        }
    }
    let mut cf = json!({"events": events});
    if let Some(s) = &plan.session_id {
        cf["session_id"] = json!(s);
    }
    completion["citeflow"] = cf;
    state.metrics.completions.inc(OPENAI);
    Ok(Json(completion).into_response())
}

/// The query of `GET /v1/streams/{id}`.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct ResumeQuery {
    last_event_id: Option<String>,
}

/// `GET /v1/streams/{id}`: a chat stream's log again after `Last-Event-ID` (the header, else
/// `?last_event_id=`), as chat chunks, or as the AI SDK UI message stream when `Accept` names
/// `x-vercel-ai-ui-message-stream` (the stream's log holds parts when it was asked so).
pub(crate) async fn resume(
    State(state): State<AppState>,
    owner: Owner,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<ResumeQuery>,
) -> Result<Response, ApiError> {
    let last = q.last_event_id.as_deref();
    let ui = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("x-vercel-ai-ui-message-stream"));
    if ui {
        stream::resume::<AiSdkWire>(&state, &owner, &headers, id, last).await
    } else {
        stream::resume::<Generation>(&state, &owner, &headers, id, last).await
    }
}
