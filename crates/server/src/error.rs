//! [`ApiError`]: every error the API returns, in one JSON envelope.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use citeflow_core::provider::ProviderError;
use citeflow_core::{RewriteError, SettingsError, SourceError};
use citeflow_epub::OpenError;
use citeflow_index::IndexError;
use citeflow_store::StoreError;

use crate::code::ErrorCode;

/// An API request that failed. Renders as
/// `{"error": {"code": "…", "message": "…", "type": "…", "param": null}}`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// Missing or unknown API key.
    #[error("missing or invalid api key")]
    Unauthorized,
    /// No such session or stream (or it belongs to another key).
    #[error("{what} {id} not found")]
    NotFound {
        /// `session` or `stream`.
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// No book with this key in the book index (or no book index at all).
    #[error("book {key:?} not found: GET /v1/books lists the books of this server")]
    BookNotFound {
        /// The key asked for.
        key: String,
        /// The request field that named it (`None`: the path).
        param: Option<&'static str>,
    },
    /// A book whose file the index does not keep (it was added by an older citeflow).
    #[error(
        "the book index keeps no copy of book {key:?}'s file (it was added by an older \
         citeflow): add the book again (citeflow serve --book, citeflow ingest --index, or \
         POST /v1/books)"
    )]
    BookFileMissing {
        /// The book's key.
        key: String,
    },
    /// A CFI that names no place in the book.
    #[error("cfi not found in book {key:?}: {reason}")]
    CfiNotFound {
        /// The book's key.
        key: String,
        /// Why it does not resolve.
        reason: String,
    },
    /// `POST /v1/books` on a server without a book index.
    #[error("this server keeps no book index (start it with --index DIR)")]
    NoBookIndex,
    /// An uploaded book that cannot be read.
    #[error("not a readable EPUB: {0}")]
    InvalidEpub(String),
    /// An uploaded book past one of the reading budgets of
    /// `citeflow_epub::Limits` (zip bomb, entity expansion, deep nesting…):
    /// 413 `invalid_epub` whose `param` names the budget.
    #[error("the EPUB exceeds the limit {limit}: {message}")]
    EpubOverBudget {
        /// What was exceeded, and where.
        message: String,
        /// The budget's name (a `citeflow_epub::Limits` getter, such as
        /// `max_entity_bytes_per_document`).
        limit: &'static str,
    },
    /// No such route.
    #[error("no route for {method} {path}")]
    NoRoute {
        /// The method.
        method: String,
        /// The path.
        path: String,
    },
    /// The route exists but not for this method.
    #[error("{method} is not allowed on {path}")]
    MethodNotAllowed {
        /// The method.
        method: String,
        /// The path.
        path: String,
    },
    /// A request whose `Origin` is neither the server's own nor one of
    /// `ServerSettings::with_allowed_origins` (403 `forbidden_origin`).
    #[error(
        "origin {origin:?} is not allowed (the server's own page and --allow-origin ones are)"
    )]
    ForbiddenOrigin {
        /// The `Origin` sent.
        origin: String,
    },
    /// A body without the content type the route reads (415 `unsupported_media_type`).
    #[error("the body's content type is {given:?}; send content-type: {expected}")]
    UnsupportedMediaType {
        /// The `Content-Type` sent (empty if none).
        given: String,
        /// The one the route reads.
        expected: &'static str,
    },
    /// The body was not received within `body_read_timeout_ms` (408 `request_timeout`).
    #[error("the request body was not received within {timeout_ms} ms")]
    RequestTimeout {
        /// The time-out.
        timeout_ms: u64,
    },
    /// The body is larger than the limit.
    #[error("request body is larger than {max_bytes} bytes")]
    BodyTooLarge {
        /// The limit.
        max_bytes: usize,
    },
    /// A malformed request.
    #[error("{message}")]
    InvalidRequest {
        /// What was wrong.
        message: String,
        /// The offending field, if one.
        param: Option<String>,
    },
    /// Too many sources in one request.
    #[error("{count} sources given, at most {max} are allowed")]
    TooManySources {
        /// How many were given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A source whose text is too long.
    #[error("source {id} has {bytes} bytes of text, at most {max} are allowed")]
    SourceTooLarge {
        /// The source id.
        id: String,
        /// Its text size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The key has as many answers running as it may.
    #[error(
        "this API key has {max} answers running, at most {max} are allowed at once \
         (max_streams_per_key); retry when one ends"
    )]
    TooManyStreams {
        /// The limit.
        max: usize,
    },
    /// The key has as many sessions as it may.
    #[error(
        "this API key has {max} sessions, at most {max} are allowed (max_sessions_per_key); \
         delete one (DELETE /v1/sessions/{{id}}) or wait until idle ones expire"
    )]
    TooManySessions {
        /// The limit.
        max: usize,
    },
    /// The session holds as many rounds as it may.
    #[error(
        "the session has {max} rounds of sources, at most {max} are allowed \
         (max_rounds_per_session); start a new session"
    )]
    TooManyRounds {
        /// The limit.
        max: usize,
    },
    /// A source whose id, title, url, key, locator or metadata is too long.
    #[error("{param} has {bytes} bytes, at most {max} are allowed")]
    SourceFieldTooLarge {
        /// Where: `sources[3].title`.
        param: String,
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Sources that cannot be registered.
    #[error("invalid sources: {0}")]
    InvalidSources(#[from] SourceError),
    /// An invalid `citeflow` setting.
    #[error("invalid citeflow setting: {0}")]
    InvalidSetting(#[from] SettingsError),
    /// A `citeflow.settings` member that does not read as its setting (a name that is none
    /// of the setting's, a value of the wrong type).
    #[error("invalid citeflow setting: {message}")]
    SettingsField {
        /// What was wrong, naming the member.
        message: String,
        /// `citeflow.settings`.
        param: &'static str,
    },
    /// The upstream cannot be reached.
    #[error("the upstream model server cannot be reached")]
    UpstreamUnreachable,
    /// The upstream did not answer in time.
    #[error("the upstream model server did not answer within {timeout_ms} ms")]
    UpstreamTimeout {
        /// The time-out.
        timeout_ms: u64,
    },
    /// The upstream answered with an error status.
    #[error("the upstream model server answered {status}: {message}")]
    UpstreamStatus {
        /// Its status.
        status: u16,
        /// Its error message (or a short excerpt of its body).
        message: String,
    },
    /// The upstream answer cannot be read.
    #[error("the upstream answer is malformed: {0}")]
    UpstreamMalformed(String),
    /// The store cannot be reached or cannot take writes now (full disk, read-only or
    /// locked file, Redis out of memory or read-only), or the book index or an upload's file
    /// meets a full disk: 503 `store_unavailable` with a `Retry-After` header.
    #[error("the store is unavailable, retry later")]
    StoreUnavailable,
    /// The request bodies being read hold the whole of `body_budget_bytes`, and this one's
    /// share was not free within `body_budget_wait_ms`: 503 `overloaded` with a
    /// `Retry-After` header.
    #[error(
        "the server is reading as many request bodies as its memory budget allows \
         ({budget_bytes} bytes, body_budget_bytes) and none ended within {wait_ms} ms; retry later"
    )]
    Overloaded {
        /// The budget.
        budget_bytes: usize,
        /// How long the body waited for its share.
        wait_ms: u64,
    },
    /// Anything else (the cause is logged).
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::ForbiddenOrigin { .. } => StatusCode::FORBIDDEN,
            ApiError::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType { .. } => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::NotFound { .. }
            | ApiError::NoRoute { .. }
            | ApiError::BookNotFound { .. }
            | ApiError::BookFileMissing { .. }
            | ApiError::CfiNotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::NoBookIndex => StatusCode::CONFLICT,
            ApiError::BodyTooLarge { .. } | ApiError::EpubOverBudget { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::TooManyStreams { .. }
            | ApiError::TooManyRounds { .. }
            | ApiError::TooManySessions { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::InvalidRequest { .. }
            | ApiError::TooManySources { .. }
            | ApiError::SourceTooLarge { .. }
            | ApiError::SourceFieldTooLarge { .. }
            | ApiError::InvalidSources(_)
            | ApiError::InvalidSetting(_)
            | ApiError::SettingsField { .. }
            | ApiError::InvalidEpub(_) => StatusCode::BAD_REQUEST,
            ApiError::UpstreamUnreachable | ApiError::UpstreamMalformed(_) => {
                StatusCode::BAD_GATEWAY
            }
            ApiError::UpstreamTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            ApiError::UpstreamStatus { status, .. } => match *status {
                400..=499 => StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY),
                _ => StatusCode::BAD_GATEWAY,
            },
            ApiError::StoreUnavailable | ApiError::Overloaded { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable snake_case code.
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// The code, from the table shared with [`StreamError`].
    pub(crate) fn error_code(&self) -> ErrorCode {
        match self {
            ApiError::Unauthorized => ErrorCode::InvalidApiKey,
            ApiError::ForbiddenOrigin { .. } => ErrorCode::ForbiddenOrigin,
            ApiError::RequestTimeout { .. } => ErrorCode::RequestTimeout,
            ApiError::UnsupportedMediaType { .. } => ErrorCode::UnsupportedMediaType,
            ApiError::NotFound { .. } => ErrorCode::NotFound,
            ApiError::NoRoute { .. } => ErrorCode::UnknownRoute,
            ApiError::MethodNotAllowed { .. } => ErrorCode::MethodNotAllowed,
            ApiError::BookNotFound { .. } => ErrorCode::BookNotFound,
            ApiError::BookFileMissing { .. } => ErrorCode::BookFileMissing,
            ApiError::CfiNotFound { .. } => ErrorCode::CfiNotFound,
            ApiError::NoBookIndex => ErrorCode::NoBookIndex,
            ApiError::InvalidEpub(_) | ApiError::EpubOverBudget { .. } => ErrorCode::InvalidEpub,
            ApiError::BodyTooLarge { .. } => ErrorCode::BodyTooLarge,
            ApiError::InvalidRequest { .. } => ErrorCode::InvalidRequest,
            ApiError::TooManySources { .. } => ErrorCode::TooManySources,
            ApiError::TooManyStreams { .. } => ErrorCode::TooManyStreams,
            ApiError::TooManyRounds { .. } => ErrorCode::TooManyRounds,
            ApiError::TooManySessions { .. } => ErrorCode::TooManySessions,
            ApiError::SourceTooLarge { .. } => ErrorCode::SourceTooLarge,
            ApiError::SourceFieldTooLarge { .. } => ErrorCode::SourceFieldTooLarge,
            ApiError::InvalidSources(_) => ErrorCode::InvalidSources,
            ApiError::InvalidSetting(_) | ApiError::SettingsField { .. } => {
                ErrorCode::InvalidSetting
            }
            ApiError::UpstreamUnreachable => ErrorCode::UpstreamUnreachable,
            ApiError::UpstreamTimeout { .. } => ErrorCode::UpstreamTimeout,
            ApiError::UpstreamStatus { .. } => ErrorCode::UpstreamError,
            ApiError::UpstreamMalformed(_) => ErrorCode::UpstreamMalformed,
            ApiError::StoreUnavailable => ErrorCode::StoreUnavailable,
            ApiError::Overloaded { .. } => ErrorCode::Overloaded,
            ApiError::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The OpenAI error `type`.
    pub fn kind(&self) -> &'static str {
        match self.status().as_u16() {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            400..=499 => "invalid_request_error",
            _ => self.error_code().server_kind(),
        }
    }

    /// The envelope as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let param = match self {
            ApiError::InvalidRequest { param, .. } => param.clone(),
            ApiError::TooManySources { .. } | ApiError::SourceTooLarge { .. } => {
                Some("sources".to_owned())
            }
            ApiError::SourceFieldTooLarge { param, .. } => Some(param.clone()),
            ApiError::SettingsField { param, .. } => Some((*param).to_owned()),
            ApiError::BookNotFound { param, .. } => param.map(str::to_owned),
            ApiError::CfiNotFound { .. } => Some("cfi".to_owned()),
            ApiError::EpubOverBudget { limit, .. } => Some((*limit).to_owned()),
            ApiError::ForbiddenOrigin { .. } => Some("Origin".to_owned()),
            ApiError::UnsupportedMediaType { .. } => Some("Content-Type".to_owned()),
            _ => None,
        };
        envelope(self.code(), &self.to_string(), self.kind(), param)
    }

    pub(crate) fn invalid(message: impl Into<String>, param: Option<&str>) -> Self {
        ApiError::InvalidRequest {
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }
}

/// `{"error": {"code", "message", "type", "param"}}`.
pub(crate) fn envelope(
    code: &str,
    message: &str,
    kind: &str,
    param: Option<String>,
) -> serde_json::Value {
    serde_json::json!({"error": {"code": code, "message": message, "type": kind, "param": param}})
}

/// The `Retry-After` of a `store_unavailable` answer, in seconds: about as long as `/readyz`
/// keeps its write probe's answer.
pub(crate) const STORE_RETRY_AFTER_SECS: u64 = 1;

/// The `Retry-After` of an `overloaded` answer, in seconds.
pub(crate) const OVERLOADED_RETRY_AFTER_SECS: u64 = 1;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(cause) = &self {
            tracing::error!(%cause, "internal error");
        }
        let mut response = (self.status(), axum::Json(self.to_json())).into_response();
        let retry_after = match self {
            ApiError::StoreUnavailable => Some(STORE_RETRY_AFTER_SECS),
            ApiError::Overloaded { .. } => Some(OVERLOADED_RETRY_AFTER_SECS),
            _ => None,
        };
        if let Some(secs) = retry_after {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { what, id } => ApiError::NotFound { what, id },
            StoreError::Sources(e) => ApiError::InvalidSources(e),
            StoreError::Unavailable(cause) => {
                tracing::error!(%cause, "store unavailable");
                ApiError::StoreUnavailable
            }
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// A full disk is `store_unavailable` (the cause logged), as for the store; any other
/// failure of the index is internal.
impl From<IndexError> for ApiError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::StorageFull { reason } => {
                tracing::error!(%reason, "book index: the disk is full");
                ApiError::StoreUnavailable
            }
            e => ApiError::Internal(format!("book index: {e}")),
        }
    }
}

