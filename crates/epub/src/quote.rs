//! [`Book::passage_range_cfi`]: a part of a passage's text (such as the sentence a citation
//! quotes) as a range CFI in its book, so that a reader opens the book at that sentence.

use crate::cfi::{Cfi, CfiFlavor, Path};
use crate::document::Location;
use crate::passage::{is_collapsible, Section};
use crate::reading::{first_at_or_after, order_key};
use crate::xml::NodeId;
use crate::{Book, ChunkSettings, ResolveError};

/// Why [`Book::passage_range_cfi`] could not place a part of a passage in its book.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PassageRangeError {
    /// The passage's CFI does not resolve in this book.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The book's text at the passage's CFI is not the passage's text (another book, an
    /// edited one, or other chunk settings).
    #[error("the text at {cfi} is not the passage's text")]
    TextMismatch {
        /// The passage's CFI.
        cfi: String,
    },
    /// The character range is not inside the passage's text.
    #[error("characters {start}..{end} are not inside the passage's {len} characters")]
    OutOfRange {
        /// The range's start.
        start: usize,
        /// The range's end.
        end: usize,
        /// The passage's length in characters.
        len: usize,
    },
    /// The range holds only whitespace, which no CFI range can name as text.
    #[error("characters {start}..{end} of the passage hold no text")]
    Blank {
        /// The range's start.
        start: usize,
        /// The range's end.
        end: usize,
    },
}

impl Book {
    /// The range CFI of characters `chars` (Unicode scalar values, end exclusive) of a
    /// passage's text: the passage is named by its range CFI (`passage_cfi`, as
    /// [`Passage::cfi`](crate::Passage::cfi) or a source's `locator.cfi` wrote it) and its
    /// text, and `settings` are the settings it was cut with (their `ruby_text` and
    /// `cfi_flavor`; the returned CFI is in that flavour too). Whitespace at the range's ends
    /// is left out (a paragraph break has no place in the document).
    ///
    /// This is how a citation's quote (the sentence of a book passage that supports a claim)
    /// becomes a place in the book: [`Book::reading`] of the result marks exactly that
    /// text, and epub.js's `getRange` gives the same DOM range.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let bytes: Vec<u8> = Vec::new();
    /// use citeflow_epub::{Book, ChunkSettings, Limits};
    /// let book = Book::open(&bytes, &Limits::default())?;
    /// let settings = ChunkSettings::default();
    /// let p = &book.passages(&settings)[3];
    /// // The passage's first sentence, up to and with its first full stop.
    /// let end = p.text.chars().position(|c| c == '.').map_or(0, |i| i + 1);
    /// let cfi = book.passage_range_cfi(&p.cfi, &p.text, 0..end, &settings)?;
    /// let marked = book.reading(&cfi, settings.ruby_text())?.marked_text();
    /// assert_eq!(marked, p.text.chars().take(end).collect::<String>());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`PassageRangeError`]: the passage's CFI does not resolve, the book's text there is
    /// not the passage's text, the range is outside the text or holds only whitespace.
    pub fn passage_range_cfi(
        &self,
        passage_cfi: &Cfi,
        passage_text: &str,
        chars: std::ops::Range<usize>,
        settings: &ChunkSettings,
    ) -> Result<Cfi, PassageRangeError> {
        let len = passage_text.chars().count();
        if chars.start > chars.end || chars.end > len {
            return Err(PassageRangeError::OutOfRange {
                start: chars.start,
                end: chars.end,
                len,
            });
        }
        let flavor = settings.cfi_flavor();
        let resolved = self.resolve_as(passage_cfi, flavor)?;
        let spine_index = resolved.start.spine_index;
        let doc = self
            .document(spine_index)
            .ok_or_else(|| ResolveError::MissingDocument {
                cfi: passage_cfi.to_string(),
                spine_index,
            })?;
        let location = resolved.start.location;
        let anchor = match location {
            Some(Location::Element(n)) | Some(Location::Text { node: n, .. }) => Some(n),
            Some(Location::EmptyChunk { parent, .. }) => Some(parent),
            None => doc.body(),
        };
        let chapter = self.chapter_index_at(spine_index, anchor.unwrap_or(NodeId(0)));
        let mismatch = || PassageRangeError::TextMismatch {
            cfi: passage_cfi.to_string(),
        };
        let mut found = None;
        self.sections(
            spine_index,
            settings.ruby_text(),
            Some(chapter),
            |_, sec| {
                let key = location.map_or((0, 0), |loc| order_key(doc, loc));
                found = Some(
                    first_at_or_after(sec, key)
                        .filter(|&a| holds_at(sec, a, passage_text))
                        .map(|a| self.section_range(sec, spine_index, a, &chars, flavor)),
                );
            },
        );
        found.flatten().ok_or_else(mismatch)?
    }

    /// The range CFI of characters `chars` of the text starting at section character `a`.
    fn section_range(
        &self,
        sec: &Section,
        spine_index: usize,
        a: usize,
        chars: &std::ops::Range<usize>,
        flavor: CfiFlavor,
    ) -> Result<Cfi, PassageRangeError> {
        let blank = PassageRangeError::Blank {
            start: chars.start,
            end: chars.end,
        };
        let (mut s, mut e) = (a + chars.start, a + chars.end);
        while s < e && is_collapsible(sec.chars[s]) {
            s += 1;
        }
        while e > s && is_collapsible(sec.chars[e - 1]) {
            e -= 1;
        }
        if s == e {
            return Err(blank);
        }
        let path = |node: NodeId, u: u32| -> Option<Path> {
            match flavor {
                CfiFlavor::Spec => self.path_at(spine_index, node, Some(u)),
                _ => self.path_at_as(spine_index, node, Some(u), flavor),
            }
        };
        let start = sec.lookup(s).and_then(|(n, u)| path(n, u));
        let end = sec
            .lookup(e - 1)
            .and_then(|(n, u)| path(n, u + sec.chars[e - 1].len_utf16() as u32));
        match (start, end) {
            (Some(start), Some(end)) => Ok(Cfi::range_between(&start, &end)),
            _ => Err(blank),
        }
    }
}

/// Whether the section's characters from `a` on start with `text`.
fn holds_at(sec: &Section, a: usize, text: &str) -> bool {
    let mut at = sec.chars[a.min(sec.chars.len())..].iter();
    text.chars().all(|c| at.next() == Some(&c))
}
