//! The upstream generation of one stream: chunks in, rewritten chunks persisted to the log.
//! It runs in its own task, so it goes on when the client leaves.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use citeflow_core::sse::{chunk_text, SseDecoder};
use citeflow_core::{Event, Rewriter};
use citeflow_store::{NumberScope, StoredEvent, StreamStatus};
use futures_util::{FutureExt, StreamExt};
use serde_json::{json, Value};

use crate::error::envelope;
use crate::state::AppState;
use crate::unrecorded::{record_failure, with_retries};

/// One running stream.
pub(crate) struct Generation {
    state: AppState,
    stream_id: String,
    scope: NumberScope,
    rewriter: Rewriter,
    next_id: u64,
    /// The id of the last event the log took.
    logged: u64,
    /// `id`, `object`, `created`, `model` of the last upstream chunk, for our own chunks.
    meta: Value,
    ended: bool,
    speed: Speed,
}

/// Time to first token and generation speed of one answer.
#[derive(Debug)]
struct Speed {
    /// When the request was sent upstream.
    requested: Instant,
    first: Option<Instant>,
    last: Option<Instant>,
    /// Chunks with content.
    chunks: u64,
    /// `usage.completion_tokens`, when the upstream reports it.
    usage_tokens: Option<u64>,
}

impl Speed {
    /// The stats sent with the source list (and counted in the metrics once).
    fn stats(&self) -> Value {
        let (tokens, counted_by) = match self.usage_tokens {
            Some(t) => (t, "usage"),
            None => (self.chunks, "chunks"),
        };
        let ms = |d: Duration| (d.as_secs_f64() * 1e4).round() / 10.0;
        let first_token_ms = self.first.map(|f| ms(f - self.requested));
        let per_second = match (self.first, self.last) {
            // Tokens after the first one, over the time they took.
            (Some(f), Some(l)) if l > f && tokens > 1 => {
                Some(((tokens - 1) as f64 / (l - f).as_secs_f64() * 10.0).round() / 10.0)
            }
            _ => None,
        };
        json!({
            "first_token_ms": first_token_ms,
            "tokens": tokens,
            "tokens_counted_by": counted_by,
            "tokens_per_second": per_second,
        })
    }
}

/// Why a stream stops early: the error event's code and message.
pub(crate) struct Failure {
    code: &'static str,
    message: String,
}

fn failure(code: &'static str, message: impl Into<String>) -> Failure {
    Failure {
        code,
        message: message.into(),
    }
}

/// Counts citations and unresolved markers.
pub(crate) fn count(state: &AppState, e: &Event) {
    match e {
        Event::Citation { .. } => {
            state.metrics.citations.fetch_add(1, Relaxed);
        }
        Event::Unresolved { .. } => {
            state.metrics.unresolved.fetch_add(1, Relaxed);
        }
        _ => {}
    }
}

/// The payload of an error event.
pub(crate) fn error_payload(code: &str, message: &str) -> String {
    let kind = if code.starts_with("upstream") {
        "upstream_error"
    } else {
        "server_error"
    };
    envelope(code, message, kind, None).to_string()
}

impl Generation {
    pub(crate) fn new(
        state: AppState,
        stream_id: String,
        scope: NumberScope,
        rewriter: Rewriter,
        requested: Instant,
    ) -> Self {
        Generation {
            state,
            stream_id,
            scope,
            rewriter,
            next_id: 1,
            logged: 0,
            meta: json!({"object": "chat.completion.chunk"}),
            ended: false,
            speed: Speed {
                requested,
                first: None,
                last: None,
                chunks: 0,
                usage_tokens: None,
            },
        }
    }

    /// The source-list chunk: the `done` event, with the answer's speed.
    fn done_chunk(&self, done: Value) -> String {
        let stats = self.speed.stats();
        let m = &self.state.metrics;
        m.generated_tokens
            .fetch_add(stats["tokens"].as_u64().unwrap_or(0), Relaxed);
        if let Some(v) = stats["tokens_per_second"].as_f64() {
            m.observe_generation_speed(v);
        }
        let mut c = self.meta.clone();
        c["choices"] = json!([]);
        c["citeflow"] = self.citeflow(vec![done]);
        c["citeflow"]["stats"] = stats;
        c.to_string()
    }

