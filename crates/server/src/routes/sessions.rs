//! `/v1/sessions`: create, read, add rounds, delete.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use citeflow_core::Sources;
use citeflow_store::{NumberScope, SessionRecord};
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::intake::body::{sources, ApiJson, ApiRequest};
use crate::plan::session::{add_round, owned_session};
use crate::state::{now_ms, random_id, AppState};
use crate::tenancy::Owner;

/// The body of `POST /v1/sessions` and `POST /v1/sessions/{id}/rounds`: a round of sources
/// and the query it answers. Other fields are ignored; a body that is not an object names
/// neither.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct RoundRequest {
    /// Checked against the limits by [`sources`] when read.
    #[serde(default)]
    sources: Option<Value>,
    /// Checked by [`RoundRequest::query`] when a round is added.
    #[serde(default)]
    query: Option<Value>,
}

impl ApiRequest for RoundRequest {
    fn from_json(body: Value) -> Result<Self, ApiError> {
        // Any object fits (both fields take any JSON value); anything else is no fields.
        Ok(serde_json::from_value(body).unwrap_or_default())
    }
}

impl RoundRequest {
    /// The round's query: a string, or none.
    fn query(&self) -> Result<Option<String>, ApiError> {
        match &self.query {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::invalid("query must be a string", Some("query"))),
        }
    }
}

/// The session as the API shows it: rounds with their sources, and the numbering table.
async fn view(state: &AppState, s: &SessionRecord) -> Result<Value, ApiError> {
    let numbering = state
        .store
        .numbering(&NumberScope::Session(s.id.clone()))
        .await?;
    let rounds: Vec<Value> = s
        .sources
        .rounds()
        .iter()
        .map(|r| {
            let list: Vec<_> = r
                .source_ids
                .iter()
                .filter_map(|id| s.sources.get(id))
                .collect();
            json!({"number": r.number, "query": r.query, "sources": list})
        })
        .collect();
    Ok(json!({
        "id": s.id,
        "object": "citeflow.session",
        "created_ms": s.created_ms,
        "rounds": rounds,
        "numbering": numbering.entries(),
    }))
}

pub(crate) async fn create(
    State(state): State<AppState>,
    owner: Owner,
    ApiJson(mut req): ApiJson<RoundRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let list = sources(req.sources.take(), &state.settings.limits)?;
    let mut src = Sources::new();
    if !list.is_empty() {
        src.append_round(req.query()?, list)?;
    }
    let max = state.settings.limits.max_sessions_per_key;
    if state.store.count_sessions(&owner.0).await? >= max as u64 {
        return Err(ApiError::TooManySessions { max });
    }
    let now = now_ms();
    let record = SessionRecord {
        id: random_id("sess_"),
        owner: owner.0,
        sources: src,
        created_ms: now,
        last_used_ms: now,
    };
    state.store.create_session(record.clone()).await?;
    Ok((StatusCode::CREATED, Json(view(&state, &record).await?)))
}

pub(crate) async fn get(
    State(state): State<AppState>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let s = owned_session(&state, &owner, &id).await?;
    Ok(Json(view(&state, &s).await?))
}

pub(crate) async fn append_round(
    State(state): State<AppState>,
    owner: Owner,
    Path(id): Path<String>,
    ApiJson(mut req): ApiJson<RoundRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let s = owned_session(&state, &owner, &id).await?;
    let list = sources(req.sources.take(), &state.settings.limits)?;
    let s = add_round(&state, &s, req.query()?, list).await?;
    let round = s.sources.rounds().len();
    Ok((
        StatusCode::CREATED,
        Json(json!({"round": round, "session": view(&state, &s).await?})),
    ))
}

pub(crate) async fn delete(
    State(state): State<AppState>,
    owner: Owner,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    owned_session(&state, &owner, &id).await?;
    state.store.delete_session(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
