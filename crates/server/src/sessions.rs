//! `/v1/sessions`: create, read, add rounds, delete.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use citeflow_core::{Source, Sources};
use citeflow_store::{NumberScope, SessionRecord};
use serde_json::{json, Value};

use crate::auth::{owner, Owner};
use crate::body::{read_json, sources};
use crate::error::ApiError;
use crate::state::{now_ms, random_id, AppState};

/// The session if it exists and belongs to `owner` (else 404, whoever owns it).
pub(crate) async fn owned_session(
    state: &AppState,
    owner: &Owner,
    id: &str,
) -> Result<SessionRecord, ApiError> {
    let s = state.store.session(id).await?;
    if s.owner != owner.0 {
        return Err(ApiError::NotFound {
            what: "session",
            id: id.to_owned(),
        });
    }
    Ok(s)
}

/// Appends a round of sources to session `s`, refused with 429 `too_many_rounds` when it holds
/// [`Limits::max_rounds_per_session`](crate::Limits::max_rounds_per_session) already.
pub(crate) async fn add_round(
    state: &AppState,
    s: &SessionRecord,
    query: Option<String>,
    sources: Vec<Source>,
) -> Result<SessionRecord, ApiError> {
    let max = state.settings.limits.max_rounds_per_session;
    if s.sources.rounds().len() >= max {
        return Err(ApiError::TooManyRounds { max });
    }
    Ok(state
        .store
        .append_round(&s.id, query, sources, now_ms())
        .await?)
}

fn query_of(body: &Value) -> Result<Option<String>, ApiError> {
    match body.get("query") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::invalid("query must be a string", Some("query"))),
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
    headers: HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let owner = owner(&state, &headers)?;
    let mut body = read_json(body, &state.settings.limits).await?;
    let list = sources(
        body.get_mut("sources").map(Value::take),
        &state.settings.limits,
    )?;
    let mut src = Sources::new();
    if !list.is_empty() {
        src.append_round(query_of(&body)?, list)?;
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
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let owner = owner(&state, &headers)?;
    let s = owned_session(&state, &owner, &id).await?;
    Ok(Json(view(&state, &s).await?))
}

pub(crate) async fn append_round(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<impl IntoResponse, ApiError> {
    let owner = owner(&state, &headers)?;
    let mut body = read_json(body, &state.settings.limits).await?;
    let s = owned_session(&state, &owner, &id).await?;
    let list = sources(
        body.get_mut("sources").map(Value::take),
        &state.settings.limits,
    )?;
    let s = add_round(&state, &s, query_of(&body)?, list).await?;
    let round = s.sources.rounds().len();
    Ok((
        StatusCode::CREATED,
        Json(json!({"round": round, "session": view(&state, &s).await?})),
    ))
}

pub(crate) async fn delete(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let owner = owner(&state, &headers)?;
    owned_session(&state, &owner, &id).await?;
    state.store.delete_session(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
