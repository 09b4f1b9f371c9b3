//! The [`Rewriter`]: bytes in, events out.

use std::collections::VecDeque;

#[cfg(feature = "serde")]
use crate::error::RestoreError;
use crate::error::{RewriteError, SourceError};
use crate::event::{CitationDetail, Event, ListedSource, Report, Span, UnresolvedReason};
use crate::numbering::Numbering;
use crate::remove::Repair;
use crate::scan::{Item, Marker, ScanConfig, Scanner};
use crate::settings::{NumberSource, RankMode, Settings, UnknownPolicy};
use crate::source::{Source, Sources};
use crate::style::Style;
use crate::utf8::Utf8Decoder;

/// Whether a chunk given with a sequence number or offset was new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// The chunk was new and was processed.
    New,
    /// The chunk was seen before and was ignored.
    Duplicate,
}

/// Rewrites one streamed answer: citation markers become stable numbers.
///
/// # Call protocol
/// 1. [`Rewriter::new`] with the settings, the sources the model was shown, and the numbering
///    to continue (a fresh [`Numbering`] for per-answer numbering, the session's for agents).
/// 2. For each chunk: [`Rewriter::write`] (or [`Rewriter::write_seq`] /
///    [`Rewriter::write_at`] for retransmitted input), then [`Rewriter::poll_event`] until it
///    returns `None`.
/// 3. [`Rewriter::end`], then [`Rewriter::poll_event`] until it yields [`Event::Done`].
///
/// With [`NumberSource::External`], `poll_event` may yield [`Event::NumberNeeded`]; nothing
/// more comes out until [`Rewriter::provide_number`] answers it (input written meanwhile is
/// kept). Save [`Rewriter::numbering`] after the stream (or after every new number).
#[derive(Debug, Clone)]
pub struct Rewriter {
    st: State,
    cfg: ScanConfig,
    /// Canonical key of each source, by registration index.
    keys: Vec<String>,
}

/// The whole serialisable state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct State {
    settings: Settings,
    sources: Sources,
    numbering: Numbering,
    initial_numbers: usize,
    decoder: Utf8Decoder,
    scanner: Scanner,
    input_bytes: u64,
    next_seq: u64,
    flushed_bytes: u64,
    /// Rendered output flushed so far, in code points.
    #[cfg_attr(feature = "serde", serde(default))]
    flushed_chars: u64,
    /// Rendered output flushed so far, in UTF-16 code units.
    #[cfg_attr(feature = "serde", serde(default))]
    flushed_utf16: u64,
    /// `(input end, output end)` in bytes after each rendered marker or citation: input past
    /// the last anchor is copied to the output unchanged, so it maps by a constant shift.
    #[cfg_attr(feature = "serde", serde(default))]
    anchors: Vec<(u64, u64)>,
    text: String,
    events: VecDeque<Event>,
    shown: Vec<Shown>,
    awaiting: Option<Group>,
    phase: Phase,
    citations: u64,
    unresolved: u64,
    new_numbers: u32,
    /// Whitespace repair of [`Style::Remove`].
    #[cfg_attr(feature = "serde", serde(default))]
    repair: Repair,
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Phase {
    Open,
    Ending,
    Ended,
    Failed(String),
}

/// A number shown in this stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Shown {
    number: u32,
    key: String,
    source_id: String,
    citations: u32,
}

/// A marker being resolved, item by item.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Group {
    marker: Marker,
    next: usize,
    pieces: Vec<Piece>,
    /// The key and source id waiting for an external number.
    waiting: Option<(String, String)>,
    /// A provider citation's quote, span and placement.
    #[cfg_attr(feature = "serde", serde(default))]
    detail: Option<Box<CitationDetail>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
enum Piece {
    Number {
        number: u32,
        /// Registration index of the source.
        index: usize,
    },
    Unresolved {
        reference: String,
        reason: UnresolvedReason,
    },
}

/// A serialised [`Rewriter`]: numbering, sources, and the stream's hold-back and position.
#[cfg(feature = "serde")]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    version: u32,
    state: State,
}

#[cfg(feature = "serde")]
const SNAPSHOT_VERSION: u32 = 1;

