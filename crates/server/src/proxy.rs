//! What the provider-shaped routes (`POST /v1/responses`, `POST /v1/messages`) share: the
//! `sources`/`citeflow` request extensions, the upstream call, the [`Engine`] that runs the
//! upstream's payloads through a `citeflow_core::provider::ProviderStream`, the runner that
//! logs each re-emitted event before a client sees it, and SSE with event names (the
//! Anthropic SDKs read the `event:` line) for the live answer and its resume.

use std::convert::Infallible;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use citeflow_core::provider::{Dialect, ProviderError, ProviderStream};
use citeflow_core::sse::SseDecoder;
use citeflow_core::{
    citation_instruction, context_block, Event, NumberSource, Numbering, PromptMarker, RankMode,
    Settings, Sources, Style, UnknownPolicy,
};
use citeflow_store::{follow, NumberScope, StoredEvent, StreamRecord, StreamStatus};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};

use crate::auth::{owner, Owner};
use crate::body::sources;
use crate::error::ApiError;
use crate::sessions::owned_session;
use crate::state::{now_ms, random_id, AppState};

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
}

/// Parses the body: takes out `sources` and `citeflow`, registers a session round, and
/// builds the rewriter settings.
pub(crate) async fn plan(
    state: &AppState,
    headers: &HeaderMap,
    mut body: Map<String, Value>,
) -> Result<Plan, ApiError> {
    let owner = owner(state, headers)?;
    let limits = &state.settings.limits;
    let opts: Options = match body.remove("citeflow") {
        None | Some(Value::Null) => Options::default(),
        Some(v) => serde_json::from_value(v)
            .map_err(|e| ApiError::invalid(format!("citeflow: {e}"), Some("citeflow")))?,
    };
    let given = sources(body.remove("sources"), limits)?;
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
                state
                    .store
                    .append_round(id, opts.round_query.clone(), given, now_ms())
                    .await?
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
    let system = (opts.inject_prompt.unwrap_or(true) && !sources.is_empty()).then(|| {
        let max_chars = opts.max_chars_per_source.unwrap_or(2_000);
        format!(
            "{}\n\nSources:\n{}",
            citation_instruction(&sources, marker),
            context_block(&sources, marker, max_chars)
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

/// Why a stream stops early: the code and message of its error event.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

pub(crate) fn failure(code: &'static str, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

impl From<ProviderError> for Failure {
    fn from(e: ProviderError) -> Self {
        match e {
            ProviderError::Upstream { .. } => failure("upstream_error", e.to_string()),
            _ => failure("upstream_malformed", e.to_string()),
        }
    }
}

/// A citation of the answer, in characters of the whole rewritten text.
#[derive(Debug, Clone)]
pub(crate) struct Cite {
    pub(crate) number: u32,
    /// First character cited (the number's rendering, or the provider's span when the number
    /// was bound after the text was shown).
    pub(crate) start: u64,
    /// The character after the last.
    pub(crate) end: u64,
    pub(crate) url: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) source_id: String,
}

/// What one step of the engine gave.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    /// Rewritten text.
    pub(crate) text: String,
    /// Citeflow's events (sources, citations, unresolved markers) as JSON.
    pub(crate) events: Vec<Value>,
    /// The citations among them, with character ranges.
    pub(crate) cites: Vec<Cite>,
    /// Sources shown for the first time, as `(number, source JSON)`.
    pub(crate) new_sources: Vec<(u32, Value)>,
    /// The `done` event, at the end.
    pub(crate) done: Option<Value>,
}

/// A provider stream, numbered from the store.
pub(crate) struct Engine {
    state: AppState,
    scope: Option<NumberScope>,
    pub(crate) ps: ProviderStream,
    /// Characters of rewritten text so far.
    pub(crate) chars: u64,
}

impl Engine {
    /// `scope` `None`: numbers are local to this answer.
    pub(crate) async fn new(
        state: &AppState,
        plan: &Plan,
        scope: Option<NumberScope>,
        dialect: Dialect,
    ) -> Result<Engine, ApiError> {
        let (settings, numbering) = match &scope {
            Some(s) => (plan.settings.clone(), state.store.numbering(s).await?),
            None => (
                plan.settings
                    .clone()
                    .with_number_source(NumberSource::Local),
                Numbering::new(),
            ),
        };
        let ps =
            ProviderStream::new(settings, plan.sources.clone(), numbering).with_dialect(dialect);
        Ok(Engine {
            state: state.clone(),
            scope,
            ps,
            chars: 0,
        })
    }

    /// Moves the events out, answering number requests from the store.
    pub(crate) async fn drain(&mut self) -> Result<Drained, Failure> {
        let mut d = Drained::default();
        while let Some(ev) = self.ps.poll_event() {
            match ev {
                Event::NumberNeeded { key, source_id } => {
                    let scope = self
                        .scope
                        .as_ref()
                        .ok_or_else(|| internal(&"number needed without a shared scope"))?;
                    let a = self
                        .state
                        .store
                        .allocate(scope, &key, &source_id)
                        .await
                        .map_err(|e| {
                            tracing::error!(error = %e, "store error in a stream");
                            failure(
                                "store_unavailable",
                                "the store failed; the stream cannot go on",
                            )
                        })?;
                    self.ps.provide_number(&key, a.number)?;
                }
                Event::Text { text } => {
                    self.chars += text.chars().count() as u64;
                    d.text.push_str(&text);
                }
                e @ Event::Done { .. } => {
                    d.done = Some(serde_json::to_value(&e).map_err(|e| internal(&e))?);
                }
                e => {
                    crate::generate::count(&self.state, &e);
                    match &e {
                        Event::Citation {
                            number,
                            source_id,
                            char_offset,
                            provider,
                            ..
                        } => d
                            .cites
                            .push(self.cite(*number, source_id, *char_offset, provider)),
                        Event::Source { number, source, .. } => d.new_sources.push((
                            *number,
                            serde_json::to_value(source).map_err(|e| internal(&e))?,
                        )),
                        _ => {}
                    }
                    d.events
                        .push(serde_json::to_value(&e).map_err(|e| internal(&e))?);
                }
            }
        }
        Ok(d)
    }

    fn cite(
        &self,
        number: u32,
        source_id: &str,
        char_offset: u64,
        provider: &Option<Box<citeflow_core::CitationDetail>>,
    ) -> Cite {
        let rw = self.ps.rewriter();
        let source = rw.and_then(|r| r.sources().get(source_id));
        let late = provider.as_ref().and_then(|p| p.span.filter(|_| p.late));
        let (start, end) = match late {
            Some(span) => (span.start.chars, span.end.chars),
            None => {
                let mut shown = String::new();
                if let (Some(rw), Some(s)) = (rw, source) {
                    rw.settings().style().render_number(number, s, &mut shown);
                }
                (char_offset, char_offset + shown.chars().count() as u64)
            }
        };
        Cite {
            number,
            start,
            end,
            url: source.and_then(|s| s.url.clone()),
            title: source.and_then(|s| s.title.clone()),
            source_id: source_id.to_owned(),
        }
    }
}

fn internal(e: &dyn std::fmt::Display) -> Failure {
    tracing::error!(error = %e, "internal error in a stream");
    failure("internal_error", "internal error")
}

/// One provider API's wire format: upstream payloads in, the events the client gets out.
pub(crate) trait Wire: Send + 'static {
    /// Called before `payload` goes into the engine.
    fn before(&mut self, payload: &Value);
    /// Whether the held-back text must be decided after `payload` (a content block ends).
    fn is_boundary(&self, payload: &Value) -> bool;
    /// Called after: the payload and what the engine gave; returns the events to send.
    fn after(&mut self, payload: Value, drained: Drained) -> Vec<Value>;
    /// The upstream ended (after its last payload): returns the last events.
    ///
    /// # Errors
    /// `upstream_cut` when the upstream never sent its final event.
    fn end(&mut self, drained: Drained) -> Result<Vec<Value>, Failure>;
    /// The error event that ends a failed stream.
    fn error_event(&mut self, code: &str, message: &str) -> Value;
}

/// Reads the upstream's SSE body through `wire`, calling `sink` with each batch of events.
/// Payloads of `[DONE]` are skipped.
pub(crate) async fn pump<W: Wire>(
    state: &AppState,
    engine: &mut Engine,
    wire: &mut W,
    resp: reqwest::Response,
    mut sink: impl AsyncSink,
) -> Result<(), Failure> {
    let limits = state.settings.limits.clone();
    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(limits.max_stream_duration_ms);
    let idle = Duration::from_millis(limits.upstream_idle_timeout_ms);
    let mut body = resp.bytes_stream();
    let mut sse = SseDecoder::default();
    loop {
        let wait_until = (tokio::time::Instant::now() + idle).min(deadline);
        let next = tokio::time::timeout_at(wait_until, body.next()).await;
        let last = match next {
            Err(_) if tokio::time::Instant::now() >= deadline => {
                return Err(failure(
                    "stream_too_long",
                    format!(
                        "the stream ran longer than {} ms",
                        limits.max_stream_duration_ms
                    ),
                ))
            }
            Err(_) => {
                return Err(failure(
                    "upstream_timeout",
                    format!(
                        "the upstream sent nothing for {} ms",
                        limits.upstream_idle_timeout_ms
                    ),
                ))
            }
            Ok(Some(Err(e))) => {
                return Err(failure(
                    "upstream_cut",
                    format!("the upstream stream broke: {e}"),
                ))
            }
            Ok(Some(Ok(b))) => {
                sse.write(&b)
                    .map_err(|e| failure("upstream_malformed", e.to_string()))?;
                false
            }
            Ok(None) => {
                sse.end()
                    .map_err(|e| failure("upstream_malformed", e.to_string()))?;
                true
            }
        };
        let mut out = Vec::new();
        while let Some(ev) = sse.poll_event() {
            if ev.data.trim() == "[DONE]" {
                continue;
            }
            let v: Value = serde_json::from_str(&ev.data).map_err(|e| {
                let excerpt: String = ev.data.chars().take(80).collect();
                failure(
                    "upstream_malformed",
                    format!("the upstream sent an event that is not JSON ({e}): {excerpt}"),
                )
            })?;
            if !v.is_object() {
                return Err(failure(
                    "upstream_malformed",
                    "the upstream sent an event that is not a JSON object",
                ));
            }
            state.metrics.chunks.fetch_add(1, Relaxed);
            wire.before(&v);
            let mut r = engine.ps.write_payload(&v, 0);
            if r.is_ok() && wire.is_boundary(&v) {
                r = engine.ps.write_boundary();
            }
            let d = engine.drain().await?;
            r?;
            out.extend(wire.after(v, d));
        }
        if last {
            engine.ps.end()?;
            let d = engine.drain().await?;
            match wire.end(d) {
                Ok(tail) => out.extend(tail),
                Err(f) => {
                    sink.send(out).await?;
                    return Err(f);
                }
            }
            sink.send(out).await?;
            return Ok(());
        }
        if !out.is_empty() {
            sink.send(out).await?;
        }
    }
}

/// Where [`pump`] puts events: the stream's log, or a list for a non-streaming answer.
pub(crate) trait AsyncSink {
    /// Takes a batch of events.
    fn send(
        &mut self,
        events: Vec<Value>,
    ) -> impl std::future::Future<Output = Result<(), Failure>> + Send;
}

/// Collects the events (a non-streaming answer).
impl AsyncSink for &mut Vec<Value> {
    async fn send(&mut self, events: Vec<Value>) -> Result<(), Failure> {
        self.extend(events);
        Ok(())
    }
}

/// Logs the events to a stream (ids from 1).
pub(crate) struct Log {
    pub(crate) state: AppState,
    pub(crate) stream_id: String,
    pub(crate) next_id: u64,
}

impl AsyncSink for &mut Log {
    async fn send(&mut self, events: Vec<Value>) -> Result<(), Failure> {
        let events = events
            .into_iter()
            .map(|v| {
                // A JSON string is sent as it is (`[DONE]`).
                let data = match v {
                    Value::String(s) => s,
                    v => v.to_string(),
                };
                let e = StoredEvent {
                    id: self.next_id,
                    data,
                };
                self.next_id += 1;
                e
            })
            .collect();
        self.state
            .store
            .append_events(&self.stream_id, events)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "store error in a stream");
                failure(
                    "store_unavailable",
                    "the store failed; the stream cannot go on",
                )
            })
    }
}

