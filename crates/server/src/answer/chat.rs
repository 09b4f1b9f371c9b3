//! The chat completions wire ([`Generation`], an [`Answer`] of the runner): upstream chunks
//! in, rewritten chunks out, each choice through its own [`Engine`], its citations as standard
//! `annotations`; a non-streamed completion is the same answer come whole.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use citeflow_core::provider::{ChatChunk, ChatChunks, Dialect, MetaValue, CHAT_META_KEYS};
use citeflow_core::{Settings, Sources};
use citeflow_store::{NumberScope, StoreError};
use serde_json::{json, Value};

use crate::answer::engine::{Cite, Drained, Engine};
use crate::answer::{parse_object, Answer};
use crate::code::ErrorCode;
use crate::error::{ApiError, StreamError};
use crate::metrics::OPENAI;
use crate::ops::shutdown;
use crate::plan::quotes::BookQuotes;
use crate::sse::{self, Naming};
use crate::state::AppState;

/// One choice of the answer (`choices[].index`; `n > 1` streams several): its text and the
/// upstream's own citations (`annotations`) through an [`Engine`], which numbers them (a
/// cited link held until its citation comes, a citation of text already shown bound late
/// into the `done` event's final `text`).
struct Choice {
    index: u64,
    engine: Engine,
    /// Its `finish_reason` came (or the upstream ended): later content is dropped.
    ended: bool,
}