    fn event(&mut self, data: String) -> StoredEvent {
        let e = StoredEvent {
            id: self.next_id,
            data,
        };
        self.next_id += 1;
        e
    }

    /// Drains the rewriter: answers number requests from the store, returns the text and the
    /// other events as JSON; `Done` is returned apart.
    async fn drain(&mut self) -> Result<(String, Vec<Value>, Option<Value>), Failure> {
        let mut text = String::new();
        let mut events = Vec::new();
        let mut done = None;
        while let Some(ev) = self.rewriter.poll_event() {
            match ev {
                Event::NumberNeeded { key, source_id } => {
                    let a = self
                        .state
                        .store
                        .allocate(&self.scope, &key, &source_id)
                        .await
                        .map_err(|e| store_failure(&e))?;
                    self.rewriter
                        .provide_number(&key, a.number)
                        .map_err(|e| internal(&e))?;
                }
                Event::Text { text: t } => text.push_str(&t),
                e @ Event::Done { .. } => {
                    done = Some(serde_json::to_value(&e).map_err(|e| internal(&e))?);
                }
                e => {
                    count(&self.state, &e);
                    events.push(serde_json::to_value(&e).map_err(|e| internal(&e))?);
                }
            }
        }
        Ok((text, events, done))
    }

    fn citeflow(&self, events: Vec<Value>) -> Value {
        json!({"stream_id": self.stream_id, "events": events})
    }

    /// A chunk of our own (the tail and the source list), shaped like the upstream's.
    fn own_chunk(&self, choices: Value, events: Vec<Value>) -> String {
        let mut c = self.meta.clone();
        c["choices"] = choices;
        c["citeflow"] = self.citeflow(events);
        c.to_string()
    }

