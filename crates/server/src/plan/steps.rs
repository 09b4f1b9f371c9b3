//! The steps of the one request plan ([`Plan::new`](super::Plan::new)) that every route
//! shares, in the order they run: the options ([`take_citeflow`]), the sources
//! ([`gather_sources`]: a book's passages, the numbering scope, the session's round), the
//! settings ([`prompt_marker`], [`rewriter_settings`]) and the prompt ([`system_prompt`], the
//! core's zero-shot prompt), and the wire protocol of the answer ([`wants_ai_sdk`]).

use axum::http::HeaderMap;
use citeflow_core::{
    zero_shot_messages, NumberSource, PromptMarker, RankMode, Settings, SettingsPatch, Source,
    Sources, Style, UnknownPolicy,
};

use super::passages;
use super::session::{add_round, owned_session};
use crate::error::ApiError;
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

/// `citeflow.settings`: any rewriter setting by the core's names, read into the typed patch
/// apart from the other options, so that a bad member is `invalid_setting` naming it.
///
/// # Errors
/// A member that is not a setting, or whose value does not read as it.
pub(crate) fn settings_patch(
    v: Option<serde_json::Value>,
) -> Result<Option<SettingsPatch>, ApiError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    serde_json::from_value(v.clone()).map(Some).map_err(|e| {
        let e = match member_error(&v) {
            Some((name, e)) if !e.starts_with(name.as_str()) => format!("{name}: {e}"),
            Some((_, e)) => e,
            None => e.to_string(),
        };
        ApiError::SettingsField {
            message: format!("citeflow.settings: {e}"),
            param: "citeflow.settings",
        }
    })
}

/// The first member of a `citeflow.settings` object that does not read as a setting on its
/// own, and serde's message for it: serde names no field in a type error (`invalid type:
/// string "yes", expected a boolean`), so the message would not say which member it was.
fn member_error(v: &serde_json::Value) -> Option<(String, String)> {
    v.as_object()?.iter().find_map(|(name, value)| {
        let one = serde_json::Value::Object([(name.clone(), value.clone())].into_iter().collect());
        serde_json::from_value::<SettingsPatch>(one)
            .err()
            .map(|e| (name.clone(), e.to_string()))
    })
}

/// The `citeflow` fields that choose an answer's sources (both routes' options have them).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SourceChoice<'a> {
    /// `citeflow.session`: the session whose table numbers the answer.
    pub(crate) session: Option<&'a str>,
    /// `citeflow.scope`: `answer` or `session`.
    pub(crate) scope: Option<&'a str>,
    /// `citeflow.round_query`: the query of the round the given sources make.
    pub(crate) round_query: Option<&'a str>,
    /// `citeflow.book`: a book whose passages for the question join the sources.
    pub(crate) book: Option<&'a str>,
    /// `citeflow.top_k`: how many passages of `book`.
    pub(crate) top_k: Option<usize>,
}

/// The sources an answer may cite, and where its numbers come from.
#[derive(Debug)]
pub(crate) struct AnswerSources {
    pub(crate) sources: Sources,
    pub(crate) session_id: Option<String>,
    /// Numbers in the session's table (`citeflow.scope` `session`), else per answer.
    pub(crate) session_scope: bool,
    /// The passages retrieved from the book (also among `sources`).
    pub(crate) passages: Vec<Source>,
}

/// The sources step: `given`, then the passages of `choice.book` that best match `question`
/// (before any streaming, so an unknown key is a plain error response), joined to the
/// session as a new round when one is named (a book's retrieval is a round whose query is
/// the question). `question_param` names the field to blame when there is no question.
///
/// # Errors
/// Those of [`book_passages`], [`session_scope`] and [`answer_sources`], in that order.
pub(crate) async fn gather_sources(
    state: &AppState,
    owner: &Owner,
    choice: SourceChoice<'_>,
    question: Option<String>,
    question_param: &'static str,
    mut given: Vec<Source>,
) -> Result<AnswerSources, ApiError> {
    let passages = book_passages(
        state,
        owner,
        choice.book,
        choice.top_k,
        question.clone(),
        question_param,
        &mut given,
    )
    .await?;
    let session_scope = session_scope(choice.scope)?;
    let round_query = choice
        .round_query
        .map(str::to_owned)
        .or(question.filter(|_| choice.book.is_some()));
    let (sources, session_id) = answer_sources(
        state,
        owner,
        choice.session,
        session_scope,
        round_query,
        given,
    )
    .await?;
    Ok(AnswerSources {
        sources,
        session_id,
        session_scope,
        passages,
    })
}

