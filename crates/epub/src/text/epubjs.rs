//! The epub.js CFI flavour's generation and resolution (see
//! [`cfi::epubjs`](crate::cfi::epubjs) for how the two flavours differ), and
//! [`FlavorReading`]: how a CFI of unknown flavour was read. A child of
//! `text`, whose resolved positions it builds.

use super::{Point, Resolved, TextNode};
use crate::cfi::CfiFlavor;
use crate::cfi::{Cfi, Offset, Path, Step};
use crate::document::{Document, Location};
use crate::xml::{Dom, NodeId, NodeKind};
use crate::{Book, ResolveError};

/// Where a DOM text node child is, as epub.js counts: `(k, offset)` where
/// `k` is the index among the parent's DOM text nodes (adjacent text nodes
/// of this DOM are one DOM text node) and `offset` the UTF-16 offset of
/// `node` inside that DOM text node.
fn dom_text_position(dom: &Dom, node: NodeId) -> Option<(u32, u32)> {
    let parent = dom.parent(node)?;
    let mut k: Option<u32> = None;
    let mut previous_is_text = false;
    let mut offset = 0u32;
    for c in dom.children(parent) {
        let info = dom.node(c);
        let is_text = matches!(info.kind, NodeKind::Text(_));
        if is_text && !previous_is_text {
            k = Some(k.map_or(0, |k| k + 1));
            offset = 0;
        }
        if c == node {
            return k.filter(|_| is_text).map(|k| (k, offset));
        }
        if is_text {
            offset = offset.saturating_add(info.utf16_len);
        }
        previous_is_text = is_text;
    }
    None
}

/// Appends the epub.js-flavoured document-relative steps of `node` (see
/// [`Document::append_path`] for the spec's).
pub(crate) fn append_path(
    doc: &Document,
    path: &mut Path,
    node: NodeId,
    utf16_offset: Option<u32>,
    redirect: bool,
) -> Option<()> {
    let dom = &doc.dom;
    dom.get(node)?;
    let root = dom.root()?;
    let mut chain = Vec::new();
    let mut cur = node;
    while cur != root {
        chain.push(cur);
        cur = dom.parent(cur)?;
    }
    if chain.is_empty() {
        return None;
    }
    path.reserve(chain.len() + 1);
    for (i, &n) in chain.iter().rev().enumerate() {
        let info = dom.node(n);
        let redirected = redirect && i == 0;
        match &info.kind {
            NodeKind::Element(e) => {
                path.push(
                    info.sib_index.saturating_add(1).saturating_mul(2),
                    e.attr("id"),
                    redirected,
                );
            }
            NodeKind::Text(_) => {
                let (k, start) = dom_text_position(dom, n)?;
                path.push(k.saturating_mul(2).saturating_add(1), None, redirected);
                let offset = match utf16_offset {
                    Some(o) => Some(start.saturating_add(o)),
                    None => (start > 0).then_some(start),
                };
                if let Some(o) = offset {
                    path.set_char_offset(o);
                }
            }
            NodeKind::CData(_) => {
                // epub.js: not a text node, so an "element" step whose
                // index is -1 among text nodes, written /0; with an
                // offset, a text step /1 is appended.
                path.push(0, None, redirected);
                if let Some(o) = utf16_offset {
                    path.push(1, None, false);
                    path.set_char_offset(o);
                }
            }
            _ => return None,
        }
    }
    Some(())
}

