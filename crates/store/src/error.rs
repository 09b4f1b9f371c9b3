//! The error of every store operation.

/// A store operation that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No session or stream with this id.
    #[error("{what} {id} not found")]
    NotFound {
        /// `session` or `stream`.
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// A record with this id exists already.
    #[error("{what} {id} exists already")]
    Exists {
        /// `session` or `stream`.
        what: &'static str,
        /// The id.
        id: String,
    },
    /// An event id that does not continue the stream's log.
    #[error("event {got} of stream {stream_id} does not follow event {last}")]
    EventOrder {
        /// The stream.
        stream_id: String,
        /// The last id in the log.
        last: u64,
        /// The id given.
        got: u64,
    },
    /// Events appended to a stream that is no longer running.
    #[error("stream {stream_id} is {status}, not running")]
    StreamClosed {
        /// The stream.
        stream_id: String,
        /// Its status.
        status: &'static str,
    },
    /// Sources that cannot be registered.
    #[error("invalid sources: {0}")]
    Sources(#[from] citeflow_core::SourceError),
    /// The backend cannot be reached (retry later).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The backend failed or holds data it cannot read.
    #[error("store backend error: {0}")]
    Backend(String),
}

impl StoreError {
    /// `NotFound` for a `what` (`session` or `stream`) with this id.
    pub fn not_found(what: &'static str, id: &str) -> Self {
        StoreError::NotFound {
            what,
            id: id.to_owned(),
        }
    }
}

/// A record (session, stream, sources) as backends keep it: JSON.
///
/// # Errors
/// [`StoreError::Backend`] when the record cannot be written as JSON.
pub fn encode_record<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Backend(format!("record: {e}")))
}

/// A record read back from a backend (see [`encode_record`]).
///
/// # Errors
/// [`StoreError::Backend`] when the stored text is not such a record.
pub fn decode_record<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Backend(format!("stored record: {e}")))
}
