//! Claim anchors: for each citation, the sentence of the cited source that best supports the
//! sentence of the answer that the citation ends, and a calibrated support score.
//!
//! ```
//! use citeflow_core::anchor::{find_quote, Verdict, DEFAULT_MAX_SOURCE_BYTES};
//!
//! let source = "Paris is in France. The Seine flows through Paris. It is 777 km long.";
//! let (quote, support) = find_quote("The Seine flows through Paris", source, DEFAULT_MAX_SOURCE_BYTES).unwrap();
//! assert_eq!(quote.text, "The Seine flows through Paris.");
//! assert_eq!(support.verdict(), Verdict::Supported);
//! ```
//!
//! In a stream, turn on [`Settings::with_anchors`](crate::Settings::with_anchors): the
//! [`Rewriter`](crate::Rewriter) emits an [`Event::Anchor`](crate::Event::Anchor) for each
//! citation as soon as the sentence it ends is complete in the output, and the
//! [`Event::Done`](crate::Event::Done) list carries each source's anchors.
//!
//! How it scores (lexical, in every build): the source's sentences are indexed once per answer
//! (the first time a citation of it needs an anchor) over at most
//! [`Settings::max_anchor_source_bytes`](crate::Settings::max_anchor_source_bytes) of its
//! text; the claim's terms (stemmed English words, numbers, CJK character pairs) rank the
//! sentences by BM25; the best one, widened to at most [`MAX_QUOTE_SENTENCES`] adjacent
//! sentences when they add claim terms it lacks, is the quote. The support score is a logistic
//! function of how much of the claim's (IDF-weighted) terms the quote, the best three
//! sentences and the whole source hold, lowered when the claim's numbers are missing or only
//! one side negates.

mod claims;
mod index;
mod sentences;
mod support;
mod terms;
mod window;

pub(crate) use claims::{Claims, ClosedClaim, PendingCite};
pub use support::{Support, Verdict};

use index::SentenceIndex;
use terms::terms_of;

/// The default for [`Settings::max_anchor_source_bytes`](crate::Settings::max_anchor_source_bytes):
/// 1 MiB of a source's text is indexed; a longer text is anchored over its first 1 MiB and
/// the quote says so ([`Quote::truncated`]).
pub const DEFAULT_MAX_SOURCE_BYTES: usize = 1 << 20;
/// The largest [`Settings::max_anchor_source_bytes`](crate::Settings::max_anchor_source_bytes) accepted (64 MiB).
pub const MAX_SOURCE_BYTES_LIMIT: usize = 64 << 20;
/// The smallest [`Settings::max_anchor_source_bytes`](crate::Settings::max_anchor_source_bytes) accepted.
pub const MIN_SOURCE_BYTES: usize = 1024;
/// A source sentence (or a stretch of text with no sentence end) longer than this is cut near
/// it, so that no quote is unbounded.
pub const MAX_SENTENCE_BYTES: usize = 2048;
/// An answer sentence longer than this closes at a space near it: a claim is at most this
/// long, whatever the answer does.
pub const MAX_CLAIM_BYTES: usize = 4096;
/// The most adjacent source sentences one quote spans.
pub const MAX_QUOTE_SENTENCES: usize = window::MAX_WINDOW;

/// A range of a text in the three units users index strings with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TextRange {
    /// First UTF-8 byte.
    pub byte_start: u64,
    /// UTF-8 byte after the last.
    pub byte_end: u64,
    /// First code point (Python string index).
    pub char_start: u64,
    /// Code point after the last.
    pub char_end: u64,
    /// First UTF-16 code unit (JavaScript string index).
    pub utf16_start: u64,
    /// UTF-16 code unit after the last.
    pub utf16_end: u64,
}

impl TextRange {
    /// The range `byte_start..byte_end` of `text` (byte offsets at character boundaries).
    pub fn of(text: &str, byte_start: usize, byte_end: usize) -> TextRange {
        let (c0, u0) = crate::units::count_units(&text[..byte_start]);
        let (c1, u1) = crate::units::count_units(&text[byte_start..byte_end]);
        TextRange {
            byte_start: byte_start as u64,
            byte_end: byte_end as u64,
            char_start: c0,
            char_end: c0 + c1,
            utf16_start: u0,
            utf16_end: u0 + u1,
        }
    }
}

/// Where a quote's text came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum QuoteOrigin {
    /// Chosen by citeflow from the source's text.
    #[default]
    Source,
    /// Sent by the provider with its citation (Anthropic `cited_text`, Bedrock, Cohere).
    Provider,
}