/// Follows epub.js-flavoured `steps` from the root element (see
/// [`Document::locate`] for the spec's). Id assertions win over stale
/// indexes when the asserted id exists, as for the spec.
pub(crate) fn locate(
    doc: &Document,
    steps: &[Step],
    path: &Path,
    cfi: &str,
) -> Result<Location, ResolveError> {
    let dom = &doc.dom;
    let unsupported = |reason| ResolveError::Unsupported {
        cfi: cfi.to_owned(),
        reason,
    };
    let out_of_range = |depth: usize, step: u32| ResolveError::StepOutOfRange {
        cfi: cfi.to_owned(),
        depth,
        step,
    };
    let Some(mut cur) = dom.root() else {
        return Err(out_of_range(0, steps.first().map_or(0, Step::index)));
    };
    if path.is_offset_redirected() {
        return Err(unsupported("indirection to an offset"));
    }
    let char_offset = || match path.offset() {
        Some(Offset::Character { utf16_offset, .. }) => Ok(*utf16_offset),
        None => Ok(0),
        Some(_) => Err(unsupported("spatial or temporal offset on text")),
    };
    for (depth, s) in steps.iter().enumerate() {
        if depth > 0 && s.is_redirected() {
            return Err(unsupported("indirection inside a content document"));
        }
        let last = depth + 1 == steps.len();
        let index = s.index();
        if index == 0 {
            // A CDATA section: /0, or /0/1:n.
            let tail_ok = last || (depth + 2 == steps.len() && steps[depth + 1].index() == 1);
            let cdata = dom
                .children(cur)
                .find(|&c| matches!(dom.node(c).kind, NodeKind::CData(_)));
            let Some(node) = cdata.filter(|_| tail_ok) else {
                return Err(out_of_range(depth, index));
            };
            let offset = char_offset()?;
            let len = dom.node(node).utf16_len;
            if offset > len {
                return Err(ResolveError::OffsetOutOfRange {
                    cfi: cfi.to_owned(),
                    offset,
                    len,
                });
            }
            return Ok(Location::Text {
                node,
                utf16_offset: offset,
            });
        }
        if index % 2 == 0 {
            let mut next = dom
                .child_elements(cur)
                .nth((index / 2 - 1) as usize)
                .ok_or_else(|| out_of_range(depth, index))?;
            if let Some(id) = s.id() {
                if dom.element(next).and_then(|e| e.attr("id")) != Some(id) {
                    if let Some(by_id) = dom.element_by_id(id) {
                        next = by_id;
                    }
                }
            }
            cur = next;
            if last {
                return match path.offset() {
                    Some(Offset::Character { .. }) => {
                        Err(unsupported("character offset on an element"))
                    }
                    _ => Ok(Location::Element(cur)),
                };
            }
            continue;
        }
        if !last {
            return Err(unsupported("steps after a character data step"));
        }
        let k = (index - 1) / 2;
        let offset = char_offset()?;
        return text_location(dom, cur, k, offset).map_err(|e| match e {
            None => out_of_range(depth, index),
            Some(len) => ResolveError::OffsetOutOfRange {
                cfi: cfi.to_owned(),
                offset,
                len,
            },
        });
    }
    Ok(Location::Element(cur))
}

/// The position `offset` inside DOM text node `k` of `parent`; `Err(None)`
/// when there is no such text node, `Err(Some(len))` when the offset is
/// past its end.
fn text_location(dom: &Dom, parent: NodeId, k: u32, offset: u32) -> Result<Location, Option<u32>> {
    let mut index: Option<u32> = None;
    let mut previous_is_text = false;
    let mut start = 0u32;
    let mut last = None;
    for c in dom.children(parent) {
        let info = dom.node(c);
        let is_text = matches!(info.kind, NodeKind::Text(_));
        if is_text && !previous_is_text {
            index = Some(index.map_or(0, |i| i + 1));
            start = 0;
            if last.is_some() {
                break;
            }
        }
        previous_is_text = is_text;
        if !is_text || index != Some(k) {
            continue;
        }
        let end = start.saturating_add(info.utf16_len);
        if offset < end {
            return Ok(Location::Text {
                node: c,
                utf16_offset: offset - start,
            });
        }
        last = Some((c, info.utf16_len, end));
        start = end;
    }
    match last {
        Some((node, len, total)) if offset == total => Ok(Location::Text {
            node,
            utf16_offset: len,
        }),
        Some((_, _, total)) => Err(Some(total)),
        None => Err(None),
    }
}

