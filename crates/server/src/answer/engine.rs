//! [`Engine`]: a provider's payloads through a `ProviderStream`, numbered from the store; each
//! step's events as one [`Drained`], every citation as one [`Cite`] (the wires turn it into
//! their own annotation).

use citeflow_core::provider::{Dialect, ProviderStream, TextDelta};
use citeflow_core::{Event, NumberSource, Numbering, Settings, Sources};
use std::sync::Arc;

use citeflow_store::NumberScope;
use serde_json::Value;

use crate::error::{ApiError, StreamError};
use crate::plan::quotes::BookQuotes;
use crate::state::AppState;

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
    /// Bound after its text was shown: the number's rendering, and whether it replaces
    /// `start..end` (a link) or follows it, in the final text.
    pub(crate) late: Option<(String, bool)>,
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

/// The settings and numbering table an answer starts with: a shared scope's table from the
/// store (its numbers allocated there, atomically across servers), or, without one, numbers
/// kept by the answer's own rewriter (they reach every reader through the stream's log, and a
/// new source costs no store round trip).
pub(crate) async fn numbering_of(
    state: &AppState,
    settings: Settings,
    scope: Option<&NumberScope>,
) -> Result<(Settings, Numbering), ApiError> {
    Ok(match scope {
        Some(s) => (settings, state.store.numbering(s).await?),
        None => (
            settings.with_number_source(NumberSource::Local),
            Numbering::new(),
        ),
    })
}

/// A provider stream, numbered from the store.
pub(crate) struct Engine {
    state: AppState,
    scope: Option<NumberScope>,
    pub(crate) ps: ProviderStream,
    /// Characters of rewritten text so far.
    pub(crate) chars: u64,
    /// The book passages among the sources: their anchors' quotes get a CFI.
    quotes: Option<Arc<BookQuotes>>,
}

impl Engine {
    /// An answer's engine over `sources`, reading `dialect`; `scope` `None`: numbers are
    /// local to this answer.
    ///
    /// # Errors
    /// The store's, when the scope's numbering table cannot be read.
    pub(crate) async fn new(
        state: &AppState,
        settings: Settings,
        sources: Sources,
        scope: Option<NumberScope>,
        dialect: Dialect,
    ) -> Result<Engine, ApiError> {
        let (settings, numbering) = numbering_of(state, settings, scope.as_ref()).await?;
        let ps = ProviderStream::new(settings, sources, numbering).with_dialect(dialect);
        Ok(Engine {
            state: state.clone(),
            scope,
            ps,
            chars: 0,
            quotes: None,
        })
    }

    /// With the book passages among the sources, whose anchors' quotes get a CFI.
    pub(crate) fn with_quotes(mut self, quotes: Option<Arc<BookQuotes>>) -> Self {
        self.quotes = quotes;
        self
    }

    /// One upstream payload through the engine, the held-back text decided after it when it
    /// ends a content block (`boundary`); what it gave.
    ///
    /// # Errors
    /// The payload's (malformed, an error the provider reported) after the events before it
    /// were drained, or the store's.
    pub(crate) async fn step(
        &mut self,
        payload: &Value,
        boundary: bool,
    ) -> Result<Drained, StreamError> {
        let mut r = self.ps.write_payload(payload, 0);
        if r.is_ok() && boundary {
            r = self.ps.write_boundary();
        }
        let d = self.drain().await?;
        r?;
        Ok(d)
    }

    /// An upstream event of answer text alone (the core's [`TextDelta`]) through the engine,
    /// as [`Self::step`] would take the same event; what it gave.
    ///
    /// # Errors
    /// As [`Self::step`].
    pub(crate) async fn step_text(&mut self, t: &TextDelta<'_>) -> Result<Drained, StreamError> {
        let r = self.ps.write_text_delta(t);
        let d = self.drain().await?;
        r?;
        Ok(d)
    }

    /// The upstream ended: the held-back text and the `done` event.
    ///
    /// # Errors
    /// The rewriter's check, or the store's.
    pub(crate) async fn finish(&mut self) -> Result<Drained, StreamError> {
        self.ps.end()?;
        self.drain().await
    }

    /// Moves the events out, answering number requests from the store.
    pub(crate) async fn drain(&mut self) -> Result<Drained, StreamError> {
        let mut d = Drained::default();
        while let Some(mut ev) = self.ps.poll_event() {
            if let Some(q) = &self.quotes {
                q.fill(&mut ev);
            }
            match ev {
                Event::NumberNeeded { key, source_id } => {
                    let scope = self.scope.as_ref().ok_or_else(|| {
                        StreamError::internal(&"number needed without a shared scope")
                    })?;
                    let a = self
                        .state
                        .store
                        .allocate(scope, &key, &source_id)
                        .await
                        .map_err(|e| StreamError::store(&e))?;
                    self.ps.provide_number(&key, a.number)?;
                }
                Event::Text { text } => {
                    self.chars += text.chars().count() as u64;
                    // Most drains give one text: taken as it is, not copied.
                    if d.text.is_empty() {
                        d.text = text;
                    } else {
                        d.text.push_str(&text);
                    }
                }
                e @ Event::Done { .. } => {
                    d.done = Some(serde_json::to_value(&e).map_err(|e| StreamError::internal(&e))?);
                }
                e => {
                    count(&self.state, &e);
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
                            serde_json::to_value(source).map_err(|e| StreamError::internal(&e))?,
                        )),
                        _ => {}
                    }
                    d.events
                        .push(serde_json::to_value(&e).map_err(|e| StreamError::internal(&e))?);
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
        let mut shown = String::new();
        if let (Some(rw), Some(s)) = (rw, source) {
            rw.settings().style().render_number(number, s, &mut shown);
        }
        let late = provider
            .as_ref()
            .and_then(|p| p.span.filter(|_| p.late).map(|s| (s, p.replaces_span)));
        let (start, end) = match late {
            Some((span, _)) => (span.start.chars, span.end.chars),
            None => (char_offset, char_offset + shown.chars().count() as u64),
        };
        let late = late.map(|(_, replace)| (shown, replace));
        Cite {
            number,
            start,
            end,
            url: source.and_then(|s| s.url.clone()),
            title: source.and_then(|s| s.title.clone()),
            source_id: source_id.to_owned(),
            late,
        }
    }
}

/// Counts citations and unresolved markers.
fn count(state: &AppState, e: &Event) {
    match e {
        Event::Citation { .. } => {
            state.metrics.citations.inc();
        }
        Event::Unresolved { .. } => {
            state.metrics.unresolved.inc();
        }
        _ => {}
    }
}
