//! Book-level text nodes, CFI generation and resolution.

use crate::cfi::{Cfi, CfiFlavor, Path};
use crate::document::Location;
use crate::xml::NodeId;
use crate::{Book, ResolveError};

pub(crate) mod epubjs;

/// A text (or CDATA) node under `<body>` with something other than
/// whitespace in it, and the CFI of its first character.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TextNode<'a> {
    /// Spine position of the document, counting from 0 over all itemrefs.
    pub spine_index: usize,
    /// The document's manifest `href` as written.
    pub href: &'a str,
    /// Index among this document's non-whitespace text/CDATA nodes under
    /// `<body>`, in document order.
    pub node_ordinal: usize,
    /// The node.
    pub node: NodeId,
    /// The node's full text, whitespace as written (line ends normalised).
    pub text: &'a str,
    /// Whether the node is a CDATA section.
    pub is_cdata: bool,
    /// CFI of the node's first character, such as
    /// `epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:0)`.
    pub cfi: Cfi,
}

/// A resolved CFI point: a spine document and a location in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Point {
    /// The spine item.
    pub spine_index: usize,
    /// The location in its document; `None` when the CFI stops at the
    /// itemref (`epubcfi(/6/4)`).
    pub location: Option<Location>,
}

/// The result of [`Book::resolve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resolved {
    /// The point, or the start of a range.
    pub start: Point,
    /// The end of a range.
    pub end: Option<Point>,
}

impl Book {
    /// Every non-whitespace text node of every spine document, in reading
    /// order, with its CFI.
    pub fn text_nodes(&self) -> impl Iterator<Item = TextNode<'_>> + '_ {
        (0..self.spine.len()).flat_map(move |i| self.document_text_nodes(i))
    }

    /// The non-whitespace text nodes of one spine document.
    pub fn document_text_nodes(
        &self,
        spine_index: usize,
    ) -> impl Iterator<Item = TextNode<'_>> + '_ {
        let doc = self.document(spine_index);
        let href = self.spine.get(spine_index).map_or("", |s| s.href.as_str());
        doc.into_iter().flat_map(move |d| {
            d.text_nodes()
                .enumerate()
                .filter_map(move |(ordinal, node)| {
                    Some(TextNode {
                        spine_index,
                        href,
                        node_ordinal: ordinal,
                        node,
                        text: d.text(node)?,
                        is_cdata: d.is_cdata(node),
                        cfi: self.cfi_at(spine_index, node, Some(0))?,
                    })
                })
        })
    }

    /// The package-level steps `/6/N[itemref-id]` of a spine item.
    pub(crate) fn spine_path(&self, spine_index: usize) -> Option<Path> {
        let item = self.spine.get(spine_index)?;
        let mut p = Path::new();
        p.push(self.spine_step, None, false);
        p.push(item.cfi_step, item.id.as_deref(), false);
        Some(p)
    }

    pub(crate) fn path_at(
        &self,
        spine_index: usize,
        node: NodeId,
        utf16_offset: Option<u32>,
    ) -> Option<Path> {
        let mut path = self.spine_path(spine_index)?;
        self.document(spine_index)?
            .append_path(&mut path, node, utf16_offset, true)?;
        Some(path)
    }

    /// The full CFI of a node of a spine document: an element, or a text
    /// node at `utf16_offset` from the node's start (see
    /// [`Document::cfi`](crate::Document::cfi)).
    pub fn cfi_at(
        &self,
        spine_index: usize,
        node: NodeId,
        utf16_offset: Option<u32>,
    ) -> Option<Cfi> {
        self.path_at(spine_index, node, utf16_offset)
            .map(Cfi::point)
    }

    /// The CFI of a spine item itself (`epubcfi(/6/4[chap01ref])`).
    pub fn spine_cfi(&self, spine_index: usize) -> Option<Cfi> {
        self.spine_path(spine_index).map(Cfi::point)
    }

    /// Finds what a CFI points at.
    ///
    /// The first step must select the spine, the second an itemref; after
    /// the `!` the path is followed inside that document. Id assertions win
    /// over stale indexes when the asserted id exists.
    ///
    /// # Errors
    ///
    /// [`ResolveError`] when a step has no target, an offset is past the
    /// end of its text, or a range spans two documents.
    pub fn resolve(&self, cfi: &Cfi) -> Result<Resolved, ResolveError> {
        self.resolve_flavored(cfi, CfiFlavor::Spec)
    }

