//! [`ProviderStream`]: a provider's stream in, the rewriter's events out, with provider
//! citations numbered in the same table as markers.

use std::collections::VecDeque;

use super::error::ProviderError;
use super::frame::{FrameDecoder, Framing};
use super::read::ProviderEvent;
use super::reader::{Dialect, Reader};
use crate::event::Event;
use crate::numbering::Numbering;
use crate::rewriter::Rewriter;
use crate::settings::{RankMode, Settings};
use crate::source::{Source, Sources};

mod deferred;
mod hold;
mod input;
mod late;
mod place;
mod places;

use deferred::Deferred;
pub use late::{apply_late_edits, LateEdit};
use places::Places;

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
    /// Where each source's number was placed, by output byte and by stream place (`place`):
    /// the same source twice at one place is shown once.
    placed: Places,
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
            placed: Places::default(),
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

    /// Makes room for about `bytes` more bytes of input, for a caller that knows how long
    /// its input is (a file). The stream keeps the text of the current part and all of its
    /// output (for citations bound after their text was shown); grown a chunk at a time, each
    /// is copied whenever it doubles, and the copies touch fresh memory. A hint only: more or
    /// less than the input changes no event.
    pub fn reserve_input_bytes(&mut self, bytes: usize) {
        self.part.text.reserve(bytes);
        self.out.reserve(bytes);
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
        if let Some(ev) = self.events.pop_front() {
            return Some(ev);
        }
        // Straight from the rewriter, one at a time: a chunk's events (thousands for a large
        // write) are not moved into a second queue first.
        let mut ev = self.rw.as_mut()?.poll_event()?;
        self.keep(&mut ev);
        Some(ev)
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
        while let Some(mut ev) = self.rw.as_mut().and_then(Rewriter::poll_event) {
            self.keep(&mut ev);
            self.events.push_back(ev);
        }
    }

    /// What the stream keeps of an event taken from the rewriter, in their order: the output
    /// text, the late edits.
    fn keep(&mut self, ev: &mut Event) {
        let Some(rw) = self.rw.as_ref() else {
            return;
        };
        match ev {
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
            ProviderEvent::Text { text } => self.take_text(&text)?,
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

    /// Text of the part: held as the hold rule says, or given to the rewriter.
    fn take_text(&mut self, text: &str) -> Result<(), ProviderError> {
        self.text_seen = true;
        self.part.text.push_str(text);
        if self.holds_links() || !self.part.anchors.is_empty() {
            self.advance(false)
        } else {
            self.feed_all()
        }
    }

    fn holds_links(&self) -> bool {
        matches!(
            self.dialect,
            Some(Dialect::OpenaiResponses | Dialect::OpenaiChat)
        )
    }
}
