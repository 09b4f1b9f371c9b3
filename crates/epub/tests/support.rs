//! Finding the shared fixtures.

use std::path::PathBuf;
use std::sync::OnceLock;

use citeflow_epub::{Book, Limits};

/// The shared data directory: `CITEFLOW_SHARED_DIR`, else `../shared` next
/// to the workspace root. Panics naming the path when it is missing.
pub(crate) fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")));
    assert!(
        dir.join("fixtures").is_dir(),
        "shared fixtures directory not found at {} (set CITEFLOW_SHARED_DIR)",
        dir.display()
    );
    dir
}

pub(crate) fn fixture(rel: &str) -> PathBuf {
    let p = shared_dir().join("fixtures").join(rel);
    assert!(p.exists(), "fixture {} is missing", p.display());
    p
}

pub(crate) fn read(rel: &str) -> Vec<u8> {
    let p = fixture(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

pub(crate) fn read_json(rel: &str) -> serde_json::Value {
    serde_json::from_slice(&read(rel)).unwrap_or_else(|e| panic!("bad json in {rel}: {e}"))
}

/// The seven fixture books.
pub(crate) const BOOKS: [&str; 7] = [
    "alice.epub",
    "cfi-spec-example.epub",
    "childrens-literature.epub",
    "georgia-cfi.epub",
    "kusamakura-japanese-vertical-writing.epub",
    "regime-anticancer-arabic.epub",
    "wasteland.epub",
];

/// Opens a fixture book (cached per test binary).
pub(crate) fn book(name: &str) -> &'static Book {
    static BOOKS_CACHE: OnceLock<Vec<(String, Book)>> = OnceLock::new();
    let all = BOOKS_CACHE.get_or_init(|| {
        BOOKS
            .iter()
            .map(|n| {
                let bytes = read(&format!("epub/{n}"));
                let b = Book::open(&bytes, &Limits::default())
                    .unwrap_or_else(|e| panic!("cannot open {n}: {e}"));
                ((*n).to_owned(), b)
            })
            .collect()
    });
    &all.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("unknown fixture book {name}"))
        .1
}
