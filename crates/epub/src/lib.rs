//! I/O-free EPUB reader (placeholder, being written).
