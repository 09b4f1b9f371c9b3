//! What the provider-shaped routes (`POST /v1/responses`, `POST /v1/messages`) share: the
//! `sources`/`citeflow` request extensions ([`plan`]), the upstream call and the key sent with
//! it. The engine is in `engine.rs`, the relay of its events in `relay.rs`.

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use citeflow_core::{
    citation_instruction, context_block, NumberSource, PromptMarker, RankMode, Settings, Source,
    Sources, Style, UnknownPolicy,
};
use citeflow_store::NumberScope;
use serde_json::{Map, Value};

use crate::auth::{owner, Owner};
use crate::body::sources;
use crate::books::{self, last_user_text};
use crate::error::ApiError;
use crate::sessions::owned_session;
use crate::state::{now_ms, AppState};

/// The `citeflow` field of a responses or messages request.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    session: Option<String>,
    scope: Option<String>,
    round_query: Option<String>,
    marker: Option<String>,
    style: Option<String>,
    unknown: Option<String>,
    rank: Option<String>,
    inject_prompt: Option<bool>,
    max_chars_per_source: Option<usize>,
    /// `"ai-sdk"`: answer in the Vercel AI SDK UI message stream.
    protocol: Option<String>,
    /// A book key of `GET /v1/books`: passages retrieved for the last user message join the
    /// sources.
    book: Option<String>,
    /// How many passages to retrieve from `book`.
    top_k: Option<usize>,
}

/// A parsed request of a provider-shaped route.
pub(crate) struct Plan {
    pub(crate) owner: Owner,
    pub(crate) body: Map<String, Value>,
    pub(crate) settings: Settings,
    pub(crate) sources: Sources,
    pub(crate) session_id: Option<String>,
    pub(crate) session_scope: bool,
    pub(crate) stream: bool,
    /// The system text that tells the model about the sources (`None`: nothing to add).
    pub(crate) system: Option<String>,
    /// The answer goes out as the AI SDK UI message stream.
    pub(crate) ai_sdk: bool,
    /// The passages retrieved from `citeflow.book` (also among `sources`). With
    /// `native_passages` they are not in `system`: the route gives them to the model in its
    /// own way (Anthropic `search_result` blocks).
    pub(crate) passages: Vec<Source>,
}

/// The last user message's text of a messages (`messages`) or responses (`input`) body.
fn question_of(body: &Map<String, Value>) -> Option<String> {
    if let Some(m) = body.get("messages") {
        return last_user_text(m);
    }
    match body.get("input")? {
        Value::String(s) => Some(s.clone()),
        items @ Value::Array(_) => last_user_text(items),
        _ => None,
    }
}

/// Parses the body: takes out `sources` and `citeflow`, registers a session round, and
/// builds the rewriter settings.
pub(crate) async fn plan(
    state: &AppState,
    headers: &HeaderMap,
    body: Map<String, Value>,
) -> Result<Plan, ApiError> {
    plan_with(state, headers, body, false).await
}

