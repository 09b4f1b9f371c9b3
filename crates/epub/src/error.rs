//! Errors and warnings.

use std::fmt;

/// Why [`Book::open`](crate::Book::open) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The caller's check stopped the job (see [`Book::open_checked`](crate::Book::open_checked)).
    #[error("stopped by the caller before reading {path}")]
    Stopped {
        /// The spine document that was next.
        path: String,
    },
    /// The input is not a readable zip archive.
    #[error("not a zip archive: {reason}")]
    NotZip {
        /// What the zip reader reported.
        reason: String,
    },
    /// The archive has no `META-INF/container.xml`.
    #[error("not an epub: META-INF/container.xml is missing")]
    MissingContainer,
    /// The `mimetype` entry names another format.
    #[error("not an epub: mimetype is {found:?}, expected \"application/epub+zip\"")]
    WrongMimetype {
        /// The content of the `mimetype` entry.
        found: String,
    },
    /// `META-INF/container.xml` cannot be read or names no package.
    #[error("broken META-INF/container.xml: {reason}")]
    BrokenContainer {
        /// What is wrong.
        reason: String,
    },
    /// The package document named by the container is not in the archive.
    #[error("package document {path:?} is missing")]
    MissingPackage {
        /// Path of the package document inside the archive.
        path: String,
    },
    /// The package document is not well-formed or lacks required parts.
    #[error("broken package document {path:?}: {reason}")]
    BrokenPackage {
        /// Path of the package document inside the archive.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Content needed for reading is encrypted (DRM).
    #[error("{path:?} is encrypted (DRM) with {algorithm:?}; encrypted books cannot be read")]
    Encrypted {
        /// Path of the first encrypted document.
        path: String,
        /// The encryption algorithm URI, or a description.
        algorithm: String,
    },
    /// The archive has more entries than [`Limits::max_entries`](crate::Limits::max_entries).
    #[error("archive has {entries} entries, more than the limit of {limit}")]
    TooManyEntries {
        /// Number of entries in the archive.
        entries: usize,
        /// The limit.
        limit: usize,
    },
    /// One entry decompresses to more than [`Limits::max_entry_bytes`](crate::Limits::max_entry_bytes).
    #[error("entry {path:?} decompresses to more than {limit} bytes (at least {bytes})")]
    EntryTooLarge {
        /// The entry.
        path: String,
        /// Size seen (declared, or read so far).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The archive decompresses to more than [`Limits::max_total_uncompressed_bytes`](crate::Limits::max_total_uncompressed_bytes).
    #[error("archive decompresses to more than {limit} bytes (at least {bytes})")]
    TotalTooLarge {
        /// Size seen (declared, or read so far).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// One entry compresses better than [`Limits::max_compression_ratio`](crate::Limits::max_compression_ratio) allows.
    #[error(
        "entry {path:?} has compression ratio {ratio}, more than the limit of {limit} (zip bomb?)"
    )]
    CompressionRatio {
        /// The entry.
        path: String,
        /// Decompressed size divided by compressed size.
        ratio: u64,
        /// The limit.
        limit: u64,
    },
    /// An entry could not be decompressed.
    #[error("cannot read entry {path:?}: {reason}")]
    Entry {
        /// The entry.
        path: String,
        /// What the zip reader reported.
        reason: String,
    },
    /// An XML file of the book exceeds one of the XML budgets of
    /// [`Limits`](crate::Limits) (entity expansion, nesting depth,
    /// attributes, elements).
    #[error("{path:?}: {source}")]
    Xml {
        /// Path of the file inside the archive.
        path: String,
        /// The budget exceeded and where.
        source: ParseError,
    },
    /// The table of contents or page list has more entries than
    /// [`Limits::max_toc_entries`](crate::Limits::max_toc_entries).
    #[error("{path:?}: table of contents has more than {limit} entries")]
    TooManyTocEntries {
        /// Path of the navigation document or NCX.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// A table-of-contents entry nests deeper than
    /// [`Limits::max_toc_depth`](crate::Limits::max_toc_depth).
    #[error("{path:?}: table of contents entry {href:?} is at depth {depth}, more than the limit of {limit}")]
    TocTooDeep {
        /// Path of the navigation document or NCX.
        path: String,
        /// The entry's link.
        href: String,
        /// The entry's depth.
        depth: usize,
        /// The limit.
        limit: usize,
    },
    /// The spine has more itemrefs than
    /// [`Limits::max_spine_items`](crate::Limits::max_spine_items).
    #[error("{path:?}: spine has more than {limit} itemrefs")]
    TooManySpineItems {
        /// Path of the package document.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// More spine itemrefs name one file than
    /// [`Limits::max_spine_refs_per_file`](crate::Limits::max_spine_refs_per_file)
    /// allows.
    #[error("spine names {path:?} more than {limit} times")]
    SpineRepeats {
        /// Path of the repeated file inside the archive.
        path: String,
        /// The limit.
        limit: usize,
    },
}

impl OpenError {
    /// A stable snake_case name of the error, as the Python and JS packages report it:
    /// `stopped`, `not_zip`, `missing_container`, `wrong_mimetype`, `broken_container`,
    /// `missing_package`, `broken_package`, `encrypted`, `entry`, `limit` (any budget of
    /// [`OpenError::limit`]) or `epub`.
    pub fn code(&self) -> &'static str {
        match self {
            OpenError::Stopped { .. } => "stopped",
            OpenError::NotZip { .. } => "not_zip",
            OpenError::MissingContainer => "missing_container",
            OpenError::WrongMimetype { .. } => "wrong_mimetype",
            OpenError::BrokenContainer { .. } => "broken_container",
            OpenError::MissingPackage { .. } => "missing_package",
            OpenError::BrokenPackage { .. } => "broken_package",
            OpenError::Encrypted { .. } => "encrypted",
            OpenError::Entry { .. } => "entry",
            _ if self.limit().is_some() => "limit",
            _ => "epub",
        }
    }

    /// The name of the [`Limits`](crate::Limits) budget this error
    /// exceeded (such as `"max_entity_bytes_per_document"`, the name of its
    /// getter), or `None` when the book is broken rather than over budget.
    pub fn limit(&self) -> Option<&'static str> {
        Some(match self {
            OpenError::TooManyEntries { .. } => "max_entries",
            OpenError::EntryTooLarge { .. } => "max_entry_bytes",
            OpenError::TotalTooLarge { .. } => "max_total_uncompressed_bytes",
            OpenError::CompressionRatio { .. } => "max_compression_ratio",
            OpenError::Xml { source, .. } => source.limit(),
            OpenError::TooManyTocEntries { .. } => "max_toc_entries",
            OpenError::TocTooDeep { .. } => "max_toc_depth",
            OpenError::TooManySpineItems { .. } => "max_spine_items",
            OpenError::SpineRepeats { .. } => "max_spine_refs_per_file",
            _ => return None,
        })
    }
}

