//! Error types, one per operation.

/// Invalid settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A name (syntax, style, policy) that does not exist.
    #[error("unknown {what} {value:?}{}", one_of(expected))]
    UnknownName {
        /// What kind of name.
        what: &'static str,
        /// The name given.
        value: String,
        /// The names there are (empty when not listed).
        expected: &'static [&'static str],
    },
    /// An id prefix that is empty or holds a character that cannot stand in a marker.
    #[error("invalid id prefix {prefix:?}: it must be non-empty and hold no whitespace, brackets, <, >, comma, backtick or quote")]
    InvalidIdPrefix {
        /// The prefix given.
        prefix: String,
    },
    /// An id pattern that is not `prefix<digits>` or `prefix<word>`.
    #[error("invalid id pattern {pattern:?}: expected PREFIX<digits> or PREFIX<word>, e.g. source_<digits>")]
    InvalidIdPattern {
        /// The pattern given.
        pattern: String,
    },
    /// A hold-back cap below the minimum.
    #[error("max_pending_bytes {bytes} is below the minimum {min}")]
    PendingCapTooSmall {
        /// The cap given.
        bytes: usize,
        /// The minimum.
        min: usize,
    },
    /// An anchor indexing cap outside the accepted range.
    #[error("max_anchor_source_bytes {bytes} is outside {min}..={max}")]
    AnchorSourceCap {
        /// The cap given.
        bytes: usize,
        /// The smallest accepted.
        min: usize,
        /// The largest accepted.
        max: usize,
    },
    /// A style template longer than [`MAX_TEMPLATE_BYTES`](crate::MAX_TEMPLATE_BYTES).
    #[error("template of {bytes} bytes is longer than the limit of {max} bytes")]
    TemplateTooLong {
        /// The template's length in bytes.
        bytes: usize,
        /// The limit.
        max: usize,
    },
}

/// `, expected one of a, b, c` (nothing for no names).
fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        names => format!(", expected one of {}", names.join(", ")),
    }
}

/// A source set that cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A source without an id.
    #[error("source at index {index} has an empty id")]
    EmptyId {
        /// Its index in the round.
        index: usize,
    },
    /// An id given twice in one round.
    #[error("source id {id} is given twice in one round")]
    DuplicateId {
        /// The id.
        id: String,
    },
}

/// A numbering table that would break its invariants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NumberingError {
    /// The key already has another number, or the number another key.
    #[error("number {number} for key {key:?} conflicts with {existing}")]
    Conflict {
        /// The key.
        key: String,
        /// The number offered.
        number: u32,
        /// What it conflicts with.
        existing: String,
    },
    /// Numbers start at 1.
    #[error("number 0 offered for key {key:?}; numbers start at 1")]
    Zero {
        /// The key.
        key: String,
    },
}

/// A failure while rewriting a stream.
///
/// [`RewriteError::Gap`], [`RewriteError::NotAwaiting`], [`RewriteError::AwaitingNumber`]
/// and [`RewriteError::UnknownSource`] reject one call and change nothing; every other error is fatal: the rewriter keeps what it had emitted, and every later
/// call returns [`RewriteError::Failed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RewriteError {
    /// Bytes that are not UTF-8, under [`InvalidUtf8::Error`](crate::InvalidUtf8::Error).
    #[error("invalid utf-8 at input byte {byte_offset}")]
    InvalidUtf8 {
        /// Offset of the first invalid byte in the whole input.
        byte_offset: u64,
    },
    /// A chunk whose sequence number or offset leaves a hole.
    #[error("chunk gap: expected {unit} {expected}, got {got}")]
    Gap {
        /// `sequence` or `byte offset`.
        unit: &'static str,
        /// What was expected next.
        expected: u64,
        /// What came.
        got: u64,
    },
    /// Input after [`Rewriter::end`](crate::Rewriter::end).
    #[error("the stream has already ended")]
    Ended,
    /// [`Rewriter::provide_number`](crate::Rewriter::provide_number) when no number was asked
    /// for, or for another key.
    #[error("no number is awaited for key {key:?}")]
    NotAwaiting {
        /// The key given.
        key: String,
    },
    /// A provider citation written while an [`Event::NumberNeeded`](crate::Event::NumberNeeded)
    /// waits for its answer (nothing changes; answer it first).
    #[error("a number is awaited for key {key:?}: answer it before writing a citation")]
    AwaitingNumber {
        /// The key awaited.
        key: String,
    },
    /// A provider citation of a source id that is not registered (nothing changes).
    #[error("citation of unknown source id {id:?}: register it with append_sources first")]
    UnknownSource {
        /// The id.
        id: String,
    },
    /// A number from the store that breaks the numbering.
    #[error(transparent)]
    Numbering(#[from] NumberingError),
    /// The final check found the body and the source list disagreeing.
    #[error("verification failed: {0}")]
    Verification(String),
    /// An earlier fatal error.
    #[error("the rewriter failed earlier: {0}")]
    Failed(String),
}

/// A snapshot that cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// A snapshot of another format version.
    #[error("snapshot format version {found} is not supported (expected {expected})")]
    Version {
        /// The version found.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
}
