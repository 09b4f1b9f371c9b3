//! [`ProviderError`].

use crate::error::{RewriteError, SourceError};
use crate::sse::SseError;

/// A provider stream that cannot be read. Everything emitted before the error stays valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// A malformed SSE stream (over-long or non-UTF-8 line).
    #[error(transparent)]
    Sse(#[from] SseError),
    /// A payload line that is not UTF-8.
    #[error("line {line}: not valid utf-8")]
    InvalidUtf8 {
        /// 1-based line number.
        line: u64,
    },
    /// A JSONL line longer than the limit.
    #[error("line {line} is longer than {max_line_bytes} bytes")]
    LineTooLong {
        /// 1-based line number.
        line: u64,
        /// The limit.
        max_line_bytes: usize,
    },
    /// A payload that is not JSON.
    #[error("line {line}: {}: {message}", if *.sse { "data is not JSON" } else { "not valid JSON" })]
    Json {
        /// 1-based line number where the payload ends.
        line: u64,
        /// Whether the payload was an SSE event's data (else a JSONL line).
        sse: bool,
        /// What the JSON parser said.
        message: String,
    },
    /// The first payload fits none of the provider APIs.
    #[error("line {line}: cannot tell which provider API this payload is from (keys: {keys}); expected an OpenAI chat chunk (`choices`), a Responses event (`type: response.*`), an Anthropic event (`type: message_start`, `content_block_*`), a Bedrock ConverseStream event (`messageStart`, `contentBlockDelta`), a Cohere v2 event (`type: content-delta`), a Gemini response (`candidates`) or a Gemini Interactions event (`event_type`); or give --dialect")]
    UnknownDialect {
        /// 1-based line number.
        line: u64,
        /// The payload's top-level keys (or its JSON kind).
        keys: String,
    },
    /// A payload of the dialect whose shape is not what the API sends.
    #[error("line {line}: {dialect} payload: expected {expected}")]
    Shape {
        /// 1-based line number.
        line: u64,
        /// The dialect's name.
        dialect: &'static str,
        /// What was expected, e.g. "`delta` to be a string".
        expected: String,
    },
    /// The stream itself reported an error.
    #[error("line {line}: the provider reported an error: {message}")]
    Upstream {
        /// 1-based line number.
        line: u64,
        /// The provider's error, as JSON.
        message: String,
    },
    /// The stream ended without answer text although it had payloads of event types this
    /// reader does not know: a silent empty answer would hide them.
    #[error("the {dialect} stream had no answer text; event types not read: {types}")]
    NoText {
        /// The dialect's name.
        dialect: &'static str,
        /// The unknown event types seen.
        types: String,
    },
    /// The rewriter refused (see [`RewriteError`]).
    #[error(transparent)]
    Rewrite(#[from] RewriteError),
    /// A provider source that cannot be registered.
    #[error(transparent)]
    Source(#[from] SourceError),
}
