//! The [`Rewriter`]: bytes in, events out.

use std::collections::VecDeque;

use crate::anchor::{Anchor, Claims, Indexes};
#[cfg(feature = "serde")]
use crate::error::RewriteError;
use crate::event::{CitationDetail, Event, UnresolvedReason};
use crate::numbering::Numbering;
use crate::remove::Repair;
use crate::scan::{Marker, ScanConfig, Scanner};
use crate::settings::Settings;
use crate::source::Sources;
use crate::utf8::Utf8Decoder;

mod anchoring;
mod input;
mod outside;
mod resolve;
mod state;

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
/// With [`NumberSource::External`](crate::NumberSource::External), `poll_event` may yield [`Event::NumberNeeded`]; nothing
/// more comes out until [`Rewriter::provide_number`] answers it (input written meanwhile is
/// kept). Save [`Rewriter::numbering`] after the stream (or after every new number).
#[derive(Debug, Clone)]
pub struct Rewriter {
    st: State,
    cfg: ScanConfig,
    /// Canonical key of each source, by registration index.
    keys: Vec<String>,
    /// Sources indexed for anchors (rebuilt on demand after a restore).
    indexes: Indexes,
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
    /// The claims followed for anchors (with [`Settings::with_anchors`]).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    claims: Option<Box<Claims>>,
    /// The anchors emitted, for the final list.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    anchored: Vec<Anchor>,
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
        let claims = settings.has_anchors().then(Box::default);
        Rewriter {
            cfg,
            keys,
            indexes: Indexes::default(),
            st: State {
                claims,
                anchored: Vec::new(),
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
}

pub(crate) use crate::units::count_units;

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
