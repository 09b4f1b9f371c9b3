//! Late citations: a provider citation whose text was shown already gets its number in the
//! final text only ([`Event::Done`](crate::Event::Done)'s `text`), never by changing shown text.
//!
//! Late citations are queued and bound in the order of their text, not of their arrival, when
//! a number is next shown in the stream (a provider citation placed, or answer text that
//! shows one), and at the end of their part. So numbers in the final text are dense in order
//! of first appearance whatever order the citations came in, unless a number for later text
//! was shown in the stream before the citation came (a number once shown never changes).

use super::{Deferred, Pending, ProviderStream};
use crate::event::{CitationDetail, Event, Span};
use crate::provider::error::ProviderError;

/// A late citation: its span of the output, and whether it replaces it (a link).
#[derive(Debug, Clone)]
pub(super) struct Late {
    pub(super) span: Span,
    pub(super) replace: bool,
    pub(super) pending: Pending,
}

impl ProviderStream {
    pub(super) fn queue_late(&mut self, l: Late) {
        self.late_queue.push(l);
    }

    /// Binds the queued late citations in the order of their text.
    pub(super) fn flush_late(&mut self) -> Result<(), ProviderError> {
        if self.late_queue.is_empty() {
            return Ok(());
        }
        let mut queue = std::mem::take(&mut self.late_queue);
        queue.sort_by_key(|l| (l.span.end.bytes, l.span.start.bytes));
        let mut queue = queue.into_iter();
        while let Some(l) = queue.next() {
            if self.awaiting() {
                // The rest once the number is given.
                self.late_queue = std::iter::once(l).chain(queue).collect();
                self.deferred.push_front(Deferred::FlushLate);
                return Ok(());
            }
            self.bind_late(l)?;
        }
        Ok(())
    }

    fn bind_late(&mut self, l: Late) -> Result<(), ProviderError> {
        let key = self.placed.key(&l.pending.key);
        if !self.placed.at_output(key, l.span.end.bytes) {
            return Ok(());
        }
        let (os, oe) = (l.span.start.bytes as usize, l.span.end.bytes as usize);
        let detail = CitationDetail {
            quote: l.pending.quote,
            replaces_span: l.replace,
            ..CitationDetail::default()
        };
        self.rw_mut().cite_late(&l.pending.id, l.span, detail)?;
        self.late.push_back((os, oe, l.replace));
        self.drain();
        Ok(())
    }

    /// Whether giving the rewriter part bytes `from..upto` would show a number for the first
    /// time (or await one): tried on a copy, only while late citations wait.
    pub(super) fn shows_a_number(&self, from: usize, upto: usize) -> bool {
        let Some(rw) = self.rw.as_ref() else {
            return false;
        };
        let mut probe = rw.clone();
        if probe.write_str(&self.part.text[from..upto]).is_err() {
            return false;
        }
        probe.write_boundary();
        if probe.is_awaiting_number() {
            return true;
        }
        std::iter::from_fn(|| probe.poll_event()).any(|e| matches!(e, Event::Source { .. }))
    }
}

/// A late number's change to the streamed text: bytes `start..end` replaced by `text` (an
/// insertion when `start == end`). [`ProviderStream`] makes [`Event::Done`]'s final text with
/// these; an adapter that keeps the text of each part (the Responses API's `output_text`)
/// makes the part's final text with [`apply_late_edits`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateEdit {
    /// First byte replaced.
    pub start: usize,
    /// The byte after the last replaced.
    pub end: usize,
    /// The rendered number.
    pub text: String,
}

/// The streamed text with the late edits made, and where each edit's text landed in it
/// (`None`: the same number right before it is shown once, and the edit only removes the span
/// it replaces). Edits are applied in order of their end; one that overlaps an earlier one
/// inserts its number at its end.
pub fn apply_late_edits(
    out: &str,
    edits: &[LateEdit],
) -> (String, Vec<Option<std::ops::Range<usize>>>) {
    let mut order: Vec<usize> = (0..edits.len()).collect();
    order.sort_by_key(|&i| edits[i].end);
    let mut landed = vec![None; edits.len()];
    let mut text = String::with_capacity(out.len() + edits.len() * 4);
    let mut at = 0;
    for i in order {
        let e = &edits[i];
        if e.start >= at && e.start <= out.len() && out.is_char_boundary(e.start) {
            text.push_str(&out[at..e.start]);
            at = e.end.min(out.len());
        } else if e.end >= at && e.end <= out.len() && out.is_char_boundary(e.end) {
            text.push_str(&out[at..e.end]);
            at = e.end;
        }
        // The same number twice at one place is shown once, as in the stream.
        if !text.ends_with(&e.text) {
            landed[i] = Some(text.len()..text.len() + e.text.len());
            text.push_str(&e.text);
        }
    }
    text.push_str(&out[at.min(out.len())..]);
    (text, landed)
}
