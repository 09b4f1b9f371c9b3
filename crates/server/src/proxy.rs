//! What the provider-shaped routes (`POST /v1/responses`, `POST /v1/messages`) share: the
//! `sources`/`citeflow` request extensions ([`plan`]), the upstream call and the key sent with
//! it. The engine is in `engine.rs`, the relay of its events in `relay.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use citeflow_core::{Settings, Source, Sources};
use citeflow_store::NumberScope;
use serde_json::{Map, Value};

use crate::body::sources;
use crate::books::last_user_text;
use crate::error::ApiError;
use crate::plan::{
    gather_sources, prompt_marker, rewriter_settings, settings_patch, system_prompt, take_citeflow,
    wants_ai_sdk, AnswerSources, SourceChoice,
};
use crate::quotes::BookQuotes;
use crate::state::AppState;
use crate::tenancy::Owner;

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
    /// Any other rewriter setting by the core's names (`citeflow_core::SettingsPatch`).
    settings: Option<Value>,
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
    /// The book passages among the sources, for the CFIs of anchors' quotes.
    pub(crate) quotes: Option<Arc<BookQuotes>>,
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
    owner: Owner,
    headers: &HeaderMap,
    body: Map<String, Value>,
) -> Result<Plan, ApiError> {
    plan_with(state, owner, headers, body, false, Vec::new()).await
}

/// [`plan`]; with `native_passages` a book's passages are left out of `system` (the route
/// sends them in the provider's own form). `native` are sources the request itself gives the
/// model in the provider's form (Anthropic `search_result` and `document` blocks): registered
/// with the given ones, so that the provider's citations of them are numbered with their
/// title and text, and never repeated in `system`.
pub(crate) async fn plan_with(
    state: &AppState,
    owner: Owner,
    headers: &HeaderMap,
    mut body: Map<String, Value>,
    native_passages: bool,
    native: Vec<Source>,
) -> Result<Plan, ApiError> {
    let limits = &state.settings.limits;
    let mut opts: Options = take_citeflow(&mut body)?;
    let mut given = sources(body.remove("sources"), limits)?;
    let native_ids: Vec<String> = native.iter().map(|s| s.id.clone()).collect();
    for s in native {
        if !given.iter().any(|g| g.id == s.id) {
            given.push(s);
        }
    }
    if given.len() > limits.max_sources {
        return Err(ApiError::TooManySources {
            count: given.len(),
            max: limits.max_sources,
        });
    }
    // Sources.
    let choice = SourceChoice {
        session: opts.session.as_deref(),
        scope: opts.scope.as_deref(),
        round_query: opts.round_query.as_deref(),
        book: opts.book.as_deref(),
        top_k: opts.top_k,
    };
    let AnswerSources {
        sources,
        session_id,
        session_scope,
        passages,
    } = gather_sources(
        state,
        &owner,
        choice,
        question_of(&body),
        "citeflow.book",
        given,
    )
    .await?;
    // Settings.
    let marker = prompt_marker(opts.marker.as_deref(), state.settings.prompt.marker)?;
    let settings = rewriter_settings(
        marker,
        opts.style.as_deref(),
        opts.unknown.as_deref(),
        opts.rank.as_deref(),
        settings_patch(opts.settings.take())?.as_ref(),
    )?;
    // The sources the system text shows: all but those the model gets in its own form.
    let native_form = |s: &Source| {
        native_ids.contains(&s.id) || (native_passages && passages.iter().any(|p| p.id == s.id))
    };
    let shown = if sources.iter().any(native_form) {
        Sources::from_vec(
            sources
                .iter()
                .filter(|s| !native_form(s))
                .cloned()
                .collect(),
        )?
    } else {
        sources.clone()
    };
    // Prompt: the route puts the system text where its API takes it.
    let system = (opts.inject_prompt.unwrap_or(true) && !shown.is_empty()).then(|| {
        let max_chars = opts
            .max_chars_per_source
            .unwrap_or(state.settings.prompt.max_chars_per_source);
        system_prompt(&shown, marker, max_chars)
    });
    let ai_sdk = wants_ai_sdk(opts.protocol.as_deref(), headers)?;
    let stream = ai_sdk || body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let quotes = BookQuotes::open(state, &owner, &settings, &sources).await;
    Ok(Plan {
        quotes,
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
    let (client, req) = req.build_split();
    let up = req.as_ref().map_or(crate::metrics::OPENAI, |r| {
        state.metrics.upstream_of(r.url().as_str())
    });
    let resp = tokio::time::timeout(Duration::from_millis(timeout_ms), async move {
        client.execute(req?).await
    })
    .await;
    state
        .metrics
        .observe_upstream_latency(up, started.elapsed());
    let fail = |e: ApiError| {
        state.metrics.upstream_errors.inc(up);
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
