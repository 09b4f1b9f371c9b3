//! The crate's errors, one enum per operation.

use std::path::PathBuf;

/// Why a request to generate text was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    /// The request is malformed (a 400 with code `invalid_request`).
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
    },
    /// The prompt and `max_tokens` do not fit the context (code `context_length_exceeded`).
    #[error("the prompt has {prompt_tokens} tokens and {max_tokens} more were asked for, but the context holds {context_tokens}")]
    ContextLength {
        /// Tokens in the prompt.
        prompt_tokens: usize,
        /// Tokens asked for.
        max_tokens: usize,
        /// The context size.
        context_tokens: usize,
    },
    /// The grammar does not parse (code `invalid_grammar`).
    #[error("the grammar does not parse: {reason}")]
    Grammar {
        /// What llama.cpp said.
        reason: String,
    },
    /// A tool's schema cannot be honoured (code `unsupported_schema` or `invalid_schema`).
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The model worker is gone or llama.cpp failed (a 500).
    #[error("the model failed: {reason}")]
    Model {
        /// What went wrong.
        reason: String,
    },
}

impl GenerateError {
    /// The stable snake_case code used in the error envelope.
    pub fn code(&self) -> &'static str {
        match self {
            GenerateError::Invalid { .. } => "invalid_request",
            GenerateError::ContextLength { .. } => "context_length_exceeded",
            GenerateError::Grammar { .. } => "invalid_grammar",
            GenerateError::Schema(SchemaError::Unsupported { .. }) => "unsupported_schema",
            GenerateError::Schema(_) => "invalid_schema",
            GenerateError::Model { .. } => "model_error",
        }
    }

    /// Whether the caller is at fault (4xx) rather than the model (5xx).
    pub fn is_client_error(&self) -> bool {
        !matches!(self, GenerateError::Model { .. })
    }
}

/// Why a tool's JSON schema cannot become a grammar (a 400 with code `unsupported_schema` or
/// `invalid_schema`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A keyword or form the grammar cannot honour.
    #[error("unsupported JSON schema feature {feature} at {path}")]
    Unsupported {
        /// The keyword (and what about it).
        feature: String,
        /// Where, e.g. `tools[0].function.parameters.properties.q`.
        path: String,
    },
    /// The schema is malformed.
    #[error("invalid JSON schema at {path}: {message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// Where.
        path: String,
    },
}

/// Why a model could not be loaded or served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The GGUF file does not exist.
    #[error("model file {path:?} does not exist")]
    Missing {
        /// The path given.
        path: PathBuf,
    },
    /// llama.cpp could not load the file or create a context.
    #[error("cannot load the model {path:?}: {reason}")]
    Load {
        /// The path given.
        path: PathBuf,
        /// What llama.cpp said.
        reason: String,
    },
    /// The model has no chat template.
    #[error("the model {path:?} has no usable chat template: {reason}")]
    Template {
        /// The path given.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The loopback listener could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
