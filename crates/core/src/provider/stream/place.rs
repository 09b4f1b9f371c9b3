//! Placing numbers: the part's text given to the rewriter, provider citations registered and
//! placed after their text, held as anchors (see [`hold`](super::hold)) or bound late (see
//! [`late`](super::late)).

use super::{hold, late, Deferred, Pending, ProviderStream};
use crate::event::{CitationDetail, Span};
use crate::provider::error::ProviderError;
use crate::provider::link;
use crate::provider::read::{Placement, ProviderCitation};
use crate::provider::units::{byte_index, position};
use crate::source::Sources;

impl ProviderStream {
    /// Gives the rewriter the part's text up to byte `upto`.
    pub(super) fn feed(&mut self, upto: usize) -> Result<(), ProviderError> {
        let upto = upto.min(self.part.text.len());
        if upto > self.part.fed {
            if !self.late_queue.is_empty() && self.shows_a_number(self.part.fed, upto) {
                // The late citations' numbers come first: their text came first.
                self.flush_late()?;
            }
            let from = self.part.fed;
            self.part.fed = upto;
            self.place += 1;
            if self.rw.is_none() {
                self.rw_mut();
            }
            if let Some(rw) = self.rw.as_mut() {
                rw.write_str(&self.part.text[from..upto])?;
            }
        }
        Ok(())
    }

    pub(super) fn feed_all(&mut self) -> Result<(), ProviderError> {
        self.feed(self.part.text.len())
    }

    /// Releases held text and places the part's url-only citations at its end.
    pub(super) fn finish_part(&mut self) -> Result<(), ProviderError> {
        let queued = self.deferred.len();
        self.advance(true)?;
        if self.awaiting() {
            self.defer_next(queued, Deferred::FinishPart);
            return Ok(());
        }
        let queued = self.deferred.len();
        self.flush_late()?;
        if self.awaiting() {
            self.defer_next(queued, Deferred::FinishPart);
            return Ok(());
        }
        let mut all = std::mem::take(&mut self.block);
        all.append(&mut self.unplaced);
        self.cite_all(all)
    }

    /// Places each number after the text given so far; when one awaits its number from the
    /// caller, the rest are held, ahead of anything held already.
    pub(super) fn cite_all(&mut self, list: Vec<Pending>) -> Result<(), ProviderError> {
        let mut list = list.into_iter();
        while let Some(p) = list.next() {
            if self.awaiting() {
                let rest: Vec<Pending> = std::iter::once(p).chain(list).collect();
                for p in rest.into_iter().rev() {
                    self.deferred.push_front(Deferred::Cite(p));
                }
                return Ok(());
            }
            self.cite_here(&p, None)?;
        }
        Ok(())
    }

    pub(super) fn citation(&mut self, c: ProviderCitation) -> Result<(), ProviderError> {
        let dedupe = self.settings.is_dedupe();
        let rw = self.rw_mut();
        rw.append_source(c.source.clone())?;
        let registered = rw.sources().get(&c.source.id).unwrap_or(&c.source);
        let key = Sources::key_of(registered, dedupe);
        let url = c.source.url.clone();
        let pending = Pending {
            id: c.source.id,
            key,
            quote: c.quote,
        };
        let (start, end, unit) = match c.placement {
            Placement::BlockEnd => {
                if !self.block.iter().any(|p| p.key == pending.key) {
                    self.block.push(pending);
                }
                return Ok(());
            }
            Placement::Unplaced => {
                if !self.unplaced.iter().any(|p| p.key == pending.key) {
                    self.unplaced.push(pending);
                }
                return Ok(());
            }
            Placement::Span { start, end, unit } => (start, end, unit),
            Placement::At { index, unit } => (index, index, unit),
        };
        let s = byte_index(&self.part.text, start, unit);
        let e = byte_index(&self.part.text, end, unit).max(s);
        let is_link = e > s
            && self.holds_links()
            && link::link_url(&self.part.text[s..e]).is_some_and(|u| {
                url.as_deref().is_some_and(|c| {
                    crate::source::normalize_url(c) == crate::source::normalize_url(u)
                })
            });
        if e > self.part.fed || (e == self.part.fed && s == e && e == self.part.text.len()) {
            // Its text has not been shown: it waits for the held text to be released.
            self.anchor(hold::Anchor {
                start: s,
                end: e,
                replace: is_link && s >= self.part.fed,
                pending,
            });
            return self.advance(false);
        }
        // Its text has been shown: bound late, in the order of the text (see [`late`]).
        if let Some(span) = self.span_of(s, e) {
            self.queue_late(late::Late {
                span,
                replace: is_link,
                pending,
            });
        }
        Ok(())
    }

    /// The output span of part bytes `s..e`, all rendered (after a boundary).
    pub(super) fn span_of(&mut self, s: usize, e: usize) -> Option<Span> {
        let (is, ie) = (self.part.input_offset(s), self.part.input_offset(e));
        let rw = self.rw_mut();
        rw.write_boundary();
        let (os, oe) = (rw.output_offset(is)?, rw.output_offset(ie)?);
        self.drain();
        // A provider offset inside a marker the model wrote lands in its rendering: keep
        // both ends on character boundaries of the output.
        let floor = |text: &str, at: u64| {
            let mut at = usize::try_from(at).unwrap_or(usize::MAX).min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        };
        let (os, oe) = (floor(&self.out, os), floor(&self.out, oe));
        Some(Span {
            start: position(&self.out, os.min(oe)),
            end: position(&self.out, oe),
        })
    }

    /// Places a number right after the text given so far.
    pub(super) fn cite_here(
        &mut self,
        p: &Pending,
        span: Option<Span>,
    ) -> Result<(), ProviderError> {
        let queued = self.deferred.len();
        if !self.late_queue.is_empty() {
            self.flush_late()?;
        }
        if self.awaiting() {
            // A marker in text given in the same event awaits its number: this one follows it.
            self.defer_next(queued, Deferred::Cite(p.clone()));
            return Ok(());
        }
        let rw = self.rw_mut();
        rw.write_boundary();
        let at = rw.output_bytes();
        let key = self.placed.key(&p.key);
        // The same place: nothing given to the rewriter since (output offsets are not known
        // while a number is awaited from the store).
        if self.placed.shown(key, at, self.place) {
            return Ok(());
        }
        let detail = CitationDetail {
            quote: p.quote.clone(),
            span,
            ..CitationDetail::default()
        };
        let rw = self.rw_mut();
        rw.write_citation(&p.id, Some(detail))?;
        let after = rw.output_bytes();
        self.placed.at_output(key, at);
        self.placed.at_output(key, after);
        self.placed.at_stream(key, self.place);
        self.place += 1;
        self.placed.at_stream(key, self.place);
        self.drain();
        Ok(())
    }
}
