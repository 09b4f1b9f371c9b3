//! [`Dialect`] detection and the [`Reader`] that dispatches payloads to its dialect.

use serde_json::Value;

use super::detect::TopLevel;
use super::error::ProviderError;
use super::json::{json_kind, Doc, Problem};
use super::read::ProviderEvent;
use super::{
    anthropic, bedrock, cohere, gemini, gemini_interactions, openai_chat, openai_responses,
};

/// A provider API's stream format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Dialect {
    /// OpenAI Chat Completions chunks (and completions, and OpenAI-compatible servers), with
    /// `delta.annotations` and Perplexity's `citations` / `search_results`.
    OpenaiChat,
    /// OpenAI Responses API events (also Azure OpenAI and xAI).
    OpenaiResponses,
    /// Anthropic Messages stream events.
    Anthropic,
    /// Amazon Bedrock ConverseStream events, as JSON (`{"contentBlockDelta": {…}}`).
    Bedrock,
    /// Cohere v2 chat stream events.
    Cohere,
    /// Gemini `generateContent` / `streamGenerateContent` responses.
    Gemini,
    /// Gemini Interactions API events.
    GeminiInteractions,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 7] = [
        Dialect::OpenaiChat,
        Dialect::OpenaiResponses,
        Dialect::Anthropic,
        Dialect::Bedrock,
        Dialect::Cohere,
        Dialect::Gemini,
        Dialect::GeminiInteractions,
    ];

    /// The stable name (`openai-chat`, `openai-responses`, `anthropic`, `bedrock`, `cohere`,
    /// `gemini`, `gemini-interactions`).
    pub fn name(self) -> &'static str {
        match self {
            Dialect::OpenaiChat => "openai-chat",
            Dialect::OpenaiResponses => "openai-responses",
            Dialect::Anthropic => "anthropic",
            Dialect::Bedrock => "bedrock",
            Dialect::Cohere => "cohere",
            Dialect::Gemini => "gemini",
            Dialect::GeminiInteractions => "gemini-interactions",
        }
    }

    /// The dialect a payload belongs to, if any.
    pub fn detect(payload: &Value) -> Option<Dialect> {
        payload
            .as_object()
            .and_then(|o| Self::of_top_level(&TopLevel::of_tree(o)))
    }

    /// [`Dialect::detect`] from a payload's JSON text, without a tree: `None` when the text is
    /// not a JSON object or repeats a key (detect its tree), else what `detect` gives.
    pub(crate) fn detect_text(data: &str) -> Option<Option<Dialect>> {
        TopLevel::of_text(data).map(|top| Self::of_top_level(&top))
    }

    /// The dialect of a payload's top level.
    fn of_top_level(o: &TopLevel<'_>) -> Option<Dialect> {
        if o.has("event_type") {
            return Some(Dialect::GeminiInteractions);
        }
        if o.has("candidates") || o.has("usageMetadata") || o.has("promptFeedback") {
            return Some(Dialect::Gemini);
        }
        const BEDROCK: [&str; 6] = [
            "messageStart",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata",
        ];
        if o.keys.len() <= 2 && o.keys.iter().any(|k| BEDROCK.contains(&&**k)) {
            return Some(Dialect::Bedrock);
        }
        if o.has("choices")
            || o.object
                .as_deref()
                .is_some_and(|t| t.starts_with("chat.completion") || t == "text_completion")
        {
            return Some(Dialect::OpenaiChat);
        }
        let t = o.kind.as_deref()?;
        if t.starts_with("response.") {
            return Some(Dialect::OpenaiResponses);
        }
        if matches!(
            t,
            "message_start"
                | "content_block_start"
                | "content_block_delta"
                | "content_block_stop"
                | "message_delta"
                | "message_stop"
                | "ping"
        ) || (t == "message" && o.has("content"))
        {
            return Some(Dialect::Anthropic);
        }
        if matches!(
            t,
            "message-start"
                | "content-start"
                | "content-delta"
                | "content-end"
                | "citation-start"
                | "citation-end"
                | "tool-plan-delta"
                | "message-end"
        ) {
            return Some(Dialect::Cohere);
        }
        None
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Dialect {
    type Err = crate::error::SettingsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == s || d.name().replace('-', "_") == s)
            .ok_or_else(|| crate::error::SettingsError::UnknownName {
                what: "dialect",
                value: s.to_owned(),
                expected: &[],
            })
    }
}

/// The dialect state of one stream.
#[derive(Debug, Clone)]
enum State {
    OpenaiChat(openai_chat::Chat),
    OpenaiResponses(openai_responses::Responses),
    Anthropic(anthropic::Messages),
    Bedrock(bedrock::Converse),
    Cohere(cohere::Chat),
    Gemini(gemini::Generate),
    GeminiInteractions(gemini_interactions::Interactions),
}

