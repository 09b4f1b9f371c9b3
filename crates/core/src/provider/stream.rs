//! [`ProviderStream`]: a provider's stream in, the rewriter's events out, with provider
//! citations numbered in the same table as markers.

use std::collections::{HashSet, VecDeque};

use serde_json::Value;

use super::error::ProviderError;
use super::frame::{FrameDecoder, Framing};
use super::json::keys_of;
use super::link;
use super::read::{Placement, ProviderCitation, ProviderEvent};
use super::reader::{Dialect, Reader};
use super::units::{byte_index, position};
use crate::event::{CitationDetail, Event, Span};
use crate::numbering::Numbering;
use crate::rewriter::Rewriter;
use crate::settings::{NumberSource, RankMode, Settings};
use crate::source::{Source, Sources};

mod hold;
mod late;

pub use late::{apply_late_edits, LateEdit};

/// Longest payload line accepted (1 MiB).
const MAX_LINE_BYTES: usize = 1 << 20;

/// The provider text of the current part (a content block, an output item, a step).
#[derive(Debug, Clone, Default)]
struct Part {
    /// The provider's text of the part, as streamed.
    text: String,
    /// The rewriter's input offset where the part starts.
    input_base: u64,
    /// Bytes of `text` given to the rewriter (or dropped): the rest is held.
    fed: usize,
    /// `(start, len)` of provider text never given to the rewriter (links replaced by numbers).
    dropped: Vec<(usize, usize)>,
    /// Citations waiting for held text to be released, by their end (see [`hold`]).
    anchors: Vec<hold::Anchor>,
}

impl Part {
    /// The rewriter input offset of part byte `at` (not inside a dropped range).
    fn input_offset(&self, at: usize) -> u64 {
        let dropped: usize = self
            .dropped
            .iter()
            .filter(|(s, _)| *s < at)
            .map(|(s, l)| (*l).min(at - s))
            .sum();
        self.input_base + (at - dropped) as u64
    }
}

/// A pending citation: its source id, canonical key and detail.
#[derive(Debug, Clone)]
struct Pending {
    id: String,
    key: String,
    quote: Option<String>,
}

