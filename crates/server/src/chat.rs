//! `POST /v1/chat/completions`: the request, the prompt, the upstream call.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use citeflow_core::{
    citation_grammar, few_shot_messages, Event, GrammarMode, NumberSource, Numbering, PromptMarker,
    RankMode, Rewriter, Settings, Sources,
};
use citeflow_store::{NumberScope, StreamRecord, StreamStatus};
use serde_json::{json, Map, Value};

use crate::body::{sources, ApiJson};
use crate::books::last_user_text;
use crate::error::ApiError;
use crate::generate::{self, Generation};
use crate::live::LiveTx;
use crate::plan::{
    gather_sources, prompt_marker, rewriter_settings, system_prompt, take_citeflow, wants_ai_sdk,
    AnswerSources, SourceChoice,
};
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
    settings: Option<citeflow_core::SettingsPatch>,
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
    let opts: Options = take_citeflow(&mut body)?;
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
        opts.settings.as_ref(),
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
    Ok(Plan {
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
            Some(g) => Some(GrammarMode::from_name(g)?),
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
    let generation = Generation::new(
        state.clone(),
        stream_id.clone(),
        scope,
        rewriter,
        requested,
        live,
    );
    tokio::spawn(async move {
        let _slot = slot;
        generate::run(generation, resp).await;
    });
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

/// What a non-streaming choice's rewriter gave.
#[derive(Default)]
struct Acc {
    text: String,
    events: Vec<Value>,
    annotations: Vec<Value>,
    /// Numbers of citations bound late: (byte of `text`, rendering), for `done.text`.
    late: Vec<(usize, String)>,
}

/// Moves `rw`'s events into `acc`, answering number requests from the store (`scope`);
/// events of a later choice name it in `choice`.
async fn pump(
    state: &AppState,
    scope: Option<&NumberScope>,
    rw: &mut Rewriter,
    acc: &mut Acc,
    choice: usize,
) -> Result<(), ApiError> {
    while let Some(ev) = rw.poll_event() {
        match ev {
            Event::NumberNeeded { key, source_id } => {
                let scope = scope.ok_or_else(|| {
                    ApiError::Internal("number needed without a shared scope".into())
                })?;
                let n = state.store.allocate(scope, &key, &source_id).await?.number;
                rw.provide_number(&key, n)?;
            }
            Event::Text { text: t } => acc.text.push_str(&t),
            other => {
                generate::count(state, &other);
                if let Event::Citation {
                    number,
                    source_id,
                    char_offset,
                    provider,
                    ..
                } = &other
                {
                    let p = provider.as_deref();
                    acc.annotations.extend(generate::annotation_of(
                        rw,
                        *number,
                        source_id,
                        *char_offset,
                        p,
                    ));
                    acc.late
                        .extend(generate::late_number(rw, *number, source_id, p));
                }
                let mut v =
                    serde_json::to_value(&other).map_err(|e| ApiError::Internal(e.to_string()))?;
                if matches!(other, Event::Done { .. }) && !acc.late.is_empty() {
                    v["text"] = Value::String(generate::final_text(&acc.text, &mut acc.late));
                }
                if choice != 0 {
                    v["choice"] = json!(choice);
                }
                acc.events.push(v);
            }
        }
    }
    Ok(())
}

/// A non-streaming request: the whole answer is rewritten at once.
async fn complete(state: AppState, plan: Plan, key: Option<&str>) -> Result<Response, ApiError> {
    let resp = call_upstream(&state, &plan.body, key).await?;
    let timeout_ms = state.settings.limits.upstream_response_timeout_ms;
    let mut answer: Value = tokio::time::timeout(Duration::from_millis(timeout_ms), resp.json())
        .await
        .map_err(|_| ApiError::UpstreamTimeout { timeout_ms })?
        .map_err(|e| ApiError::UpstreamMalformed(format!("not a JSON chat completion: {e}")))?;
    let scope = match (&plan.session_id, plan.session_scope) {
        (Some(s), true) => Some(NumberScope::Session(s.clone())),
        _ => None,
    };
    // Each choice (`n > 1`) is rewritten on its own: numbered in the session's table when
    // the scope is the session's, else from 1. Its citations become `message.annotations`;
    // the upstream's own are numbered and mapped into the rewritten text (bound late).
    let count_choices = answer
        .get("choices")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let mut events = Vec::new();
    for i in 0..count_choices.max(1) {
        let (settings, numbering) = match &scope {
            Some(scope) => (plan.settings.clone(), state.store.numbering(scope).await?),
            None => (
                plan.settings
                    .clone()
                    .with_number_source(NumberSource::Local),
                Numbering::new(),
            ),
        };
        let mut rw = Rewriter::new(settings, plan.sources.clone(), numbering);
        let content = answer
            .pointer(&format!("/choices/{i}/message/content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let upstream: Vec<Value> = answer
            .pointer(&format!("/choices/{i}/message/annotations"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        rw.write(&content)?;
        let mut acc = Acc::default();
        for a in &upstream {
            let u = a.get("url_citation").unwrap_or(a);
            let Some(url) = u
                .get("url")
                .and_then(Value::as_str)
                .filter(|u| !u.is_empty())
            else {
                continue;
            };
            let mut source = citeflow_core::Source::new(url).with_url(url);
            if let Some(t) = u
                .get("title")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                source = source.with_title(t);
            }
            if rw.append_source(source).is_err() {
                continue;
            }
            let at = |k: &str| u.get(k).and_then(Value::as_u64);
            match (at("start_index"), at("end_index")) {
                (Some(start), Some(end)) => {
                    let bs = generate::byte_of_char(&content, start);
                    let be = generate::byte_of_char(&content, end.max(start));
                    rw.write_boundary();
                    pump(&state, scope.as_ref(), &mut rw, &mut acc, i).await?;
                    let (Some(os), Some(oe)) = (rw.output_offset(bs), rw.output_offset(be)) else {
                        continue;
                    };
                    let span = citeflow_core::Span {
                        start: generate::position(&acc.text, os),
                        end: generate::position(&acc.text, oe.max(os)),
                    };
                    rw.cite_late(url, span, citeflow_core::CitationDetail::default())?;
                }
                _ => rw.write_citation(url, None)?,
            }
            pump(&state, scope.as_ref(), &mut rw, &mut acc, i).await?;
        }
        if let Err(e) = rw.end() {
            tracing::warn!(error = %e, "rewrite check failed");
        }
        pump(&state, scope.as_ref(), &mut rw, &mut acc, i).await?;
        events.append(&mut acc.events);
        let (text, annotations) = (acc.text, acc.annotations);
        if let Some(Value::Object(m)) = answer.pointer_mut(&format!("/choices/{i}/message")) {
            if m.contains_key("content") {
                m.insert("content".into(), Value::String(text));
            }
            m.remove("annotations");
            if !annotations.is_empty() {
                m.insert("annotations".into(), Value::Array(annotations));
            }
        }
    }
    if let Value::Object(m) = &mut answer {
        let mut cf = json!({"events": events});
        if let Some(s) = &plan.session_id {
            cf["session_id"] = json!(s);
        }
        m.insert("citeflow".into(), cf);
    }
    state.metrics.completions.inc(crate::metrics::OPENAI);
    Ok(Json(answer).into_response())
}