impl Document {
    /// The document-relative CFI of a node in `flavor`: an element, or a
    /// text/CDATA node at `utf16_offset` from the node's start (`None`
    /// leaves the offset out where the flavour allows). With
    /// [`CfiFlavor::Spec`] this is [`Document::cfi`].
    ///
    /// Returns `None` for comments, processing instructions, the root and
    /// unknown nodes.
    pub fn cfi_as(
        &self,
        node: NodeId,
        utf16_offset: Option<u32>,
        flavor: CfiFlavor,
    ) -> Option<Cfi> {
        match flavor {
            CfiFlavor::Spec => self.cfi(node, utf16_offset),
            CfiFlavor::Epubjs => {
                let mut path = Path::new();
                append_path(self, &mut path, node, utf16_offset, false)?;
                Some(Cfi::point(path))
            }
        }
    }

    /// Resolves a document-relative CFI written in `flavor` (see
    /// [`Document::resolve`]).
    ///
    /// # Errors
    ///
    /// [`ResolveError`] when a step has no target or the path has a shape
    /// this reader does not follow.
    pub fn resolve_as(
        &self,
        cfi: &Cfi,
        flavor: CfiFlavor,
    ) -> Result<(Location, Option<Location>), ResolveError> {
        if flavor == CfiFlavor::Spec {
            return self.resolve(cfi);
        }
        let text = cfi.to_string();
        let start = cfi.start();
        let s = locate(self, start.path().steps(), start.path(), &text)?;
        if !cfi.is_range() {
            return Ok((s, None));
        }
        let end = cfi.end();
        let e = locate(self, end.path().steps(), end.path(), &text)?;
        Ok((s, Some(e)))
    }
}

impl Book {
    /// The full CFI of a node of a spine document in `flavor` (see
    /// [`Book::cfi_at`], which is the [`CfiFlavor::Spec`] case).
    pub fn cfi_at_as(
        &self,
        spine_index: usize,
        node: NodeId,
        utf16_offset: Option<u32>,
        flavor: CfiFlavor,
    ) -> Option<Cfi> {
        self.path_at_as(spine_index, node, utf16_offset, flavor)
            .map(Cfi::point)
    }

    pub(crate) fn path_at_as(
        &self,
        spine_index: usize,
        node: NodeId,
        utf16_offset: Option<u32>,
        flavor: CfiFlavor,
    ) -> Option<Path> {
        match flavor {
            CfiFlavor::Spec => self.path_at(spine_index, node, utf16_offset),
            CfiFlavor::Epubjs => {
                let mut path = self.spine_path(spine_index)?;
                append_path(
                    self.document(spine_index)?,
                    &mut path,
                    node,
                    utf16_offset,
                    true,
                )?;
                Some(path)
            }
        }
    }

    /// [`Book::text_nodes`] with each node's CFI (of its first character)
    /// written in `flavor`.
    pub fn text_nodes_as(&self, flavor: CfiFlavor) -> impl Iterator<Item = TextNode<'_>> + '_ {
        self.text_nodes().map(move |mut n| {
            if flavor != CfiFlavor::Spec {
                if let Some(c) = self.cfi_at_as(n.spine_index, n.node, Some(0), flavor) {
                    n.cfi = c;
                }
            }
            n
        })
    }

    /// Finds what a CFI written in `flavor` points at (see
    /// [`Book::resolve`], which is the [`CfiFlavor::Spec`] case). The steps
    /// before the `!` (spine and itemref) are read the same in both.
    ///
    /// # Errors
    ///
    /// [`ResolveError`] when a step has no target, an offset is past the
    /// end of its text, or a range spans two documents.
    pub fn resolve_as(&self, cfi: &Cfi, flavor: CfiFlavor) -> Result<Resolved, ResolveError> {
        self.resolve_flavored(cfi, flavor)
    }

