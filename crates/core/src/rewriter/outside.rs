//! Numbers and sources from outside the text: a number given by the caller's store
//! ([`Rewriter::provide_number`]), search rounds added mid-stream, and provider citations
//! placed ([`Rewriter::write_citation`]) or bound late ([`Rewriter::cite_late`]).

use super::{keys_of, Group, Phase, Rewriter};
use crate::error::{RewriteError, SourceError};
use crate::event::{CitationDetail, Span};
use crate::scan::{Item, Marker, ScanConfig};
use crate::source::Source;

impl Rewriter {
    /// Answers [`Event::NumberNeeded`](crate::Event::NumberNeeded) with the number the shared store gave `key`.
    ///
    /// # Errors
    /// [`RewriteError::NotAwaiting`] when no number is awaited for `key` (nothing changes);
    /// [`RewriteError::Numbering`] when the number conflicts with the table (fatal).
    pub fn provide_number(&mut self, key: &str, number: u32) -> Result<(), RewriteError> {
        if let Phase::Failed(m) = &self.st.phase {
            return Err(RewriteError::Failed(m.clone()));
        }
        let Some(mut group) = self.st.awaiting.take() else {
            return Err(RewriteError::NotAwaiting {
                key: key.to_owned(),
            });
        };
        if group.waiting.as_ref().is_none_or(|(k, _)| k != key) {
            self.st.awaiting = Some(group);
            return Err(RewriteError::NotAwaiting {
                key: key.to_owned(),
            });
        }
        let Some((k, source_id)) = group.waiting.take() else {
            return Err(RewriteError::NotAwaiting {
                key: key.to_owned(),
            });
        };
        if let Err(e) = self.st.numbering.insert(number, k.clone(), source_id) {
            return Err(self.fail(e.into()));
        }
        self.st.new_numbers += 1;
        if !self.resolve(group) {
            return Ok(());
        }
        let ending = self.st.phase == Phase::Ending;
        self.pump(ending);
        if ending && self.st.awaiting.is_none() {
            return self.finish_stream();
        }
        Ok(())
    }

    /// Registers a round of sources in the middle of the stream (an agent's search, a
    /// provider's search results), so that markers and provider citations can cite them.
    ///
    /// # Errors
    /// As [`Sources::append_round`](crate::Sources::append_round); nothing is registered on error.
    pub fn append_sources(
        &mut self,
        query: Option<String>,
        sources: Vec<Source>,
    ) -> Result<u32, SourceError> {
        let round = self.st.sources.append_round(query, sources)?;
        self.cfg = ScanConfig::for_sources(&self.st.settings, &self.st.sources);
        self.keys = keys_of(&self.st.sources, &self.st.settings);
        Ok(round)
    }

    /// Registers one source into the newest round ([`Sources::append_to_last_round`](crate::Sources::append_to_last_round)): a
    /// source a provider cited.
    ///
    /// # Errors
    /// As [`Sources::append_to_last_round`](crate::Sources::append_to_last_round).
    pub fn append_source(&mut self, source: Source) -> Result<u32, SourceError> {
        if self.st.sources.get(&source.id).is_some() {
            self.st.sources.fill_missing(&source);
            return Ok(self.st.sources.round_of(&source.id).unwrap_or(1));
        }
        let round = self.st.sources.append_to_last_round(source)?;
        self.cfg = ScanConfig::for_sources(&self.st.settings, &self.st.sources);
        self.keys = keys_of(&self.st.sources, &self.st.settings);
        Ok(round)
    }

    /// Decides the held-back text now, as if the input ended here, and keeps the stream open:
    /// a structural boundary (a provider's content block ended, a citation arrives) after
    /// which no marker can continue. Everything written so far is then rendered.
    pub fn write_boundary(&mut self) {
        if self.check_open().is_ok() && self.st.awaiting.is_none() {
            self.pump(true);
        }
    }

    /// Cites a registered source right here, after everything written so far (a provider
    /// citation whose text has not been shown yet): the number is rendered into the text as a
    /// marker's would be, with [`Event::Source`](crate::Event::Source) first when it is new in this stream.
    ///
    /// # Errors
    /// [`RewriteError::UnknownSource`] for an id not registered with
    /// [`Rewriter::append_sources`] (or given to [`Rewriter::new`]),
    /// [`RewriteError::AwaitingNumber`] while a number is awaited (both change nothing), else
    /// as [`Rewriter::write`].
    pub fn write_citation(
        &mut self,
        source_id: &str,
        detail: Option<CitationDetail>,
    ) -> Result<(), RewriteError> {
        self.check_citation(source_id)?;
        self.write_boundary();
        self.flush_text();
        self.cite(source_id, detail.map(Box::new));
        Ok(())
    }

    /// Cites a registered source for text already shown (a provider citation that arrived
    /// after its text): shown text never changes, so the number is not rendered; the
    /// [`Event::Citation`](crate::Event::Citation) carries `span` (the number belongs at `span.end`, or in place of the
    /// span with [`CitationDetail::replaces_span`]) with [`CitationDetail::late`] set, and the
    /// source is listed and counted as for any citation.
    ///
    /// # Errors
    /// As [`Rewriter::write_citation`].
    pub fn cite_late(
        &mut self,
        source_id: &str,
        span: Span,
        mut detail: CitationDetail,
    ) -> Result<(), RewriteError> {
        self.check_citation(source_id)?;
        self.write_boundary();
        self.flush_text();
        detail.span = Some(span);
        detail.late = true;
        self.cite(source_id, Some(Box::new(detail)));
        Ok(())
    }

    pub(super) fn check_citation(&self, source_id: &str) -> Result<(), RewriteError> {
        self.check_open()?;
        if let Some(g) = &self.st.awaiting {
            return Err(RewriteError::AwaitingNumber {
                key: g.waiting.as_ref().map(|w| w.0.clone()).unwrap_or_default(),
            });
        }
        if self.st.sources.index_of(source_id).is_none() {
            return Err(RewriteError::UnknownSource {
                id: source_id.to_owned(),
            });
        }
        Ok(())
    }

    pub(super) fn cite(&mut self, source_id: &str, detail: Option<Box<CitationDetail>>) {
        let group = Group {
            marker: Marker {
                raw: String::new(),
                items: vec![Item::Id(source_id.to_owned())],
                input_offset: self.st.input_bytes,
            },
            next: 0,
            pieces: Vec::new(),
            waiting: None,
            detail,
        };
        self.resolve(group);
    }
}
