//! A small, tolerant XML parser that builds a DOM shaped the way EPUB CFI
//! needs it.
//!
//! Unlike a strict parser it never gives up: broken markup is repaired the
//! way an HTML parser would (unclosed elements are closed, stray end tags are
//! dropped, a bare `&` stays literal) and each repair is recorded as a
//! warning. Character data keeps the DOM's node boundaries: text, CDATA
//! sections, comments and processing instructions are separate nodes, and
//! line ends are normalised to `\n` as XML requires.
//!
//! Nodes are stored in document order, so "is inside" and "comes before"
//! are integer comparisons.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use crate::{Limits, ParseError};
use entities::{declaration_end, entity_decls};

mod entities;
pub(crate) use entities::inline_entities;

/// Sentinel for "no node".
const NONE: u32 = u32::MAX;

/// Most warnings kept per document; later ones are counted only.
const MAX_WARNINGS: usize = 50;

/// Identifies a node inside one parsed content document.
///
/// Ids are in document order: a node's id is larger than its ancestors' and
/// smaller than every node that starts after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// Position of the node in document order (0 is the document itself).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a node is.
#[derive(Debug, Clone)]
pub(crate) enum NodeKind {
    Document,
    Element(Element),
    Text(String),
    CData(String),
    Comment,
    Pi,
}

/// An element's name and attributes, as written (qualified names).
#[derive(Debug, Clone)]
pub(crate) struct Element {
    pub(crate) name: String,
    pub(crate) attrs: Vec<(String, String)>,
}

impl Element {
    /// The name without its namespace prefix.
    pub(crate) fn local_name(&self) -> &str {
        local(&self.name)
    }

    /// The value of the attribute with this qualified name.
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The part of a qualified name after the colon.
pub(crate) fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, l)| l)
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) kind: NodeKind,
    pub(crate) parent: u32,
    first_child: u32,
    last_child: u32,
    next_sibling: u32,
    /// One past the last node of this node's subtree.
    subtree_end: u32,
    /// Element: its index among the parent's element children.
    /// Character data: the index of its chunk (= element siblings before it).
    pub(crate) sib_index: u32,
    /// Character data: UTF-16 offset of this node inside its chunk.
    pub(crate) chunk_offset: u32,
    /// Character data: length in UTF-16 code units.
    pub(crate) utf16_len: u32,
}

/// A parsed document.
#[derive(Debug, Clone)]
pub(crate) struct Dom {
    nodes: Vec<Node>,
    pub(crate) warnings: Vec<String>,
    /// Bytes produced by references to DTD-declared entities.
    pub(crate) entity_bytes: u64,
}

/// The budgets one XML parse runs under (see [`Limits`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct XmlLimits {
    /// Most bytes entity references may expand to in this document.
    pub(crate) entity_bytes: u64,
    /// What is left of the book's entity budget, and that budget.
    pub(crate) book_entity: Option<(u64, u64)>,
    pub(crate) depth: usize,
    pub(crate) attributes: usize,
    pub(crate) elements: usize,
}

impl XmlLimits {
    /// No budgets at all (trusted input).
    pub(crate) fn unlimited() -> Self {
        XmlLimits {
            entity_bytes: u64::MAX,
            book_entity: None,
            depth: usize::MAX,
            attributes: usize::MAX,
            elements: usize::MAX,
        }
    }

    /// The per-document budgets of `limits`; `book_left` is what remains of
    /// the book's entity budget.
    pub(crate) fn of(limits: &Limits, book_left: Option<u64>) -> Self {
        XmlLimits {
            entity_bytes: limits.max_entity_bytes_per_document(),
            book_entity: book_left.map(|left| (left, limits.max_entity_bytes_per_book())),
            depth: limits.max_depth(),
            attributes: limits.max_attributes_per_element(),
            elements: limits.max_elements_per_document(),
        }
    }
}