/// One running stream.
pub(crate) struct Generation {
    state: AppState,
    stream_id: String,
    /// The session's scope when numbers are shared (`None`: each choice numbers its own).
    scope: Option<NumberScope>,
    /// The choices seen, in order of arrival; choice 0's engine is made up front.
    choices: Vec<Choice>,
    /// The settings and sources every choice starts with.
    base: (Settings, Sources),
    /// A finish_reason of choice 0 came: the upstream may close without `[DONE]`.
    saw_finish: bool,
    /// The upstream's answer came whole (a non-streamed completion, `choices[].message`):
    /// every choice ends with it, and its events name their choice one by one.
    whole: bool,
    /// The [`CHAT_META_KEYS`] members of the last upstream chunk, for our own chunks.
    meta: Value,
    /// The same members as the last plain chunk gave them (absent: not known), so that a
    /// plain chunk copies them only when they change.
    meta_seen: [MetaValue<'static>; 5],
    /// Reads the plain chunks, one written like the last by its content alone.
    plain: ChatChunks,
    speed: Speed,
    /// The `citeflow` member of a chunk without events, as JSON text: most chunks carry it
    /// as it is.
    citeflow_empty: String,
    /// The book passages among the sources: their anchors' quotes get a CFI.
    quotes: Option<Arc<BookQuotes>>,
}

/// A citation as a standard Chat Completions annotation (`None` for a source without url):
/// `start_index`..`end_index` are characters of the rewritten content that show the number,
/// or, for a citation bound after its text was shown, the cited text.
fn annotation(c: &Cite) -> Option<Value> {
    let url = c.url.as_deref()?;
    let mut a = json!({"start_index": c.start, "end_index": c.end, "url": url});
    if let Some(t) = &c.title {
        a["title"] = json!(t);
    }
    Some(json!({"type": "url_citation", "url_citation": a}))
}

/// The citations of one step as annotations.
fn annotations(cites: &[Cite]) -> Vec<Value> {
    cites.iter().filter_map(annotation).collect()
}

/// Where a choice's content is: its `delta` (a chunk), its `message` (a whole answer), or
/// the choice itself (completions' `text`).
fn content_of(choice: &Value) -> &Value {
    choice
        .get("delta")
        .or_else(|| choice.get("message"))
        .unwrap_or(choice)
}

/// The text of a choice: `delta.content` (chat), `message.content` (a whole answer) or
/// `text` (completions).
fn choice_text(choice: &Value) -> Option<&str> {
    choice
        .get("delta")
        .or_else(|| choice.get("message"))
        .and_then(|d| d.get("content"))
        .and_then(Value::as_str)
        .or_else(|| choice.get("text").and_then(Value::as_str))
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

impl Generation {
    /// The answer of stream `stream_id`: choice 0 made up front (its numbering read from the
    /// store when `scope` is the session's), the later ones on first sight; `requested` is
    /// when the upstream was asked.
    ///
    /// # Errors
    /// The store's, when the session's numbering table cannot be read.
    pub(crate) async fn new(
        state: AppState,
        stream_id: String,
        (settings, sources): (Settings, Sources),
        scope: Option<NumberScope>,
        quotes: Option<Arc<BookQuotes>>,
        requested: Instant,
    ) -> Result<Self, ApiError> {
        let citeflow_empty = json_text(&citeflow_member(&stream_id, Vec::new()));
        let first = Engine::new(
            &state,
            settings.clone(),
            sources.clone(),
            scope.clone(),
            Dialect::OpenaiChat,
        )
        .await?
        .with_quotes(quotes.clone());
        Ok(Generation {
            citeflow_empty,
            state,
            stream_id,
            scope,
            choices: vec![Choice {
                index: 0,
                engine: first,
                ended: false,
            }],
            base: (settings, sources),
            saw_finish: false,
            whole: false,
            meta: json!({"object": "chat.completion.chunk"}),
            quotes,
            meta_seen: Default::default(),
            plain: ChatChunks::default(),
            speed: Speed {
                requested,
                first: None,
                last: None,
                chunks: 0,
                usage_tokens: None,
            },
        })
    }

    /// For an upstream answer that came whole (`choices[].message`, not streamed).
    pub(crate) fn whole(mut self) -> Self {
        self.whole = true;
        self
    }

    /// The source-list chunk: the `done` event, with the answer's speed (for choice 0; a
    /// later choice's `citeflow` names it in `choice`).
    fn done_chunk(&self, index: u64, done: Value) -> String {
        let stats = self.speed.stats();
        let m = &self.state.metrics;
        m.generated_tokens
            .add(OPENAI, stats["tokens"].as_u64().unwrap_or(0));
        if let Some(v) = stats["tokens_per_second"].as_f64() {
            m.observe_generation_speed(v);
        }
        let mut c = self.meta.clone();
        c["choices"] = json!([]);
        c["citeflow"] = self.citeflow(vec![done]);
        c["citeflow"]["stats"] = stats;
        if index != 0 {
            c["citeflow"]["choice"] = json!(index);
        }
        json_text(&c)
    }

    /// The position in `choices` of choice `index`, made on first sight: its own engine
    /// over the same sources, numbered in the session's table when the scope is the
    /// session's, else on its own (each choice is a whole answer).
    async fn choice(&mut self, index: u64) -> Result<usize, StreamError> {
        if let Some(at) = self.choices.iter().position(|c| c.index == index) {
            return Ok(at);
        }
        let (settings, sources) = self.base.clone();
        let engine = Engine::new(
            &self.state,
            settings,
            sources,
            self.scope.clone(),
            Dialect::OpenaiChat,
        )
        .await
        .map_err(|e| StreamError::store(&e))?
        .with_quotes(self.quotes.clone());
        self.choices.push(Choice {
            index,
            engine,
            ended: false,
        });
        Ok(self.choices.len() - 1)
    }

    /// Feeds choice `at` its `text` and the upstream's `annotations` (`url_citation`, offsets
    /// in characters of the upstream's content): text alone is written as it is, anything
    /// else read by the core's OpenAI Chat reader.
    fn feed(
        &mut self,
        at: usize,
        text: Option<&str>,
        annotations: &[Value],
    ) -> Result<(), StreamError> {
        let ps = &mut self.choices[at].engine.ps;
        if annotations.is_empty() {
            if let Some(t) = text {
                ps.write_text(t)?;
            }
            return Ok(());
        }
        let delta = json!({"content": text, "annotations": annotations});
        ps.write_payload(&json!({"choices": [{"index": 0, "delta": delta}]}), 0)?;
        Ok(())
    }

    /// Drains choice `at`'s engine; a whole answer's events name their choice.
    async fn drain(&mut self, at: usize) -> Result<Drained, StreamError> {
        let mut d = self.choices[at].engine.drain().await?;
        if self.whole {
            let index = self.choices[at].index;
            for e in &mut d.events {
                *e = with_choice(e.take(), index);
            }
        }
        Ok(d)
    }

    fn citeflow(&self, events: Vec<Value>) -> Value {
        citeflow_member(&self.stream_id, events)
    }

    /// A chunk of our own (the tail and the source list), shaped like the upstream's.
    fn own_chunk(&self, choices: Value, events: Vec<Value>) -> String {
        let mut c = self.meta.clone();
        c["choices"] = choices;
        c["citeflow"] = self.citeflow(events);
        json_text(&c)
    }

    /// Counts a chunk with content, for the answer's speed.
    fn saw_content(&mut self) {
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

    /// Rewrites one upstream event's `data` (counted once it reads as JSON); returns the
    /// events to log, and whether the chunk finished choice 0. A plain chunk (one the core's
    /// [`ChatChunk`] reads; [`ChatChunks`] reads one written like the last by its content
    /// alone) is rewritten in its own text; any other goes through [`Self::on_chunk`].
    async fn on_data(&mut self, data: &str) -> Result<(Vec<String>, bool), StreamError> {
        if let Some(p) = self.plain.read(data).filter(|_| !self.choices[0].ended) {
            return Ok((self.on_plain(p).await?, false));
        }
        let v = parse_object(data)?;
        let finish = v
            .pointer("/choices/0/finish_reason")
            .is_some_and(|f| !f.is_null());
        Ok((self.on_chunk(v).await?, finish))
    }

    /// [`Self::on_chunk`] for a plain chunk of choice 0, which has not ended: the same
    /// events, its rewrite spliced into the upstream's text (no `Value` made of it).
    async fn on_plain(&mut self, p: ChatChunk<'_>) -> Result<Vec<String>, StreamError> {
        for (i, m) in p.meta().iter().enumerate() {
            if self.meta_seen[i] == *m {
                continue;
            }
            // Absent: kept as it was (a plain chunk's members are scalars: `None` only then).
            if let Some(v) = m.to_value() {
                self.meta[CHAT_META_KEYS[i]] = v;
                self.meta_seen[i] = m.clone().into_owned();
            }
        }
        let text = p.content();
        if !text.is_empty() {
            self.saw_content();
        }
        self.choices[0].engine.ps.write_text(text)?;
        let d = self.drain(0).await?;
        let annotations = annotations(&d.cites);
        let data = if d.events.is_empty() {
            p.splice(&d.text, &annotations, &self.citeflow_empty)
        } else {
            let citeflow = json_text(&self.citeflow(d.events));
            p.splice(&d.text, &annotations, &citeflow)
        };
        let mut out = vec![data];
        if let Some(done) = d.done {
            let data = self.done_chunk(0, done);
            out.push(data);
        }
        Ok(out)
    }

    /// Rewrites one upstream chunk; returns the events to log.
    ///
    /// Any JSON is handled: a payload that is not an object, or one of whose choices (or its
    /// `delta`) is not an object, is `upstream_malformed`. Each choice (`index`) goes through
    /// its own rewriter; its citeflow citations ride as standard `annotations` of its delta
    /// (the upstream's own annotations point into text that was rewritten: they are
    /// removed). A choice's content after its `finish_reason` is dropped, and a chunk left
    /// with no choice is dropped whole unless it carries usage.
    async fn on_chunk(&mut self, mut chunk: Value) -> Result<Vec<String>, StreamError> {
        let shape = |what: &str| {
            StreamError::new(
                ErrorCode::UpstreamMalformed,
                format!("the upstream sent a chunk whose {what} is not a JSON object"),
            )
        };
        if !chunk.is_object() {
            return Err(shape("payload"));
        }
        let is_list = chunk.get("choices").is_some_and(Value::is_array);
        let list = match chunk
            .get_mut("choices")
            .filter(|_| is_list)
            .map(Value::take)
        {
            Some(Value::Array(list)) => list,
            // None, or not a list: passed on as it came, with no text.
            _ => Vec::new(),
        };
        for (i, choice) in list.iter().enumerate() {
            if !choice.is_object() {
                return Err(shape(&format!("choices[{i}]")));
            }
            if choice.get("delta").is_some_and(|d| !d.is_object()) {
                return Err(shape(&format!("choices[{i}].delta")));
            }
        }
        if let Some(err) = chunk.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the upstream sent an error")
                .to_owned();
            return Err(StreamError::new(ErrorCode::UpstreamError, message));
        }
        for k in CHAT_META_KEYS {
            // The same on every chunk of an answer: copied only when it changes.
            if let Some(v) = chunk.get(k).filter(|v| self.meta.get(k) != Some(*v)) {
                self.meta[k] = v.clone();
            }
        }
        self.meta_seen = Default::default();
        if let Some(t) = chunk
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64)
        {
            self.speed.usage_tokens = Some(t);
        }
        // Every choice seen has ended: the answer is complete and its source lists sent.
        let over = self.choices.iter().all(|c| c.ended);
        let had_choices = !list.is_empty();
        let mut kept = Vec::with_capacity(list.len());
        let mut events = Vec::new();
        let mut dones = Vec::new();
        let mut first_index = None;
        for (i, mut choice) in list.into_iter().enumerate() {
            let index = choice
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(i as u64);
            let at = self.choice(index).await?;
            let input = choice_text(&choice).map(str::to_owned);
            if self.choices[at].ended {
                // This choice is complete and its source list sent: its later content is
                // dropped.
                if input.as_deref().is_some_and(|t| !t.is_empty()) {
                    tracing::warn!(stream_id = %self.stream_id, index, "upstream sent content after finish_reason; dropped");
                }
                continue;
            }
            if input.as_deref().is_some_and(|t| !t.is_empty()) {
                self.saw_content();
            }
            let finished = self.whole || choice.get("finish_reason").is_some_and(|f| !f.is_null());
            // The upstream's own annotations: numbered and mapped into the rewritten text.
            let upstream: &[Value] = content_of(&choice)
                .get("annotations")
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice);
            self.feed(at, input.as_deref(), upstream)?;
            let c = &mut self.choices[at];
            if finished {
                c.ended = true;
                if let Err(e) = c.engine.ps.end() {
                    tracing::warn!(error = %e, "rewrite check failed");
                }
            }
            let d = self.drain(at).await?;
            let annotations = annotations(&d.cites);
            let (slot, field) = match ["delta", "message"]
                .into_iter()
                .find(|k| choice.get(k).is_some())
            {
                Some(k) => (&mut choice[k], "content"),
                None => (&mut choice, "text"),
            };
            if let Some(m) = slot.as_object_mut() {
                if input.is_some() || !d.text.is_empty() {
                    m.insert(field.to_owned(), Value::String(d.text));
                }
                m.remove("annotations");
                if !annotations.is_empty() {
                    m.insert("annotations".to_owned(), Value::Array(annotations));
                }
            }
            first_index.get_or_insert(index);
            events.extend(d.events);
            if self.whole {
                // A whole answer's events name their choice one by one, its done event too.
                events.extend(d.done.map(|done| with_choice(done, index)));
            } else {
                dones.extend(d.done.map(|done| (index, done)));
            }
            kept.push(choice);
        }
        if kept.is_empty() && (had_choices || over) {
            // After the end of its choices (or of the answer): dropped whole, or passed on
            // without choices when it carries usage.
            if chunk.get("usage").is_none_or(Value::is_null) {
                return Ok(Vec::new());
            }
            chunk["choices"] = json!([]);
        } else if is_list {
            chunk["choices"] = Value::Array(kept);
        }
        chunk["citeflow"] = self.citeflow(events);
        if let Some(index) = first_index.filter(|i| *i != 0 && !self.whole) {
            chunk["citeflow"]["choice"] = json!(index);
        }
        let mut out = vec![json_text(&chunk)];
        for (index, done) in dones {
            let data = self.done_chunk(index, done);
            out.push(data);
        }
        Ok(out)
    }