    /// Rewrites one upstream chunk; returns the events to log.
    ///
    /// Any JSON is handled: a payload that is not an object, or whose first
    /// choice (or its `delta`) is not an object, is `upstream_malformed`;
    /// content after `finish_reason` is dropped.
    async fn on_chunk(&mut self, mut chunk: Value) -> Result<Vec<StoredEvent>, Failure> {
        let shape = |what: &str| {
            failure(
                "upstream_malformed",
                format!("the upstream sent a chunk whose {what} is not a JSON object"),
            )
        };
        if !chunk.is_object() {
            return Err(shape("payload"));
        }
        if let Some(choice) = chunk.pointer("/choices/0") {
            if !choice.is_object() {
                return Err(shape("choices[0]"));
            }
            if choice.get("delta").is_some_and(|d| !d.is_object()) {
                return Err(shape("choices[0].delta"));
            }
        }
        if let Some(err) = chunk.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the upstream sent an error")
                .to_owned();
            return Err(failure("upstream_error", message));
        }
        for k in ["id", "object", "created", "model", "system_fingerprint"] {
            if let Some(v) = chunk.get(k) {
                self.meta[k] = v.clone();
            }
        }
        let input = chunk_text(&chunk).map(str::to_owned);
        if self.ended {
            // The answer is complete and its source list sent: a later chunk's choices are
            // dropped (its text with them); one that carries usage is passed on without them.
            if input.as_deref().is_some_and(|t| !t.is_empty()) {
                tracing::warn!(stream_id = %self.stream_id, "upstream sent content after finish_reason; dropped");
            }
            if chunk.get("usage").is_none_or(Value::is_null) {
                return Ok(Vec::new());
            }
            chunk["choices"] = json!([]);
            chunk["citeflow"] = self.citeflow(Vec::new());
            return Ok(vec![self.event(chunk.to_string())]);
        }
        if input.as_deref().is_some_and(|t| !t.is_empty()) {
            let now = Instant::now();
            if self.speed.first.is_none() {
                self.speed.first = Some(now);
                self.state
                    .metrics
                    .observe_first_token(now - self.speed.requested);
            }
            self.speed.last = Some(now);
            self.speed.chunks += 1;
        }
        if let Some(t) = chunk
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64)
        {
            self.speed.usage_tokens = Some(t);
        }
        let finished = chunk
            .pointer("/choices/0/finish_reason")
            .is_some_and(|f| !f.is_null());
        if let Some(t) = input.as_deref() {
            self.rewriter.write(t).map_err(|e| internal(&e))?;
        }
        if finished && !self.ended {
            self.ended = true;
            if let Err(e) = self.rewriter.end() {
                tracing::warn!(error = %e, "rewrite check failed");
            }
        }
        let (text, events, done) = self.drain().await?;
        let is_chat = chunk.pointer("/choices/0/delta").is_some();
        if let Some(choice) = chunk.pointer_mut("/choices/0") {
            if is_chat {
                if input.is_some() || !text.is_empty() {
                    choice["delta"]["content"] = Value::String(text);
                }
            } else if input.is_some() || !text.is_empty() {
                choice["text"] = Value::String(text);
            }
        }
        chunk["citeflow"] = self.citeflow(events);
        let mut out = vec![self.event(chunk.to_string())];
        if let Some(done) = done {
            let data = self.done_chunk(done);
            out.push(self.event(data));
        }
        Ok(out)
    }

    /// Ends the rewriter if the upstream did not, and logs the tail and the source list.
    async fn on_end(&mut self) -> Result<Vec<StoredEvent>, Failure> {
        let mut out = Vec::new();
        if !self.ended {
            self.ended = true;
            if let Err(e) = self.rewriter.end() {
                tracing::warn!(error = %e, "rewrite check failed");
            }
            let (text, events, done) = self.drain().await?;
            if !text.is_empty() || !events.is_empty() {
                let choices =
                    json!([{"index": 0, "delta": {"content": text}, "finish_reason": null}]);
                let data = self.own_chunk(choices, events);
                out.push(self.event(data));
            }
            if let Some(done) = done {
                let data = self.done_chunk(done);
                out.push(self.event(data));
            }
        }
        out.push(self.event("[DONE]".to_owned()));
        Ok(out)
    }

    /// Appends events to the log, tried [`STORE_ATTEMPTS`](crate::unrecorded::STORE_ATTEMPTS)
    /// times.
    async fn log(&mut self, events: Vec<StoredEvent>) -> Result<(), Failure> {
        let store = &self.state.store;
        let last = events.last().map(|e| e.id);
        with_retries("stream events", || {
            store.append_events(&self.stream_id, events.clone())
        })
        .await
        .map_err(|e| store_failure(&e))?;
        self.logged = last.unwrap_or(self.logged);
        Ok(())
    }

    /// Sets the final status (and logs `error` first, for a failure), with retries; what the
    /// store does not take is kept and retried apart ([`record_failure`]).
    async fn finish(&self, status: StreamStatus, error: Option<StoredEvent>) {
        record_failure(&self.state, &self.stream_id, error, status).await;
        let m = &self.state.metrics;
        m.streams_open.fetch_sub(1, Relaxed);
        match status {
            StreamStatus::Completed => m.streams_completed.fetch_add(1, Relaxed),
            _ => m.streams_failed.fetch_add(1, Relaxed),
        };
    }

    /// Logs an error event and marks the stream failed.
    async fn fail(&mut self, f: Failure) {
        tracing::warn!(stream_id = %self.stream_id, code = f.code, message = %f.message, "stream failed");
        if f.code.starts_with("upstream") {
            self.state.metrics.upstream_errors.fetch_add(1, Relaxed);
        }
        let data = error_payload(f.code, &f.message);
        // Right after the last event the log took (events it refused are lost).
        self.next_id = self.logged + 1;
        let e = self.event(data);
        self.finish(StreamStatus::Failed, Some(e)).await;
    }
}

fn internal(e: &dyn std::fmt::Display) -> Failure {
    tracing::error!(error = %e, "internal error in a stream");
    failure("internal_error", "internal error")
}

fn store_failure(e: &citeflow_store::StoreError) -> Failure {
    tracing::error!(error = %e, "store error in a stream");
    failure(
        "store_unavailable",
        "the store failed; the stream cannot go on",
    )
}

