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