    /// [`Book::resolve`] with the steps inside the document read as `flavor`
    /// writes them (see [`Book::resolve_as`]).
    pub(crate) fn resolve_flavored(
        &self,
        cfi: &Cfi,
        flavor: CfiFlavor,
    ) -> Result<Resolved, ResolveError> {
        let text = cfi.to_string();
        let start = self.resolve_point(&cfi.start(), &text, flavor)?;
        let end = if cfi.is_range() {
            let e = self.resolve_point(&cfi.end(), &text, flavor)?;
            if e.spine_index != start.spine_index {
                return Err(ResolveError::CrossDocumentRange {
                    start: start.spine_index,
                    end: e.spine_index,
                });
            }
            Some(e)
        } else {
            None
        };
        Ok(Resolved { start, end })
    }

    fn resolve_point(
        &self,
        point: &Cfi,
        text: &str,
        flavor: CfiFlavor,
    ) -> Result<Point, ResolveError> {
        let path = point.path();
        let steps = path.steps();
        let Some(first) = steps.first() else {
            return Err(ResolveError::StepOutOfRange {
                cfi: text.to_owned(),
                depth: 0,
                step: 0,
            });
        };
        if first.index() != self.spine_step {
            return Err(ResolveError::NotSpine {
                cfi: text.to_owned(),
                step: first.index(),
                spine_step: self.spine_step,
            });
        }
        let Some(item_step) = steps.get(1) else {
            return Err(ResolveError::Unsupported {
                cfi: text.to_owned(),
                reason: "the cfi stops at the spine",
            });
        };
        let by_index = self
            .spine
            .iter()
            .position(|s| s.cfi_step == item_step.index());
        let by_id = item_step
            .id()
            .and_then(|id| self.spine.iter().position(|s| s.id.as_deref() == Some(id)));
        let spine_index = match (by_index, by_id) {
            (Some(i), Some(j)) if self.spine[i].id.as_deref() != item_step.id() => j,
            (Some(i), _) => i,
            (None, Some(j)) => j,
            (None, None) => {
                return Err(ResolveError::StepOutOfRange {
                    cfi: text.to_owned(),
                    depth: 1,
                    step: item_step.index(),
                })
            }
        };
        let rest = &steps[2..];
        if rest.is_empty() {
            return Ok(Point {
                spine_index,
                location: None,
            });
        }
        if !rest[0].is_redirected() {
            return Err(ResolveError::Unsupported {
                cfi: text.to_owned(),
                reason: "steps after the itemref must follow an indirection '!'",
            });
        }
        let doc = self
            .document(spine_index)
            .ok_or_else(|| ResolveError::MissingDocument {
                cfi: text.to_owned(),
                spine_index,
            })?;
        let location = match flavor {
            CfiFlavor::Spec => doc.locate(rest, path, text)?,
            CfiFlavor::Epubjs => epubjs::locate(doc, rest, path, text)?,
        };
        Ok(Point {
            spine_index,
            location: Some(location),
        })
    }

    /// Reading text from a resolved point onward (see
    /// [`Document::text_after`](crate::Document::text_after)).
    pub fn text_after(&self, point: &Point, max_chars: usize) -> String {
        let Some(doc) = self.document(point.spine_index) else {
            return String::new();
        };
        let loc = point.location.or_else(|| doc.root().map(Location::Element));
        loc.map(|l| doc.text_after(&l, max_chars))
            .unwrap_or_default()
    }

    /// Reading text just before a resolved point.
    pub fn text_before(&self, point: &Point, max_chars: usize) -> String {
        match (self.document(point.spine_index), point.location) {
            (Some(doc), Some(l)) => doc.text_before(&l, max_chars),
            _ => String::new(),
        }
    }

    /// Reading text covered by a resolved range (empty for a point).
    pub fn text_of(&self, resolved: &Resolved) -> String {
        let (Some(end), Some(doc)) = (resolved.end, self.document(resolved.start.spine_index))
        else {
            return String::new();
        };
        match (resolved.start.location, end.location) {
            (Some(a), Some(b)) => doc.text_between(&a, &b),
            _ => String::new(),
        }
    }
}