/// Reads the upstream body to its end, logging every rewritten chunk before it is sent.
pub(crate) async fn run(mut g: Generation, resp: reqwest::Response) {
    g.state.metrics.streams_started.fetch_add(1, Relaxed);
    g.state.metrics.streams_open.fetch_add(1, Relaxed);
    let limits = g.state.settings.limits.clone();
    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(limits.max_stream_duration_ms);
    let idle = Duration::from_millis(limits.upstream_idle_timeout_ms);
    let mut body = resp.bytes_stream();
    let mut sse = SseDecoder::default();
    let mut saw_finish = false;
    let result: Result<(), Failure> = supervised(async {
        loop {
            let wait_until = (tokio::time::Instant::now() + idle).min(deadline);
            let next = tokio::time::timeout_at(wait_until, body.next()).await;
            let bytes = match next {
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
                Ok(None) => {
                    sse.end()
                        .map_err(|e| failure("upstream_malformed", e.to_string()))?;
                    let mut out = Vec::new();
                    while let Some(ev) = sse.poll_event() {
                        if ev.data == "[DONE]" {
                            saw_finish = true;
                            break;
                        }
                        let v = parse(&ev.data)?;
                        saw_finish |= v
                            .pointer("/choices/0/finish_reason")
                            .is_some_and(|f| !f.is_null());
                        out.extend(g.on_chunk(v).await?);
                    }
                    if !saw_finish {
                        if !out.is_empty() {
                            g.log(out).await?;
                        }
                        return Err(failure(
                            "upstream_cut",
                            "the upstream closed the stream before it finished",
                        ));
                    }
                    out.extend(g.on_end().await?);
                    g.log(out).await?;
                    return Ok(());
                }
                Ok(Some(Err(e))) => {
                    return Err(failure(
                        "upstream_cut",
                        format!("the upstream stream broke: {e}"),
                    ))
                }
                Ok(Some(Ok(b))) => b,
            };
            let received = Instant::now();
            sse.write(&bytes)
                .map_err(|e| failure("upstream_malformed", e.to_string()))?;
            let mut out = Vec::new();
            let mut done = false;
            while let Some(ev) = sse.poll_event() {
                if ev.data == "[DONE]" {
                    done = true;
                    break;
                }
                let v = parse(&ev.data)?;
                saw_finish |= v
                    .pointer("/choices/0/finish_reason")
                    .is_some_and(|f| !f.is_null());
                g.state.metrics.chunks.fetch_add(1, Relaxed);
                out.extend(g.on_chunk(v).await?);
            }
            if done {
                out.extend(g.on_end().await?);
                g.log(out).await?;
                return Ok(());
            }
            if !out.is_empty() {
                g.log(out).await?;
                g.state.metrics.observe_added_latency(received.elapsed());
            }
        }
    })
    .await;
    match result {
        Ok(()) => g.finish(StreamStatus::Completed, None).await,
        Err(f) => g.fail(f).await,
    }
}

/// Runs a generation's work; a panic inside it becomes an `internal_error`
/// failure (logged with its message), so that the caller still writes the
/// error event and closes the stream.
async fn supervised<F>(work: F) -> Result<(), Failure>
where
    F: Future<Output = Result<(), Failure>>,
{
    match AssertUnwindSafe(work).catch_unwind().await {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            Err(internal(&format_args!(
                "the generation task panicked: {message}"
            )))
        }
    }
}

fn parse(data: &str) -> Result<Value, Failure> {
    serde_json::from_str(data).map_err(|e| {
        let excerpt: String = data.chars().take(80).collect();
        failure(
            "upstream_malformed",
            format!("the upstream sent an event that is not JSON ({e}): {excerpt}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_the_generation_is_an_internal_failure() {
        let f = supervised(async {
            if f64::MAX > 0.0 {
                panic!("boom");
            }
            Ok(())
        })
        .await
        .err()
        .unwrap();
        assert_eq!(
            (f.code, f.message.as_str()),
            ("internal_error", "internal error")
        );
        let f = supervised(async { Err(failure("upstream_cut", "x")) })
            .await
            .err()
            .unwrap();
        assert_eq!(f.code, "upstream_cut");
        assert!(supervised(async { Ok(()) }).await.is_ok());
    }
}