    /// Ends the rewriters the upstream did not end, and logs their tails and source lists.
    async fn on_end(&mut self) -> Result<Vec<String>, StreamError> {
        let mut out = Vec::new();
        for at in 0..self.choices.len() {
            let c = &mut self.choices[at];
            if c.ended {
                continue;
            }
            c.ended = true;
            let index = c.index;
            if let Err(e) = c.engine.ps.end() {
                tracing::warn!(error = %e, "rewrite check failed");
            }
            let d = self.drain(at).await?;
            if !d.text.is_empty() || !d.events.is_empty() {
                let mut delta = json!({"content": d.text});
                let annotations = annotations(&d.cites);
                if !annotations.is_empty() {
                    delta["annotations"] = Value::Array(annotations);
                }
                let choices = json!([{"index": index, "delta": delta, "finish_reason": null}]);
                let mut data = self.own_chunk(choices, d.events);
                if index != 0 {
                    let mut v: Value =
                        serde_json::from_str(&data).map_err(|e| StreamError::internal(&e))?;
                    v["citeflow"]["choice"] = json!(index);
                    data = json_text(&v);
                }
                out.push(data);
            }
            if let Some(done) = d.done {
                let data = self.done_chunk(index, done);
                out.push(data);
            }
        }
        out.push("[DONE]".to_owned());
        Ok(out)
    }
}

