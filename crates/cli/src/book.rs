//! Books shared by the commands: opening an EPUB (its warnings reported), how it is cut into
//! passages, and keeping it in a local index.

use std::path::Path;

use anyhow::{Context, Result};
use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::{book_key, fingerprint, BookPassage, Index};
use clap::Args;

use crate::progress::Progress;

/// A book read from a file, with its bytes (for fingerprints).
pub(crate) struct OpenedBook {
    pub(crate) bytes: Vec<u8>,
    pub(crate) book: Book,
}

/// Reads and opens an EPUB; its warnings are left in [`Book::warnings`].
fn read_book(path: &Path) -> Result<OpenedBook> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let book = Book::open(&bytes, &Limits::default())
        .with_context(|| format!("cannot open {} as an EPUB", path.display()))?;
    Ok(OpenedBook { bytes, book })
}

/// Reads and opens a book, printing its warnings (one per broken file) above the progress bar
/// (on stderr with [`Progress::hidden`]).
pub(crate) fn open_book(path: &Path, progress: &Progress) -> Result<OpenedBook> {
    progress.phase(format!("reading {}", path.display()));
    let opened = read_book(path)?;
    for w in opened.book.warnings() {
        progress.println(format!("citeflow: warning: {}: {w}", path.display()));
    }
    Ok(opened)
}

/// Opens a sample book built into the binary.
pub(crate) fn open_sample(name: &str, bytes: &[u8]) -> Result<OpenedBook> {
    Ok(OpenedBook {
        bytes: bytes.to_vec(),
        book: Book::open(bytes, &Limits::default())
            .with_context(|| format!("cannot open the sample book {name}"))?,
    })
}

/// How books are cut into passages.
#[derive(Debug, Clone, Args)]
pub(crate) struct ChunkArgs {
    /// Largest passage, in characters.
    #[arg(long, default_value_t = 800)]
    target_chars: usize,
    /// Characters of a passage's end that the next passage repeats.
    #[arg(long, default_value_t = 100)]
    overlap_chars: usize,
    /// Keep ruby readings (<rt>) in the passage text (CFIs count them either way).
    #[arg(long)]
    ruby: bool,
}

impl ChunkArgs {
    pub(crate) fn settings(&self) -> ChunkSettings {
        ChunkSettings::new()
            .with_target_chars(self.target_chars)
            .with_overlap_chars(self.overlap_chars)
            .with_ruby_text(self.ruby)
    }
}

/// A book's key in the index, its fingerprint, and whether the index already holds it with
/// that fingerprint (same file bytes, same chunk settings).
pub(crate) struct IndexState {
    pub(crate) key: String,
    pub(crate) fingerprint: String,
    pub(crate) is_current: bool,
}

pub(crate) fn index_state(
    index: &Index,
    opened: &OpenedBook,
    settings: &ChunkSettings,
) -> Result<IndexState> {
    let meta = opened.book.metadata();
    let key = book_key(
        meta.identifier.as_deref().unwrap_or(""),
        meta.title.as_deref().unwrap_or(""),
    );
    let fingerprint = fingerprint(&opened.bytes, settings);
    let is_current = index.fingerprint(&key)?.as_deref() == Some(fingerprint.as_str());
    Ok(IndexState {
        key,
        fingerprint,
        is_current,
    })
}

/// Makes sure `index` holds the book as cut by `settings` (re-using what is there when the
/// fingerprint matches). Returns its state before.
pub(crate) fn ensure_indexed(
    index: &mut Index,
    opened: &OpenedBook,
    settings: &ChunkSettings,
    progress: &Progress,
) -> Result<IndexState> {
    let state = index_state(index, opened, settings)?;
    if !state.is_current {
        progress.phase("cutting passages".to_owned());
        let passages = BookPassage::from_book(&opened.book, settings);
        progress.phase(format!("indexing {} passages", passages.len()));
        index.add_book(&passages, &state.fingerprint)?;
    }
    keep_file(index, &state, &opened.bytes)?;
    Ok(state)
}

/// Keeps the book's file with the index (so a server can open the book at a cited place),
/// unless an unchanged book already has its copy there.
pub(crate) fn keep_file(index: &Index, state: &IndexState, bytes: &[u8]) -> Result<()> {
    if !state.is_current || index.epub(&state.key)?.is_none() {
        index.keep_epub(&state.key, bytes)?;
    }
    Ok(())
}