/// An XML budget of [`Limits`](crate::Limits) exceeded while parsing one
/// file, and where (1-based line of the file, line ends normalised).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// References to DTD-declared entities expand to more than
    /// [`Limits::max_entity_bytes_per_document`](crate::Limits::max_entity_bytes_per_document).
    #[error(
        "entity references at line {line} expand past the limit of {limit} bytes per document"
    )]
    EntityExpansion {
        /// Line of the reference that went past the budget.
        line: usize,
        /// The limit.
        limit: u64,
    },
    /// Entity references of the whole book expand to more than
    /// [`Limits::max_entity_bytes_per_book`](crate::Limits::max_entity_bytes_per_book).
    #[error("entity references at line {line} expand past the limit of {limit} bytes per book")]
    BookEntityExpansion {
        /// Line of the reference that went past the budget.
        line: usize,
        /// The limit.
        limit: u64,
    },
    /// Elements nest deeper than
    /// [`Limits::max_depth`](crate::Limits::max_depth).
    #[error("element at line {line} nests deeper than the limit of {limit}")]
    TooDeep {
        /// Line of the element that went past the budget.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// An element has more attributes than
    /// [`Limits::max_attributes_per_element`](crate::Limits::max_attributes_per_element).
    #[error("element at line {line} has more than {limit} attributes")]
    TooManyAttributes {
        /// Line of the attribute that went past the budget.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// The file has more elements (comments and processing instructions
    /// included) than
    /// [`Limits::max_elements_per_document`](crate::Limits::max_elements_per_document).
    #[error("more than {limit} elements (at line {line})")]
    TooManyElements {
        /// Line of the element that went past the budget.
        line: usize,
        /// The limit.
        limit: usize,
    },
}

impl ParseError {
    /// The name of the [`Limits`](crate::Limits) budget exceeded (the name
    /// of its getter, such as `"max_depth"`).
    pub fn limit(&self) -> &'static str {
        match self {
            ParseError::EntityExpansion { .. } => "max_entity_bytes_per_document",
            ParseError::BookEntityExpansion { .. } => "max_entity_bytes_per_book",
            ParseError::TooDeep { .. } => "max_depth",
            ParseError::TooManyAttributes { .. } => "max_attributes_per_element",
            ParseError::TooManyElements { .. } => "max_elements_per_document",
        }
    }
}

