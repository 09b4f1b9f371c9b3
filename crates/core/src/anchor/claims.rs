//! The claims of a streamed answer: the rendered output is followed sentence by sentence, and
//! each citation is held with the sentence it ends until that sentence closes (its end mark
//! followed by a space, a CJK full stop, a line end, or the answer's end). A citation written
//! just after a sentence's end (`… big. [1]`) belongs to that sentence.

use std::collections::VecDeque;

use super::sentences::{is_abbreviation, is_cjk_end, is_closer, is_latin_end};
use super::{TextRange, MAX_CLAIM_BYTES};
use crate::units::count_units;

/// How many closed sentences are kept for provider citations that arrive after their text.
const HISTORY: usize = 32;
/// A part of a sentence with several cited clauses is a claim of its own when it holds at
/// least this many terms; a shorter one (`Paris [1] and Rome [2] are capitals.`) takes the
/// whole sentence.
const MIN_PART_TERMS: usize = 3;

/// A citation waiting for its sentence to close.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct PendingCite {
    pub(crate) number: u32,
    /// Registration index of the source.
    pub(crate) index: usize,
    pub(crate) source_id: String,
    /// Where the citation is in the output (bytes).
    pub(crate) at: u64,
    /// The provider's quote, if it sent one.
    pub(crate) quote: Option<String>,
}

/// A closed sentence of the answer: its range in the output and its text without the
/// citations' renderings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct ClosedClaim {
    pub(crate) range: TextRange,
    pub(crate) text: String,
}

/// The sentence being written, the citations in it, and the last closed sentences.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Claims {
    /// Output position of `buf`'s start: bytes, code points, UTF-16 units.
    start: (u64, u64, u64),
    /// Output since `start`: the open sentence.
    buf: String,
    /// Bytes of `buf` already scanned for a sentence end.
    scanned: usize,
    /// Output ranges of citation renderings from `start` on.
    renders: Vec<(u64, u64)>,
    pending: Vec<PendingCite>,
    history: VecDeque<ClosedClaim>,
}

impl Claims {
    /// Output that was shown: closes the sentences it completes, each with its citations.
    pub(crate) fn push_text(&mut self, text: &str, out: &mut Vec<(ClosedClaim, Vec<PendingCite>)>) {
        self.buf.push_str(text);
        self.scan(false, out);
    }

    /// The answer ended: what is open closes.
    pub(crate) fn finish(&mut self, out: &mut Vec<(ClosedClaim, Vec<PendingCite>)>) {
        self.scan(true, out);
        let end = self.buf.len();
        self.close(end, end, out);
    }

    /// A citation rendered at output `cite.at..render_end`. Returns the sentence it belongs
    /// to when that sentence has closed already (the citation follows its end mark).
    pub(crate) fn cite(
        &mut self,
        cite: PendingCite,
        render_end: u64,
    ) -> Option<(ClosedClaim, PendingCite)> {
        let rel = cite.at.saturating_sub(self.start.0) as usize;
        let before = self.buf.get(..rel.min(self.buf.len())).unwrap_or("");
        let only_space = before.chars().all(|c| c.is_whitespace())
            && self.renders.iter().all(|r| r.0 >= cite.at);
        if render_end > cite.at {
            self.renders.push((cite.at, render_end));
        }
        match self.history.back() {
            Some(last) if only_space && self.pending.is_empty() => Some((last.clone(), cite)),
            _ => {
                self.pending.push(cite);
                None
            }
        }
    }

    /// A provider citation for output already shown (it belongs at output byte `cite.at`):
    /// the closed sentence that holds that place, or `None` (held with the open sentence, or
    /// out of the kept history).
    pub(crate) fn late(&mut self, cite: PendingCite) -> Option<(ClosedClaim, PendingCite)> {
        if cite.at >= self.start.0 {
            self.pending.push(cite);
            return None;
        }
        let found = self
            .history
            .iter()
            .rev()
            .find(|c| c.range.byte_start <= cite.at && cite.at <= c.range.byte_end + 1)?;
        Some((found.clone(), cite))
    }

