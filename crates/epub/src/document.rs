//! [`Document`]: one parsed content document, CFI generation and
//! resolution inside it.

use crate::cfi::{Cfi, Offset, Path, Step};
use crate::xml::{Dom, NodeId, NodeKind, XmlLimits};
use crate::{Limits, ParseError, ResolveError};

/// A parsed XHTML (or SVG) content document.
///
/// Node ids ([`NodeId`]) are in document order. The document root element
/// (`<html>`) is where document-relative CFI paths start: `/4` is its second
/// element child, normally `<body>`.
#[derive(Debug, Clone)]
pub struct Document {
    pub(crate) dom: Dom,
    pub(crate) bytes: usize,
}

/// Where a CFI points inside a [`Document`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// An element (the CFI ends on an even step).
    Element(NodeId),
    /// A character position: `utf16_offset` code units into the text (or
    /// CDATA) node `node`.
    Text {
        /// The text or CDATA node.
        node: NodeId,
        /// Offset inside that node, in UTF-16 code units.
        utf16_offset: u32,
    },
    /// A character-data position where the document has no text: chunk
    /// `chunk` of `parent` (before its element child number `chunk`, or at
    /// its end).
    EmptyChunk {
        /// The element whose children hold the position.
        parent: NodeId,
        /// Zero-based chunk number (the CFI step was `2 * chunk + 1`).
        chunk: u32,
    },
}

/// Elements whose text is not part of the reading text: ruby annotations,
/// scripts and styles.
pub(crate) const NON_READING: [&str; 5] = ["rt", "rp", "script", "style", "head"];

impl Document {
    /// Parses a content document. Broken markup is repaired; see
    /// [`Document::warnings`].
    ///
    /// No budgets apply: for input that may be hostile use
    /// [`Document::parse_with_limits`].
    pub fn parse(xhtml: &str) -> Document {
        Document {
            dom: Dom::parse(xhtml),
            bytes: xhtml.len(),
        }
    }

    /// Parses a content document under the XML budgets of `limits`
    /// (entity expansion per document, nesting depth, attributes per
    /// element, elements); the work done is bounded by them. Broken markup
    /// is repaired as by [`Document::parse`].
    ///
    /// # Errors
    ///
    /// [`ParseError`] naming the first budget exceeded and its line.
    pub fn parse_with_limits(xhtml: &str, limits: &Limits) -> Result<Document, ParseError> {
        Ok(Document {
            dom: Dom::parse_with_limits(xhtml, XmlLimits::of(limits, None))?,
            bytes: xhtml.len(),
        })
    }

    /// Repairs made while parsing, in lowercase.
    pub fn warnings(&self) -> &[String] {
        &self.dom.warnings
    }

    /// The root element.
    pub fn root(&self) -> Option<NodeId> {
        self.dom.root()
    }

    /// The `<body>` element.
    pub fn body(&self) -> Option<NodeId> {
        self.dom.body()
    }

    /// The element whose `id` attribute is `id`.
    pub fn element_by_id(&self, id: &str) -> Option<NodeId> {
        self.dom.element_by_id(id)
    }

    /// Child nodes of `node` (elements, text, CDATA, comments, processing
    /// instructions), as the DOM has them.
    pub fn child_nodes(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.dom
            .get(node)
            .into_iter()
            .flat_map(move |_| self.dom.children(node))
    }

    /// Element children of `node`.
    pub fn child_elements(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.child_nodes(node)
            .filter(|&c| self.dom.element(c).is_some())
    }

    /// Every node inside `node`, in document order.
    pub fn descendants(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.dom
            .get(node)
            .into_iter()
            .flat_map(move |_| self.dom.descendants(node))
    }

    /// The parent node.
    pub fn parent(&self, node: NodeId) -> Option<NodeId> {
        self.dom.get(node)?;
        self.dom.parent(node)
    }

    /// The text of a text or CDATA node.
    pub fn text(&self, node: NodeId) -> Option<&str> {
        self.dom.get(node)?;
        self.dom.char_data(node)
    }

    /// Whether the node is a CDATA section.
    pub fn is_cdata(&self, node: NodeId) -> bool {
        self.dom
            .get(node)
            .is_some_and(|n| matches!(n.kind, NodeKind::CData(_)))
    }

