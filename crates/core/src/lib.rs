//! Rewrites streamed LLM answers so that citation markers with internal source ids
//! (`[[source_3]]`, `<cite:source_7>`, `[source_3]`, `【2】`) become readable numbers
//! (`[1]`, `[2]`) **while the text streams**, with numbers that never change once shown.
//!
//! A whole answer at once:
//!
//! ```
//! use citeflow_core::{rewrite_str, Numbering, Settings, Source, Sources};
//!
//! let sources = Sources::from_vec(vec![Source::new("source_7"), Source::new("source_3")])?;
//! let answer = "Paris [[source_3]], France [[source_7]].";
//! let out = rewrite_str(answer, Settings::default(), sources, Numbering::new())?;
//! assert_eq!(out.text, "Paris [1], France [2].");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A stream, chunk by chunk (a marker or a UTF-8 character may be cut anywhere): write each
//! chunk, then poll. [`Rewriter::poll_event_into`] appends the text to your buffer and returns
//! the other events (a number's [`Event::Source`] comes before the text that shows it), so the
//! text path allocates nothing; [`Rewriter::poll_event`] returns the text as events too.
//!
//! ```
//! use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};
//!
//! let sources = Sources::from_vec(vec![
//!     Source::new("source_7").with_title("Paris"),
//!     Source::new("source_3").with_title("France"),
//! ])?;
//! let mut rw = Rewriter::new(Settings::default(), sources, Numbering::new());
//! let mut shown = String::new();
//! for chunk in ["Paris is the capital [[sou", "rce_7]], bad [[source_99]]."] {
//!     rw.write(chunk)?;
//!     while let Some(event) = rw.poll_event_into(&mut shown) {
//!         if let Event::Source { number, source, .. } = event {
//!             println!("[{number}] {}", source.title.as_deref().unwrap_or(&source.id));
//!         }
//!     }
//! }
//! rw.end()?;
//! while let Some(event) = rw.poll_event_into(&mut shown) {
//!     if let Event::Done { report, .. } = event {
//!         assert!(report.verified);
//!     }
//! }
//! assert_eq!(shown, "Paris is the capital [1], bad [?].");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Sources`] holds what the model was shown (registered in rounds), [`Numbering`] is the
//! append-only table of numbers (fresh per answer, or the session's for an agent), and
//! [`Settings`] picks the marker syntaxes, the [`Style`] and the policies ([`SettingsPatch`]
//! builds them from names, as every front-end does). The events: [`Event::Source`],
//! [`Event::Text`], [`Event::Citation`], [`Event::Unresolved`], and [`Event::Done`] with the
//! final list and a [`Report`]. Provider APIs that send citations beside the text (Anthropic,
//! OpenAI Responses, Gemini, Cohere, Bedrock) are read by `provider::ProviderStream` (feature
//! `serde`) into the same numbering. What the model is asked to write lives here too, so that
//! it is exactly what the scanner recognises: a [`PromptMarker`] labels each source
//! ([`context_block`], [`citation_instruction`], [`zero_shot_messages`], [`few_shot_messages`])
//! and [`citation_grammar`] writes a GBNF grammar that keeps the model's markers well-formed;
//! [`SMALL_MODEL_MARKER`] and [`SMALL_MODEL_GRAMMAR`] are the measured choice for small local
//! models. The crate does no I/O, reads no clock and keeps no global state.

pub mod anchor;
mod error;
mod event;
mod grammar;
#[cfg(feature = "serde")]
mod names;
mod numbering;
#[cfg(feature = "serde")]
mod patch;
mod prompt;
#[cfg(feature = "serde")]
pub mod provider;
mod remove;
mod render;
mod rewriter;
mod scan;
mod settings;
mod source;
pub mod sse;
mod style;
mod units;
mod utf8;

pub use error::{NumberingError, RestoreError, RewriteError, SettingsError, SourceError};
pub use event::{CitationDetail, Event, ListedSource, Position, Report, Span, UnresolvedReason};
pub use grammar::{citation_grammar, GrammarMode, SMALL_MODEL_GRAMMAR};
pub use numbering::{NumberEntry, Numbering};
#[cfg(feature = "serde")]
pub use patch::SettingsPatch;
pub use prompt::{
    citation_instruction, context_block, few_shot_messages, read_context_block, zero_shot_messages,
    PromptMarker, PromptMessage, SMALL_MODEL_MARKER,
};
pub use render::{render_list, ListFormat};
#[cfg(feature = "serde")]
pub use rewriter::Snapshot;
pub use rewriter::{rewrite_str, Accepted, Rewriter, Rewritten};
pub use settings::{
    IdBody, IdShape, InvalidUtf8, NumberSource, RankMode, Settings, Syntax, UnknownPolicy,
    DEFAULT_LINK_HOLD_BYTES, MIN_PENDING_BYTES,
};
pub use source::{Locator, Round, Source, Sources};
pub use style::{escape_html, link_url, Style, MAX_TEMPLATE_BYTES};
