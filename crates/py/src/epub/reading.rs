//! The reading view at a CFI.

use citeflow_epub as epub;
use pyo3::prelude::*;

use crate::convert::{repr_opt, repr_str};

/// One paragraph of a `Reading`.
#[pyclass(frozen, eq, get_all, module = "citeflow._citeflow")]
#[derive(Clone, PartialEq)]
pub(crate) struct ReadingParagraph {
    /// The text, whitespace runs collapsed (as in a passage).
    text: String,
    /// CFI of its first character.
    cfi: String,
}

#[pymethods]
impl ReadingParagraph {
    fn __repr__(&self) -> String {
        format!(
            "ReadingParagraph(cfi={}, text={})",
            repr_str(&self.cfi),
            repr_str(&self.text)
        )
    }
}

/// The chapter that holds a CFI, as paragraphs, with what the CFI covers marked.
#[pyclass(frozen, module = "citeflow._citeflow")]
pub(crate) struct Reading {
    pub(super) inner: epub::Reading,
}

#[pymethods]
impl Reading {
    /// The spine document the CFI points into.
    #[getter]
    fn spine_index(&self) -> usize {
        self.inner.spine_index
    }
    /// That document's manifest href.
    #[getter]
    fn href(&self) -> &str {
        &self.inner.href
    }
    /// The chapter's index in `Book.chapters`.
    #[getter]
    fn chapter_index(&self) -> usize {
        self.inner.chapter_index
    }
    /// The chapter's title.
    #[getter]
    fn chapter_title(&self) -> Option<&str> {
        self.inner.chapter_title.as_deref()
    }
    /// The chapter's paragraphs in that document, in reading order.
    #[getter]
    fn paragraphs(&self) -> Vec<ReadingParagraph> {
        self.inner
            .paragraphs
            .iter()
            .map(|p| ReadingParagraph {
                text: p.text.clone(),
                cfi: p.cfi.to_string(),
            })
            .collect()
    }
    /// Where the mark starts: (paragraph index, character offset), None without a mark.
    #[getter]
    fn mark_start(&self) -> Option<(usize, usize)> {
        self.inner
            .mark
            .map(|s| (s.start.paragraph, s.start.char_offset))
    }
    /// Just after the mark's last character: (paragraph index, character offset); equal to
    /// `mark_start` for a point.
    #[getter]
    fn mark_end(&self) -> Option<(usize, usize)> {
        self.inner
            .mark
            .map(|s| (s.end.paragraph, s.end.char_offset))
    }
    /// The chapter before (None in the first).
    #[getter]
    fn previous_chapter(&self) -> Option<usize> {
        self.inner.previous_chapter
    }
    /// The chapter after (None in the last).
    #[getter]
    fn next_chapter(&self) -> Option<usize> {
        self.inner.next_chapter
    }
    /// The marked text, paragraphs joined by a blank line: for a passage's range CFI, exactly
    /// the passage's text; empty for a point.
    #[getter]
    fn text(&self) -> String {
        self.inner.marked_text()
    }
    /// The marked part of paragraph `paragraph` as (start, end) character offsets, or None.
    fn marked_range(&self, paragraph: usize) -> Option<(usize, usize)> {
        self.inner.marked_range(paragraph)
    }

    fn __repr__(&self) -> String {
        format!(
            "Reading(chapter_index={}, chapter_title={}, paragraphs={})",
            self.inner.chapter_index,
            repr_opt(self.inner.chapter_title.as_deref()),
            self.inner.paragraphs.len()
        )
    }
}