/// The part of the cited source that the claim stands on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Quote {
    /// The quoted text: `source.text[char_start..char_end]` when the range is there.
    pub text: String,
    /// Where the quote is in the source's `text` (absent for a provider's quote that the
    /// source's text does not hold, or when the source has no text).
    #[cfg_attr(
        feature = "serde",
        serde(flatten, default, skip_serializing_if = "Option::is_none")
    )]
    pub range: Option<TextRange>,
    /// Who chose it.
    #[cfg_attr(feature = "serde", serde(default))]
    pub origin: QuoteOrigin,
    /// An EPUB CFI range of the quote in its book, when the source is a book passage and the
    /// front-end knows the book (`epubcfi(/6/4!/4/2,/1:10,/1:58)`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub cfi: Option<String>,
    /// The source's text was longer than the indexing cap and was anchored over its first
    /// part only.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "std::ops::Not::not")
    )]
    pub truncated: bool,
}

/// One citation's anchor: the claim it ends, the quote it stands on, and how well the quote
/// supports the claim.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Anchor {
    /// The citation's number.
    pub number: u32,
    /// The cited source's id.
    pub source_id: String,
    /// The sentence of the rendered answer that the citation supports.
    pub claim: TextRange,
    /// The supporting part of the source; `None` when no sentence of it shares a term with
    /// the claim.
    pub quote: Option<Quote>,
    /// The support score.
    pub support: Support,
    /// What the score says.
    pub verdict: Verdict,
}

/// The best quote of `source_text` for `claim` and its support, the first `max_source_bytes`
/// of the text indexed: what a stream's anchors hold, for one claim at a time. `None` when no
/// sentence of the source shares a term with the claim.
pub fn find_quote(
    claim: &str,
    source_text: &str,
    max_source_bytes: usize,
) -> Option<(Quote, Support)> {
    let index = SentenceIndex::build(source_text, max_source_bytes, MAX_SENTENCE_BYTES);
    quote_in(&index, claim, source_text)
}

/// [`find_quote`] over a source already indexed.
pub(crate) fn quote_in(
    index: &SentenceIndex,
    claim: &str,
    source_text: &str,
) -> Option<(Quote, Support)> {
    let mut query = Vec::new();
    let claim_traits = terms_of(claim, &mut query);
    let c = window::Claim::new(query, index);
    let w = window::best(index, &c)?;
    let (a, b) = (index.sentences[w.first].0, index.sentences[w.last].1);
    let text = &source_text[a..b];
    let quote_negated = terms_of(text, &mut Vec::new()).negated;
    let support = support::support_of(&w, claim_traits.negated != quote_negated);
    Some((
        Quote {
            text: text.to_owned(),
            range: Some(TextRange::of(source_text, a, b)),
            origin: QuoteOrigin::Source,
            cfi: None,
            truncated: index.truncated,
        },
        support,
    ))
}

/// The support of a quote the provider sent, for `claim`; its place in `source_text` when the
/// text holds it.
pub(crate) fn provider_quote(
    claim: &str,
    quote: &str,
    source_text: Option<&str>,
) -> (Quote, Support) {
    let index = SentenceIndex::build(quote, MAX_SENTENCE_BYTES * 8, MAX_SENTENCE_BYTES);
    let mut query = Vec::new();
    let claim_traits = terms_of(claim, &mut query);
    let c = window::Claim::new(query, &index);
    let cov = c.coverage(|t| index.has_term(t));
    let w = window::Window {
        first: 0,
        last: 0,
        cov_quote: cov,
        cov_top: cov,
        cov_source: cov,
        numbers_missing: 0.0,
        numbers_differ: false,
    };
    let negated = terms_of(quote, &mut Vec::new()).negated;
    let support = support::support_of(&w, claim_traits.negated != negated);
    let range = source_text.and_then(|t| locate(t, quote).map(|(a, b)| TextRange::of(t, a, b)));
    (
        Quote {
            text: quote.to_owned(),
            range,
            origin: QuoteOrigin::Provider,
            cfi: None,
            truncated: false,
        },
        support,
    )
}

/// Where `quote` is in `text`: exactly, or with its whitespace trimmed.
fn locate(text: &str, quote: &str) -> Option<(usize, usize)> {
    let q = quote.trim();
    if q.is_empty() {
        return None;
    }
    text.find(q).map(|a| (a, a + q.len()))
}

/// The per-answer cache of indexed sources, by registration index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Indexes {
    by_source: rustc_hash::FxHashMap<usize, SentenceIndex>,
}

impl Indexes {
    /// The index of source `i`'s text, built on first use.
    pub(crate) fn get(&mut self, i: usize, text: &str, max_bytes: usize) -> &SentenceIndex {
        self.by_source
            .entry(i)
            .or_insert_with(|| SentenceIndex::build(text, max_bytes, MAX_SENTENCE_BYTES))
    }
}

/// A tuning knob: `CITEFLOW_TUNE_<NAME>` under the test-only `_tune` feature, else `default`.
#[cfg(feature = "_tune")]
pub(crate) fn knob(name: &str, default: f32) -> f32 {
    std::env::var(format!("CITEFLOW_TUNE_{name}"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[cfg(not(feature = "_tune"))]
#[inline(always)]
pub(crate) fn knob(_name: &str, default: f32) -> f32 {
    default
}