/// Adds the passages of `book` that best match `question` to `given` (ids already given are
/// kept as they are); returns the passages added. `param` names the field to blame when the
/// request has no question to search for.
///
/// # Errors
/// `citeflow.top_k` without a book, no question, an unknown book, or too many sources.
async fn book_passages(
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
    let k = passages::top_k(top_k, limits, "citeflow.top_k")?;
    let q = question.ok_or_else(|| {
        ApiError::invalid(
            "citeflow.book needs a user message with text to search the book for",
            Some(param),
        )
    })?;
    let mut added = Vec::new();
    for p in passages::retrieve(state, owner, key, &q, k, Some("citeflow.book")).await? {
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
fn session_scope(scope: Option<&str>) -> Result<bool, ApiError> {
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
async fn answer_sources(
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

/// `citeflow.marker` by name, else the server's default.
///
/// # Errors
/// A name that is not a prompt marker.
pub(crate) fn prompt_marker(
    name: Option<&str>,
    default: PromptMarker,
) -> Result<PromptMarker, ApiError> {
    Ok(match name {
        Some(m) => m.parse::<PromptMarker>()?,
        None => default,
    })
}

/// The system text that tells the model about `sources`: the system message of the core's
/// zero-shot prompt ([`zero_shot_messages`]), the citation instruction and the sources block.
pub(crate) fn system_prompt(sources: &Sources, marker: PromptMarker, max_chars: usize) -> String {
    zero_shot_messages(sources, marker, "", max_chars)
        .into_iter()
        .find(|m| m.role == "system")
        .map(|m| m.content)
        .unwrap_or_default()
}

/// The rewriter's settings for `marker` with the `citeflow` fields `style`, `unknown` and
/// `rank`, then `citeflow.settings` (any other setting, by the core's names: `syntaxes`,
/// `id_pattern`, `max_pending_bytes`, `invalid_utf8`, `dedupe`, `skip_code`, …); numbers come
/// from the store.
///
/// # Errors
/// A name that is not a style, unknown policy or rank mode, an invalid setting (a
/// `citeflow.settings` value out of range is `invalid_setting` naming `citeflow.settings`), or
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
        base = base.with_style(s.parse::<Style>()?);
    }
    if let Some(u) = unknown {
        base = base.with_unknown(u.parse::<UnknownPolicy>()?);
    }
    if let Some(r) = rank {
        base = base.with_rank(r.parse::<RankMode>()?);
    }
    let mut settings = marker.settings(base);
    if let Some(patch) = patch {
        if patch.number_source.is_some() {
            return Err(ApiError::invalid(
                "citeflow.settings.number_source is the server's: numbers come from its store",
                Some("citeflow.settings.number_source"),
            ));
        }
        settings = patch.apply(settings).map_err(|e| ApiError::SettingsField {
            message: format!("citeflow.settings: {e}"),
            param: "citeflow.settings",
        })?;
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

#[cfg(test)]
mod tests {
    use citeflow_core::{citation_instruction, context_block, PromptMarker, Source, Sources};

    use super::system_prompt;

    #[test]
    fn the_system_prompt_is_the_cores_zero_shot_system_message() {
        let sources = Sources::from_vec(vec![
            Source::new("alice#p3")
                .with_title("Alice — Chapter I")
                .with_text("She fell down a very deep well."),
            Source::new("alice#p9").with_text("Tears."),
        ])
        .unwrap();
        for marker in [PromptMarker::DoubleBracket, PromptMarker::RankFullWidth] {
            // What the routes wrote by hand before they took the core's prompt.
            let by_hand = format!(
                "{}\n\nSources:\n{}",
                citation_instruction(&sources, marker),
                context_block(&sources, marker, 12)
            );
            assert_eq!(system_prompt(&sources, marker, 12), by_hand);
        }
        assert!(system_prompt(&sources, PromptMarker::DoubleBracket, 12)
            .ends_with("[[alice#p3]] Alice — Chapter I: She fell dow\n[[alice#p9]] Tears.\n"));
    }
}
