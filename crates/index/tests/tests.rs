//! Integration tests of `citeflow-index` on the shared fixture books.

mod eval;
#[cfg(feature = "embed")]
mod hybrid;
mod search;

use std::path::PathBuf;

use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::BookPassage;

/// The shared fixtures directory: `CITEFLOW_SHARED_DIR`, else `../shared` beside the checkout.
pub(crate) fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    assert!(
        dir.join("fixtures").is_dir(),
        "shared fixtures not found at {} (set CITEFLOW_SHARED_DIR)",
        dir.display()
    );
    dir
}

/// The bytes of a fixture book.
pub(crate) fn book_bytes(name: &str) -> Vec<u8> {
    let p = shared_dir().join("fixtures/epub").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The passages of a fixture book with the default settings.
pub(crate) fn passages(name: &str) -> Vec<BookPassage> {
    let book = Book::open(&book_bytes(name), &Limits::default()).expect("fixture opens");
    BookPassage::from_book(&book, &ChunkSettings::default())
}