/// Starts a logged stream: the record, its numbering scope, the engine.
pub(crate) async fn open_stream(
    state: &AppState,
    plan: &Plan,
    dialect: Dialect,
) -> Result<(String, Engine), ApiError> {
    let stream_id = random_id("strm_");
    let scope = match (&plan.session_id, plan.session_scope) {
        (Some(s), true) => NumberScope::Session(s.clone()),
        _ => NumberScope::Stream(stream_id.clone()),
    };
    let engine = Engine::new(state, plan, Some(scope), dialect).await?;
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
    Ok((stream_id, engine))
}

/// The numbering scope of a non-streaming answer: the session's when it is shared.
pub(crate) fn answer_scope(plan: &Plan) -> Option<NumberScope> {
    match (&plan.session_id, plan.session_scope) {
        (Some(s), true) => Some(NumberScope::Session(s.clone())),
        _ => None,
    }
}

/// Runs a logged stream to its end in its own task.
pub(crate) fn spawn_stream<W: Wire>(
    state: AppState,
    stream_id: String,
    mut engine: Engine,
    mut wire: W,
    resp: reqwest::Response,
) {
    tokio::spawn(async move {
        let m = &state.metrics;
        m.streams_started.fetch_add(1, Relaxed);
        m.streams_open.fetch_add(1, Relaxed);
        let mut log = Log {
            state: state.clone(),
            stream_id: stream_id.clone(),
            next_id: 1,
        };
        let work = pump(&state, &mut engine, &mut wire, resp, &mut log);
        let result =
            match futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(work)).await {
                Ok(r) => r,
                Err(_) => Err(internal(&"the generation task panicked")),
            };
        let status = match result {
            Ok(()) => StreamStatus::Completed,
            Err(f) => {
                tracing::warn!(stream_id = %stream_id, code = f.code, message = %f.message, "stream failed");
                if f.code.starts_with("upstream") {
                    m.upstream_errors.fetch_add(1, Relaxed);
                }
                let ev = wire.error_event(f.code, &f.message);
                if let Err(e) = (&mut log).send(vec![ev]).await {
                    tracing::error!(stream_id = %stream_id, error = %e.message, "cannot log error event");
                }
                StreamStatus::Failed
            }
        };
        if let Err(e) = state.store.finish_stream(&stream_id, status).await {
            tracing::error!(stream_id = %stream_id, error = %e, "cannot finish stream");
        }
        m.streams_open.fetch_sub(1, Relaxed);
        match status {
            StreamStatus::Completed => m.streams_completed.fetch_add(1, Relaxed),
            _ => m.streams_failed.fetch_add(1, Relaxed),
        };
    });
}