impl Rewriter {
    /// A rewriter for one stream.
    pub fn new(settings: Settings, sources: Sources, numbering: Numbering) -> Self {
        let mut sources = sources;
        sources.reindex();
        let cfg = ScanConfig::for_sources(&settings, &sources);
        let keys = keys_of(&sources, &settings);
        Rewriter {
            cfg,
            keys,
            st: State {
                initial_numbers: numbering.len(),
                settings,
                sources,
                numbering,
                decoder: Utf8Decoder::default(),
                scanner: Scanner::default(),
                input_bytes: 0,
                next_seq: 0,
                flushed_bytes: 0,
                flushed_chars: 0,
                flushed_utf16: 0,
                anchors: Vec::new(),
                text: String::new(),
                events: VecDeque::new(),
                shown: Vec::new(),
                awaiting: None,
                phase: Phase::Open,
                citations: 0,
                unresolved: 0,
                new_numbers: 0,
                repair: Repair::default(),
            },
        }
    }

    #[inline]
    fn check_open(&self) -> Result<(), RewriteError> {
        if let Phase::Open = self.st.phase {
            return Ok(());
        }
        self.closed_error()
    }

    #[cold]
    fn closed_error(&self) -> Result<(), RewriteError> {
        match &self.st.phase {
            Phase::Open => Ok(()),
            Phase::Failed(m) => Err(RewriteError::Failed(m.clone())),
            Phase::Ending | Phase::Ended => Err(RewriteError::Ended),
        }
    }

    fn fail(&mut self, e: RewriteError) -> RewriteError {
        self.st.phase = Phase::Failed(e.to_string());
        e
    }

    /// Feeds the next chunk of the answer. Bytes may cut a UTF-8 character or a marker anywhere.
    ///
    /// # Errors
    /// [`RewriteError::InvalidUtf8`] under [`InvalidUtf8::Error`](crate::InvalidUtf8::Error)
    /// (the valid text before it is still processed), [`RewriteError::Ended`] after
    /// [`Rewriter::end`], [`RewriteError::Failed`] after a fatal error.
    pub fn write(&mut self, chunk: impl AsRef<[u8]>) -> Result<(), RewriteError> {
        self.check_open()?;
        let bytes = chunk.as_ref();
        if self.is_idle() {
            if let Ok(text) = std::str::from_utf8(bytes) {
                self.write_idle(text);
                return Ok(());
            }
        }
        self.write_bytes(bytes)
    }

    /// Feeds the next chunk of the answer as text: [`Rewriter::write`] without checking
    /// UTF-8 again (a `&str` is valid). A character cut at the end of an earlier byte chunk
    /// is completed by it as by `write`.
    ///
    /// # Errors
    /// As [`Rewriter::write`].
    pub fn write_str(&mut self, text: &str) -> Result<(), RewriteError> {
        self.check_open()?;
        if self.is_idle() {
            self.write_idle(text);
            return Ok(());
        }
        if self.st.decoder.held_bytes() == 0 {
            // No character waits for its end: the text goes onto the scanner's buffer as it
            // is (what the decoder does with valid UTF-8, without checking it again).
            let st = &mut self.st;
            st.scanner.buf_mut().push_str(text);
            st.input_bytes += text.len() as u64;
            st.text.reserve(text.len());
            self.pump(false);
            return Ok(());
        }
        self.write_bytes(text.as_bytes())
    }

    /// [`Rewriter::write_str`] that hands back a chunk that comes out unchanged at once
    /// instead of queueing it: the fast path of a binding that returns the text of each
    /// chunk (and can return the chunk it was given).
    ///
    /// Returns `Ok(true)` when the chunk is short plain text (not empty, no byte that could
    /// start a marker), nothing is held back or waiting to be polled, and the style leaves
    /// text as it is: the output continues with exactly `text`, which counts as polled (the offsets of
    /// later events include it), and nothing is queued. Returns `Ok(false)` when the chunk
    /// was written as by `write_str`; poll its events as usual.
    ///
    /// ```
    /// use citeflow_core::{Numbering, Rewriter, Settings, Source, Sources};
    /// let sources = Sources::from_vec(vec![Source::new("source_3")]).unwrap();
    /// let mut rw = Rewriter::new(Settings::default(), sources, Numbering::new());
    /// let mut text = String::new();
    /// for chunk in ["Paris", " is", " [[source_3]]", "."] {
    ///     if rw.write_through(chunk)? {
    ///         text.push_str(chunk);
    ///     } else {
    ///         while rw.poll_event_into(&mut text).is_some() {}
    ///     }
    /// }
    /// assert_eq!(text, "Paris is [1].");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Rewriter::write`].
    #[inline]
    pub fn write_through(&mut self, text: &str) -> Result<bool, RewriteError> {
        self.check_open()?;
        let st = &mut self.st;
        if !text.is_empty()
            && st.text.is_empty()
            && st.events.is_empty()
            && st.awaiting.is_none()
            && st.decoder.held_bytes() == 0
            && !matches!(st.settings.style(), Style::Remove)
            && st.scanner.skip_plain(text, &self.cfg)
        {
            // What `write` and `poll_event_into` together count for this text.
            let n = text.len() as u64;
            st.input_bytes += n;
            st.flushed_bytes += n;
            let (chars, utf16) = count_units(text);
            st.flushed_chars += chars;
            st.flushed_utf16 += utf16;
            return Ok(true);
        }
        self.write_str(text).map(|()| false)
    }