/// Something wrong in a book that was read anyway.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Warning {
    /// Path inside the archive of the file concerned.
    pub path: String,
    /// What is wrong, in lowercase.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Why [`Book::resolve`](crate::Book::resolve) could not find a CFI's target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The first step does not select the package's `<spine>`.
    #[error("cfi {cfi} does not start at the spine: step /{step} is not /{spine_step}")]
    NotSpine {
        /// The CFI.
        cfi: String,
        /// The first step's index.
        step: u32,
        /// The spine's step index in this package.
        spine_step: u32,
    },
    /// A step points past the children that exist.
    #[error("cfi {cfi}: step {depth} (/{step}) has no target")]
    StepOutOfRange {
        /// The CFI.
        cfi: String,
        /// Zero-based number of the failing step.
        depth: usize,
        /// The failing step's index.
        step: u32,
    },
    /// The spine item's document could not be read.
    #[error("cfi {cfi}: spine item {spine_index} has no readable document")]
    MissingDocument {
        /// The CFI.
        cfi: String,
        /// The spine item.
        spine_index: usize,
    },
    /// The path has a shape this reader does not follow (such as a second
    /// indirection into an embedded document, or steps after a character
    /// data step).
    #[error("cfi {cfi}: unsupported path: {reason}")]
    Unsupported {
        /// The CFI.
        cfi: String,
        /// What is not supported.
        reason: &'static str,
    },
    /// A character offset lies past the end of its text.
    #[error("cfi {cfi}: offset {offset} is past the end of the text ({len} utf-16 units)")]
    OffsetOutOfRange {
        /// The CFI.
        cfi: String,
        /// The offset.
        offset: u32,
        /// Length of the chunk in UTF-16 code units.
        len: u32,
    },
    /// The two ends of a range lie in different spine documents.
    #[error("range ends are in different documents (spine {start} and {end})")]
    CrossDocumentRange {
        /// Spine index of the start.
        start: usize,
        /// Spine index of the end.
        end: usize,
    },
}

impl ResolveError {
    /// A stable snake_case name of the error, as the Python and JS packages report it:
    /// `not_spine`, `step_out_of_range`, `missing_document`, `unsupported`,
    /// `offset_out_of_range` or `cross_document_range`.
    pub fn code(&self) -> &'static str {
        match self {
            ResolveError::NotSpine { .. } => "not_spine",
            ResolveError::StepOutOfRange { .. } => "step_out_of_range",
            ResolveError::MissingDocument { .. } => "missing_document",
            ResolveError::Unsupported { .. } => "unsupported",
            ResolveError::OffsetOutOfRange { .. } => "offset_out_of_range",
            ResolveError::CrossDocumentRange { .. } => "cross_document_range",
        }
    }
}