    /// Reads a CFI whose flavour is not known: as both flavours, and says
    /// whether they agree, only one reads it to text, or it is ambiguous
    /// (see [`FlavorReading`]).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let book: citeflow_epub::Book = todo!();
    /// use citeflow_epub::{Cfi, FlavorReading};
    /// // epub.js's CFI of text after an empty <a id="…"/> in a heading.
    /// let cfi = Cfi::parse("epubcfi(/6/8!/4/2/2[pgepubid00004]/1:0)")?;
    /// match book.resolve_any(&cfi)? {
    ///     FlavorReading::Only(flavor, r) => println!("{flavor}: {}", book.text_after(&r.start, 40)),
    ///     other => println!("{other:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The [`ResolveError`] of the spec reading when neither flavour reads
    /// the CFI.
    pub fn resolve_any(&self, cfi: &Cfi) -> Result<FlavorReading, ResolveError> {
        let spec = self.resolve_as(cfi, CfiFlavor::Spec);
        let epubjs = self.resolve_as(cfi, CfiFlavor::Epubjs);
        Ok(match (spec, epubjs) {
            (Ok(a), Ok(b)) if a == b => FlavorReading::Same(a),
            (Ok(a), Ok(b)) => match (on_text(&a), on_text(&b)) {
                (true, false) => FlavorReading::Only(CfiFlavor::Spec, a),
                (false, true) => FlavorReading::Only(CfiFlavor::Epubjs, b),
                _ => FlavorReading::Ambiguous { spec: a, epubjs: b },
            },
            (Ok(a), Err(_)) => FlavorReading::Only(CfiFlavor::Spec, a),
            (Err(_), Ok(b)) => FlavorReading::Only(CfiFlavor::Epubjs, b),
            (Err(e), Err(_)) => return Err(e),
        })
    }

    /// Rewrites a CFI written in flavour `from` as flavour `to`: the same
    /// place (point, or both ends of a range), written the other way.
    /// Spatial and temporal offsets on elements are dropped.
    ///
    /// # Errors
    ///
    /// [`ResolveError`] when the CFI does not resolve as `from`, or names a
    /// place `to` cannot write (an empty chunk, which epub.js has no step
    /// for).
    pub fn convert_cfi(
        &self,
        cfi: &Cfi,
        from: CfiFlavor,
        to: CfiFlavor,
    ) -> Result<Cfi, ResolveError> {
        let r = self.resolve_as(cfi, from)?;
        let text = cfi.to_string();
        let start = self.point_path(&r.start, to, &text)?;
        Ok(match r.end {
            None => Cfi::point(start),
            Some(end) => Cfi::range_between(&start, &self.point_path(&end, to, &text)?),
        })
    }

    fn point_path(&self, p: &Point, flavor: CfiFlavor, cfi: &str) -> Result<Path, ResolveError> {
        let cannot = |reason| ResolveError::Unsupported {
            cfi: cfi.to_owned(),
            reason,
        };
        let path = match p.location {
            None => self.spine_path(p.spine_index),
            Some(Location::Element(e)) => self.path_at_as(p.spine_index, e, None, flavor),
            Some(Location::Text { node, utf16_offset }) => {
                self.path_at_as(p.spine_index, node, Some(utf16_offset), flavor)
            }
            Some(Location::EmptyChunk { parent, chunk }) => {
                if flavor != CfiFlavor::Spec {
                    return Err(cannot("an empty chunk has no epub.js step"));
                }
                self.path_at(p.spine_index, parent, None).map(|mut path| {
                    path.push(chunk.saturating_mul(2).saturating_add(1), None, false);
                    path
                })
            }
        };
        path.ok_or_else(|| cannot("no cfi for this place"))
    }
}

