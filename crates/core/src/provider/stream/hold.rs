//! The hold rule: provider text that a citation may still bind to is held, not shown.
//!
//! In the dialects whose models write the cited url as an inline link (OpenAI Responses and
//! Chat Completions, Azure, xAI), a link that may still be a citation's marker is held, with
//! the text after it, until the first of:
//! - a citation for it arrives: the link is replaced by the number;
//! - its content part ends: the link is released as written;
//! - more than [`Settings::max_link_hold_bytes`](crate::Settings::max_link_hold_bytes) bytes
//!   are held: the link is released as written, and a citation that comes for it later is
//!   bound late (in [`Event::Done`](crate::Event::Done)'s final text only).
//!
//! A citation whose text is still held waits here as an [`Anchor`] and is placed when the
//! release reaches it, so numbers are handed out in the order of the text, whatever order the
//! citations came in. What is released depends only on the text so far, on where each
//! citation came relative to it and on the bound: never on how the text deltas were cut.

use super::{Deferred, Pending, ProviderStream};
use crate::provider::error::ProviderError;
use crate::provider::link;

/// Longest open candidate held before it is taken for text: a label and a url at their
/// longest in [`link`], and the brackets.
const MAX_OPEN_LINK: usize = 4096 + 600;

/// A citation waiting for held text: its span in part bytes.
#[derive(Debug, Clone)]
pub(super) struct Anchor {
    pub(super) start: usize,
    pub(super) end: usize,
    /// `start..end` is a link the citation replaces; otherwise the number follows `end` (or
    /// the link `end` falls in: a number inside a link's url would break the link).
    pub(super) replace: bool,
    pub(super) pending: Pending,
}

impl ProviderStream {
    /// Adds a citation whose text is held, in order of its end.
    pub(super) fn anchor(&mut self, a: Anchor) {
        let at = self
            .part
            .anchors
            .partition_point(|x| (x.end, x.start) <= (a.end, a.start));
        self.part.anchors.insert(at, a);
    }

    /// Releases the part's held text as far as the hold rule allows, placing the anchored
    /// citations it reaches; with `at_end` (the part ended), all of it.
    pub(super) fn advance(&mut self, at_end: bool) -> Result<(), ProviderError> {
        let queued = self.deferred.len();
        loop {
            if self.awaiting() {
                self.defer_next(queued, Deferred::Advance(at_end));
                return Ok(());
            }
            let fed = self.part.fed;
            let first = self
                .part
                .anchors
                .first()
                .map(|a| (a.start, a.end, a.replace));
            if at_end && first.is_none() {
                return self.feed_all();
            }
            let candidate = if self.holds_links() {
                link::first_candidate(&self.part.text, fed)
            } else {
                None
            };
            let Some((start, end)) = candidate else {
                if first.is_some() {
                    self.place_first()?;
                    continue;
                }
                return self.feed_all();
            };
            if let Some((s, e, replace)) = first {
                // Text before the held link, or already released: placed now.
                if e <= fed || (e <= start && (!replace || s < start)) {
                    self.place_first()?;
                    continue;
                }
                if let Some(end) = end {
                    if replace && s >= start && e <= end {
                        self.replace_first()?;
                        continue;
                    }
                    if !replace && e < end {
                        // Inside the link: after it, which is then text.
                        self.feed(end)?;
                        self.place_first()?;
                        continue;
                    }
                }
            }
            let held = self.part.text.len() - start;
            let over = held > self.settings.max_link_hold_bytes()
                || (end.is_none() && held > MAX_OPEN_LINK);
            if at_end || over {
                // Released as written: a complete link whole, an open one a character at a
                // time (what follows its `[` may hold another link).
                let upto = end.unwrap_or_else(|| {
                    self.part.text[start..]
                        .chars()
                        .next()
                        .map_or(start + 1, |c| start + c.len_utf8())
                });
                self.feed(upto)?;
                continue;
            }
            return self.feed(start);
        }
    }

    /// The first anchor's text released and its number placed after it.
    fn place_first(&mut self) -> Result<(), ProviderError> {
        let a = self.part.anchors.remove(0);
        self.feed(a.end)?;
        let span = self.span_of(a.start, a.end);
        self.cite_here(&a.pending, span)
    }

    /// The first anchor's link replaced by its number.
    fn replace_first(&mut self) -> Result<(), ProviderError> {
        let a = self.part.anchors.remove(0);
        self.feed(a.start)?;
        self.part.dropped.push((a.start, a.end - a.start));
        self.part.fed = a.end;
        self.cite_here(&a.pending, None)
    }
}
