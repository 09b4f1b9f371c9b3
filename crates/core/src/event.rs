//! What a [`Rewriter`](crate::Rewriter) emits.

use crate::source::Source;

/// Why a marker did not resolve to a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum UnresolvedReason {
    /// The id is not a registered source.
    UnknownId,
    /// The rank is 0 or larger than the number of sources shown.
    RankOutOfRange,
}

impl UnresolvedReason {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            UnresolvedReason::UnknownId => "unknown_id",
            UnresolvedReason::RankOutOfRange => "rank_out_of_range",
        }
    }
}

/// A cited source in the final list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ListedSource {
    /// Its number.
    pub number: u32,
    /// The source record.
    pub source: Source,
    /// The round that registered it.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub round: Option<u32>,
    /// How often the body cites it (0 for sources listed with "all").
    pub citations: u32,
}

/// Counts and checks made when the stream ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Report {
    /// Resolved citations in the body.
    pub citations: u64,
    /// Markers (or ids inside markers) that did not resolve.
    pub unresolved: u64,
    /// Possible markers released as text because they outgrew the hold-back cap.
    pub released_holdbacks: u64,
    /// Raw input bytes accepted.
    pub input_bytes: u64,
    /// Rendered output bytes.
    pub output_bytes: u64,
    /// Numbers first handed out by this stream.
    pub new_numbers: u32,
    /// Distinct numbers shown in the body, in order of first appearance.
    pub numbers_in_body: Vec<u32>,
    /// Numbers in the final source list, in list order.
    pub numbers_listed: Vec<u32>,
    /// Whether the body and the list agree and no number was reassigned.
    pub verified: bool,
}

/// One output of the rewriter, in stream order.
///
/// For each citation, [`Event::Source`] (the first time its number is shown in this stream)
/// and [`Event::Citation`] come before the [`Event::Text`] that shows the number, so a UI can
/// append to its list at once.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Event {
    /// A number shown for the first time in this stream, with its source.
    Source {
        /// The number.
        number: u32,
        /// The source record (boxed to keep events small).
        source: Box<Source>,
        /// The round that registered the source.
        #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
        round: Option<u32>,
        /// Whether the number was handed out just now (false: it came from an earlier answer
        /// of the session).
        is_new: bool,
    },
    /// Rendered text. Concatenated, the texts are the whole rendered answer.
    Text {
        /// The text.
        text: String,
    },
    /// A resolved citation.
    Citation {
        /// The number shown.
        number: u32,
        /// The id the model wrote (for a rank, the id of that source).
        source_id: String,
        /// Where the number's rendering starts in the rendered output (UTF-8 bytes).
        byte_offset: u64,
        /// Where the marker started in the decoded input (UTF-8 bytes).
        input_byte_offset: u64,
    },
    /// A marker, or one id in it, that did not resolve. It used no number.
    Unresolved {
        /// The whole marker as written.
        raw: String,
        /// The id or rank that failed.
        reference: String,
        /// Why.
        reason: UnresolvedReason,
        /// Where its rendering (if any) starts in the rendered output.
        byte_offset: u64,
        /// Where the marker started in the decoded input.
        input_byte_offset: u64,
    },
    /// [`NumberSource::External`](crate::NumberSource::External) only: allocate a number for
    /// this key in the shared store and answer with
    /// [`Rewriter::provide_number`](crate::Rewriter::provide_number). Nothing more is emitted
    /// until then.
    NumberNeeded {
        /// The canonical key.
        key: String,
        /// The source id that needs it.
        source_id: String,
    },
    /// The end: the final source list and the report.
    Done {
        /// The cited sources by number.
        sources: Vec<ListedSource>,
        /// Counts and checks (boxed to keep events small).
        report: Box<Report>,
    },
}

impl Event {
    /// The stable snake_case name of the variant (the `type` field in JSON).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Source { .. } => "source",
            Event::Text { .. } => "text",
            Event::Citation { .. } => "citation",
            Event::Unresolved { .. } => "unresolved",
            Event::NumberNeeded { .. } => "number_needed",
            Event::Done { .. } => "done",
        }
    }
}
