//! `POST /v1/chat/completions`: the request, the prompt, the upstream call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use citeflow_core::{
    citation_grammar, few_shot_messages, GrammarMode, PromptMarker, RankMode, Rewriter, Settings,
    Sources,
};
use citeflow_store::{NumberScope, StreamRecord, StreamStatus};
use serde_json::{json, Map, Value};

use crate::body::{sources, ApiJson};
use crate::books::last_user_text;
use crate::error::ApiError;
use crate::generate::Generation;
use crate::live::LiveTx;
use crate::metrics::OPENAI;
use crate::plan::{
    gather_sources, prompt_marker, rewriter_settings, settings_patch, system_prompt, take_citeflow,
    wants_ai_sdk, AnswerSources, SourceChoice,
};
use crate::quotes::BookQuotes;
use crate::runner;
use crate::settings::PromptDefaults;
use crate::state::{now_ms, random_id, AppState};
use crate::streams::{chat_frame, chat_sse};
use crate::tenancy::Owner;

/// The `citeflow` field of a request.
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
    /// `"off"`, or a grammar mode (`well_formed`, `require_citation`, `cite_per_sentence`):
    /// a GBNF grammar for the markers, sent upstream as `grammar`.
    grammar: Option<String>,
    /// `"zero_shot"` (a system message with the instruction and the sources) or `"few_shot"`
    /// (worked examples first, then the sources with the question).
    prompt: Option<String>,
    /// `"client"`: pass the markers through unrewritten (the web page renders them with the
    /// WASM core); `"server"` (the default) rewrites.
    render: Option<String>,
    /// A book key of `GET /v1/books`: passages retrieved for the last user message join the
    /// sources.
    book: Option<String>,
    /// How many passages to retrieve from `book`.
    top_k: Option<usize>,
    /// `"ai-sdk"`: answer in the Vercel AI SDK UI message stream (`"native"`: chat chunks).
    protocol: Option<String>,
}

/// A parsed request, ready to go upstream.
pub(crate) struct Plan {
    pub(crate) owner: Owner,
    pub(crate) body: Map<String, Value>,
    pub(crate) settings: Settings,
    pub(crate) sources: Sources,
    pub(crate) session_id: Option<String>,
    pub(crate) session_scope: bool,
    pub(crate) stream: bool,
    /// The answer goes out as the AI SDK UI message stream (always streamed).
    pub(crate) ai_sdk: bool,
    /// The book passages among the sources, for the CFIs of anchors' quotes.
    pub(crate) quotes: Option<Arc<BookQuotes>>,
}

/// Parses a chat completions request in four steps: the options (the `citeflow` field, the
/// given sources, the messages), the sources (a book's passages, the session's round), the
/// settings (the prompt's marker and form, the grammar, the rewriter's settings), then the
/// prompt written into the messages.
async fn plan(
    state: &AppState,
    owner: Owner,
    headers: &HeaderMap,
    mut body: Map<String, Value>,
) -> Result<Plan, ApiError> {
    // Options.
    let mut opts: Options = take_citeflow(&mut body)?;
    let given = sources(body.remove("sources"), &state.settings.limits)?;
    if !matches!(body.get("messages"), Some(Value::Array(_))) {
        return Err(ApiError::invalid(
            "messages must be an array",
            Some("messages"),
        ));
    }
    let question = last_user_text(&body["messages"]);
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
        ..
    } = gather_sources(state, &owner, choice, question.clone(), "messages", given).await?;
    // Settings.
    let prompt = PromptForm::of(&opts, state.settings.prompt)?;
    let settings = rewriter_settings(
        prompt.marker,
        opts.style.as_deref(),
        opts.unknown.as_deref(),
        opts.rank.as_deref(),
        settings_patch(opts.settings.take())?.as_ref(),
    )?;
    let settings = match opts.render.as_deref() {
        None | Some("server") => settings,
        // No syntax and no ranks: the text passes through byte for byte.
        Some("client") => settings.with_syntaxes(&[]).with_rank(RankMode::Off),
        Some(other) => {
            return Err(ApiError::invalid(
                format!("citeflow.render {other:?} is not server or client"),
                Some("citeflow.render"),
            ))
        }
    };
    // Prompt.
    if opts.inject_prompt.unwrap_or(true) && !sources.is_empty() {
        let max_chars = opts
            .max_chars_per_source
            .unwrap_or(state.settings.prompt.max_chars_per_source);
        if let Some(Value::Array(messages)) = body.get_mut("messages") {
            prompt.write(messages, &sources, question.as_deref(), max_chars);
        }
    }
    if let Some(mode) = prompt.grammar.filter(|_| !sources.is_empty()) {
        let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
        body.insert(
            "grammar".to_owned(),
            Value::String(citation_grammar(prompt.marker, &ids, mode)),
        );
    }
    let ai_sdk = wants_ai_sdk(opts.protocol.as_deref(), headers)?;
    if ai_sdk {
        // The UI message stream is streamed; the upstream is asked to stream too.
        body.insert("stream".to_owned(), Value::Bool(true));
    }
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
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
        ai_sdk,
    })
}

/// How the prompt tells the model about the sources: `citeflow.marker`, `citeflow.prompt`
/// and `citeflow.grammar`, else the server's defaults.
#[derive(Debug, Clone, Copy)]
struct PromptForm {
    marker: PromptMarker,
    /// Worked examples first (`few_shot`), or a system message (`zero_shot`).
    few_shot: bool,
    /// A GBNF grammar for the markers, sent upstream as `grammar`.
    grammar: Option<GrammarMode>,
}

