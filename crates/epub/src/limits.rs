//! Resource limits applied while reading an EPUB's zip container.

/// Limits that protect [`Book::open`](crate::Book::open) against zip bombs
/// and oversized input.
///
/// Declared sizes in the zip directory are checked before an entry is read,
/// and the real decompressed size is enforced while reading, so an entry
/// that lies about its size is still stopped. Only the entries the reader
/// needs (container, package, navigation, spine documents, encryption
/// information) are decompressed.
///
/// ```
/// let limits = citeflow_epub::Limits::new()
///     .with_max_entry_bytes(16 << 20)
///     .with_max_compression_ratio(50);
/// assert_eq!(limits.max_entry_bytes(), 16 << 20);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    max_total_uncompressed_bytes: u64,
    max_entry_bytes: u64,
    max_compression_ratio: u64,
    max_entries: usize,
}

/// Entries smaller than this are never rejected for their compression
/// ratio (small, repetitive files legitimately compress very well).
pub(crate) const RATIO_FLOOR_BYTES: u64 = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_uncompressed_bytes: 512 << 20,
            max_entry_bytes: 64 << 20,
            max_compression_ratio: 100,
            max_entries: 10_000,
        }
    }
}

impl Limits {
    /// The default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the most bytes decompressed from the whole archive, counting
    /// declared sizes of all entries and the bytes actually read.
    ///
    /// ### Default
    ///
    /// 512 MiB.
    #[must_use]
    pub fn with_max_total_uncompressed_bytes(mut self, bytes: u64) -> Self {
        self.max_total_uncompressed_bytes = bytes;
        self
    }

    /// Sets the most bytes one entry may decompress to.
    ///
    /// ### Default
    ///
    /// 64 MiB.
    #[must_use]
    pub fn with_max_entry_bytes(mut self, bytes: u64) -> Self {
        self.max_entry_bytes = bytes;
        self
    }

    /// Sets the highest allowed ratio of decompressed to compressed size for
    /// one entry. Entries under 1 MiB decompressed are exempt.
    ///
    /// ### Default
    ///
    /// 100.
    #[must_use]
    pub fn with_max_compression_ratio(mut self, ratio: u64) -> Self {
        self.max_compression_ratio = ratio;
        self
    }

    /// Sets the most entries the archive may have.
    ///
    /// ### Default
    ///
    /// 10,000.
    #[must_use]
    pub fn with_max_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries;
        self
    }

    /// The most bytes decompressed from the whole archive.
    pub fn max_total_uncompressed_bytes(&self) -> u64 {
        self.max_total_uncompressed_bytes
    }

    /// The most bytes one entry may decompress to.
    pub fn max_entry_bytes(&self) -> u64 {
        self.max_entry_bytes
    }

    /// The highest allowed compression ratio of one entry.
    pub fn max_compression_ratio(&self) -> u64 {
        self.max_compression_ratio
    }

    /// The most entries the archive may have.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }
}
