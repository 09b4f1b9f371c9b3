//! Local full-text index of EPUB passages, returning ready citeflow sources.
//!
//! [`BookPassage`] is one passage of a book ([`citeflow_epub::Passage`]) with the fields a
//! citation needs: a source id (`<book_key>#p<n>`), a title (book — chapter), a `book:` url,
//! the text and a core [`Locator`](citeflow_core::Locator) with chapter and range CFI. Its
//! JSON is what `citeflow ingest` writes, one line a passage, and each line also reads as a
//! [`citeflow_core::Source`]. [`Index`] stores the passages in a tantivy index (a directory,
//! or memory) and finds them again by free-text query; [`Hit::passage`] and
//! [`BookPassage::to_source`] give the sources to show the model; [`Index::books`] lists what
//! it holds ([`BookInfo`]: key, title, passage count, chapters). The text is tokenized by
//! [`CjkBigramTokenizer`]: overlapping character bigrams for Chinese, Japanese and Korean
//! (which have no spaces between words), words for everything else. [`eval`] scores a
//! ranking against questions whose evidence locates the answering passages (recall@k, MRR;
//! `examples/retrieval_eval.rs` and `eval/questions.json`). With the `embed` feature (off by
//! default), `DenseIndex` holds multilingual-e5-small vectors of the passages beside the
//! index and `Index::search_hybrid` fuses BM25 and cosine rankings by reciprocal rank
//! fusion.
//!
//! ```
//! use citeflow_index::tokens;
//!
//! // Japanese: bigrams; English: lowercased, stop words dropped, stemmed.
//! assert_eq!(tokens("非人情の旅"), ["非人", "人情", "情の", "の旅"]);
//! assert_eq!(tokens("The Rabbit-Holes"), ["rabbit", "hole"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With a book:
//!
//! ```no_run
//! use citeflow_epub::{Book, ChunkSettings, Limits};
//! use citeflow_index::{fingerprint, BookPassage, Index};
//!
//! let bytes = std::fs::read("alice.epub")?;
//! let settings = ChunkSettings::default();
//! let book = Book::open(&bytes, &Limits::default())?;
//! let passages = BookPassage::from_book(&book, &settings);
//! let mut index = Index::open_or_create("index-dir")?;
//! index.add_book(&passages, &fingerprint(&bytes, &settings))?;
//! for hit in index.search("white rabbit watch", 3)? {
//!     let source = hit.passage.to_source(); // id, title, url, text, locator
//!     println!("{} {:?}", source.id, source.locator);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod catalog;
pub mod eval;
#[cfg(feature = "embed")]
mod hybrid;
mod index;
mod record;
mod tokenizer;

use std::path::PathBuf;

pub use catalog::{BookInfo, ChapterInfo};
#[cfg(feature = "embed")]
pub use hybrid::{DenseIndex, FUSE_DEPTH, RRF_C};
pub use index::{Hit, Index};
pub use record::{book_key, fingerprint, BookPassage};
pub use tokenizer::{analyzer, tokens, CjkBigramTokenStream, CjkBigramTokenizer, TOKENIZER_NAME};

/// Why an [`Index`] operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The index directory cannot be created or opened.
    #[error("cannot open index {path:?}: {reason}")]
    Open {
        /// The directory.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Passages cannot be written (the index is locked by another writer, or the disk
    /// fails).
    #[error("cannot write to the index: {reason}")]
    Write {
        /// What went wrong.
        reason: String,
    },
    /// The disk is full, or the user's quota spent (`ENOSPC`, `EDQUOT`), while writing: the
    /// write is not kept, and may succeed once there is space again.
    #[error("cannot write to the index, the disk is full: {reason}")]
    StorageFull {
        /// What went wrong.
        reason: String,
    },
    /// The index cannot be searched.
    #[error("cannot search the index: {reason}")]
    Search {
        /// What went wrong.
        reason: String,
    },
    /// A stored passage cannot be decoded.
    #[error("index holds a broken passage: {reason}")]
    Corrupt {
        /// What is wrong.
        reason: String,
    },
}