/// Work held while the rewriter awaits a number from the caller's store
/// ([`Event::NumberNeeded`]): done in order once [`ProviderStream::provide_number`] answers.
#[derive(Debug, Clone)]
enum Deferred {
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

/// Reads a provider's stream (bytes, or JSON payloads) and yields the rewriter's [`Event`]s,
/// with every provider citation registered as a source and numbered in the same append-only
/// table as the markers in the text.
///
/// # Call protocol
/// As [`Rewriter`]: [`ProviderStream::write`] bytes (or [`ProviderStream::write_payload`]
/// parsed payloads), [`ProviderStream::poll_event`] until `None`; then
/// [`ProviderStream::end`] and [`ProviderStream::poll_event`] until [`Event::Done`], whose
/// `text` is the final answer when a citation was bound late.
#[derive(Debug, Clone)]
pub struct ProviderStream {
    settings: Settings,
    init: Option<(Sources, Numbering)>,
    rw: Option<Rewriter>,
    frames: FrameDecoder,
    dialect: Option<Dialect>,
    reader: Option<Reader>,
    scratch: Vec<ProviderEvent>,
    events: VecDeque<Event>,
    /// Everything the rewriter has emitted as text.
    out: String,
    part: Part,
    block: Vec<Pending>,
    unplaced: Vec<Pending>,
    /// `(key, output byte)` where a number was placed: the same source twice at one place is
    /// shown once.
    placed: HashSet<(String, u64)>,
    /// `(key, place)` where a number was placed in the stream; the place counts what was given
    /// to the rewriter (a piece of text, a citation).
    placed_at: HashSet<(String, u64)>,
    place: u64,
    /// Late citations waiting for their event: `(start, end, replace)` in output bytes.
    late: VecDeque<(usize, usize, bool)>,
    /// Late citations not yet bound: bound in the order of the text (see [`late`]).
    late_queue: Vec<late::Late>,
    edits: Vec<late::LateEdit>,
    text_seen: bool,
    /// The first error: every later call refuses.
    failed: Option<String>,
    /// Work held while a number is awaited, in order.
    deferred: VecDeque<Deferred>,
    line: u64,
    /// Text payloads are gathered in the part and given to the rewriter once, when the
    /// chunk of bytes that held them is read or before any other payload (see
    /// [`ProviderStream::write_inner`]).
    gather_text: bool,
    /// A text payload was gathered and not yet given: [`ProviderStream::feed_gathered`] feeds
    /// the whole part, as [`ProviderStream::write_text`] does at once when not gathering.
    gathered: bool,
}

impl ProviderStream {
    /// A stream over `sources` the caller gave the model (may be empty: provider citations
    /// bring their own), continuing `numbering`, with auto-detected framing and dialect.
    pub fn new(settings: Settings, sources: Sources, numbering: Numbering) -> Self {
        ProviderStream {
            settings,
            init: Some((sources, numbering)),
            rw: None,
            frames: FrameDecoder::new(Framing::Auto, MAX_LINE_BYTES),
            dialect: None,
            reader: None,
            scratch: Vec::new(),
            events: VecDeque::new(),
            out: String::new(),
            part: Part::default(),
            block: Vec::new(),
            unplaced: Vec::new(),
            placed: HashSet::new(),
            placed_at: HashSet::new(),
            place: 0,
            late: VecDeque::new(),
            late_queue: Vec::new(),
            edits: Vec::new(),
            text_seen: false,
            failed: None,
            deferred: VecDeque::new(),
            line: 0,
            gather_text: false,
            gathered: false,
        }
    }

    /// Continues a restored rewriter (its settings, sources and numbering).
    pub fn from_rewriter(rewriter: Rewriter) -> Self {
        let mut s = ProviderStream::new(
            rewriter.settings().clone(),
            Sources::new(),
            Numbering::new(),
        );
        s.init = None;
        s.part.input_base = rewriter.input_bytes();
        s.rw = Some(rewriter);
        s
    }

    /// How the bytes given to [`ProviderStream::write`] are framed (default: auto).
    pub fn with_framing(mut self, framing: Framing) -> Self {
        self.frames = FrameDecoder::new(framing, MAX_LINE_BYTES);
        self
    }

    /// Reads every payload as `dialect` instead of detecting it from the first one.
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = Some(dialect);
        self
    }

    /// The dialect, once given or detected.
    pub fn dialect(&self) -> Option<Dialect> {
        self.dialect
    }

    /// The rewriter, once the first payload made it.
    pub fn rewriter(&self) -> Option<&Rewriter> {
        self.rw.as_ref()
    }

    /// Whether this stream's citations usually come after their text (Cohere, Gemini, the
    /// Responses API), so that a reader who wants the final answer rather than the stream
    /// should wait for [`Event::Done`]'s `text`. Chat Completions annotations may come late
    /// too, but rarely do; Anthropic and Bedrock citations never do.
    pub fn may_bind_late(&self) -> bool {
        matches!(
            self.dialect,
            Some(
                Dialect::OpenaiResponses
                    | Dialect::Cohere
                    | Dialect::Gemini
                    | Dialect::GeminiInteractions
            )
        )
    }