/// Reads one stream's payloads of one dialect into [`ProviderEvent`]s.
#[derive(Debug, Clone)]
pub struct Reader {
    dialect: Dialect,
    state: State,
    /// Event types the dialect does not know, in first-seen order.
    unknown: Vec<String>,
}

impl Reader {
    /// A reader for `dialect`.
    pub fn new(dialect: Dialect) -> Self {
        let state = match dialect {
            Dialect::OpenaiChat => State::OpenaiChat(Default::default()),
            Dialect::OpenaiResponses => State::OpenaiResponses(Default::default()),
            Dialect::Anthropic => State::Anthropic(Default::default()),
            Dialect::Bedrock => State::Bedrock(Default::default()),
            Dialect::Cohere => State::Cohere(Default::default()),
            Dialect::Gemini => State::Gemini(Default::default()),
            Dialect::GeminiInteractions => State::GeminiInteractions(Default::default()),
        };
        Reader {
            dialect,
            state,
            unknown: Vec::new(),
        }
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Event types seen that this dialect does not know (skipped).
    pub fn unknown_types(&self) -> &[String] {
        &self.unknown
    }

    /// Reads one payload; `line` names it in errors.
    ///
    /// # Errors
    /// [`ProviderError::Shape`] for a payload that is not what the API sends (not an object,
    /// a field of the wrong type), [`ProviderError::Upstream`] for an error event. Events a
    /// dialect knows and does not need (pings, usage, tool calls) are skipped on purpose;
    /// event types it does not know are skipped and listed in [`Reader::unknown_types`].
    pub fn read(
        &mut self,
        payload: &Value,
        line: u64,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<(), ProviderError> {
        if !payload.is_object() {
            return Err(ProviderError::Shape {
                line,
                dialect: self.dialect.name(),
                expected: format!("a JSON object, got {}", json_kind(payload)),
            });
        }
        self.read_doc(Doc::Tree(payload), line, out).map(drop)
    }

    /// Reads one payload from its JSON text, without a tree: `Ok(false)` when the text is
    /// not a JSON object that reads into the dialect's structs (not JSON, not an object, a
    /// duplicate key), and nothing was read: [`Reader::read`] its tree, which gives what
    /// the tree always gave.
    ///
    /// # Errors
    /// As [`Reader::read`].
    pub(crate) fn read_text(
        &mut self,
        data: &str,
        line: u64,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<bool, ProviderError> {
        let object = data
            .trim_start_matches([' ', '\t', '\n', '\r'])
            .starts_with('{');
        if !object {
            return Ok(false);
        }
        let len = out.len();
        let r = self.read_doc(Doc::Text(data), line, out);
        if matches!(r, Ok(false)) {
            out.truncate(len);
        }
        r
    }

    /// A text event of part `(item, index)` (a Responses `output_text.delta`, read by
    /// [`super::TextDelta`]): the part it enters, as [`Reader::read`] of the event would.
    pub(crate) fn enter_part(&mut self, item: &str, index: u64, out: &mut Vec<ProviderEvent>) {
        if let State::OpenaiResponses(s) = &mut self.state {
            s.enter(item, index, out);
        }
    }

    /// `Ok(false)` for [`Problem::Untyped`].
    fn read_doc(
        &mut self,
        doc: Doc<'_>,
        line: u64,
        out: &mut Vec<ProviderEvent>,
    ) -> Result<bool, ProviderError> {
        let dialect = self.dialect.name();
        let mut unknown = None;
        let r = match &mut self.state {
            State::OpenaiChat(s) => s.read(doc, out),
            State::OpenaiResponses(s) => s.read(doc, out, &mut unknown),
            State::Anthropic(s) => s.read(doc, out, &mut unknown),
            State::Bedrock(s) => s.read(doc, out, &mut unknown),
            State::Cohere(s) => s.read(doc, out, &mut unknown),
            State::Gemini(s) => s.read(doc, out),
            State::GeminiInteractions(s) => s.read(doc, out, &mut unknown),
        };
        if matches!(r, Err(Problem::Untyped)) {
            return Ok(false);
        }
        if let Some(t) = unknown {
            if !self.unknown.contains(&t) && self.unknown.len() < 32 {
                self.unknown.push(t);
            }
        }
        r.map(|()| true).map_err(|p| match p {
            Problem::Shape(expected) => ProviderError::Shape {
                line,
                dialect,
                expected,
            },
            Problem::Upstream(message) => ProviderError::Upstream { line, message },
            // Returned above.
            Problem::Untyped => ProviderError::Shape {
                line,
                dialect,
                expected: "a JSON object".to_owned(),
            },
        })
    }
}
