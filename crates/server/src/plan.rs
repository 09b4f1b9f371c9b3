//! The parts of a request's plan that the chat route (`chat.rs`) and the provider routes
//! (`proxy.rs`) share: a book's passages joining the sources, the numbering scope, the
//! session's round, the rewriter settings named in `citeflow`, and the wire protocol of the
//! answer.

use axum::http::HeaderMap;
use citeflow_core::{
    NumberSource, PromptMarker, RankMode, Settings, SettingsPatch, Source, Sources, Style,
    UnknownPolicy,
};

use crate::books;
use crate::error::ApiError;
use crate::sessions::{add_round, owned_session};
use crate::state::{now_ms, AppState};
use crate::tenancy::Owner;

/// Takes the `citeflow` field out of a provider-shaped body and reads it as the route's
/// options (`None` or `null`: the defaults).
///
/// # Errors
/// `invalid_request` naming `citeflow` when it does not fit.
pub(crate) fn take_citeflow<T: serde::de::DeserializeOwned + Default>(
    body: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<T, ApiError> {
    match body.remove("citeflow") {
        None | Some(serde_json::Value::Null) => Ok(T::default()),
        Some(v) => serde_json::from_value(v)
            .map_err(|e| ApiError::invalid(format!("citeflow: {e}"), Some("citeflow"))),
    }
}

/// Adds the passages of `book` that best match `question` to `given` (ids already given are
/// kept as they are); returns the passages added. `param` names the field to blame when the
/// request has no question to search for.
///
/// # Errors
/// `citeflow.top_k` without a book, no question, an unknown book, or too many sources.
pub(crate) async fn book_passages(
    state: &AppState,
    owner: &Owner,
    book: Option<&str>,
    top_k: Option<usize>,
    question: Option<String>,
    param: &'static str,
    given: &mut Vec<Source>,
) -> Result<Vec<Source>, ApiError> {
    let limits = &state.settings.limits;
    let key = match (book, top_k) {
        (None, None) => return Ok(Vec::new()),
        (None, Some(_)) => {
            return Err(ApiError::invalid(
                "citeflow.top_k needs citeflow.book",
                Some("citeflow.top_k"),
            ))
        }
        (Some(key), _) => key,
    };
    let k = books::top_k(top_k, limits, "citeflow.top_k")?;
    let q = question.ok_or_else(|| {
        ApiError::invalid(
            "citeflow.book needs a user message with text to search the book for",
            Some(param),
        )
    })?;
    let mut added = Vec::new();
    for p in books::retrieve(state, owner, key, &q, k, Some("citeflow.book")).await? {
        if !given.iter().any(|s| s.id == p.id) {
            added.push(p.clone());
            given.push(p);
        }
    }
    if given.len() > limits.max_sources {
        return Err(ApiError::TooManySources {
            count: given.len(),
            max: limits.max_sources,
        });
    }
    Ok(added)
}

/// `citeflow.scope`: numbers per answer (`false`) or in the session's table (`true`).
///
/// # Errors
/// A name other than `answer` or `session`.
pub(crate) fn session_scope(scope: Option<&str>) -> Result<bool, ApiError> {
    match scope {
        None | Some("answer") => Ok(false),
        Some("session") => Ok(true),
        Some(other) => Err(ApiError::invalid(
            format!("citeflow.scope {other:?} is not answer or session"),
            Some("citeflow.scope"),
        )),
    }
}

/// The sources the answer may cite: with `session`, its sources after `given` joined them as
/// a new round (named by `round_query`, else the question a book was searched for); without,
/// `given` alone.
///
/// # Errors
/// An unknown session (or another key's), too many rounds, `scope session` without a session,
/// or sources that cannot be registered.
pub(crate) async fn answer_sources(
    state: &AppState,
    owner: &Owner,
    session: Option<&str>,
    scope_session: bool,
    round_query: Option<String>,
    given: Vec<Source>,
) -> Result<(Sources, Option<String>), ApiError> {
    match session {
        Some(id) => {
            let s = owned_session(state, owner, id).await?;
            let s = if given.is_empty() {
                state.store.touch_session(id, now_ms()).await?;
                s
            } else {
                add_round(state, &s, round_query, given).await?
            };
            Ok((s.sources, Some(id.to_owned())))
        }
        None if scope_session => Err(ApiError::invalid(
            "citeflow.scope session needs citeflow.session",
            Some("citeflow.scope"),
        )),
        None => Ok((Sources::from_vec(given)?, None)),
    }
}

/// The rewriter's settings for `marker` with the `citeflow` fields `style`, `unknown` and
/// `rank`, then `citeflow.settings` (any other setting, by the core's names: `syntaxes`,
/// `id_pattern`, `max_pending_bytes`, `invalid_utf8`, `dedupe`, `skip_code`, …); numbers come
/// from the store.
///
/// # Errors
/// A name that is not a style, unknown policy or rank mode, an invalid setting, or
/// `settings.number_source` (the server decides where numbers come from).
pub(crate) fn rewriter_settings(
    marker: PromptMarker,
    style: Option<&str>,
    unknown: Option<&str>,
    rank: Option<&str>,
    patch: Option<&SettingsPatch>,
) -> Result<Settings, ApiError> {
    let mut base = Settings::default();
    if let Some(s) = style {
        base = base.with_style(Style::from_name(s)?);
    }
    if let Some(u) = unknown {
        base = base.with_unknown(UnknownPolicy::from_name(u)?);
    }
    if let Some(r) = rank {
        base = base.with_rank(RankMode::from_name(r)?);
    }
    let mut settings = marker.settings(base);
    if let Some(patch) = patch {
        if patch.number_source.is_some() {
            return Err(ApiError::invalid(
                "citeflow.settings.number_source is the server's: numbers come from its store",
                Some("citeflow.settings.number_source"),
            ));
        }
        settings = patch.apply(settings)?;
    }
    Ok(settings.with_number_source(NumberSource::External))
}

/// Whether the answer goes out as the AI SDK UI message stream: `citeflow.protocol`
/// `ai-sdk` (or `native`), else an `Accept` naming `x-vercel-ai-ui-message-stream`.
///
/// # Errors
/// Another protocol name.
pub(crate) fn wants_ai_sdk(protocol: Option<&str>, headers: &HeaderMap) -> Result<bool, ApiError> {
    match protocol {
        None => Ok(headers
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("x-vercel-ai-ui-message-stream"))),
        Some("ai-sdk") => Ok(true),
        Some("native") => Ok(false),
        Some(other) => Err(ApiError::invalid(
            format!("citeflow.protocol {other:?} is not native or ai-sdk"),
            Some("citeflow.protocol"),
        )),
    }
}
