//! Provider-native citations: the streams of the APIs that report citations beside the text
//! (Anthropic Messages `citations_delta`, OpenAI Responses `annotation.added`, OpenAI Chat
//! `delta.annotations` and Perplexity `citations`, Gemini grounding, Gemini Interactions
//! `text_annotation_delta`, Cohere v2 `citation-start`, Bedrock ConverseStream `citation`),
//! read into the same append-only numbering as the markers a model writes.
//!
//! ```
//! use citeflow_core::provider::ProviderStream;
//! use citeflow_core::{Event, Numbering, Settings, Sources};
//!
//! let mut stream = ProviderStream::new(Settings::default(), Sources::new(), Numbering::new());
//! stream.write(br#"{"type":"content-start","index":0,"delta":{"message":{"content":{"type":"text","text":""}}}}
//! {"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"The sky is blue."}}}}
//! {"type":"citation-start","index":0,"delta":{"message":{"citations":{"start":11,"end":15,"text":"blue","sources":[{"type":"document","id":"doc:0","document":{"title":"Sky"}}]}}}}
//! "#)?;
//! stream.end()?;
//! let events: Vec<Event> = std::iter::from_fn(|| stream.poll_event()).collect();
//! let Some(Event::Done { text, .. }) = events.last() else { unreachable!() };
//! assert_eq!(text.as_deref(), Some("The sky is blue[1]."));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Bytes go in framed as SSE or as one JSON payload per line ([`Framing`]); each payload is
//! read by the reader of its API ([`Dialect`], detected from the first payload unless given)
//! into text and provider citations; [`ProviderStream`] feeds the text through a
//! [`Rewriter`](crate::Rewriter) (so markers the model writes still resolve), registers each
//! cited source, and places its number without ever changing text already shown:
//!
//! - a citation that arrives before its text (Anthropic, Bedrock) is placed at the end of the
//!   cited content block;
//! - a citation whose span is the model's own inline markdown link to the cited url (OpenAI
//!   web search) replaces that link; a span or an insertion index whose text has not been shown
//!   gets the number at its end;
//! - a citation that arrives after its text was shown (Cohere, Gemini) is bound late: its
//!   [`Event::Citation`](crate::Event::Citation) carries the span and `late`, and
//!   [`Event::Done`](crate::Event::Done)'s `text` is the final answer with the number placed;
//! - a citation with no position (xAI's url-only annotations) is numbered at the end of its
//!   text.

mod anthropic;
mod bedrock;
mod chat_chunk;
mod chat_chunks;
mod cohere;
mod detect;
mod error;
mod frame;
mod gemini;
mod gemini_interactions;
mod json;
#[cfg(test)]
mod jsonl_tests;
mod like_last;
mod link;
mod openai_chat;
mod openai_responses;
mod read;
mod reader;
mod stream;
mod text_delta;
mod text_deltas;
#[cfg(test)]
mod typed_tests;
mod units;

pub use chat_chunk::{ChatChunk, CHAT_META_KEYS};
pub use chat_chunks::ChatChunks;
pub use error::ProviderError;
pub use frame::{FrameDecoder, Framing, Payload};
pub use json::MetaValue;
pub use read::{Placement, ProviderCitation, ProviderEvent, Unit};
pub use reader::{Dialect, Reader};
pub use stream::{apply_late_edits, LateEdit, ProviderStream};
pub use text_delta::TextDelta;
pub use text_deltas::TextDeltas;