/// Line ends normalised to `\n` and a byte-order mark removed.
fn normalise(input: &str) -> Cow<'_, str> {
    let input = input.strip_prefix('\u{feff}').unwrap_or(input);
    if input.contains('\r') {
        Cow::Owned(input.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(input)
    }
}

/// UTF-16 length of a string, counted from its UTF-8 bytes.
pub(crate) fn utf16_len(s: &str) -> usize {
    s.bytes()
        .map(|b| usize::from((b & 0xC0) != 0x80) + usize::from(b >= 0xF0))
        .sum()
}

impl Dom {
    /// Parses `input`, repairing what is broken, with no budgets.
    pub(crate) fn parse(input: &str) -> Dom {
        match Dom::parse_with_limits(input, XmlLimits::unlimited()) {
            Ok(dom) => dom,
            // Unreachable: no budget can be exceeded.
            Err(_) => Dom {
                nodes: Vec::new(),
                warnings: Vec::new(),
                entity_bytes: 0,
            },
        }
    }

    /// Parses `input`, repairing what is broken, and stops at the first
    /// budget of `limits` exceeded. The work done is bounded by the budgets.
    pub(crate) fn parse_with_limits(input: &str, limits: XmlLimits) -> Result<Dom, ParseError> {
        let src = normalise(input);
        Parser::new(&src, limits).run()
    }

    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub(crate) fn get(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index())
    }

    /// Number of nodes, the document node included.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The element, if the node is one.
    pub(crate) fn element(&self, id: NodeId) -> Option<&Element> {
        match &self.node(id).kind {
            NodeKind::Element(e) => Some(e),
            _ => None,
        }
    }

    /// The character data (text or CDATA) of the node, if it has any.
    pub(crate) fn char_data(&self, id: NodeId) -> Option<&str> {
        match &self.node(id).kind {
            NodeKind::Text(t) | NodeKind::CData(t) => Some(t),
            _ => None,
        }
    }

    pub(crate) fn parent(&self, id: NodeId) -> Option<NodeId> {
        let p = self.node(id).parent;
        (p != NONE).then_some(NodeId(p))
    }

    /// The document element.
    pub(crate) fn root(&self) -> Option<NodeId> {
        self.children(NodeId(0))
            .find(|&c| self.element(c).is_some())
    }

    /// Child nodes in order.
    pub(crate) fn children(&self, id: NodeId) -> Children<'_> {
        Children {
            dom: self,
            next: self.node(id).first_child,
        }
    }

    /// Element children in order.
    pub(crate) fn child_elements(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.children(id).filter(|&c| self.element(c).is_some())
    }

    /// Every node strictly inside `id`, in document order.
    pub(crate) fn descendants(&self, id: NodeId) -> impl Iterator<Item = NodeId> {
        (id.0 + 1..self.node(id).subtree_end).map(NodeId)
    }

    /// One past the last node id inside `id`.
    pub(crate) fn subtree_end(&self, id: NodeId) -> NodeId {
        NodeId(self.node(id).subtree_end)
    }

    /// First element child with this local name.
    pub(crate) fn child_named(&self, id: NodeId, local_name: &str) -> Option<NodeId> {
        self.child_elements(id).find(|&c| {
            self.element(c)
                .is_some_and(|e| e.local_name() == local_name)
        })
    }

    /// The `<body>` element of an XHTML document.
    pub(crate) fn body(&self) -> Option<NodeId> {
        self.root().and_then(|r| self.child_named(r, "body"))
    }

    /// Finds the element whose `id` attribute is `value`.
    pub(crate) fn element_by_id(&self, value: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .enumerate()
            .find_map(|(i, n)| match &n.kind {
                NodeKind::Element(e) if e.attr("id") == Some(value) => Some(NodeId(i as u32)),
                _ => None,
            })
    }

    /// Every element's `id` attribute, the first element winning (as
    /// [`Dom::element_by_id`] finds it).
    pub(crate) fn ids(&self) -> HashMap<&str, NodeId> {
        let mut out = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if let NodeKind::Element(e) = &n.kind {
                if let Some(id) = e.attr("id") {
                    out.entry(id).or_insert(NodeId(i as u32));
                }
            }
        }
        out
    }

    /// Resolves a namespace prefix in scope at `id`.
    pub(crate) fn namespace_of_prefix(&self, id: NodeId, prefix: &str) -> Option<&str> {
        let decl = format!("xmlns:{prefix}");
        let mut cur = Some(id);
        while let Some(n) = cur {
            if let Some(v) = self.element(n).and_then(|e| e.attr(&decl)) {
                return Some(v);
            }
            cur = self.parent(n);
        }
        None
    }

    /// The value of an attribute in namespace `ns` with local name `name`.
    pub(crate) fn attr_ns(&self, id: NodeId, ns: &str, name: &str) -> Option<&str> {
        let e = self.element(id)?;
        e.attrs.iter().find_map(|(n, v)| {
            let (prefix, l) = n.split_once(':')?;
            (l == name && prefix != "xmlns" && self.namespace_of_prefix(id, prefix) == Some(ns))
                .then_some(v.as_str())
        })
    }

    /// Character data inside `id`, concatenated, stopping after about
    /// `max_bytes` (cut at a character boundary).
    pub(crate) fn text_content_capped(&self, id: NodeId, max_bytes: usize) -> String {
        let mut out = String::new();
        for d in self.descendants(id) {
            if let Some(t) = self.char_data(d) {
                if out.len() + t.len() > max_bytes {
                    let mut cut = max_bytes.saturating_sub(out.len()).min(t.len());
                    while !t.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    out.push_str(&t[..cut]);
                    break;
                }
                out.push_str(t);
            }
        }
        out
    }

    /// All character data inside `id`, concatenated.
    pub(crate) fn text_content(&self, id: NodeId) -> String {
        let mut out = String::new();
        for d in self.descendants(id) {
            if let Some(t) = self.char_data(d) {
                out.push_str(t);
            }
        }
        out
    }
}

