//! What the HTTP layer asks of a model: [`Generate`], fed a [`Job`], answering with
//! [`Piece`]s on a channel.

use std::time::Instant;

use tokio::sync::mpsc;

use crate::error::GenerateError;
use crate::stats::GenerationStats;

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }
}

impl From<citeflow_core::PromptMessage> for ChatMessage {
    fn from(m: citeflow_core::PromptMessage) -> Self {
        ChatMessage::new(m.role, m.content)
    }
}

/// How tokens are picked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// 0 picks the most likely token (greedy).
    ///
    /// ### Default
    /// 0: the answers were measured greedy (crates/llm/README.md), and at 0.7 a 135M model's
    /// answer to the same question changes from run to run, right or wrong. A request's
    /// `temperature` overrides it.
    pub temperature: f32,
    /// Nucleus sampling mass.
    ///
    /// ### Default
    /// 0.95.
    pub top_p: f32,
    /// The random seed; `None` picks one.
    ///
    /// ### Default
    /// None.
    pub seed: Option<u32>,
    /// Most tokens to generate.
    ///
    /// ### Default
    /// 512.
    pub max_tokens: usize,
    /// OpenAI's frequency penalty.
    ///
    /// ### Default
    /// 0.
    pub frequency_penalty: f32,
    /// OpenAI's presence penalty.
    ///
    /// ### Default
    /// 0.
    pub presence_penalty: f32,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: 0.95,
            seed: None,
            max_tokens: 512,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
        }
    }
}

/// One request to generate an answer.
#[derive(Debug, Clone)]
pub struct Job {
    /// The conversation; the model's chat template turns it into the prompt.
    pub messages: Vec<ChatMessage>,
    /// Sampling.
    pub sampling: Sampling,
    /// A GBNF grammar the answer must follow (root rule `root`), e.g. from
    /// [`citation_grammar`](citeflow_core::citation_grammar).
    pub grammar: Option<String>,
    /// When the request arrived (the time to first token counts from here).
    pub received: Instant,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FinishReason {
    /// The model ended its turn.
    Stop,
    /// `max_tokens` was reached.
    Length,
    /// The turn is tool calls (set by the HTTP layer, which reads them).
    ToolCalls,
}

impl FinishReason {
    /// OpenAI's name.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
        }
    }
}

/// One output of a generation, in order: texts, then one `Done` or `Failed`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Piece {
    /// Generated text (whole UTF-8 characters; may be empty-free).
    Text(String),
    /// The end, with usage and timing.
    Done {
        /// Why it stopped.
        finish: FinishReason,
        /// Usage and timing.
        stats: GenerationStats,
    },
    /// Generation failed after it started.
    Failed(GenerateError),
}

/// A model that answers [`Job`]s.
///
/// [`Generate::start`] queues the job and returns a channel that yields the answer's
/// [`Piece`]s; dropping the receiver stops the generation. A job refused once the model
/// looks at it (bad grammar, prompt too long) yields a single [`Piece::Failed`] first, which
/// the HTTP layer turns into a 4xx. `start` must not block.
pub trait Generate: Send + Sync + 'static {
    /// The model's id, shown by `/v1/models` and in every chunk.
    fn model_id(&self) -> &str;

    /// Starts a generation.
    ///
    /// # Errors
    /// [`GenerateError`] when the job cannot even be queued (the model is gone, or an
    /// implementation checks the job up front).
    fn start(&self, job: Job) -> Result<mpsc::Receiver<Piece>, GenerateError>;
}