impl Answer for Generation {
    async fn on_data(&mut self, data: &str) -> Result<Vec<String>, StreamError> {
        let (events, finish) = self.on_data(data).await?;
        self.saw_finish |= finish;
        Ok(events)
    }

    async fn on_end(&mut self, done: bool) -> Result<Vec<String>, StreamError> {
        if !done && !self.saw_finish && !self.whole {
            return Err(StreamError::new(
                ErrorCode::UpstreamCut,
                "the upstream closed the stream before it finished",
            ));
        }
        self.on_end().await
    }

    fn error_event(&mut self, f: &StreamError) -> String {
        f.payload()
    }

    /// Always an OpenAI-compatible upstream, whatever its url.
    fn upstream(&self, _: &AppState, _: &str) -> &'static str {
        OPENAI
    }

    /// Chunks as logged, unnamed.
    const NAMING: Naming = Naming::Unnamed;

    /// The log's read error as the error envelope every stream error uses.
    fn read_error_frame(e: &StoreError) -> Bytes {
        tracing::error!(error = %e, "cannot read stream log");
        let f = StreamError::new(
            ErrorCode::StoreUnavailable,
            "the stream log cannot be read; reconnect with Last-Event-ID",
        );
        sse::event(None, None, &f.payload())
    }

    fn failure_frame(data: &str) -> Bytes {
        sse::event(None, None, data)
    }

    fn shutdown_frame() -> Bytes {
        let f = StreamError::new(shutdown::CODE, shutdown::MESSAGE);
        sse::event(None, None, &f.payload())
    }
}

/// A whole answer's event of choice `index`: named by it when it is not the first.
fn with_choice(mut event: Value, index: u64) -> Value {
    if index != 0 {
        event["choice"] = json!(index);
    }
    event
}

/// The `citeflow` member of a chunk of stream `stream_id` carrying `events`.
fn citeflow_member(stream_id: &str, events: Vec<Value>) -> Value {
    json!({"stream_id": stream_id, "events": events})
}

/// A chunk's JSON text, written by serde_json into one buffer (`Value`'s `Display` goes
/// through `fmt::Write` in small pieces, each one growing the `String`).
fn json_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| v.to_string())
}