    /// The local name of an element.
    pub fn element_name(&self, node: NodeId) -> Option<&str> {
        self.dom.get(node)?;
        self.dom.element(node).map(|e| e.local_name())
    }

    /// An attribute of an element, by qualified name as written.
    pub fn attribute(&self, node: NodeId, name: &str) -> Option<&str> {
        self.dom.get(node)?;
        self.dom.element(node)?.attr(name)
    }

    /// All character data inside `node`, concatenated.
    pub fn text_content(&self, node: NodeId) -> String {
        if self.dom.get(node).is_none() {
            return String::new();
        }
        self.dom.text_content(node)
    }

    /// Text and CDATA nodes under `<body>` that are not whitespace only, in
    /// document order.
    pub fn text_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.body().into_iter().flat_map(move |b| {
            self.dom.descendants(b).filter(move |&d| {
                self.dom
                    .char_data(d)
                    .is_some_and(|t| t.chars().any(|c| !c.is_whitespace()))
            })
        })
    }

    /// Whether `node` is inside ruby annotations (`rt`, `rp`), `script`,
    /// `style` or `head`.
    pub fn is_non_reading(&self, node: NodeId) -> bool {
        let mut cur = self.parent(node);
        while let Some(p) = cur {
            if self
                .dom
                .element(p)
                .is_some_and(|e| NON_READING.contains(&e.local_name()))
            {
                return true;
            }
            cur = self.dom.parent(p);
        }
        false
    }

    /// The document-relative CFI of a node: an element, or a text/CDATA
    /// node at `utf16_offset` (counted from the node's start; `None` leaves
    /// the offset out for a node that starts its chunk).
    ///
    /// Returns `None` for comments, processing instructions, the root and
    /// unknown nodes.
    pub fn cfi(&self, node: NodeId, utf16_offset: Option<u32>) -> Option<Cfi> {
        self.local_path(node, utf16_offset).map(Cfi::point)
    }

    pub(crate) fn local_path(&self, node: NodeId, utf16_offset: Option<u32>) -> Option<Path> {
        let mut path = Path::new();
        self.append_path(&mut path, node, utf16_offset, false)?;
        Some(path)
    }

    /// Appends the document-relative steps of `node` to `path`; the first
    /// one is marked as following an indirection when `redirect` is set.
    pub(crate) fn append_path(
        &self,
        path: &mut Path,
        node: NodeId,
        utf16_offset: Option<u32>,
        redirect: bool,
    ) -> Option<()> {
        self.dom.get(node)?;
        let root = self.dom.root()?;
        let mut chain = [NodeId(0); 32];
        let mut long_chain = Vec::new();
        let mut depth = 0;
        let mut cur = node;
        while cur != root {
            if depth < chain.len() {
                chain[depth] = cur;
            } else {
                if long_chain.is_empty() {
                    long_chain.extend_from_slice(&chain);
                }
                long_chain.push(cur);
            }
            depth += 1;
            cur = self.dom.parent(cur)?;
        }
        if depth == 0 {
            return None;
        }
        let chain: &[NodeId] = if long_chain.is_empty() {
            &chain[..depth]
        } else {
            &long_chain
        };
        path.reserve(depth);
        for (i, &n) in chain.iter().rev().enumerate() {
            let info = self.dom.node(n);
            let redirected = redirect && i == 0;
            match &info.kind {
                NodeKind::Element(e) => {
                    path.push(step(info.sib_index), e.attr("id"), redirected);
                }
                NodeKind::Text(_) | NodeKind::CData(_) => {
                    path.push(
                        info.sib_index.saturating_mul(2).saturating_add(1),
                        None,
                        redirected,
                    );
                    let offset = match utf16_offset {
                        Some(o) => Some(info.chunk_offset.saturating_add(o)),
                        None => (info.chunk_offset > 0).then_some(info.chunk_offset),
                    };
                    if let Some(o) = offset {
                        path.set_char_offset(o);
                    }
                }
                _ => return None,
            }
        }
        Some(())
    }

    /// Resolves a document-relative CFI (its first step counts from the root
    /// element), returning the start and, for a range, the end.
    ///
    /// # Errors
    ///
    /// [`ResolveError`] when a step has no target or the path has a shape
    /// this reader does not follow.
    pub fn resolve(&self, cfi: &Cfi) -> Result<(Location, Option<Location>), ResolveError> {
        let text = cfi.to_string();
        let start = cfi.start();
        let s = self.locate(start.path().steps(), start.path(), &text)?;
        if !cfi.is_range() {
            return Ok((s, None));
        }
        let end = cfi.end();
        let e = self.locate(end.path().steps(), end.path(), &text)?;
        Ok((s, Some(e)))
    }

    /// Follows `steps` from the root element. `path` supplies the offset.
    pub(crate) fn locate(
        &self,
        steps: &[Step],
        path: &Path,
        cfi: &str,
    ) -> Result<Location, ResolveError> {
        let unsupported = |reason| ResolveError::Unsupported {
            cfi: cfi.to_owned(),
            reason,
        };
        let out_of_range = |depth: usize, step: u32| ResolveError::StepOutOfRange {
            cfi: cfi.to_owned(),
            depth,
            step,
        };
        let Some(mut cur) = self.dom.root() else {
            return Err(out_of_range(0, steps.first().map_or(0, Step::index)));
        };
        if path.is_offset_redirected() {
            return Err(unsupported("indirection to an offset"));
        }
        for (depth, s) in steps.iter().enumerate() {
            if depth > 0 && s.is_redirected() {
                return Err(unsupported("indirection inside a content document"));
            }
            let last = depth + 1 == steps.len();
            let index = s.index();
            let elements: Vec<NodeId> = self.dom.child_elements(cur).collect();
            if index % 2 == 0 {
                if index == 0 || index as usize > elements.len() * 2 {
                    // Virtual positions before the first / after the last
                    // child: treated as character positions there.
                    if last && (index == 0 || index as usize == elements.len() * 2 + 2) {
                        let chunk = if index == 0 { 0 } else { elements.len() as u32 };
                        return self.chunk_location(cur, chunk, 0, true, cfi);
                    }
                    return Err(out_of_range(depth, index));
                }
                let mut next = elements[(index / 2 - 1) as usize];
                if let Some(id) = s.id() {
                    if self.dom.element(next).and_then(|e| e.attr("id")) != Some(id) {
                        // The id assertion wins when the index is stale.
                        if let Some(by_id) = self.dom.element_by_id(id) {
                            next = by_id;
                        }
                    }
                }
                cur = next;
                if last {
                    return match path.offset() {
                        None => Ok(Location::Element(cur)),
                        Some(Offset::Character { .. }) => {
                            Err(unsupported("character offset on an element"))
                        }
                        Some(_) => Ok(Location::Element(cur)),
                    };
                }
            } else {
                if !last {
                    return Err(unsupported("steps after a character data step"));
                }
                let chunk = (index - 1) / 2;
                if chunk as usize > elements.len() {
                    return Err(out_of_range(depth, index));
                }
                let offset = match path.offset() {
                    Some(Offset::Character { utf16_offset, .. }) => *utf16_offset,
                    None => 0,
                    Some(_) => return Err(unsupported("spatial or temporal offset on text")),
                };
                return self.chunk_location(cur, chunk, offset, false, cfi);
            }
        }
        Ok(Location::Element(cur))
    }

    /// The character position `offset` inside chunk `chunk` of `parent`.
    fn chunk_location(
        &self,
        parent: NodeId,
        chunk: u32,
        offset: u32,
        lenient: bool,
        cfi: &str,
    ) -> Result<Location, ResolveError> {
        let mut total = 0u32;
        let mut last = None;
        for c in self.dom.children(parent) {
            let n = self.dom.node(c);
            if n.sib_index != chunk || self.dom.char_data(c).is_none() {
                if n.sib_index > chunk {
                    break;
                }
                continue;
            }
            let start = n.chunk_offset;
            let end = start.saturating_add(n.utf16_len);
            total = end;
            if offset < end || (offset == start && n.utf16_len == 0) {
                return Ok(Location::Text {
                    node: c,
                    utf16_offset: offset - start,
                });
            }
            last = Some((c, n.utf16_len));
        }
        match last {
            Some((node, len)) if offset == total => Ok(Location::Text {
                node,
                utf16_offset: len,
            }),
            None if offset == 0 || lenient => Ok(Location::EmptyChunk { parent, chunk }),
            _ => Err(ResolveError::OffsetOutOfRange {
                cfi: cfi.to_owned(),
                offset,
                len: total,
            }),
        }
    }

    /// The text position of a location: `(node, utf16 offset)` where text
    /// at or after the position starts.
    fn cursor(&self, loc: &Location) -> (u32, u32) {
        match *loc {
            Location::Text { node, utf16_offset } => (node.0, utf16_offset),
            Location::Element(e) => (e.0, 0),
            Location::EmptyChunk { parent, chunk } => {
                let next = self
                    .dom
                    .child_elements(parent)
                    .nth(chunk as usize)
                    .map_or(self.dom.subtree_end(parent).0, |e| e.0);
                (next, 0)
            }
        }
    }

    /// Reading text (ruby annotations, scripts and styles left out) from
    /// `loc` onward, at most `max_chars` characters, whitespace as written.
    pub fn text_after(&self, loc: &Location, max_chars: usize) -> String {
        let (start, off) = self.cursor(loc);
        let mut out = String::new();
        let mut count = 0;
        for i in start..self.dom.len() as u32 {
            let id = NodeId(i);
            let Some(t) = self.dom.char_data(id) else {
                continue;
            };
            let t = if i == start {
                &t[utf16_to_byte(t, off)..]
            } else if self.is_non_reading(id) {
                continue;
            } else {
                t
            };
            for c in t.chars() {
                if count == max_chars {
                    return out;
                }
                out.push(c);
                count += 1;
            }
        }
        out
    }

    /// Reading text before `loc`, at most `max_chars` characters (the ones
    /// closest to `loc`).
    pub fn text_before(&self, loc: &Location, max_chars: usize) -> String {
        let (end, off) = self.cursor(loc);
        let mut rev: Vec<char> = Vec::new();
        let mut i = end.min(self.dom.len() as u32);
        loop {
            let id = NodeId(i);
            if let Some(t) = self.dom.get(id).and_then(|_| self.dom.char_data(id)) {
                let piece = if i == end {
                    Some(&t[..utf16_to_byte(t, off)])
                } else if self.is_non_reading(id) {
                    None
                } else {
                    Some(t)
                };
                if let Some(p) = piece {
                    for c in p.chars().rev() {
                        if rev.len() == max_chars {
                            return rev.into_iter().rev().collect();
                        }
                        rev.push(c);
                    }
                }
            }
            if i == 0 {
                break;
            }
            i -= 1;
        }
        rev.into_iter().rev().collect()
    }

    /// Reading text between two locations (start inclusive, end exclusive).
    pub fn text_between(&self, start: &Location, end: &Location) -> String {
        let (a, aoff) = self.cursor(start);
        let (b, boff) = self.cursor(end);
        let mut out = String::new();
        for i in a..=b.min(self.dom.len().saturating_sub(1) as u32) {
            let id = NodeId(i);
            let Some(t) = self.dom.char_data(id) else {
                continue;
            };
            if i != a && i != b && self.is_non_reading(id) {
                continue;
            }
            let from = if i == a { utf16_to_byte(t, aoff) } else { 0 };
            let to = if i == b {
                utf16_to_byte(t, boff)
            } else {
                t.len()
            };
            if from < to {
                out.push_str(&t[from..to]);
            }
        }
        out
    }
}

/// CFI step of element child number `i`.
fn step(i: u32) -> u32 {
    i.saturating_add(1).saturating_mul(2)
}

/// Byte index of a UTF-16 offset in `s` (clamped to the end; an offset
/// inside a surrogate pair rounds down).
pub(crate) fn utf16_to_byte(s: &str, utf16: u32) -> usize {
    let mut units = 0u32;
    for (i, c) in s.char_indices() {
        let next = units + c.len_utf16() as u32;
        if next > utf16 {
            return i;
        }
        units = next;
    }
    s.len()
}