/// Iterator over a node's children.
pub(crate) struct Children<'a> {
    dom: &'a Dom,
    next: u32,
}

impl Iterator for Children<'_> {
    type Item = NodeId;
    fn next(&mut self) -> Option<NodeId> {
        if self.next == NONE {
            return None;
        }
        let id = NodeId(self.next);
        self.next = self.dom.node(id).next_sibling;
        Some(id)
    }
}

/// Per open element bookkeeping while building.
struct Open {
    id: u32,
    elements: u32,
    chunk_utf16: u32,
}

struct Parser<'a> {
    src: &'a str,
    nodes: Vec<Node>,
    stack: Vec<Open>,
    entities: HashMap<String, String>,
    warnings: Vec<String>,
    dropped_warnings: usize,
    seen_root: bool,
    limits: XmlLimits,
    entity_bytes: u64,
    /// Elements, comments and processing instructions so far.
    elements: usize,
    /// The first budget exceeded; parsing stops there.
    error: Option<ParseError>,
    /// `(byte offset, line)` of the last line lookup, so that lookups in
    /// increasing order cost linear time in total.
    line_cache: Cell<(usize, usize)>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, limits: XmlLimits) -> Self {
        let doc = Node {
            kind: NodeKind::Document,
            parent: NONE,
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
            subtree_end: NONE,
            sib_index: 0,
            chunk_offset: 0,
            utf16_len: 0,
        };
        Parser {
            src,
            nodes: vec![doc],
            stack: vec![Open {
                id: 0,
                elements: 0,
                chunk_utf16: 0,
            }],
            entities: HashMap::new(),
            warnings: Vec::new(),
            dropped_warnings: 0,
            seen_root: false,
            limits,
            entity_bytes: 0,
            elements: 0,
            error: None,
            line_cache: Cell::new((0, 1)),
        }
    }

    /// Records the first budget exceeded.
    fn fail(&mut self, e: ParseError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Counts `bytes` of entity expansion at `pos`; `false` past a budget.
    fn charge_entity(&mut self, bytes: usize, pos: usize) -> bool {
        let total = self.entity_bytes.saturating_add(bytes as u64);
        if total > self.limits.entity_bytes {
            let e = ParseError::EntityExpansion {
                line: self.line_of(pos),
                limit: self.limits.entity_bytes,
            };
            self.fail(e);
            return false;
        }
        if let Some((left, limit)) = self.limits.book_entity {
            if total > left {
                let e = ParseError::BookEntityExpansion {
                    line: self.line_of(pos),
                    limit,
                };
                self.fail(e);
                return false;
            }
        }
        self.entity_bytes = total;
        true
    }

    fn warn(&mut self, msg: String) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(msg);
        } else {
            self.dropped_warnings += 1;
        }
    }

    fn line_of(&self, pos: usize) -> usize {
        let pos = pos.min(self.src.len());
        let (from, line) = match self.line_cache.get() {
            (p, l) if p <= pos => (p, l),
            _ => (0, 1),
        };
        let line = line
            + self.src.as_bytes()[from..pos]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
        self.line_cache.set((pos, line));
        line
    }

    fn add(&mut self, kind: NodeKind) -> u32 {
        let id = self.nodes.len() as u32;
        if !matches!(kind, NodeKind::Text(_) | NodeKind::CData(_)) {
            self.elements += 1;
        }
        let Some(top) = self.stack.last_mut() else {
            return id;
        };
        let parent = top.id;
        let (sib_index, chunk_offset, utf16) = match &kind {
            NodeKind::Element(_) => {
                let i = top.elements;
                top.elements += 1;
                top.chunk_utf16 = 0;
                (i, 0, 0)
            }
            NodeKind::Text(t) | NodeKind::CData(t) => {
                let len = u32::try_from(utf16_len(t)).unwrap_or(u32::MAX);
                let off = top.chunk_utf16;
                top.chunk_utf16 = top.chunk_utf16.saturating_add(len);
                (top.elements, off, len)
            }
            _ => (top.elements, top.chunk_utf16, 0),
        };
        self.nodes.push(Node {
            kind,
            parent,
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
            subtree_end: id + 1,
            sib_index,
            chunk_offset,
            utf16_len: utf16,
        });
        let p = &mut self.nodes[parent as usize];
        let prev_last = p.last_child;
        p.last_child = id;
        if prev_last == NONE {
            p.first_child = id;
        } else {
            self.nodes[prev_last as usize].next_sibling = id;
        }
        id
    }

    fn close_top(&mut self) {
        if let Some(open) = self.stack.pop() {
            let end = self.nodes.len() as u32;
            self.nodes[open.id as usize].subtree_end = end;
        }
    }

    /// Whether one more element, comment or processing instruction at
    /// `pos` fits the budget (records the error if not).
    fn element_fits(&mut self, pos: usize) -> bool {
        if self.elements >= self.limits.elements {
            let e = ParseError::TooManyElements {
                line: self.line_of(pos),
                limit: self.limits.elements,
            };
            self.fail(e);
            return false;
        }
        true
    }

    fn run(mut self) -> Result<Dom, ParseError> {
        let s: &str = self.src;
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if b[i] != b'<' {
                let end = memchr_lt(b, i);
                self.text(&s[i..end], i);
                i = end;
                continue;
            }
            let rest = &s[i..];
            if let Some(body) = rest.strip_prefix("<!--") {
                match body.find("-->") {
                    Some(e) => i += 4 + e + 3,
                    None => {
                        self.warn(format!("unterminated comment at line {}", self.line_of(i)));
                        i = b.len();
                    }
                }
                if self.stack.len() > 1 && self.element_fits(i) {
                    self.add(NodeKind::Comment);
                }
            } else if let Some(body) = rest.strip_prefix("<![CDATA[") {
                let (content, next) = match body.find("]]>") {
                    Some(e) => (&body[..e], i + 9 + e + 3),
                    None => {
                        self.warn(format!(
                            "unterminated CDATA section at line {}",
                            self.line_of(i)
                        ));
                        (body, b.len())
                    }
                };
                if self.stack.len() > 1 {
                    self.add(NodeKind::CData(content.to_owned()));
                }
                i = next;
            } else if rest.starts_with("<!") {
                i = self.doctype(s, i);
            } else if let Some(body) = rest.strip_prefix("<?") {
                match body.find("?>") {
                    Some(e) => i += 2 + e + 2,
                    None => {
                        self.warn(format!(
                            "unterminated processing instruction at line {}",
                            self.line_of(i)
                        ));
                        i = b.len();
                    }
                }
                if self.stack.len() > 1 && self.element_fits(i) {
                    self.add(NodeKind::Pi);
                }
            } else if rest.starts_with("</") {
                i = self.end_tag(s, i);
            } else if b.get(i + 1).is_some_and(|&c| is_name_start(c)) {
                i = self.start_tag(s, i);
            } else {
                self.warn(format!("stray '<' at line {}", self.line_of(i)));
                let end = memchr_lt(b, i + 1);
                self.text(&s[i..end], i);
                i = end;
            }
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.stack.len() > 1 {
            let names: Vec<String> = self.stack[1..]
                .iter()
                .filter_map(|o| match &self.nodes[o.id as usize].kind {
                    NodeKind::Element(e) => Some(format!("<{}>", e.name)),
                    _ => None,
                })
                .collect();
            self.warn(format!(
                "unclosed elements at end of file: {}",
                names.join(" ")
            ));
        }
        while !self.stack.is_empty() {
            self.close_top();
        }
        if !self.seen_root {
            self.warn("no root element".to_owned());
        }
        if self.dropped_warnings > 0 {
            let n = self.dropped_warnings;
            self.warnings.push(format!("{n} more warnings not shown"));
        }
        Ok(Dom {
            nodes: self.nodes,
            warnings: self.warnings,
            entity_bytes: self.entity_bytes,
        })
    }

    fn text(&mut self, raw: &str, pos: usize) {
        if self.stack.len() <= 1 {
            if !raw.trim().is_empty() {
                self.warn(format!(
                    "text outside the root element at line {}",
                    self.line_of(pos)
                ));
            }
            return;
        }
        let t = self.decode(raw, pos);
        self.add(NodeKind::Text(t.into_owned()));
    }

    /// Skips `<!DOCTYPE …>` (reading entity declarations of its internal
    /// subset) or any other `<!…>` declaration.
    fn doctype(&mut self, s: &str, start: usize) -> usize {
        match declaration_end(s, start) {
            Some((end, subset)) => {
                if let Some((a, z)) = subset {
                    for (name, value) in entity_decls(&s[a..z]) {
                        self.entities.entry(name).or_insert(value);
                    }
                }
                end
            }
            None => {
                self.warn(format!(
                    "unterminated declaration at line {}",
                    self.line_of(start)
                ));
                s.len()
            }
        }
    }

    fn end_tag(&mut self, s: &str, start: usize) -> usize {
        let b = s.as_bytes();
        let Some(gt) = s[start..].find('>').map(|g| start + g) else {
            self.warn(format!(
                "unterminated end tag at line {}",
                self.line_of(start)
            ));
            return b.len();
        };
        let name = s[start + 2..gt].trim();
        let found = self
            .stack
            .iter()
            .rposition(|o| match &self.nodes[o.id as usize].kind {
                NodeKind::Element(e) => e.name == name,
                _ => false,
            });
        match found {
            Some(depth) if depth > 0 => {
                if depth + 1 != self.stack.len() {
                    self.warn(format!(
                        "end tag </{name}> at line {} closes unclosed elements",
                        self.line_of(start)
                    ));
                }
                while self.stack.len() > depth {
                    self.close_top();
                }
            }
            _ => {
                self.warn(format!(
                    "stray end tag </{name}> at line {} ignored",
                    self.line_of(start)
                ));
            }
        }
        gt + 1
    }

    fn start_tag(&mut self, s: &str, start: usize) -> usize {
        let b = s.as_bytes();
        let mut i = start + 1;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' && b[i] != b'/' {
            i += 1;
        }
        let name = s[start + 1..i].to_owned();
        if self.stack.len() > self.limits.depth {
            let e = ParseError::TooDeep {
                line: self.line_of(start),
                limit: self.limits.depth,
            };
            self.fail(e);
            return b.len();
        }
        if !self.element_fits(start) {
            return b.len();
        }
        let mut attrs: Vec<(String, String)> = Vec::new();
        let mut names = AttrNames::default();
        let mut attr_count = 0usize;
        let mut self_closing = false;
        let mut terminated = false;
        while i < b.len() {
            if self.error.is_some() {
                return b.len();
            }
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i >= b.len() {
                break;
            }
            match b[i] {
                b'>' => {
                    i += 1;
                    terminated = true;
                    break;
                }
                b'/' if b.get(i + 1) == Some(&b'>') => {
                    i += 2;
                    self_closing = true;
                    terminated = true;
                    break;
                }
                b'<' => {
                    // A new tag starts: this one was never closed.
                    terminated = true;
                    self.warn(format!(
                        "unterminated start tag <{name}> at line {}",
                        self.line_of(start)
                    ));
                    break;
                }
                _ => {}
            }
            let an_start = i;
            while i < b.len() && !is_attr_name_end(b, i) {
                i += 1;
            }
            if i == an_start {
                // Garbage such as a lone '/': skip it.
                i += 1;
                continue;
            }
            attr_count += 1;
            if attr_count > self.limits.attributes {
                let e = ParseError::TooManyAttributes {
                    line: self.line_of(an_start),
                    limit: self.limits.attributes,
                };
                self.fail(e);
                return b.len();
            }
            let an_end = i;
            let an = s[an_start..an_end].to_owned();
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            let mut value = String::new();
            if b.get(i) == Some(&b'=') {
                i += 1;
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                if let Some(&q) = b.get(i).filter(|&&q| q == b'"' || q == b'\'') {
                    let vs = i + 1;
                    let ve = s[vs..].find(q as char).map_or(b.len(), |e| vs + e);
                    value = self.attr_value(&s[vs..ve], vs);
                    i = (ve + 1).min(b.len());
                } else {
                    let vs = i;
                    while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                        i += 1;
                    }
                    self.warn(format!(
                        "unquoted value of attribute {an} at line {}",
                        self.line_of(vs)
                    ));
                    value = self.attr_value(&s[vs..i], vs);
                }
            } else {
                self.warn(format!(
                    "attribute {an} without value at line {}",
                    self.line_of(i)
                ));
            }
            if !names.insert(s, an_start, an_end) {
                self.warn(format!(
                    "duplicate attribute {an} at line {}",
                    self.line_of(an_start)
                ));
            } else {
                attrs.push((an, value));
            }
        }
        if !terminated {
            self.warn(format!(
                "unterminated start tag <{name}> at line {}",
                self.line_of(start)
            ));
        }
        if self.stack.len() == 1 {
            if self.seen_root {
                self.warn(format!(
                    "second root element <{name}> at line {}",
                    self.line_of(start)
                ));
            }
            self.seen_root = true;
        }
        let id = self.add(NodeKind::Element(Element { name, attrs }));
        self.stack.push(Open {
            id,
            elements: 0,
            chunk_utf16: 0,
        });
        if self_closing {
            self.close_top();
        }
        i
    }

    fn attr_value(&mut self, raw: &str, pos: usize) -> String {
        let v = self.decode(raw, pos);
        if v.contains(['\t', '\n']) {
            v.replace(['\t', '\n'], " ")
        } else {
            v.into_owned()
        }
    }

    /// Replaces entity and character references.
    fn decode<'s>(&mut self, raw: &'s str, pos: usize) -> Cow<'s, str> {
        if !raw.contains('&') {
            return Cow::Borrowed(raw);
        }
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(amp) = rest.find('&') {
            out.push_str(&rest[..amp]);
            rest = &rest[amp..];
            let semi = rest.as_bytes()[1..]
                .iter()
                .take(40)
                .position(|&c| c == b';')
                .map(|p| p + 1);
            let Some(semi) = semi else {
                self.warn(format!("bare '&' at line {}", self.line_of(pos)));
                out.push('&');
                rest = &rest[1..];
                continue;
            };
            let name = &rest[1..semi];
            let predefined = matches!(name, "lt" | "gt" | "amp" | "quot" | "apos");
            if let Some(v) = self.entities.get(name).filter(|_| !predefined) {
                let len = v.len();
                if !self.charge_entity(len, pos) {
                    return Cow::Owned(out);
                }
                if let Some(v) = self.entities.get(name) {
                    out.push_str(v);
                }
                rest = &rest[semi + 1..];
                continue;
            }
            match self.reference(name) {
                Some(v) => out.push_str(&v),
                None => {
                    self.warn(format!(
                        "unknown entity &{name}; at line {} kept as text",
                        self.line_of(pos)
                    ));
                    out.push_str(&rest[..=semi]);
                }
            }
            rest = &rest[semi + 1..];
        }
        out.push_str(rest);
        Cow::Owned(out)
    }

    fn reference(&mut self, name: &str) -> Option<String> {
        if let Some(num) = name.strip_prefix('#') {
            let code = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => num.parse::<u32>().ok(),
            }?;
            return Some(char::from_u32(code).unwrap_or('\u{fffd}').to_string());
        }
        let v = match name {
            "lt" => "<",
            "gt" => ">",
            "amp" => "&",
            "quot" => "\"",
            "apos" => "'",
            _ => {
                let v = html_entity(name)?;
                self.warn(format!("undeclared HTML entity &{name}; decoded"));
                v
            }
        };
        Some(v.to_owned())
    }
}

