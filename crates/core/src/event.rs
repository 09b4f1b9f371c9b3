//! What a [`Rewriter`](crate::Rewriter) emits.

use crate::anchor::Anchor;
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
    /// Its citations' anchors, in the order they were emitted (with
    /// [`Settings::with_anchors`](crate::Settings::with_anchors)).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub anchors: Vec<Anchor>,
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
        /// Where the number's rendering starts in the rendered output, in code points (Python
        /// string indexes).
        #[cfg_attr(feature = "serde", serde(default))]
        char_offset: u64,
        /// Where the number's rendering starts in the rendered output, in UTF-16 code units
        /// (JavaScript and Java string indexes).
        #[cfg_attr(feature = "serde", serde(default))]
        utf16_offset: u64,
        /// What a provider said about this citation (its quote, the cited span, late
        /// binding); `None` for a marker the model wrote.
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        provider: Option<Box<CitationDetail>>,
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
    /// With [`Settings::with_anchors`](crate::Settings::with_anchors): a citation's anchor,
    /// emitted after the citation's events as soon as the sentence it ends is complete in
    /// the output (see [`anchor`](crate::anchor)).
    Anchor(Box<Anchor>),
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
        /// The final answer, when provider citations were bound after their text was shown
        /// ([`CitationDetail::late`]): the streamed text with those numbers placed, so a UI
        /// can show the same answer as if it had waited. `None` when the streamed text is
        /// final.
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        text: Option<String>,
        /// The sources shown to the model (every registered round) that the answer did not
        /// cite, in registration order, one per canonical key: the "more sources" a UI lists
        /// after the cited ones. Empty when every source was cited.
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Vec::is_empty")
        )]
        uncited: Vec<Source>,
    },
}

/// A position in the rendered output, in the three units users index strings with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Position {
    /// UTF-8 bytes (Rust, Go).
    pub bytes: u64,
    /// Code points (Python).
    pub chars: u64,
    /// UTF-16 code units (JavaScript, Java, C#).
    pub utf16: u64,
}

/// A range of the rendered output: `start..end`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Span {
    /// The first position.
    pub start: Position,
    /// The position after the last.
    pub end: Position,
}

/// The provider's side of a citation that a provider reported beside the text (Anthropic
/// `citations_delta`, OpenAI `annotation.added`, Gemini grounding, Cohere `citation-start`,
/// Bedrock `citation`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct CitationDetail {
    /// The text the provider says supports the answer (`cited_text`, `sourceContent`, Cohere
    /// `text`), for a hover.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub quote: Option<String>,
    /// The cited part of the rendered output, when the provider said which it is.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub span: Option<Span>,
    /// True when the citation arrived after its text was shown: the number is not in any
    /// [`Event::Text`] (shown text never changes); it belongs at the citation's offset, and
    /// [`Event::Done`]'s `text` has it there.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "std::ops::Not::not"))]
    pub late: bool,
    /// True when the number replaces `span` rather than following it: the span is the
    /// model's own inline link to the cited url (`([site](url))`), which the number stands
    /// for.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "std::ops::Not::not"))]
    pub replaces_span: bool,
}

impl Event {
    /// The stable snake_case name of the variant (the `type` field in JSON).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Source { .. } => "source",
            Event::Text { .. } => "text",
            Event::Citation { .. } => "citation",
            Event::Unresolved { .. } => "unresolved",
            Event::Anchor(_) => "anchor",
            Event::NumberNeeded { .. } => "number_needed",
            Event::Done { .. } => "done",
        }
    }
}
