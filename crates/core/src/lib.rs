//! Rewrites streamed LLM answers so that citation markers with internal source ids
//! (`[[source_3]]`, `<cite:source_7>`, `[source_3]`, `【2】`) become readable numbers
//! (`[1]`, `[2]`) **while the text streams**, with numbers that never change once shown.
//!
//! [`Sources`] holds what the model was shown (registered in rounds), [`Numbering`] is the
//! append-only table of numbers (fresh per answer, or the session's for an agent), and
//! [`Settings`] picks the marker syntaxes, the [`Style`] and the policies. A [`Rewriter`] takes
//! the three, is fed bytes with [`Rewriter::write`] and [`Rewriter::end`], and yields
//! [`Event`]s from [`Rewriter::poll_event`]: a [`Event::Source`] the first time a number is
//! shown (before the text that shows it), [`Event::Text`], [`Event::Citation`],
//! [`Event::Unresolved`], and [`Event::Done`] with the final list and a [`Report`]. What the
//! model is asked to write lives here too, so that it is exactly what the scanner recognises:
//! a [`PromptMarker`] labels each source ([`context_block`], [`citation_instruction`],
//! [`zero_shot_messages`], [`few_shot_messages`]) and [`citation_grammar`] writes a GBNF
//! grammar that keeps the model's markers well-formed; [`SMALL_MODEL_MARKER`] and
//! [`SMALL_MODEL_GRAMMAR`] are the measured choice for small local models. The crate does no
//! I/O, reads no clock and keeps no global state.
//!
//! ```
//! use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};
//!
//! let sources = Sources::from_vec(vec![
//!     Source::new("source_7").with_title("Paris"),
//!     Source::new("source_3").with_title("France"),
//! ])?;
//! let mut rw = Rewriter::new(Settings::default(), sources, Numbering::new());
//! let mut text = String::new();
//! for chunk in ["Paris is the capital [[sou", "rce_7]], bad [[source_99]]."] {
//!     rw.write(chunk)?;
//!     while let Some(event) = rw.poll_event() {
//!         if let Event::Text { text: t } = event {
//!             text.push_str(&t);
//!         }
//!     }
//! }
//! rw.end()?;
//! while let Some(event) = rw.poll_event() {
//!     match event {
//!         Event::Text { text: t } => text.push_str(&t),
//!         Event::Done { report, .. } => assert!(report.verified),
//!         _ => {}
//!     }
//! }
//! assert_eq!(text, "Paris is the capital [1], bad [?].");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod event;
mod grammar;
mod names;
mod numbering;
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
mod utf8;

pub use error::{NumberingError, RestoreError, RewriteError, SettingsError, SourceError};
pub use event::{CitationDetail, Event, ListedSource, Position, Report, Span, UnresolvedReason};
pub use grammar::{citation_grammar, GrammarMode, SMALL_MODEL_GRAMMAR};
pub use numbering::{NumberEntry, Numbering};
pub use patch::SettingsPatch;
pub use prompt::{
    citation_instruction, context_block, few_shot_messages, zero_shot_messages, PromptMarker,
    PromptMessage, SMALL_MODEL_MARKER,
};
pub use render::{render_list, ListFormat};
#[cfg(feature = "serde")]
pub use rewriter::Snapshot;
pub use rewriter::{rewrite_str, Accepted, Rewriter, Rewritten};
pub use settings::{
    IdBody, IdShape, InvalidUtf8, NumberSource, RankMode, Settings, Syntax, UnknownPolicy,
    MIN_PENDING_BYTES,
};
pub use source::{Locator, Round, Source, Sources};
pub use style::{escape_html, link_url, Style, MAX_TEMPLATE_BYTES};