    /// Feeds bytes of the stream, cut anywhere.
    ///
    /// # Errors
    /// [`ProviderError`] naming the line: bad framing, a payload that is not JSON or not of
    /// the dialect, an error the provider reported, or the rewriter's error. Events before it
    /// stay available.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        self.check()?;
        let r = self.write_inner(bytes);
        self.record(r)
    }

    fn write_inner(&mut self, bytes: &[u8]) -> Result<(), ProviderError> {
        if self.frames.framing() == Framing::Text {
            self.text_seen |= !bytes.is_empty();
            self.rw_mut().write(bytes)?;
            self.drain();
            return Ok(());
        }
        if self.frames.framing() == Framing::Jsonl {
            // Each line is read where it lies in `bytes`, without a queue of owned payloads.
            let placeholder = FrameDecoder::new(Framing::Jsonl, 0);
            let mut frames = std::mem::replace(&mut self.frames, placeholder);
            // The rewriter gets the chunk's text payloads in one write (its output does not
            // depend on how its input is cut). Only where no number is ever awaited: then
            // no text payload is held back (`blocked`), and the one error a `&str` write can
            // have (the rewriter was closed) is the same for the first payload as for all.
            self.gather_text = self.settings.number_source() == NumberSource::Local;
            let r =
                frames.write_jsonl_with(bytes, |data, line| self.take_payload(data, line, false));
            self.frames = frames;
            self.gather_text = false;
            // Text gathered before a bad line is given before its error, as line by line.
            self.feed_gathered()?;
            return r;
        }
        let r = self.frames.write(bytes);
        self.take_payloads()?;
        r
    }

    fn take_payloads(&mut self) -> Result<(), ProviderError> {
        let sse = self.frames.framing() == Framing::Sse;
        while let Some(p) = self.frames.poll_payload() {
            self.take_payload(&p.data, p.line, sse)?;
        }
        Ok(())
    }

    /// One payload: a JSON string is a chunk of text, anything else is the dialect's.
    fn take_payload(&mut self, data: &str, line: u64, sse: bool) -> Result<(), ProviderError> {
        let json_err = |e: serde_json::Error| ProviderError::Json {
            line,
            sse,
            message: e.to_string(),
        };
        if let Some(text) = plain_json_string(data) {
            return self.write_text(text, line);
        }
        if data.trim_start().starts_with('"') {
            // A chunk of text (JSONL of strings): read in place, without a `Value`.
            return match serde_json::from_str::<&str>(data) {
                Ok(text) => self.write_text(text, line),
                Err(_) => {
                    let text: String = serde_json::from_str(data).map_err(json_err)?;
                    self.write_text(&text, line)
                }
            };
        }
        let value = serde_json::from_str::<Value>(data).map_err(json_err);
        // The text gathered so far goes before this payload (and before its error).
        self.feed_gathered()?;
        self.write_payload_inner(&value?, line)
    }

    /// A chunk of answer text (a JSON string payload).
    fn write_text(&mut self, text: &str, line: u64) -> Result<(), ProviderError> {
        self.line = line;
        if self.blocked() {
            self.deferred
                .push_back(Deferred::Text(text.to_owned(), line));
            return Ok(());
        }
        self.text_seen |= !text.is_empty();
        self.part.text.push_str(text);
        if self.gather_text {
            self.gathered = true;
            return Ok(());
        }
        self.feed_all()
    }

    /// Gives the rewriter the text payloads gathered (see `gather_text`).
    fn feed_gathered(&mut self) -> Result<(), ProviderError> {
        if std::mem::take(&mut self.gathered) {
            self.feed_all()?;
        }
        Ok(())
    }

    /// Feeds one parsed payload (`line` names it in errors). A JSON string is a chunk of
    /// answer text; an object is read by the stream's dialect.
    ///
    /// # Errors
    /// As [`ProviderStream::write`].
    pub fn write_payload(&mut self, payload: &Value, line: u64) -> Result<(), ProviderError> {
        self.check()?;
        let r = self.write_payload_inner(payload, line);
        self.record(r)
    }

    fn write_payload_inner(&mut self, payload: &Value, line: u64) -> Result<(), ProviderError> {
        self.line = line;
        if let Value::String(text) = payload {
            return self.write_text(text, line);
        }
        if self.reader.is_none() {
            let dialect = match self.dialect {
                Some(d) => d,
                None => Dialect::detect(payload).ok_or_else(|| ProviderError::UnknownDialect {
                    line,
                    keys: keys_of(payload),
                })?,
            };
            self.dialect = Some(dialect);
            self.reader = Some(Reader::new(dialect));
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let r = match self.reader.as_mut() {
            Some(reader) => reader.read(payload, line, &mut scratch),
            None => Ok(()),
        };
        let mut result = r;
        if result.is_ok() {
            for ev in scratch.drain(..) {
                if let Err(e) = self.apply(ev) {
                    result = Err(e);
                    break;
                }
            }
        }
        self.scratch = scratch;
        result
    }

    /// Ends the stream: held text is released, url-only citations are placed, the rewriter
    /// ends and [`Event::Done`] is queued.
    ///
    /// # Errors
    /// As [`ProviderStream::write`]; [`ProviderError::NoText`] when the stream had no answer
    /// text but had event types this reader does not know.
    pub fn end(&mut self) -> Result<(), ProviderError> {
        self.check()?;
        let r = self.end_inner();
        self.record(r)
    }

    fn end_inner(&mut self) -> Result<(), ProviderError> {
        if self.frames.framing() != Framing::Text {
            self.frames.end()?;
            self.take_payloads()?;
        }
        if self.blocked() {
            self.deferred.push_back(Deferred::End);
            return Ok(());
        }
        self.end_now()
    }

    /// Finishes the last part and ends the rewriter (once nothing is held).
    fn end_now(&mut self) -> Result<(), ProviderError> {
        self.finish_part()?;
        if !self.text_seen {
            if let Some(r) = &self.reader {
                if !r.unknown_types().is_empty() {
                    return Err(ProviderError::NoText {
                        dialect: r.dialect().name(),
                        types: r.unknown_types().join(", "),
                    });
                }
            }
        }
        if self.blocked() {
            self.deferred.push_back(Deferred::RwEnd);
            return Ok(());
        }
        let r = self.rw_mut().end();
        self.drain();
        r?;
        Ok(())
    }

    /// The rewriter awaits a number from the caller.
    fn awaiting(&self) -> bool {
        self.rw.as_ref().is_some_and(Rewriter::is_awaiting_number)
    }

    /// New work must wait: a number is awaited, or earlier work is held.
    fn blocked(&self) -> bool {
        self.awaiting() || !self.deferred.is_empty()
    }

    /// Queues `d` to run right after the work the current step queued (at the front, before
    /// the `queued` items that were waiting when the step began).
    fn defer_next(&mut self, queued: usize, d: Deferred) {
        let at = self.deferred.len().saturating_sub(queued);
        self.deferred.insert(at, d);
    }

    /// Does the held work in order until a number is awaited again.
    fn resume(&mut self) -> Result<(), ProviderError> {
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

    /// Decides the held-back text now, as at the end of a content block (see
    /// [`Rewriter::write_boundary`]), and keeps the stream open: for a caller that re-emits
    /// the provider's own events and must give a block all of its text before it closes.
    ///
    /// # Errors
    /// As [`ProviderStream::write`].
    pub fn write_boundary(&mut self) -> Result<(), ProviderError> {
        if self.blocked() {
            self.deferred.push_back(Deferred::Boundary);
            return Ok(());
        }
        self.boundary_now()
    }

    /// Releases the part's held text (placing the citations it holds) and the rewriter's.
    fn boundary_now(&mut self) -> Result<(), ProviderError> {
        let queued = self.deferred.len();
        self.advance(true)?;
        if self.awaiting() {
            self.defer_next(queued, Deferred::Boundary);
            return Ok(());
        }
        self.rw_mut().write_boundary();
        self.drain();
        Ok(())
    }

    fn check(&self) -> Result<(), ProviderError> {
        match &self.failed {
            Some(m) => Err(ProviderError::Rewrite(crate::error::RewriteError::Failed(
                m.clone(),
            ))),
            None => Ok(()),
        }
    }

    fn record(&mut self, r: Result<(), ProviderError>) -> Result<(), ProviderError> {
        if let Err(e) = &r {
            self.failed.get_or_insert_with(|| e.to_string());
        }
        r
    }

    /// Answers [`Event::NumberNeeded`] (see [`Rewriter::provide_number`]).
    ///
    /// # Errors
    /// As [`Rewriter::provide_number`].
    pub fn provide_number(&mut self, key: &str, number: u32) -> Result<(), ProviderError> {
        self.check()?;
        let r = self.rw_mut().provide_number(key, number);
        self.drain();
        let r = r.map_err(ProviderError::from).and_then(|()| self.resume());
        self.record(r)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        if self.events.is_empty() {
            self.drain();
        }
        self.events.pop_front()
    }

    fn rw_mut(&mut self) -> &mut Rewriter {
        if self.rw.is_none() {
            let (sources, numbering) = self.init.take().unwrap_or_default();
            self.rw = Some(Rewriter::new(self.settings.clone(), sources, numbering));
        }
        self.rw.as_mut().expect("made above")
    }

    /// Moves the rewriter's events out, keeping the output text and the late edits.
    fn drain(&mut self) {
        let Some(rw) = self.rw.as_mut() else {
            return;
        };
        while let Some(mut ev) = rw.poll_event() {
            match &mut ev {
                Event::Text { text } => self.out.push_str(text),
                Event::Citation {
                    number,
                    source_id,
                    provider: Some(d),
                    ..
                } if d.late => {
                    if let Some((start, end, replace)) = self.late.pop_front() {
                        let mut text = String::new();
                        if let Some(source) = rw.sources().get(source_id) {
                            rw.settings()
                                .style()
                                .render_number(*number, source, &mut text);
                        }
                        let start = if replace { start } else { end };
                        self.edits.push(late::LateEdit { start, end, text });
                    }
                }
                Event::Done { text, .. } if !self.edits.is_empty() => {
                    *text = Some(late::apply_late_edits(&self.out, &self.edits).0);
                }
                _ => {}
            }
            self.events.push_back(ev);
        }
    }

    fn apply(&mut self, ev: ProviderEvent) -> Result<(), ProviderError> {
        if self.blocked() {
            self.deferred.push_back(Deferred::Event(ev));
            return Ok(());
        }
        self.apply_now(ev)
    }

    fn apply_now(&mut self, ev: ProviderEvent) -> Result<(), ProviderError> {
        match ev {
            ProviderEvent::PartStart => {
                let queued = self.deferred.len();
                self.finish_part()?;
                if self.awaiting() {
                    // The part's held text awaits a number: the new part starts after it.
                    self.defer_next(queued, Deferred::Event(ProviderEvent::PartStart));
                    return Ok(());
                }
                let base = self.rw_mut().input_bytes();
                self.part = Part {
                    input_base: base,
                    ..Part::default()
                };
            }
            ProviderEvent::Text { text } => {
                self.text_seen = true;
                self.part.text.push_str(&text);
                if self.holds_links() || !self.part.anchors.is_empty() {
                    self.advance(false)?;
                } else {
                    self.feed_all()?;
                }
            }
            ProviderEvent::BlockEnd => {
                self.feed_all()?;
                let block = std::mem::take(&mut self.block);
                self.cite_all(block)?;
            }
            ProviderEvent::PartEnd => self.finish_part()?,
            ProviderEvent::Sources { query, sources } => {
                if self.rw.is_none()
                    && self.dialect == Some(Dialect::OpenaiChat)
                    && self.settings.rank() == RankMode::Off
                {
                    // Perplexity lists its sources in order and cites them as `[n]`.
                    self.settings = self.settings.clone().with_rank(RankMode::Renumber);
                }
                let mut round: Vec<Source> = Vec::new();
                for s in sources {
                    if !round.iter().any(|x| x.id == s.id) {
                        round.push(s);
                    }
                }
                self.rw_mut().append_sources(query, round)?;
            }
            ProviderEvent::Citation(c) => self.citation(*c)?,
        }
        self.drain();
        Ok(())
    }

    fn holds_links(&self) -> bool {
        matches!(
            self.dialect,
            Some(Dialect::OpenaiResponses | Dialect::OpenaiChat)
        )
    }

    /// Gives the rewriter the part's text up to byte `upto`.
    fn feed(&mut self, upto: usize) -> Result<(), ProviderError> {
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

    fn feed_all(&mut self) -> Result<(), ProviderError> {
        self.feed(self.part.text.len())
    }

    /// Releases held text and places the part's url-only citations at its end.
    fn finish_part(&mut self) -> Result<(), ProviderError> {
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
    fn cite_all(&mut self, list: Vec<Pending>) -> Result<(), ProviderError> {
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

    fn citation(&mut self, c: ProviderCitation) -> Result<(), ProviderError> {
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
    fn span_of(&mut self, s: usize, e: usize) -> Option<Span> {
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
    fn cite_here(&mut self, p: &Pending, span: Option<Span>) -> Result<(), ProviderError> {
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
        let at = (p.key.clone(), rw.output_bytes());
        // The same place: nothing given to the rewriter since (output offsets are not known
        // while a number is awaited from the store).
        if self.placed.contains(&at) || self.placed_at.contains(&(p.key.clone(), self.place)) {
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
        self.placed.insert(at);
        self.placed.insert((p.key.clone(), after));
        self.placed_at.insert((p.key.clone(), self.place));
        self.place += 1;
        self.placed_at.insert((p.key.clone(), self.place));
        self.drain();
        Ok(())
    }
}

/// The contents of `data` when it is a JSON string alone without escapes (JSON whitespace
/// around it allowed), borrowed: what `serde_json::from_str::<&str>` returns for it, found
/// without a parser. `None` for anything else (escapes, control characters, other values),
/// which the parser reads.
fn plain_json_string(data: &str) -> Option<&str> {
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let b = data.as_bytes();
    let open = b.iter().position(|c| !is_ws(c))?;
    let close = b.iter().rposition(|c| !is_ws(c))?;
    if close <= open || b[open] != b'"' || b[close] != b'"' {
        return None;
    }
    // No early exit: short bodies are checked without a branch per byte.
    let plain = b[open + 1..close]
        .iter()
        .fold(true, |ok, &c| ok & (c >= 0x20) & (c != b'"') & (c != b'\\'));
    plain.then(|| &data[open + 1..close])
}

#[cfg(test)]
mod tests {
    use super::plain_json_string;

    #[test]
    fn plain_json_strings_read_as_serde_json_reads_them() {
        let cases = [
            r#""""#,
            r#"" the""#,
            r#"  "a b" "#,
            "\t\"x\"\r\n",
            r#""é 😀 【1】""#,
            "\"\u{7f}\"",
            // Left to the parser: escapes, control characters, not one string, not JSON.
            r#""a\"b""#,
            r#""a\\""#,
            r#""\u00e9""#,
            "\"a\u{1}\"",
            "\"a\nb\"",
            r#""a" "b""#,
            r#""a"x"#,
            r#"x"a""#,
            r#"""#,
            r#""abc"#,
            "",
            "  ",
            "1",
            r#"{"a":"b"}"#,
            "\u{a0}\"a\"",
            r#""a"""#,
        ];
        for data in cases {
            let fast = plain_json_string(data);
            let serde = serde_json::from_str::<&str>(data).ok();
            if let Some(text) = fast {
                assert_eq!(Some(text), serde, "{data:?}");
            }
            let plain = serde.is_some() && !data.contains('\\');
            assert_eq!(fast.is_some(), plain, "{data:?}");
        }
    }
}
