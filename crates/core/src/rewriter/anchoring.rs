//! Claim anchors in the stream: shown text and rendered citations go to the claim tracker,
//! and each citation whose sentence has closed becomes an [`Event::Anchor`] (see
//! [`anchor`](crate::anchor)).

use super::Rewriter;
use crate::anchor::{self, Anchor, ClosedClaim, PendingCite, Support};
use crate::event::Event;

/// A citation rendered in this group: where it is, and where its rendering ends (`None`: a
/// late citation, not rendered).
pub(super) type Rendered = (PendingCite, Option<u64>);

impl Rewriter {
    /// Output that was shown (in stream order): anchors for the sentences it closes.
    pub(super) fn note_output(&mut self, text: &str) {
        let Some(claims) = self.st.claims.as_mut() else {
            return;
        };
        let mut closed = Vec::new();
        claims.push_text(text, &mut closed);
        self.emit_anchors(closed);
    }

    /// The answer ended: the open sentence closes.
    pub(super) fn finish_claims(&mut self) {
        let Some(claims) = self.st.claims.as_mut() else {
            return;
        };
        let mut closed = Vec::new();
        claims.finish(&mut closed);
        self.emit_anchors(closed);
    }

    /// Citations a group rendered: held with their sentence, or anchored at once when their
    /// sentence has closed already.
    pub(super) fn note_citations(&mut self, rendered: Vec<Rendered>) {
        for (cite, render_end) in rendered {
            let Some(claims) = self.st.claims.as_mut() else {
                return;
            };
            let ready = match render_end {
                Some(end) => claims.cite(cite, end),
                None => claims.late(cite),
            };
            if let Some((claim, cite)) = ready {
                self.emit_anchors(vec![(claim, vec![cite])]);
            }
        }
    }

    fn emit_anchors(&mut self, closed: Vec<(ClosedClaim, Vec<PendingCite>)>) {
        for (claim, cites) in closed {
            for cite in cites {
                if let Some(a) = self.anchor_of(&claim, &cite) {
                    self.st.anchored.push(a.clone());
                    self.st.events.push_back(Event::Anchor(Box::new(a)));
                }
            }
        }
    }

    /// The anchor of one citation: the provider's quote when it sent one, else the best
    /// sentence of the source's text; `None` when the source has neither.
    fn anchor_of(&mut self, claim: &ClosedClaim, cite: &PendingCite) -> Option<Anchor> {
        let (source, _) = self.st.sources.at(cite.index)?;
        let text = source.text.as_deref().filter(|t| !t.is_empty());
        let (quote, support) = match &cite.quote {
            Some(q) => {
                let (quote, support) = anchor::provider_quote(&claim.text, q, text);
                (Some(quote), support)
            }
            None => {
                let text = text?;
                let cap = self.st.settings.max_anchor_source_bytes();
                let index = self.indexes.get(cite.index, text, cap);
                match anchor::quote_in(index, &claim.text, text) {
                    Some((quote, support)) => (Some(quote), support),
                    None => (None, Support::new(0.0)),
                }
            }
        };
        Some(Anchor {
            number: cite.number,
            source_id: cite.source_id.clone(),
            claim: claim.range,
            quote,
            support,
            verdict: support.verdict(),
        })
    }
}