    fn in_render(&self, rel: usize) -> Option<usize> {
        let at = self.start.0 + rel as u64;
        self.renders
            .iter()
            .find(|r| r.0 <= at && at < r.1)
            .map(|r| (r.1 - self.start.0) as usize)
    }

    fn scan(&mut self, eof: bool, out: &mut Vec<(ClosedClaim, Vec<PendingCite>)>) {
        while let Some((claim_end, cut)) = self.next_end(eof) {
            self.close(claim_end, cut, out);
        }
        if self.buf.len() > MAX_CLAIM_BYTES && self.scanned >= MAX_CLAIM_BYTES / 2 {
            // No end mark for too long: close at a space near the cap.
            let mut cut = self.scanned.min(MAX_CLAIM_BYTES);
            while !self.buf.is_char_boundary(cut) {
                cut -= 1;
            }
            let at = self.buf[..cut]
                .rfind(char::is_whitespace)
                .filter(|&sp| sp > cut / 2)
                .map_or(cut, |sp| sp + 1);
            let at = self.in_render(at).unwrap_or(at);
            self.close(at, at, out);
            self.scan(eof, out);
        }
    }

    /// The next sentence end from `scanned`: `(claim end, where the next sentence starts)`
    /// relative to `buf`, or `None` when more output is needed to tell.
    fn next_end(&mut self, eof: bool) -> Option<(usize, usize)> {
        let mut i = self.scanned;
        while i < self.buf.len() {
            if let Some(end) = self.in_render(i) {
                i = end.max(i + 1);
                continue;
            }
            let Some(c) = self.buf[i..].chars().next() else {
                break;
            };
            let next = i + c.len_utf8();
            if c == '\n' {
                self.scanned = next;
                return Some((i, next));
            }
            if is_cjk_end(c) || is_latin_end(c) {
                // Closers and repeated marks stay with the sentence.
                let mut e = next;
                while let Some(n) = self.buf[e..].chars().next() {
                    if is_closer(n) || is_latin_end(n) || is_cjk_end(n) {
                        e += n.len_utf8();
                    } else {
                        break;
                    }
                }
                // Citations right after the end mark belong to this sentence.
                let mut after = e;
                while let Some(r) = self.in_render(after) {
                    after = r;
                }
                if is_cjk_end(c) {
                    if after >= self.buf.len() && !eof {
                        self.scanned = i;
                        return None;
                    }
                    self.scanned = after;
                    return Some((e, after));
                }
                match self.buf[after..].chars().next() {
                    None if !eof => {
                        self.scanned = i;
                        return None;
                    }
                    None => {
                        self.scanned = after;
                        return Some((e, after));
                    }
                    Some(n) if n.is_whitespace() => {
                        if c == '.' && is_abbreviation(&self.buf[..i + 1]) {
                            i = after;
                            continue;
                        }
                        self.scanned = after;
                        return Some((e, after));
                    }
                    Some(_) => {
                        i = after.max(next);
                        continue;
                    }
                }
            }
            i = next;
        }
        self.scanned = i.min(self.buf.len());
        None
    }

    /// The claim `buf[a..b]`: its output range, and its text with the citations' renderings
    /// taken out.
    fn claim_of(&self, a: usize, b: usize) -> ClosedClaim {
        let (c0, u0) = count_units(&self.buf[..a]);
        let (c1, u1) = count_units(&self.buf[a..b]);
        let range = TextRange {
            byte_start: self.start.0 + a as u64,
            byte_end: self.start.0 + b as u64,
            char_start: self.start.1 + c0,
            char_end: self.start.1 + c0 + c1,
            utf16_start: self.start.2 + u0,
            utf16_end: self.start.2 + u0 + u1,
        };
        let mut text = String::with_capacity(b - a);
        let mut i = a;
        while i < b {
            if let Some(end) = self.in_render(i) {
                i = end.max(i + 1);
                text.push(' ');
                continue;
            }
            let Some(c) = self.buf[i..].chars().next() else {
                break;
            };
            text.push(c);
            i += c.len_utf8();
        }
        ClosedClaim { range, text }
    }