impl From<RewriteError> for ApiError {
    fn from(e: RewriteError) -> Self {
        ApiError::Internal(format!("rewrite: {e}"))
    }
}

/// Why a stream stops early: the code and message of the error event that ends it. Each
/// wire writes it in its own form (the envelope of [`StreamError::payload`] for chat
/// completions, a named `error` event for responses and messages, an `error` part for the AI
/// SDK stream); a non-streaming answer turns it into an [`ApiError`].
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub(crate) struct StreamError {
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
}

impl StreamError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        StreamError {
            code,
            message: message.into(),
        }
    }

    /// `internal_error`; the cause is logged, never sent.
    pub(crate) fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error in a stream");
        StreamError::new(ErrorCode::InternalError, "internal error")
    }

    /// `store_unavailable` when the store fails mid-stream; the cause is logged, never sent.
    pub(crate) fn store(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "store error in a stream");
        StreamError::new(
            ErrorCode::StoreUnavailable,
            "the store failed; the stream cannot go on",
        )
    }

    /// The payload of a chat completions error event: the envelope, typed by
    /// [`ErrorCode::server_kind`].
    pub(crate) fn payload(&self) -> String {
        envelope(
            self.code.as_str(),
            &self.message,
            self.code.server_kind(),
            None,
        )
        .to_string()
    }
}

