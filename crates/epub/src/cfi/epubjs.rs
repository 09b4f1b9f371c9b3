//! The epub.js CFI flavour: the CFIs epub.js 0.3.93 writes and reads.
//!
//! epub.js (`EpubCFI` in `src/epubcfi.js`) names a text position by the
//! DOM text node that holds it, not by the specification's chunk of
//! character data between element children:
//!
//! - a text step `/2k+1` is the *k*-th DOM text node child
//!   (`nodeType == 3`) of its parent, counted among text nodes only; the
//!   specification counts chunks, and chunk *k* is the one after the
//!   *k*-th element child. So text after an element with no text before
//!   that element is `/1` for epub.js and `/3` for the specification;
//! - the offset `:n` counts UTF-16 code units from the start of that DOM
//!   text node; comments and processing instructions split DOM text nodes
//!   (the specification ignores them, so its offset runs on across them);
//! - a CDATA section (`nodeType == 4`) is not a text node to epub.js: its
//!   position is written `/0/1:n` under its parent (an element step with
//!   index −1, then an invented text step), and text after it starts a new
//!   text node;
//! - ids are written as they are, without `^` escaping.
//!
//! Element steps and id assertions are otherwise the same, so most CFIs
//! (17,707 of the 18,765 text nodes of the fixture books) are written the
//! same way in both flavours. [`CfiFlavor`] names the two; the generation
//! and resolution methods taking one are
//! [`Document::cfi_as`](crate::Document::cfi_as),
//! [`Document::resolve_as`](crate::Document::resolve_as),
//! [`Book::cfi_at_as`](crate::Book::cfi_at_as),
//! [`Book::text_nodes_as`](crate::Book::text_nodes_as),
//! [`Book::resolve_as`](crate::Book::resolve_as),
//! [`Book::convert_cfi`](crate::Book::convert_cfi) and
//! [`Book::resolve_any`](crate::Book::resolve_any) (which reads a CFI whose
//! flavour is not known, into a [`FlavorReading`](crate::FlavorReading));
//! passages carry the
//! flavour of [`ChunkSettings::with_cfi_flavor`](crate::ChunkSettings::with_cfi_flavor).

pub use super::flavor::{CfiFlavor, CfiFlavorError};