    /// Whether new text can be scanned where it is: nothing buffered or held, no number
    /// awaited.
    #[inline]
    fn is_idle(&self) -> bool {
        let st = &self.st;
        !st.scanner.has_buffered() && st.decoder.held_bytes() == 0 && st.awaiting.is_none()
    }

    /// The fast path of `write`: scans the chunk where it is; only a held-back tail is copied.
    #[inline]
    fn write_idle(&mut self, text: &str) {
        let st = &mut self.st;
        st.input_bytes += text.len() as u64;
        if st.scanner.pass_plain(text, &self.cfg, &mut st.text) {
            return;
        }
        st.text.reserve(text.len());
        self.scan(text, false);
        self.st.scanner.retain(text);
    }

    /// The general path of `write`: decodes onto the scanner's buffer and scans it.
    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), RewriteError> {
        let st = &mut self.st;
        let r = st.decoder.decode(
            bytes,
            st.input_bytes,
            st.settings.invalid_utf8(),
            st.scanner.buf_mut(),
        );
        st.input_bytes += bytes.len() as u64;
        st.text.reserve(bytes.len());
        self.pump(false);
        match r {
            Ok(()) => Ok(()),
            Err(at) => Err(self.fail(RewriteError::InvalidUtf8 { byte_offset: at })),
        }
    }

    /// Feeds chunk number `seq` (from 0). A chunk already seen is ignored.
    ///
    /// # Errors
    /// [`RewriteError::Gap`] when `seq` skips a chunk (nothing changes; send the missing one),
    /// else as [`Rewriter::write`].
    pub fn write_seq(
        &mut self,
        seq: u64,
        chunk: impl AsRef<[u8]>,
    ) -> Result<Accepted, RewriteError> {
        self.check_open()?;
        if seq < self.st.next_seq {
            return Ok(Accepted::Duplicate);
        }
        if seq > self.st.next_seq {
            return Err(RewriteError::Gap {
                unit: "sequence",
                expected: self.st.next_seq,
                got: seq,
            });
        }
        self.write(chunk)?;
        self.st.next_seq += 1;
        Ok(Accepted::New)
    }

    /// Feeds a chunk that starts at raw input byte `byte_offset`. Bytes already seen are
    /// ignored; only the new tail of an overlapping chunk is processed.
    ///
    /// # Errors
    /// [`RewriteError::Gap`] when the chunk starts after the input so far (nothing changes),
    /// else as [`Rewriter::write`].
    pub fn write_at(
        &mut self,
        byte_offset: u64,
        chunk: impl AsRef<[u8]>,
    ) -> Result<Accepted, RewriteError> {
        self.check_open()?;
        let bytes = chunk.as_ref();
        let have = self.st.input_bytes;
        if byte_offset > have {
            return Err(RewriteError::Gap {
                unit: "byte offset",
                expected: have,
                got: byte_offset,
            });
        }
        let end = byte_offset + bytes.len() as u64;
        if end <= have {
            return Ok(Accepted::Duplicate);
        }
        self.write(&bytes[(have - byte_offset) as usize..])?;
        Ok(Accepted::New)
    }

    /// Ends the input: the held-back tail is decided and [`Event::Done`] is queued (after the
    /// awaited number, if one is awaited).
    ///
    /// # Errors
    /// [`RewriteError::InvalidUtf8`] for a truncated character under the error policy,
    /// [`RewriteError::Verification`] if the final check fails (the `Done` event is still
    /// queued, with `verified: false`), [`RewriteError::Ended`] when called twice.
    pub fn end(&mut self) -> Result<(), RewriteError> {
        self.check_open()?;
        self.st.phase = Phase::Ending;
        let st = &mut self.st;
        if let Err(at) = st.decoder.finish(
            st.input_bytes,
            st.settings.invalid_utf8(),
            st.scanner.buf_mut(),
        ) {
            self.pump(true);
            return Err(self.fail(RewriteError::InvalidUtf8 { byte_offset: at }));
        }
        self.pump(true);
        if self.st.awaiting.is_some() {
            return Ok(());
        }
        self.finish_stream()
    }

    /// Answers [`Event::NumberNeeded`] with the number the shared store gave `key`.
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

    /// The next event, or `None` when the rewriter needs more input (or an awaited number).
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event> {
        if !self.st.events.is_empty() {
            return self.st.events.pop_front();
        }
        if self.st.text.is_empty() {
            return None;
        }
        let text = self.take_text();
        if text.is_empty() {
            return None;
        }
        Some(Event::Text { text })
    }

    /// The next event that is not text, with the rendered text before it appended to `text`
    /// instead of returned as [`Event::Text`]: the text path then allocates nothing (as
    /// quinn-proto's `poll_transmit` writes into the caller's buffer). `None` when nothing
    /// else is ready; text may still have been appended. Everything appended before an event
    /// comes before it in the stream, so a caller that writes `text` out before handling the
    /// event sees exactly what [`Rewriter::poll_event`] gives.
    ///
    /// ```
    /// use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};
    /// let sources = Sources::from_vec(vec![Source::new("source_3")]).unwrap();
    /// let mut rw = Rewriter::new(Settings::default(), sources, Numbering::new());
    /// let mut text = String::new();
    /// rw.write("Paris [[source_3]].").unwrap();
    /// rw.end().unwrap();
    /// let mut events = 0;
    /// while let Some(event) = rw.poll_event_into(&mut text) {
    ///     events += usize::from(!matches!(event, Event::Done { .. }));
    /// }
    /// assert_eq!(text, "Paris [1].");
    /// assert_eq!(events, 2); // Source, Citation
    /// ```
    #[inline]
    pub fn poll_event_into(&mut self, text: &mut String) -> Option<Event> {
        while let Some(event) = self.st.events.pop_front() {
            match event {
                Event::Text { text: t } => text.push_str(&t),
                other => return Some(other),
            }
        }
        if !self.st.text.is_empty() {
            if self.is_remove() {
                let t = self.take_text();
                text.push_str(&t);
            } else {
                let t = &self.st.text;
                self.st.flushed_bytes += t.len() as u64;
                let (chars, utf16) = count_units(t);
                self.st.flushed_chars += chars;
                self.st.flushed_utf16 += utf16;
                text.push_str(t);
                if self.st.text.capacity() > 8192 {
                    // A large chunk went through: give the memory back (an idle stream keeps
                    // little), a small buffer is kept for the next chunk.
                    self.st.text = String::new();
                } else {
                    self.st.text.clear();
                }
            }
        }
        None
    }

    fn flush_text(&mut self) {
        if !self.st.text.is_empty() {
            let text = self.take_text();
            if !text.is_empty() {
                self.st.events.push_back(Event::Text { text });
            }
        }
    }

    fn is_remove(&self) -> bool {
        matches!(self.st.settings.style(), Style::Remove)
    }

    /// [`Style::Remove`]: passes outgoing text through the whitespace repair, and moves the
    /// offset map where the repair took spaces after a removed marker.
    fn repair_text(&mut self, text: String) -> String {
        let (text, shift) = self.st.repair.take(text);
        if let (Some(sh), Some(&(inp, out))) = (shift, self.st.anchors.last()) {
            let anchor = (inp + sh.input_skip, out + sh.output_prefix);
            if anchor != (inp, out) {
                self.st.anchors.push(anchor);
            }
        }
        text
    }

    /// Takes the pending output: small texts are copied so that the buffer keeps its capacity.
    fn take_text(&mut self) -> String {
        let text = if self.st.text.len() > 512 || self.st.text.capacity() > 1024 {
            std::mem::take(&mut self.st.text)
        } else {
            let t = self.st.text.as_str().to_owned();
            self.st.text.clear();
            t
        };
        let text = if self.is_remove() {
            self.repair_text(text)
        } else {
            text
        };
        self.st.flushed_bytes += text.len() as u64;
        let (chars, utf16) = count_units(&text);
        self.st.flushed_chars += chars;
        self.st.flushed_utf16 += utf16;
        text
    }

    /// Scans the buffered text.
    fn pump(&mut self, eof: bool) {
        let buf = self.st.scanner.take_buf();
        self.scan(&buf, eof);
        self.st.scanner.put_back(buf);
    }

    /// Scans `text` from the scanner's position, resolving markers, until it needs more input
    /// or an external number.
    fn scan(&mut self, text: &str, eof: bool) {
        if self.st.awaiting.is_some() {
            return;
        }
        while let Some(marker) = self
            .st
            .scanner
            .next(text, &self.cfg, &mut self.st.text, eof)
        {
            self.flush_text();
            let group = Group {
                marker,
                next: 0,
                pieces: Vec::new(),
                waiting: None,
                detail: None,
            };
            if !self.resolve(group) {
                break;
            }
        }
    }

    /// Resolves a marker's items from `group.next` on. Returns false when it stopped to wait
    /// for an external number.
    fn resolve(&mut self, mut group: Group) -> bool {
        while let Some(item) = group.marker.items.get(group.next) {
            let piece = match self.lookup(item) {
                Err(reason) => Piece::Unresolved {
                    reference: match item {
                        Item::Id(id) => id.clone(),
                        Item::Rank(n) => n.to_string(),
                    },
                    reason,
                },
                Ok(index) => {
                    let keep_rank = match item {
                        Item::Rank(n) if self.st.settings.rank() == RankMode::Keep => Some(*n),
                        _ => None,
                    };
                    let known = match keep_rank {
                        Some(n) => {
                            self.record_kept_rank(n, index);
                            Some(n)
                        }
                        None => self.st.numbering.get(&self.keys[index]),
                    };
                    let number = match known {
                        Some(n) => n,
                        None => {
                            let key = self.keys[index].clone();
                            let source_id = self
                                .st
                                .sources
                                .at(index)
                                .map_or_else(String::new, |(s, _)| s.id.clone());
                            match self.st.settings.number_source() {
                                NumberSource::Local => {
                                    self.st.new_numbers += 1;
                                    self.st.numbering.allocate(&key, &source_id).0
                                }
                                NumberSource::External => {
                                    self.st.events.push_back(Event::NumberNeeded {
                                        key: key.clone(),
                                        source_id: source_id.clone(),
                                    });
                                    group.waiting = Some((key, source_id));
                                    self.st.awaiting = Some(group);
                                    return false;
                                }
                            }
                        }
                    };
                    self.show(number, index, keep_rank);
                    Piece::Number { number, index }
                }
            };
            let repeat = matches!(&piece, Piece::Number { number, .. }
                if group.pieces.iter().any(|p| matches!(p, Piece::Number { number: m, .. } if m == number)));
            if !repeat {
                group.pieces.push(piece);
            }
            group.next += 1;
        }
        self.render_group(group);
        true
    }

    /// The registration index of the source an item names.
    fn lookup(&self, item: &Item) -> Result<usize, UnresolvedReason> {
        match item {
            Item::Id(id) => self
                .st
                .sources
                .index_of(id)
                .ok_or(UnresolvedReason::UnknownId),
            Item::Rank(n) => self
                .st
                .sources
                .index_of_rank(*n)
                .ok_or(UnresolvedReason::RankOutOfRange),
        }
    }

    /// Records a rank shown as written ([`RankMode::Keep`]) in the table under the key
    /// `rank:<n>`, so that `is_new` and a session's table know it. A number that the table
    /// already gives another key (an earlier answer of the session numbered differently) is
    /// shown all the same and not recorded.
    fn record_kept_rank(&mut self, n: u32, index: usize) {
        let key = format!("rank:{n}");
        if self.st.numbering.get(&key).is_some() || self.st.numbering.entry(n).is_some() {
            return;
        }
        let source_id = self
            .st
            .sources
            .at(index)
            .map_or_else(String::new, |(s, _)| s.id.clone());
        if self.st.numbering.insert(n, key, source_id).is_ok() {
            self.st.new_numbers += 1;
        }
    }

    /// Emits the source the first time its number is shown in this stream.
    fn show(&mut self, number: u32, index: usize, keep_rank: Option<u32>) {
        if let Some(s) = self.st.shown.iter_mut().find(|s| s.number == number) {
            s.citations += 1;
            return;
        }
        let is_new = self
            .st
            .numbering
            .entries()
            .iter()
            .position(|e| e.number == number)
            .is_some_and(|i| i >= self.st.initial_numbers);
        // A number keeps its first record: the source that took it (an earlier answer's,
        // when the session's sources are registered), not a later id with the same key.
        let first = self
            .st
            .numbering
            .entry(number)
            .filter(|_| keep_rank.is_none())
            .and_then(|e| self.st.sources.index_of(&e.source_id));
        let Some((source, round)) = self.st.sources.at(first.unwrap_or(index)) else {
            return;
        };
        let source = Box::new(source.clone());
        let key = match keep_rank {
            Some(n) => format!("rank:{n}"),
            None => self.keys[index].clone(),
        };
        self.st.shown.push(Shown {
            number,
            key,
            source_id: source.id.clone(),
            citations: 1,
        });
        self.st.events.push_back(Event::Source {
            number,
            round,
            source,
            is_new,
        });
    }

    fn render_group(&mut self, group: Group) {
        let st = &mut self.st;
        let start = st.text.len();
        let base = st.flushed_bytes;
        let input_byte_offset = group.marker.input_offset;
        let all_unresolved = group
            .pieces
            .iter()
            .all(|p| matches!(p, Piece::Unresolved { .. }));
        let remove = matches!(st.settings.style(), Style::Remove);
        // As written: a marker with a resolved citation is shown as the model wrote it, once.
        let as_written = matches!(st.settings.style(), Style::AsWritten)
            && !all_unresolved
            && !group.marker.raw.is_empty();
        if as_written {
            st.text.push_str(&group.marker.raw);
        }
        for piece in group.pieces {
            let byte_offset = base + if as_written { start } else { st.text.len() } as u64;
            match piece {
                Piece::Number { number, index } => {
                    st.citations += 1;
                    let Some((source, _)) = st.sources.at(index) else {
                        continue;
                    };
                    let (byte_offset, char_offset, utf16_offset) = match group.detail.as_deref() {
                        Some(CitationDetail {
                            late: true,
                            span: Some(span),
                            ..
                        }) => (span.end.bytes, span.end.chars, span.end.utf16),
                        _ => {
                            let before = if as_written {
                                &st.text[..start]
                            } else {
                                st.text.as_str()
                            };
                            let (chars, utf16) = count_units(before);
                            let at = (
                                byte_offset,
                                st.flushed_chars + chars,
                                st.flushed_utf16 + utf16,
                            );
                            if !as_written {
                                st.settings
                                    .style()
                                    .render_number(number, source, &mut st.text);
                            }
                            at
                        }
                    };
                    st.events.push_back(Event::Citation {
                        number,
                        source_id: source.id.clone(),
                        byte_offset,
                        input_byte_offset,
                        char_offset,
                        utf16_offset,
                        provider: group.detail.clone(),
                    });
                }
                Piece::Unresolved { reference, reason } => {
                    st.unresolved += 1;
                    match st.settings.unknown() {
                        _ if as_written => {}
                        UnknownPolicy::Mark => st.settings.style().render_unresolved(&mut st.text),
                        UnknownPolicy::Keep if all_unresolved && st.text.len() == start => {
                            if remove {
                                st.repair.release(&mut st.text);
                            }
                            st.text.push_str(&group.marker.raw);
                        }
                        UnknownPolicy::Keep if all_unresolved => {}
                        UnknownPolicy::Keep => {
                            if remove && st.text.len() == start {
                                st.repair.release(&mut st.text);
                            }
                            st.text.push('[');
                            st.text.push_str(&reference);
                            st.text.push(']');
                        }
                        _ => {}
                    }
                    st.events.push_back(Event::Unresolved {
                        raw: group.marker.raw.clone(),
                        reference,
                        reason,
                        byte_offset,
                        input_byte_offset,
                    });
                }
            }
        }
        let late = group.detail.as_deref().is_some_and(|d| d.late);
        if remove && !late && st.text.len() == start {
            st.repair.marker_removed();
        }
        if !late {
            let input_end = input_byte_offset + group.marker.raw.len() as u64;
            let output_end = st.flushed_bytes + st.text.len() as u64;
            if st.anchors.last() != Some(&(input_end, output_end)) {
                st.anchors.push((input_end, output_end));
            }
        }
    }

    /// Registers a round of sources in the middle of the stream (an agent's search, a
    /// provider's search results), so that markers and provider citations can cite them.
    ///
    /// # Errors
    /// As [`Sources::append_round`]; nothing is registered on error.
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

    /// Registers one source into the newest round ([`Sources::append_to_last_round`]): a
    /// source a provider cited.
    ///
    /// # Errors
    /// As [`Sources::append_to_last_round`].
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
    /// marker's would be, with [`Event::Source`] first when it is new in this stream.
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
    /// [`Event::Citation`] carries `span` (the number belongs at `span.end`, or in place of the
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

    fn check_citation(&self, source_id: &str) -> Result<(), RewriteError> {
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

    fn cite(&mut self, source_id: &str, detail: Option<Box<CitationDetail>>) {
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

    /// Where input byte `input_byte` (decoded input, as in [`Event::Citation`]'s
    /// `input_byte_offset`) is in the rendered output, in bytes; `None` when it has not been
    /// rendered yet. Call [`Rewriter::write_boundary`] first to render everything written.
    pub fn output_offset(&self, input_byte: u64) -> Option<u64> {
        let rendered_in = self.st.input_bytes - self.held_bytes() as u64;
        if input_byte > rendered_in {
            return None;
        }
        let i = self
            .st
            .anchors
            .partition_point(|&(inp, _)| inp <= input_byte);
        let (inp, out) = if i == 0 {
            (0, 0)
        } else {
            self.st.anchors[i - 1]
        };
        let at = out + (input_byte - inp);
        // A position inside the next marker maps no further than that marker's rendering.
        Some(match self.st.anchors.get(i) {
            Some(&(_, next_out)) => at.min(next_out),
            None => at,
        })
    }

    /// Rendered output so far (flushed and pending), in bytes.
    pub fn output_bytes(&self) -> u64 {
        self.st.flushed_bytes + self.st.text.len() as u64
    }

    /// The sources shown to the model (every registered round) that this stream has not cited,
    /// in registration order: the "more sources" a UI may list after the cited ones. A source
    /// whose document was cited under another id (same canonical key) is not among them.
    pub fn uncited_sources(&self) -> Vec<Source> {
        let st = &self.st;
        let mut seen: Vec<&String> = Vec::new();
        st.sources
            .iter()
            .zip(&self.keys)
            .filter(|(s, key)| {
                !st.shown
                    .iter()
                    .any(|sh| &sh.key == *key || sh.source_id == s.id)
            })
            .filter(|(_, key)| {
                let fresh = !seen.contains(key);
                seen.push(key);
                fresh
            })
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// The cited sources by number; with `all`, every numbered source of the table.
    pub fn listed_sources(&self, all: bool) -> Vec<ListedSource> {
        let st = &self.st;
        let mut list: Vec<ListedSource> = st
            .shown
            .iter()
            .map(|s| ListedSource {
                number: s.number,
                source: st
                    .sources
                    .get(&s.source_id)
                    .cloned()
                    .unwrap_or_else(|| Source::new(s.source_id.as_str())),
                round: st.sources.round_of(&s.source_id),
                citations: s.citations,
            })
            .collect();
        if all {
            for e in st.numbering.entries() {
                if list.iter().any(|l| l.number == e.number) {
                    continue;
                }
                if let Some(source) = st.sources.get(&e.source_id) {
                    list.push(ListedSource {
                        number: e.number,
                        source: source.clone(),
                        round: st.sources.round_of(&e.source_id),
                        citations: 0,
                    });
                }
            }
        }
        list.sort_by_key(|l| l.number);
        list
    }

    fn finish_stream(&mut self) -> Result<(), RewriteError> {
        if self.is_remove() {
            self.st.repair.finish(&mut self.st.text);
        }
        self.flush_text();
        let sources = self.listed_sources(false);
        let st = &self.st;
        let numbers_in_body: Vec<u32> = st.shown.iter().map(|s| s.number).collect();
        let numbers_listed: Vec<u32> = sources.iter().map(|s| s.number).collect();
        let mut problems = Vec::new();
        let mut body_sorted = numbers_in_body.clone();
        body_sorted.sort_unstable();
        if body_sorted != numbers_listed {
            problems.push(format!(
                "body numbers {numbers_in_body:?} differ from list {numbers_listed:?}"
            ));
        }
        if st.numbering.len() < st.initial_numbers {
            problems.push("the numbering table shrank".to_owned());
        }
        for s in &st.shown {
            if !s.key.starts_with("rank:") && st.numbering.get(&s.key) != Some(s.number) {
                problems.push(format!("key {:?} no longer has number {}", s.key, s.number));
            }
        }
        let report = Report {
            citations: st.citations,
            unresolved: st.unresolved,
            released_holdbacks: st.scanner.overflows,
            input_bytes: st.input_bytes,
            output_bytes: st.flushed_bytes,
            new_numbers: st.new_numbers,
            numbers_in_body,
            numbers_listed,
            verified: problems.is_empty(),
        };
        self.st.events.push_back(Event::Done {
            sources,
            report: Box::new(report),
            text: None,
            uncited: self.uncited_sources(),
        });
        if problems.is_empty() {
            self.st.phase = Phase::Ended;
            Ok(())
        } else {
            Err(self.fail(RewriteError::Verification(problems.join("; "))))
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.st.settings
    }

    /// The sources.
    pub fn sources(&self) -> &Sources {
        &self.st.sources
    }

    /// The numbering table as it is now: save it to continue the numbering elsewhere.
    pub fn numbering(&self) -> &Numbering {
        &self.st.numbering
    }

    /// Takes the numbering table out.
    pub fn into_numbering(self) -> Numbering {
        self.st.numbering
    }

    /// Raw input bytes accepted so far (the next [`Rewriter::write_at`] offset).
    pub fn input_bytes(&self) -> u64 {
        self.st.input_bytes
    }

    /// The next [`Rewriter::write_seq`] sequence number.
    pub fn next_seq(&self) -> u64 {
        self.st.next_seq
    }

    /// Input bytes held back: an unfinished character or a possible marker.
    pub fn held_bytes(&self) -> usize {
        self.st.decoder.held_bytes() + self.st.scanner.held_bytes()
    }

    /// Whether an [`Event::NumberNeeded`] waits for its answer.
    pub fn is_awaiting_number(&self) -> bool {
        self.st.awaiting.is_some()
    }

    /// Whether [`Event::Done`] has been queued.
    pub fn is_ended(&self) -> bool {
        self.st.phase == Phase::Ended
    }

    /// The whole state, to restore in another process with [`Rewriter::from_snapshot`].
    #[cfg(feature = "serde")]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            version: SNAPSHOT_VERSION,
            state: self.st.clone(),
        }
    }

    /// Restores a rewriter from a snapshot; it continues exactly where the snapshot was taken.
    ///
    /// # Errors
    /// [`RestoreError::Version`] for a snapshot of another format version.
    #[cfg(feature = "serde")]
    pub fn from_snapshot(snapshot: Snapshot) -> Result<Self, RestoreError> {
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(RestoreError::Version {
                found: snapshot.version,
                expected: SNAPSHOT_VERSION,
            });
        }
        let mut st = snapshot.state;
        st.sources.reindex();
        let cfg = ScanConfig::for_sources(&st.settings, &st.sources);
        let keys = keys_of(&st.sources, &st.settings);
        Ok(Rewriter { st, cfg, keys })
    }
}