/// A few HTML entities that show up in sloppy XHTML.
fn html_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "nbsp" => "\u{a0}",
        "shy" => "\u{ad}",
        "copy" => "\u{a9}",
        "reg" => "\u{ae}",
        "mdash" => "\u{2014}",
        "ndash" => "\u{2013}",
        "hellip" => "\u{2026}",
        "lsquo" => "\u{2018}",
        "rsquo" => "\u{2019}",
        "ldquo" => "\u{201c}",
        "rdquo" => "\u{201d}",
        "laquo" => "\u{ab}",
        "raquo" => "\u{bb}",
        "middot" => "\u{b7}",
        "bull" => "\u{2022}",
        "deg" => "\u{b0}",
        "times" => "\u{d7}",
        "eacute" => "\u{e9}",
        "egrave" => "\u{e8}",
        "agrave" => "\u{e0}",
        "ccedil" => "\u{e7}",
        "zwnj" => "\u{200c}",
        "zwj" => "\u{200d}",
        "thinsp" => "\u{2009}",
        "ensp" => "\u{2002}",
        "emsp" => "\u{2003}",
        _ => return None,
    })
}

/// The attribute names of one start tag, for duplicate checks in linear
/// time: the first few as byte ranges of the source (no allocation), a
/// hash set once there are more.
#[derive(Default)]
struct AttrNames<'s> {
    few: [(usize, usize); ATTR_NAMES_INLINE],
    len: usize,
    many: Option<HashSet<&'s str>>,
}