/// [`plan`]; with `native_passages` a book's passages are left out of `system` (the route
/// sends them in the provider's own form).
pub(crate) async fn plan_with(
    state: &AppState,
    headers: &HeaderMap,
    mut body: Map<String, Value>,
    native_passages: bool,
) -> Result<Plan, ApiError> {
    let owner = owner(state, headers)?;
    let limits = &state.settings.limits;
    let opts: Options = match body.remove("citeflow") {
        None | Some(Value::Null) => Options::default(),
        Some(v) => serde_json::from_value(v)
            .map_err(|e| ApiError::invalid(format!("citeflow: {e}"), Some("citeflow")))?,
    };
    let mut given = sources(body.remove("sources"), limits)?;
    // A book: its passages for the question join the given sources (before any streaming,
    // so an unknown key is a plain error response).
    let mut passages = Vec::new();
    let mut question = None;
    match (&opts.book, opts.top_k) {
        (None, None) => {}
        (None, Some(_)) => {
            return Err(ApiError::invalid(
                "citeflow.top_k needs citeflow.book",
                Some("citeflow.top_k"),
            ))
        }
        (Some(key), top_k) => {
            let k = books::top_k(top_k, limits, "citeflow.top_k")?;
            let q = question_of(&body).ok_or_else(|| {
                ApiError::invalid(
                    "citeflow.book needs a user message with text to search the book for",
                    Some("citeflow.book"),
                )
            })?;
            for p in books::retrieve(state, &owner, key, &q, k, Some("citeflow.book")).await? {
                if !given.iter().any(|s| s.id == p.id) {
                    passages.push(p.clone());
                    given.push(p);
                }
            }
            if given.len() > limits.max_sources {
                return Err(ApiError::TooManySources {
                    count: given.len(),
                    max: limits.max_sources,
                });
            }
            question = Some(q);
        }
    }
    let session_scope = match opts.scope.as_deref() {
        None | Some("answer") => false,
        Some("session") => true,
        Some(other) => {
            return Err(ApiError::invalid(
                format!("citeflow.scope {other:?} is not answer or session"),
                Some("citeflow.scope"),
            ))
        }
    };
    let (sources, session_id) = match &opts.session {
        Some(id) => {
            let s = owned_session(state, &owner, id).await?;
            let s = if given.is_empty() {
                state.store.touch_session(id, now_ms()).await?;
                s
            } else {
                // A book's retrieval is a round whose query is the question.
                let query = opts.round_query.clone().or(question);
                crate::sessions::add_round(state, &s, query, given).await?
            };
            (s.sources, Some(id.clone()))
        }
        None if session_scope => {
            return Err(ApiError::invalid(
                "citeflow.scope session needs citeflow.session",
                Some("citeflow.scope"),
            ))
        }
        None => (Sources::from_vec(given)?, None),
    };
    let marker = match opts.marker.as_deref() {
        Some(m) => PromptMarker::from_name(m)?,
        None => state.settings.prompt.marker,
    };
    let mut base = Settings::default();
    if let Some(s) = &opts.style {
        base = base.with_style(Style::from_name(s)?);
    }
    if let Some(u) = &opts.unknown {
        base = base.with_unknown(UnknownPolicy::from_name(u)?);
    }
    if let Some(r) = &opts.rank {
        base = base.with_rank(RankMode::from_name(r)?);
    }
    let settings = marker
        .settings(base)
        .with_number_source(NumberSource::External);
    // The sources the system text shows: all, or with native passages the others.
    let shown = if native_passages && !passages.is_empty() {
        Sources::from_vec(
            sources
                .iter()
                .filter(|s| !passages.iter().any(|p| p.id == s.id))
                .cloned()
                .collect(),
        )?
    } else {
        sources.clone()
    };
    let system = (opts.inject_prompt.unwrap_or(true) && !shown.is_empty()).then(|| {
        let max_chars = opts.max_chars_per_source.unwrap_or(2_000);
        format!(
            "{}\n\nSources:\n{}",
            citation_instruction(&shown, marker),
            context_block(&shown, marker, max_chars)
        )
    });
    let ai_sdk = match opts.protocol.as_deref() {
        None => headers
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("x-vercel-ai-ui-message-stream")),
        Some("ai-sdk") => true,
        Some("native") => false,
        Some(other) => {
            return Err(ApiError::invalid(
                format!("citeflow.protocol {other:?} is not native or ai-sdk"),
                Some("citeflow.protocol"),
            ))
        }
    };
    let stream = ai_sdk || body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    Ok(Plan {
        owner,
        body,
        settings,
        sources,
        session_id,
        session_scope,
        stream,
        system,
        ai_sdk,
        passages,
    })
}

/// Sends `body` to `url` with these headers and waits for the response headers; a non-2xx
/// answer is an [`ApiError::UpstreamStatus`].
pub(crate) async fn send(
    state: &AppState,
    req: reqwest::RequestBuilder,
) -> Result<reqwest::Response, ApiError> {
    let timeout_ms = state.settings.limits.upstream_response_timeout_ms;
    let started = Instant::now();
    let resp = tokio::time::timeout(Duration::from_millis(timeout_ms), req.send()).await;
    state.metrics.observe_upstream_latency(started.elapsed());
    let fail = |e: ApiError| {
        state.metrics.upstream_errors.fetch_add(1, Relaxed);
        e
    };
    let resp = match resp {
        Err(_) => return Err(fail(ApiError::UpstreamTimeout { timeout_ms })),
        Ok(Err(e)) if e.is_timeout() => return Err(fail(ApiError::UpstreamTimeout { timeout_ms })),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "upstream request failed");
            return Err(fail(ApiError::UpstreamUnreachable));
        }
        Ok(Ok(r)) => r,
    };
    if !resp.status().is_success() {
        let status = resp.status().as_u16();
        let text = tokio::time::timeout(Duration::from_millis(timeout_ms), resp.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| text.chars().take(200).collect());
        return Err(fail(ApiError::UpstreamStatus { status, message }));
    }
    Ok(resp)
}

/// The caller's key, to forward upstream with `--forward-client-key`: the bearer token, or
/// `x-api-key`.
pub(crate) fn client_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(|k| k.trim().to_owned())
}

/// The key to send upstream: the caller's with `--forward-client-key`, else the server's.
pub(crate) fn upstream_key(state: &AppState, headers: &HeaderMap) -> Option<String> {
    if state.settings.forward_client_key {
        client_key(headers)
    } else {
        state.settings.upstream_api_key.clone()
    }
}

/// The numbering scope of a non-streaming answer: the session's when it is shared.
pub(crate) fn answer_scope(plan: &Plan) -> Option<NumberScope> {
    match (&plan.session_id, plan.session_scope) {
        (Some(s), true) => Some(NumberScope::Session(s.clone())),
        _ => None,
    }
}

pub(crate) use crate::engine::{failure, Cite, Drained, Engine, Failure, Wire};
pub(crate) use crate::relay::{
    named_sse, open_stream, pump, resume_named, spawn_stream, stream_headers,
};
