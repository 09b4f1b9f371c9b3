//! What the provider routes (`/v1/responses`, `/v1/messages`) share once their upstream
//! request is built: the key's quota slot, the upstream call, the [`Engine`] for the API's
//! dialect, and the answer: streamed in the API's own wire or the AI SDK UI stream, or
//! collected whole for the route to put together.

use axum::response::Response;
use citeflow_core::provider::Dialect;
use serde_json::Value;

use crate::answer::ai_sdk::AiSdkWire;
use crate::answer::engine::Engine;
use crate::answer::stream::{collect, new_stream_id, open_stream, start};
use crate::answer::Answer;
use crate::error::ApiError;
use crate::plan::Plan;
use crate::state::AppState;
use crate::upstream;

/// How a provider API answers: its dialect, its wire, and which upstream event ends a text
/// block (for the AI SDK UI stream).
pub(crate) struct Api<W> {
    pub(crate) dialect: Dialect,
    /// The wire over an engine (`Some(stream id)` when streamed).
    pub(crate) wire: fn(Engine, Option<String>) -> W,
    pub(crate) is_block_end: fn(&Value) -> bool,
}

/// A relayed answer: the response already streaming, or the whole answer's wire and events.
pub(crate) enum Relayed<W> {
    Streamed(Response),
    Whole(W, Vec<Value>),
}

/// Takes a slot of the key's quota (before the upstream is called; it goes with the
/// generation task, or ends with this request when not streaming), sends `req`, and answers
/// through `api`'s wire: streamed when the plan asks for it, else collected.
///
/// # Errors
/// The quota's, the upstream's (unreachable, an error status), the store's, or the
/// answer's when collected.
pub(crate) async fn relay<W: Answer>(
    state: &AppState,
    plan: &Plan,
    req: reqwest::RequestBuilder,
    api: Api<W>,
) -> Result<Relayed<W>, ApiError> {
    let slot = state
        .quota
        .acquire(&plan.owner, state.settings.limits.max_streams_per_key)?;
    let resp = upstream::send(state, req).await?;
    let engine = Engine::new(
        state,
        plan.settings.clone(),
        plan.sources.clone(),
        plan.scope(),
        api.dialect,
    )
    .await?
    .with_quotes(plan.quotes.clone());
    if !plan.stream {
        let mut answer = (api.wire)(engine, None);
        let events = collect(state, &mut answer, resp).await?;
        return Ok(Relayed::Whole(answer, events));
    }
    let stream_id = new_stream_id();
    open_stream(state, &stream_id, &plan.owner, plan.session_id.as_deref()).await?;
    let response = if plan.ai_sdk {
        let wire = AiSdkWire::new(engine, stream_id.clone(), api.is_block_end);
        start(state, stream_id, wire, resp, slot, None)
    } else {
        let wire = (api.wire)(engine, Some(stream_id.clone()));
        let session = plan.session_id.as_deref();
        start(state, stream_id, wire, resp, slot, session)
    };
    Ok(Relayed::Streamed(response))
}