impl PromptForm {
    /// # Errors
    /// A name that is not a marker, a prompt form or a grammar mode.
    fn of(opts: &Options, defaults: PromptDefaults) -> Result<PromptForm, ApiError> {
        let marker = prompt_marker(opts.marker.as_deref(), defaults.marker)?;
        let few_shot = match opts.prompt.as_deref() {
            None => defaults.few_shot,
            Some("zero_shot") => false,
            Some("few_shot") => true,
            Some(other) => {
                return Err(ApiError::invalid(
                    format!("citeflow.prompt {other:?} is not zero_shot or few_shot"),
                    Some("citeflow.prompt"),
                ))
            }
        };
        let grammar = match opts.grammar.as_deref() {
            None => defaults.grammar,
            Some("off") => None,
            Some(g) => Some(g.parse::<GrammarMode>()?),
        };
        Ok(PromptForm {
            marker,
            few_shot,
            grammar,
        })
    }

    /// Writes the prompt into `messages`: zero-shot, the system text of the core's zero-shot
    /// prompt first ([`system_prompt`]); few-shot, the core's worked examples
    /// ([`few_shot_messages`]) first and the last user message replaced by the sources and
    /// the question.
    fn write(
        self,
        messages: &mut Vec<Value>,
        sources: &Sources,
        question: Option<&str>,
        max_chars: usize,
    ) {
        let message = |role: &str, content: String| json!({"role": role, "content": content});
        if !self.few_shot {
            let system = system_prompt(sources, self.marker, max_chars);
            messages.insert(0, message("system", system));
            return;
        }
        let question = question.unwrap_or_default();
        let mut prompt = few_shot_messages(sources, self.marker, question, max_chars);
        let Some(last) = prompt.pop() else {
            return;
        };
        // The examples go first; the last user message becomes the sources and question.
        match messages
            .iter_mut()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        {
            Some(m) => m["content"] = Value::String(last.content),
            None => messages.push(message(last.role, last.content)),
        }
        for (i, p) in prompt.into_iter().enumerate() {
            messages.insert(i, message(p.role, p.content));
        }
    }
}

/// Sends the request upstream with `key` (see [`crate::proxy::upstream_key`]) and waits for
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
    crate::proxy::send(state, req).await
}

pub(crate) async fn completions(
    State(state): State<AppState>,
    owner: Owner,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let plan = plan(&state, owner, &headers, body).await?;
    // A slot of the key's quota, taken before the upstream is called; it goes with the
    // generation task (or ends with this request when not streaming).
    let slot = state
        .quota
        .acquire(&plan.owner, state.settings.limits.max_streams_per_key)?;
    // The server's key, or with --forward-client-key the caller's.
    let key = crate::proxy::upstream_key(&state, &headers);
    if !plan.stream {
        return complete(state, plan, key.as_deref()).await;
    }
    let requested = Instant::now();
    let resp = call_upstream(&state, &plan.body, key.as_deref()).await?;
    let stream_id = random_id("strm_");
    let scope = match (&plan.session_id, plan.session_scope) {
        (Some(s), true) => NumberScope::Session(s.clone()),
        _ => NumberScope::Stream(stream_id.clone()),
    };
    // Only a session's table is shared; an answer of its own is numbered by its rewriter.
    let shared = matches!(scope, NumberScope::Session(_)).then_some(&scope);
    let (settings, numbering) = crate::engine::numbering_of(&state, plan.settings, shared).await?;
    state
        .store
        .create_stream(StreamRecord {
            id: stream_id.clone(),
            owner: plan.owner.0.clone(),
            session_id: plan.session_id.clone(),
            status: StreamStatus::Running,
            created_ms: now_ms(),
        })
        .await?;
    let rewriter = Rewriter::new(settings, plan.sources, numbering);
    // The response of this request gets each event straight from the generation once the
    // log has it; the AI SDK's parts are made from the log.
    let (live, feed) = if plan.ai_sdk {
        (LiveTx::none(), None)
    } else {
        let (tx, feed) = crate::live::channel(&state, &stream_id, chat_frame);
        (tx, Some(feed))
    };
    let generation = Generation::new(state.clone(), stream_id.clone(), scope, rewriter, requested)
        .with_quotes(plan.quotes.clone());
    runner::spawn(
        state.clone(),
        stream_id.clone(),
        generation,
        resp,
        slot,
        live,
    );
    let mut response = match feed {
        Some(feed) => chat_sse(&state, stream_id.clone(), feed),
        None => crate::ai_sdk::chat_response(&state, &stream_id, 0),
    };
    let h = response.headers_mut();
    if let Ok(v) = stream_id.parse() {
        h.insert("x-citeflow-stream-id", v);
    }
    if let Some(v) = plan.session_id.and_then(|s| s.parse().ok()) {
        h.insert("x-citeflow-session-id", v);
    }
    Ok(response)
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
    let scope = match (&plan.session_id, plan.session_scope) {
        (Some(s), true) => NumberScope::Session(s.clone()),
        _ => NumberScope::Stream(String::new()),
    };
    let shared = matches!(scope, NumberScope::Session(_)).then_some(&scope);
    let (settings, numbering) = crate::engine::numbering_of(&state, plan.settings, shared).await?;
    let rewriter = Rewriter::new(settings, plan.sources, numbering);
    let mut answer = Generation::new(
        state.clone(),
        String::new(),
        scope,
        rewriter,
        Instant::now(),
    )
    .with_quotes(plan.quotes.clone())
    .whole();
    let out = runner::collect_whole(&state, OPENAI, &mut answer, &body)
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
