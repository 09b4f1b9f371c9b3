//! What a dialect reader makes of a payload: [`ProviderEvent`]s.

use crate::source::Source;

/// The unit a provider counts its offsets in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Unit {
    /// UTF-8 bytes (Gemini).
    Bytes,
    /// Code points (OpenAI, Cohere).
    Chars,
    /// UTF-16 code units.
    Utf16,
}

/// Where a provider says its citation belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
pub enum Placement {
    /// The citation is about the content block it arrives in (Anthropic, Bedrock): the
    /// number goes at the block's end.
    BlockEnd,
    /// The citation covers `start..end` of the current text part's provider text.
    Span {
        /// First offset.
        start: u64,
        /// Offset after the last.
        end: u64,
        /// The unit of both.
        unit: Unit,
    },
    /// The number goes at this offset of the current text part (OpenAI `file_citation`).
    At {
        /// The offset.
        index: u64,
        /// Its unit.
        unit: Unit,
    },
    /// No position is known (xAI's url-only annotations): the number goes at the end of the
    /// text part.
    Unplaced,
}

/// A citation a provider reported beside the text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ProviderCitation {
    /// The cited source: a url and title, a file id and name, a document index and title, a
    /// search result. Its id names it in the session (the url for web sources).
    pub source: Source,
    /// The provider's quote of the source, if any.
    pub quote: Option<String>,
    /// Where the number goes.
    pub placement: Placement,
}

/// One thing a dialect reader found in a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ProviderEvent {
    /// A new text part starts (a content block, an output item, a step): provider offsets
    /// count from its start.
    PartStart,
    /// Answer text of the current part.
    Text {
        /// The text.
        text: String,
    },
    /// The current content block ended: citations placed at [`Placement::BlockEnd`] go here.
    BlockEnd,
    /// The current text part ended: url-only citations go here.
    PartEnd,
    /// Search results the model was shown, registered as a round of sources.
    Sources {
        /// The query, if the provider said it.
        query: Option<String>,
        /// The results.
        sources: Vec<Source>,
    },
    /// A citation (boxed to keep events small).
    Citation(Box<ProviderCitation>),
}

/// A source for a url: its id is the url.
pub(crate) fn url_source(url: &str, title: Option<&str>) -> Source {
    let mut s = Source::new(url).with_url(url);
    if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
        s = s.with_title(t);
    }
    s
}

/// A source for a document the caller gave the provider, by its index in the request.
pub(crate) fn document_source(index: u64, title: Option<&str>) -> Source {
    let mut s = Source::new(format!("document:{index}")).with_key(format!("document:{index}"));
    if let Some(t) = title.filter(|t| !t.trim().is_empty()) {
        s = s.with_title(t);
    }
    s
}