impl From<ProviderError> for StreamError {
    fn from(e: ProviderError) -> Self {
        match e {
            ProviderError::Upstream { .. } => {
                StreamError::new(ErrorCode::UpstreamError, e.to_string())
            }
            _ => StreamError::new(ErrorCode::UpstreamMalformed, e.to_string()),
        }
    }
}

/// A failure of a non-streaming answer as its error response: the upstream's as
/// `upstream_malformed`, any other as an internal error.
impl From<StreamError> for ApiError {
    fn from(e: StreamError) -> Self {
        if e.code.is_upstream() {
            ApiError::UpstreamMalformed(e.message)
        } else {
            ApiError::Internal(e.message)
        }
    }
}

/// Why a call of the book library (`library.rs`) failed; the API answers it as an [`ApiError`]
/// with the codes and messages of the book routes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum LibraryError {
    /// No book with this key that the owner may see.
    #[error("book {key:?} not found")]
    BookNotFound {
        key: String,
        /// The request field that named it (`None`: the path).
        param: Option<&'static str>,
    },
    /// The index keeps no copy of the book's file (added by an older citeflow).
    #[error("the book index keeps no copy of book {key:?}'s file")]
    FileMissing { key: String },
    /// The kept file of a book cannot be opened again.
    #[error("book {key}: its kept file: {source}")]
    KeptFile { key: String, source: OpenError },
    /// An upload that is not a readable EPUB, or is past one of the reader's budgets.
    #[error("not a readable EPUB: {0}")]
    Unreadable(#[source] OpenError),
    /// An upload with no text to index.
    #[error("the book has no text to index")]
    NoText,
    /// An upload that took longer than `ingest_timeout_ms` to read and cut.
    #[error(
        "the book took longer than {timeout_ms} ms to read and cut (stopped before {before}); \
         --ingest-timeout-ms sets the limit"
    )]
    TooSlow { timeout_ms: u64, before: String },
    /// The client of an upload left before it was read.
    #[error("the client left during the upload")]
    ClientLeft,
    /// A book just added is not in the index.
    #[error("book {key} missing after indexing")]
    MissingAfterAdd { key: String },
    /// The file an upload was received into cannot be read back.
    #[error("upload file {path:?}: {reason}")]
    Spool {
        path: std::path::PathBuf,
        reason: String,
    },
    /// The pool of uploads is closed (it never is while the library lives).
    #[error("ingest pool: {0}")]
    IngestPool(#[from] tokio::sync::AcquireError),
    /// The index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
}