    /// The citations of one sentence with their claims. Citations that follow each other (only
    /// spaces between) form a group; when a sentence holds several groups (`Paris is the
    /// capital [1], and the Seine flows through it [2].`), each group's claim is the part of
    /// the sentence from the group before it up to it (the last group's up to the sentence's
    /// end), unless that part holds too few words to stand alone, when it is the sentence.
    fn split_claims(
        &self,
        sentence: ClosedClaim,
        lead: usize,
        body_end: usize,
        pending: Vec<PendingCite>,
        out: &mut Vec<(ClosedClaim, Vec<PendingCite>)>,
    ) {
        let rel = |at: u64| (at.saturating_sub(self.start.0) as usize).clamp(lead, body_end);
        let render_end = |p: &PendingCite| {
            self.renders
                .iter()
                .find(|r| r.0 == p.at)
                .map_or(p.at, |r| r.1)
        };
        // Groups: (start of the first citation, end of the last rendering, citations).
        let mut groups: Vec<(usize, usize, Vec<PendingCite>)> = Vec::new();
        for p in pending {
            let (a, e) = (rel(p.at), rel(render_end(&p)));
            match groups.last_mut() {
                Some(g) if self.is_blank(g.1, a) => {
                    g.1 = g.1.max(e);
                    g.2.push(p);
                }
                _ => groups.push((a, e, vec![p])),
            }
        }
        if groups.len() < 2 {
            if let Some((_, _, cites)) = groups.pop() {
                out.push((sentence, cites));
            }
            return;
        }
        let last = groups.len() - 1;
        let mut from = lead;
        for (i, (_, end, cites)) in groups.into_iter().enumerate() {
            let to = if i == last { body_end } else { end };
            let part = &self.buf[from..to];
            let a = from
                + (part.len()
                    - part
                        .trim_start_matches(|c: char| {
                            c.is_whitespace() || c == ',' || c == '、' || c == '，'
                        })
                        .len());
            let b = a.max(from + part.trim_end().len());
            let claim = self.claim_of(a, b);
            let mut terms = Vec::new();
            super::terms::terms_of(&claim.text, &mut terms);
            let words = terms
                .iter()
                .filter(|t| t.kind != super::terms::Kind::Phrase)
                .count();
            if words >= MIN_PART_TERMS {
                out.push((claim, cites));
            } else {
                out.push((sentence.clone(), cites));
            }
            from = end;
        }
    }

    /// Whether `buf[a..b]` holds only spaces and citation renderings.
    fn is_blank(&self, a: usize, b: usize) -> bool {
        let mut i = a;
        while i < b {
            if let Some(end) = self.in_render(i) {
                i = end.max(i + 1);
                continue;
            }
            match self.buf[i..].chars().next() {
                Some(c) if c.is_whitespace() => i += c.len_utf8(),
                _ => return false,
            }
        }
        true
    }

    /// Closes the sentence `buf[..claim_end]`; the next one starts at `cut`.
    fn close(
        &mut self,
        claim_end: usize,
        cut: usize,
        out: &mut Vec<(ClosedClaim, Vec<PendingCite>)>,
    ) {
        let cut = cut.max(claim_end).min(self.buf.len());
        let cut_abs = self.start.0 + cut as u64;
        let (pending, rest): (Vec<PendingCite>, Vec<PendingCite>) = self
            .pending
            .drain(..)
            .partition(|p| p.at < cut_abs || cut == self.buf.len());
        self.pending = rest;
        let head = &self.buf[..claim_end];
        let lead = head.len() - head.trim_start().len();
        let body_end = head.trim_end().len().max(lead);
        let claim = self.claim_of(lead, body_end);
        if !claim.text.trim().is_empty() || !pending.is_empty() {
            if self.history.len() == HISTORY {
                self.history.pop_front();
            }
            self.history.push_back(claim.clone());
        }
        if !pending.is_empty() {
            self.split_claims(claim, lead, body_end, pending, out);
        }
        let (c, u) = count_units(&self.buf[..cut]);
        self.start = (cut_abs, self.start.1 + c, self.start.2 + u);
        self.buf.drain(..cut);
        self.scanned = self.scanned.saturating_sub(cut);
        self.renders.retain(|r| r.1 > cut_abs);
    }
}
