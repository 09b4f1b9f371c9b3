//! Resource limits applied while reading an EPUB: its zip container and
//! the XML inside it.

/// Limits that protect [`Book::open`](crate::Book::open) (and
/// [`Document::parse_with_limits`](crate::Document::parse_with_limits))
/// against zip bombs, entity expansion and oversized or pathological
/// markup.
///
/// Declared sizes in the zip directory are checked before an entry is read,
/// and the real decompressed size is enforced while reading, so an entry
/// that lies about its size is still stopped. Only the entries the reader
/// needs (container, package, navigation, spine documents, encryption
/// information) are decompressed.
///
/// The XML budgets (entity expansion, nesting depth, attributes, elements)
/// apply to every XML file read: `META-INF/container.xml`, the package
/// document, `META-INF/encryption.xml`, the navigation document or NCX and
/// every spine document. The table-of-contents and spine budgets apply to
/// the book's structure. Past any budget, opening fails with an
/// [`OpenError`](crate::OpenError) that names the budget
/// ([`OpenError::limit`](crate::OpenError::limit)) and the file where it
/// was hit; the work done is bounded by the budget, not by the input.
/// External entities are never fetched.
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
    max_entity_bytes_per_document: u64,
    max_entity_bytes_per_book: u64,
    max_depth: usize,
    max_attributes_per_element: usize,
    max_elements_per_document: usize,
    max_toc_entries: usize,
    max_toc_depth: usize,
    max_spine_items: usize,
    max_spine_refs_per_file: usize,
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
            max_entity_bytes_per_document: 1 << 20,
            max_entity_bytes_per_book: 4 << 20,
            max_depth: 256,
            max_attributes_per_element: 256,
            max_elements_per_document: 1_000_000,
            max_toc_entries: 50_000,
            max_toc_depth: 64,
            max_spine_items: 10_000,
            max_spine_refs_per_file: 4,
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

    /// Sets the most bytes that references to entities declared in a
    /// document's DTD may expand to in one XML file (counted after nested
    /// references are expanded; predefined entities such as `&amp;` and
    /// character references are not counted).
    ///
    /// ### Default
    ///
    /// 1 MiB.
    #[must_use]
    pub fn with_max_entity_bytes_per_document(mut self, bytes: u64) -> Self {
        self.max_entity_bytes_per_document = bytes;
        self
    }

    /// Sets the most bytes that entity references may expand to in all the
    /// XML files of one book together.
    ///
    /// ### Default
    ///
    /// 4 MiB.
    #[must_use]
    pub fn with_max_entity_bytes_per_book(mut self, bytes: u64) -> Self {
        self.max_entity_bytes_per_book = bytes;
        self
    }

    /// Sets how deeply elements may nest in one XML file (the root element
    /// is at depth 1).
    ///
    /// ### Default
    ///
    /// 256.
    #[must_use]
    pub fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Sets the most attributes one element may have (duplicates
    /// included).
    ///
    /// ### Default
    ///
    /// 256.
    #[must_use]
    pub fn with_max_attributes_per_element(mut self, attributes: usize) -> Self {
        self.max_attributes_per_element = attributes;
        self
    }

    /// Sets the most elements one XML file may have; comments and
    /// processing instructions count as elements here.
    ///
    /// ### Default
    ///
    /// 1,000,000.
    #[must_use]
    pub fn with_max_elements_per_document(mut self, elements: usize) -> Self {
        self.max_elements_per_document = elements;
        self
    }

    /// Sets the most entries the table of contents (and, separately, the page
    /// list) may have.
    ///
    /// ### Default
    ///
    /// 50,000.
    #[must_use]
    pub fn with_max_toc_entries(mut self, entries: usize) -> Self {
        self.max_toc_entries = entries;
        self
    }

    /// Sets how deeply table-of-contents entries may nest (top-level
    /// entries are at depth 0).
    ///
    /// ### Default
    ///
    /// 64.
    #[must_use]
    pub fn with_max_toc_depth(mut self, depth: usize) -> Self {
        self.max_toc_depth = depth;
        self
    }

    /// Sets the most `<itemref>`s the spine may have.
    ///
    /// ### Default
    ///
    /// 10,000.
    #[must_use]
    pub fn with_max_spine_items(mut self, items: usize) -> Self {
        self.max_spine_items = items;
        self
    }

    /// Sets how many spine `<itemref>`s may name the same file (each one
    /// is parsed on its own).
    ///
    /// ### Default
    ///
    /// 4.
    #[must_use]
    pub fn with_max_spine_refs_per_file(mut self, refs: usize) -> Self {
        self.max_spine_refs_per_file = refs;
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

    /// The most bytes entity references may expand to in one XML file.
    pub fn max_entity_bytes_per_document(&self) -> u64 {
        self.max_entity_bytes_per_document
    }

    /// The most bytes entity references may expand to in one book.
    pub fn max_entity_bytes_per_book(&self) -> u64 {
        self.max_entity_bytes_per_book
    }

    /// How deeply elements may nest in one XML file.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The most attributes one element may have.
    pub fn max_attributes_per_element(&self) -> usize {
        self.max_attributes_per_element
    }

    /// The most elements one XML file may have.
    pub fn max_elements_per_document(&self) -> usize {
        self.max_elements_per_document
    }

    /// The most entries of the table of contents or page list.
    pub fn max_toc_entries(&self) -> usize {
        self.max_toc_entries
    }

    /// How deeply table-of-contents entries may nest.
    pub fn max_toc_depth(&self) -> usize {
        self.max_toc_depth
    }

    /// The most itemrefs of the spine.
    pub fn max_spine_items(&self) -> usize {
        self.max_spine_items
    }

    /// How many spine itemrefs may name the same file.
    pub fn max_spine_refs_per_file(&self) -> usize {
        self.max_spine_refs_per_file
    }
}