/// An SSE response of the stream's log after `after`: each event named by its payload's
/// `type` (as the Responses and Messages APIs send them), ids kept for `Last-Event-ID`.
pub(crate) fn named_sse(state: &AppState, stream_id: &str, after: u64) -> Response {
    let mut shutdown = state.shutdown.clone();
    let stop = async move {
        let _ = shutdown.wait_for(|s| *s).await;
    };
    let feed = follow(state.store.clone(), stream_id.to_owned(), after)
        .map(|e| {
            Ok::<_, Infallible>(match e {
                Ok(e) => {
                    let name = serde_json::from_str::<Value>(&e.data).ok().and_then(|v| {
                        v.get("type").and_then(Value::as_str).map(str::to_owned)
                    });
                    let ev = SseEvent::default().id(e.id.to_string());
                    match name {
                        Some(n) => ev.event(n).data(e.data),
                        None => ev.data(e.data),
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read stream log");
                    SseEvent::default().event("error").data(
                        json!({"type": "error", "error": {"type": "api_error",
                            "message": "the stream log cannot be read; reconnect with Last-Event-ID"}})
                        .to_string(),
                    )
                }
            })
        })
        .take_until(Box::pin(stop));
    let mut resp = Sse::new(feed)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    if let Ok(v) = stream_id.parse() {
        resp.headers_mut().insert("x-citeflow-stream-id", v);
    }
    resp
}

/// The `Last-Event-ID` header (or `?last_event_id=`): decimal digits up to `i64::MAX`.
pub(crate) fn last_event_id(headers: &HeaderMap, query: Option<&str>) -> Result<u64, ApiError> {
    let raw = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("?").to_owned())
        .or_else(|| query.map(str::to_owned));
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return Ok(0);
    };
    let t = raw.trim();
    match t.parse::<u64>() {
        Ok(n) if t.bytes().all(|b| b.is_ascii_digit()) && i64::try_from(n).is_ok() => Ok(n),
        _ => {
            let shown: String = raw.chars().take(40).collect();
            Err(ApiError::invalid(
                format!("Last-Event-ID {shown:?} is not an event id of this server"),
                Some("Last-Event-ID"),
            ))
        }
    }
}

/// Resumes a stream this owner started, after `Last-Event-ID`, with named events.
pub(crate) async fn resume_named(
    state: &AppState,
    headers: &HeaderMap,
    id: String,
    query_last: Option<&str>,
) -> Result<Response, ApiError> {
    let owner = owner(state, headers)?;
    let s = state.store.stream(&id).await?;
    if s.owner != owner.0 {
        return Err(ApiError::NotFound { what: "stream", id });
    }
    let after = last_event_id(headers, query_last)?;
    let mut resp = named_sse(state, &id, after);
    if let Ok(v) = s.status.as_str().parse() {
        resp.headers_mut().insert("x-citeflow-stream-status", v);
    }
    Ok(resp)
}

/// Adds the stream and session ids to a streaming response's headers.
pub(crate) fn stream_headers(resp: &mut Response, session_id: Option<&str>) {
    if let Some(v) = session_id.and_then(|s| s.parse().ok()) {
        resp.headers_mut().insert("x-citeflow-session-id", v);
    }
}