/// Attribute names checked by scanning before a hash set is built.
const ATTR_NAMES_INLINE: usize = 16;

impl<'s> AttrNames<'s> {
    /// Adds the name `src[start..end]`; `false` if the tag has it already.
    fn insert(&mut self, src: &'s str, start: usize, end: usize) -> bool {
        let name = &src[start..end];
        if let Some(set) = &mut self.many {
            return set.insert(name);
        }
        if self.few[..self.len]
            .iter()
            .any(|&(a, z)| &src[a..z] == name)
        {
            return false;
        }
        if self.len < ATTR_NAMES_INLINE {
            self.few[self.len] = (start, end);
            self.len += 1;
        } else {
            let mut set: HashSet<&'s str> = self.few.iter().map(|&(a, z)| &src[a..z]).collect();
            set.insert(name);
            self.many = Some(set);
        }
        true
    }
}

/// Whether an attribute name ends before byte `i`.
fn is_attr_name_end(b: &[u8], i: usize) -> bool {
    let c = b[i];
    c.is_ascii_whitespace()
        || matches!(c, b'=' | b'>' | b'<')
        || (c == b'/' && b.get(i + 1) == Some(&b'>'))
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':' || c >= 0x80
}

/// Index of the next `<` at or after `from`, or the end.
fn memchr_lt(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|&c| c == b'<')
        .map_or(b.len(), |p| from + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cdata_comment_pi_are_separate_nodes_in_one_chunk() {
        let dom = Dom::parse("<r><p>ab<!--x-->cd<![CDATA[ef]]><?pi?>gh<b/>ij</p></r>");
        let p = dom.child_elements(dom.root().unwrap()).next().unwrap();
        let kids: Vec<_> = dom.children(p).collect();
        assert_eq!(kids.len(), 8);
        let data: Vec<_> = kids
            .iter()
            .filter_map(|&k| {
                dom.char_data(k)
                    .map(|t| (t, dom.node(k).sib_index, dom.node(k).chunk_offset))
            })
            .collect();
        assert_eq!(
            data,
            vec![
                ("ab", 0, 0),
                ("cd", 0, 2),
                ("ef", 0, 4),
                ("gh", 0, 6),
                ("ij", 1, 0)
            ]
        );
    }

    #[test]
    fn line_ends_are_normalised_and_entities_decoded() {
        let dom = Dom::parse("<r>a\r\nb&amp;&#x1F600;&#65;</r>");
        let t = dom.children(dom.root().unwrap()).next().unwrap();
        assert_eq!(dom.char_data(t), Some("a\nb&\u{1F600}A"));
        assert_eq!(dom.node(t).utf16_len, 7);
    }

    #[test]
    fn broken_markup_is_repaired_with_warnings() {
        let dom = Dom::parse("<r><p>one<b>two</p><i>x &nbsp; & y</r>");
        assert!(!dom.warnings.is_empty());
        assert_eq!(dom.text_content(dom.root().unwrap()), "onetwox \u{a0} & y");
    }

    #[test]
    fn duplicate_attributes_are_found_before_and_after_the_hash_set() {
        let mut attrs: String = (0..20).map(|i| format!(" a{i}=\"{i}\"")).collect();
        attrs.push_str(" a3=\"x\" a19=\"y\" a20=\"z\"");
        let dom = Dom::parse(&format!("<r{attrs}/>"));
        let r = dom.element(dom.root().unwrap()).unwrap();
        assert_eq!(r.attrs.len(), 21);
        assert_eq!(
            (r.attr("a3"), r.attr("a19"), r.attr("a20")),
            (Some("3"), Some("19"), Some("z"))
        );
        assert_eq!(
            dom.warnings,
            vec![
                "duplicate attribute a3 at line 1".to_owned(),
                "duplicate attribute a19 at line 1".to_owned()
            ]
        );
    }

    #[test]
    fn internal_subset_entities_are_used() {
        let dom = Dom::parse("<!DOCTYPE r [<!ENTITY who \"world\">]><r>hello &who;</r>");
        assert_eq!(dom.text_content(dom.root().unwrap()), "hello world");
        assert!(dom.warnings.is_empty());
    }
}
