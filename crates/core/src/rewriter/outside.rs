//! Numbers and sources from outside the text: a number given by the caller's store
//! ([`Rewriter::provide_number`]), search rounds added mid-stream, and provider citations
//! placed ([`Rewriter::write_citation`]) or bound late ([`Rewriter::cite_late`]).

use super::{Group, Phase, Rewriter};
use crate::error::{RewriteError, SourceError};
use crate::event::{CitationDetail, Span};
use crate::scan::{Item, Marker};
use crate::source::{Source, Sources};

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
        self.add_new_sources();
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
        self.add_new_sources();
        Ok(round)
    }

    /// The scanner's ids and the numbering keys of the sources registered since the last
    /// call (sources are only ever appended): a provider citing its tenth source does not
    /// normalise the urls of the nine before it again.
    fn add_new_sources(&mut self) {
        let known = self.keys.len();
        self.cfg.add_sources(&self.st.sources, known);
        let dedupe = self.st.settings.is_dedupe();
        self.keys.extend(
            self.st
                .sources
                .iter()
                .skip(known)
                .map(|s| Sources::key_of(s, dedupe)),
        );
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

#[cfg(test)]
mod tests {
    use super::super::keys_of;
    use crate::numbering::Numbering;
    use crate::scan::ScanConfig;
    use crate::settings::Settings;
    use crate::source::{Source, Sources};
    use crate::Rewriter;

    /// Sources appended mid-stream give the keys and scanner ids that the whole list given to
    /// `new` would have given.
    #[test]
    fn sources_added_mid_stream_as_if_given_at_the_start() {
        for dedupe in [true, false] {
            let settings = Settings::default().with_dedupe(dedupe);
            let first =
                Sources::from_vec(vec![Source::new("b").with_url("https://Example.com/b/")]);
            let mut rw = Rewriter::new(settings, first.unwrap(), Numbering::new());
            let a = Source::new("a").with_url("https://example.com/a?utm_source=x");
            rw.append_source(a.with_label(12_345)).unwrap();
            let round = vec![
                Source::new("c"),
                Source::new("b"),
                Source::new("d").with_url("http://x.org/d"),
            ];
            rw.append_sources(Some("q".into()), round).unwrap();
            rw.append_source(Source::new("a")).unwrap();
            rw.append_source(Source::new("0").with_url("https://example.com/a"))
                .unwrap();
            assert_eq!(rw.st.sources.len(), 5);
            assert_eq!(rw.keys, keys_of(&rw.st.sources, &rw.st.settings));
            let whole = ScanConfig::for_sources(&rw.st.settings, &rw.st.sources);
            assert_eq!(format!("{:?}", rw.cfg), format!("{whole:?}"));
        }
    }
}