/// Code points and UTF-16 code units in `text`.
#[inline]
pub(crate) fn count_units(text: &str) -> (u64, u64) {
    if text.is_ascii() {
        return (text.len() as u64, text.len() as u64);
    }
    let (mut chars, mut astral) = (0u64, 0u64);
    for &b in text.as_bytes() {
        chars += u64::from(b & 0xC0 != 0x80);
        astral += u64::from(b >= 0xF0);
    }
    (chars, chars + astral)
}

fn keys_of(sources: &Sources, settings: &Settings) -> Vec<String> {
    sources
        .iter()
        .map(|s| Sources::key_of(s, settings.is_dedupe()))
        .collect()
}

/// The result of [`rewrite_str`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The rendered answer.
    pub text: String,
    /// Every event, with adjacent texts merged.
    pub events: Vec<Event>,
    /// The numbering after the answer.
    pub numbering: Numbering,
}

/// Rewrites a whole answer at once.
///
/// # Errors
/// As [`Rewriter::write`] and [`Rewriter::end`].
pub fn rewrite_str(
    text: &str,
    settings: Settings,
    sources: Sources,
    numbering: Numbering,
) -> Result<Rewritten, RewriteError> {
    let mut r = Rewriter::new(settings, sources, numbering);
    r.write(text)?;
    r.end()?;
    let mut out = String::new();
    let mut events: Vec<Event> = Vec::new();
    while let Some(e) = r.poll_event() {
        if let Event::Text { text } = &e {
            out.push_str(text);
            if let Some(Event::Text { text: last }) = events.last_mut() {
                last.push_str(text);
                continue;
            }
        }
        events.push(e);
    }
    Ok(Rewritten {
        text: out,
        events,
        numbering: r.into_numbering(),
    })
}