/// Whether every end of `r` lands on text or an element (not on an empty
/// chunk).
fn on_text(r: &Resolved) -> bool {
    let ok = |p: &Point| !matches!(p.location, Some(Location::EmptyChunk { .. }));
    ok(&r.start) && r.end.as_ref().is_none_or(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"<html><head/><body id="b"><p id="lead"><span id="pg"/>We live</p><p id="c">ab<!-- x -->cd</p><p id="d">ab<![CDATA[cd]]>ef</p></body></html>"#;

    fn text_node(doc: &Document, id: &str, nth: usize) -> NodeId {
        let p = doc.element_by_id(id).expect("element");
        doc.child_nodes(p)
            .filter(|&c| doc.text(c).is_some())
            .nth(nth)
            .expect("text node")
    }

    #[test]
    fn epubjs_counts_text_nodes_splits_at_comments_and_writes_cdata_as_0_1() {
        let doc = Document::parse(DOC);
        let cases = [
            ("lead", 0, 0, "/4[b]/2[lead]/3:0", "/4[b]/2[lead]/1:0"),
            ("lead", 0, 7, "/4[b]/2[lead]/3:7", "/4[b]/2[lead]/1:7"),
            ("c", 1, 1, "/4[b]/4[c]/1:3", "/4[b]/4[c]/3:1"),
            ("d", 1, 0, "/4[b]/6[d]/1:2", "/4[b]/6[d]/0/1:0"),
            ("d", 2, 2, "/4[b]/6[d]/1:6", "/4[b]/6[d]/3:2"),
        ];
        for (id, nth, off, spec, epubjs) in cases {
            let n = text_node(&doc, id, nth);
            for (flavor, want) in [(CfiFlavor::Spec, spec), (CfiFlavor::Epubjs, epubjs)] {
                let cfi = doc.cfi_as(n, Some(off), flavor).expect("cfi");
                assert_eq!(cfi.to_string(), format!("epubcfi({want})"), "{flavor}");
                let (loc, _) = doc.resolve_as(&cfi, flavor).expect("resolves");
                assert_eq!(
                    loc,
                    Location::Text {
                        node: n,
                        utf16_offset: off
                    },
                    "{flavor} {want}"
                );
            }
        }
    }

    #[test]
    fn epubjs_reading_fails_where_there_is_no_such_text_node() {
        let doc = Document::parse(DOC);
        let bad = [
            "epubcfi(/4[b]/2[lead]/3:0)",
            "epubcfi(/4[b]/2[lead]/1:8)",
            "epubcfi(/4[b]/2[lead]/0/1:0)",
        ];
        for b in bad {
            let cfi = Cfi::parse(b).expect("parses");
            assert!(doc.resolve_as(&cfi, CfiFlavor::Epubjs).is_err(), "{b}");
        }
    }
}

/// How [`Book::resolve_any`](crate::Book::resolve_any) read a CFI of unknown flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlavorReading {
    /// Both flavours read it to the same place (true of every CFI whose
    /// steps mean the same in both, such as any text after text).
    Same(Resolved),
    /// Only this flavour reads it to text: the other has no target there,
    /// or lands on an empty chunk (a place with no text, which neither
    /// flavour generates for a text position).
    Only(CfiFlavor, Resolved),
    /// Both read it to text, at different places: the flavour must be
    /// given (use [`Book::resolve_as`](crate::Book::resolve_as)).
    Ambiguous {
        /// The place when read as [`CfiFlavor::Spec`].
        spec: Resolved,
        /// The place when read as [`CfiFlavor::Epubjs`].
        epubjs: Resolved,
    },
}

impl FlavorReading {
    /// The place, unless the reading is ambiguous.
    pub fn resolved(&self) -> Option<&Resolved> {
        match self {
            FlavorReading::Same(r) | FlavorReading::Only(_, r) => Some(r),
            FlavorReading::Ambiguous { .. } => None,
        }
    }

    /// The flavour that read it, when only one did.
    pub fn flavor(&self) -> Option<CfiFlavor> {
        match self {
            FlavorReading::Only(f, _) => Some(*f),
            _ => None,
        }
    }
}
