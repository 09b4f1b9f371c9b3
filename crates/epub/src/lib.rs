//! I/O-free EPUB reader: spine, chapters, text nodes and passages with
//! spec-exact EPUB CFI 1.1 locations.
//!
//! [`Book::open`] takes the bytes of an `.epub` file (and [`Limits`] against
//! zip bombs) and reads the container, the package document (metadata,
//! manifest, [`spine`](Book::spine)), the table of contents (EPUB 3
//! navigation document or EPUB 2 NCX) and every spine [`Document`].
//! [`Book::chapters`] come from the table of contents, so several chapters
//! can live in one spine file. [`Book::text_nodes`] lists every
//! non-whitespace text node with the [`Cfi`] of its first character;
//! [`Book::passages`] cuts the reading text into overlapping,
//! paragraph-aware [`Passage`]s, each with a range CFI; and
//! [`Book::resolve`] maps a CFI back to a [`Location`] and its text;
//! [`Book::reading`] gives the chapter around a CFI as paragraphs with the
//! cited place marked, for a reader that opens the book there;
//! [`Book::passage_range_cfi`] names a part of a passage (the sentence a
//! citation quotes) as a range CFI of its own.
//! [`CfiFlavor`] picks how CFIs are written: the specification's, or as
//! epub.js 0.3.93 writes them ([`cfi::epubjs`]: [`Book::text_nodes_as`],
//! [`Book::resolve_as`], [`Book::resolve_any`],
//! [`ChunkSettings::with_cfi_flavor`]).
//! [`book_key`] gives a book's short key; with the `source` feature,
//! `BookPassage` is a passage's record as `citeflow ingest` writes it, which
//! reads as a `citeflow-core` `Source`.
//!
//! The crate never touches the file system, the network, the clock or the
//! environment, and builds for `wasm32-unknown-unknown`.
//!
//! ```
//! use citeflow_epub::{Cfi, Document};
//!
//! // A content document, addressed as spine item /6/4[chap01ref].
//! let doc = Document::parse(
//!     r#"<html><head/><body id="body01"><p id="para05">xxx<em>yyy</em>0123456789</p></body></html>"#,
//! );
//! let para = doc.element_by_id("para05").ok_or("no para05")?;
//! let digits = doc.child_nodes(para).nth(2).ok_or("no text")?;
//! let base = Cfi::parse("epubcfi(/6/4[chap01ref])")?;
//! let cfi = doc.cfi(digits, Some(10)).ok_or("no cfi")?.with_base(&base);
//! assert_eq!(cfi.to_string(), "epubcfi(/6/4[chap01ref]!/4[body01]/2[para05]/3:10)");
//!
//! // Parsing, ordering and resolving.
//! let local = Cfi::parse("epubcfi(/4[body01]/2[para05],/2/1:1,/3:4)")?;
//! let (start, end) = doc.resolve(&local)?;
//! assert_eq!(doc.text_between(&start, &end.ok_or("no end")?), "yy0123");
//! assert!(Cfi::parse("epubcfi(/6/2)")?.compare(&Cfi::parse("epubcfi(/6/4)")?).is_some_and(|o| o.is_lt()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! For a whole book:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let bytes: Vec<u8> = Vec::new();
//! use citeflow_epub::{Book, ChunkSettings, Limits};
//! let book = Book::open(&bytes, &Limits::default())?;
//! for node in book.text_nodes() {
//!     println!("{} {}", node.cfi, node.text);
//! }
//! for p in book.passages(&ChunkSettings::default()) {
//!     println!("{} [{}] {}", p.cfi, p.chapter_title.as_deref().unwrap_or(""), p.text);
//! }
//! # Ok(())
//! # }
//! ```

mod archive;
mod book;
pub mod cfi;
mod document;
mod error;
mod limits;
mod package;
mod passage;
mod progress;
mod quote;
mod reading;
mod record;
mod text;
mod toc;
mod xml;

pub use book::{Book, Chapter};
pub use cfi::{Cfi, CfiFlavor, CfiFlavorError, CfiParseError};
pub use document::{Document, Location};
pub use error::{OpenError, ParseError, ResolveError, Warning};
pub use limits::Limits;
pub use package::{ManifestItem, Metadata, PageProgression, SpineItem};
pub use passage::{ChunkSettings, Passage};
pub use progress::{Check, ControlFlow, Progress, Stage};
pub use quote::PassageRangeError;
pub use reading::{Reading, ReadingParagraph, Ruby, Span, TextPosition};
pub use record::book_key;
#[cfg(feature = "source")]
pub use record::BookPassage;
pub use text::epubjs::FlavorReading;
pub use text::{Point, Resolved, TextNode};
pub use toc::TocEntry;
pub use xml::NodeId;