impl From<LibraryError> for ApiError {
    fn from(e: LibraryError) -> Self {
        match e {
            LibraryError::BookNotFound { key, param } => ApiError::BookNotFound { key, param },
            LibraryError::FileMissing { key } => ApiError::BookFileMissing { key },
            // 413 naming the budget when the upload exceeds one of the reader's limits.
            LibraryError::Unreadable(e) => match e.limit() {
                Some(limit) => ApiError::EpubOverBudget {
                    message: e.to_string(),
                    limit,
                },
                None => ApiError::InvalidEpub(e.to_string()),
            },
            e @ LibraryError::NoText => ApiError::InvalidEpub(e.to_string()),
            e @ LibraryError::TooSlow { .. } => ApiError::EpubOverBudget {
                message: e.to_string(),
                limit: "ingest_timeout_ms",
            },
            // Nobody reads this answer; it ends the task.
            e @ LibraryError::ClientLeft => ApiError::invalid(e.to_string(), None),
            LibraryError::Index(e) => ApiError::from(e),
            e @ (LibraryError::KeptFile { .. }
            | LibraryError::MissingAfterAdd { .. }
            | LibraryError::Spool { .. }
            | LibraryError::IngestPool(_)) => ApiError::Internal(e.to_string()),
        }
    }
}
