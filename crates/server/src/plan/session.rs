//! The session a request names: [`owned_session`] (only its owner sees it) and
//! [`add_round`] (a round of sources, within the session's limit).

use citeflow_core::Source;
use citeflow_store::SessionRecord;

use crate::error::ApiError;
use crate::state::{now_ms, AppState};
use crate::tenancy::Owner;

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
