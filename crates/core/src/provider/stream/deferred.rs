//! Work held while the rewriter awaits a number from the caller's store
//! ([`Event::NumberNeeded`](crate::Event::NumberNeeded)): queued in order, done once
//! [`ProviderStream::provide_number`] answers.

use super::{Pending, ProviderStream};
use crate::provider::error::ProviderError;
use crate::provider::read::ProviderEvent;
use crate::rewriter::Rewriter;

/// Work held while the rewriter awaits a number from the caller's store
/// ([`Event::NumberNeeded`]): done in order once [`ProviderStream::provide_number`] answers.
#[derive(Debug, Clone)]
pub(super) enum Deferred {
    /// A provider event read while the rewriter was awaiting.
    Event(ProviderEvent),
    /// A number to place after the text given so far (one of a block's citations).
    Cite(Pending),
    /// A chunk of answer text given as a JSON string payload.
    Text(String, u64),
    /// [`ProviderStream::write_boundary`].
    Boundary,
    /// Release held text as far as the hold rule allows (see [`hold`]); `true` at the
    /// part's end.
    Advance(bool),
    /// The rest of [`ProviderStream::finish_part`].
    FinishPart,
    /// The rest of the queued late citations (see [`late`]).
    FlushLate,
    /// The stream's end: the last part finished, then the rewriter's end.
    End,
    /// The rewriter's end alone (the last part was finished already).
    RwEnd,
}

impl ProviderStream {
    /// The rewriter awaits a number from the caller.
    pub(super) fn awaiting(&self) -> bool {
        self.rw.as_ref().is_some_and(Rewriter::is_awaiting_number)
    }

    /// New work must wait: a number is awaited, or earlier work is held.
    pub(super) fn blocked(&self) -> bool {
        self.awaiting() || !self.deferred.is_empty()
    }

    /// Queues `d` to run right after the work the current step queued (at the front, before
    /// the `queued` items that were waiting when the step began).
    pub(super) fn defer_next(&mut self, queued: usize, d: Deferred) {
        let at = self.deferred.len().saturating_sub(queued);
        self.deferred.insert(at, d);
    }

    /// Does the held work in order until a number is awaited again.
    pub(super) fn resume(&mut self) -> Result<(), ProviderError> {
        while !self.awaiting() {
            let Some(d) = self.deferred.pop_front() else {
                break;
            };
            match d {
                Deferred::Event(ev) => self.apply_now(ev)?,
                Deferred::Cite(p) => self.cite_here(&p, None)?,
                Deferred::Text(text, line) => {
                    self.line = line;
                    self.text_seen |= !text.is_empty();
                    self.part.text.push_str(&text);
                    self.feed_all()?;
                }
                Deferred::Advance(at_end) => self.advance(at_end)?,
                Deferred::FinishPart => self.finish_part()?,
                Deferred::FlushLate => self.flush_late()?,
                Deferred::Boundary => self.boundary_now()?,
                Deferred::End => self.end_now()?,
                Deferred::RwEnd => {
                    let r = self.rw_mut().end();
                    self.drain();
                    r?;
                }
            }
            self.drain();
        }
        Ok(())
    }
}
