//! Tables of contents: the EPUB 3 navigation document and the EPUB 2 NCX.

use crate::package::{dir_of, join, split_fragment};
use crate::xml::{Dom, NodeId};

/// The EPUB 3 structural-semantics namespace (`epub:type`).
const OPS_NS: &str = "http://www.idpf.org/2007/ops";

/// One entry of a table of contents or page list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TocEntry {
    /// The entry's label, whitespace collapsed.
    pub title: String,
    /// The link as written in the navigation document.
    pub href: String,
    /// Archive path of the linked file.
    pub path: String,
    /// The fragment after `#`, if any.
    pub fragment: Option<String>,
    /// Nesting depth, 0 for top-level entries.
    pub depth: usize,
}

/// Collapses runs of whitespace to one space and trims.
pub(crate) fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn entry(doc_path: &str, title: String, href: &str, depth: usize) -> TocEntry {
    let (file, frag) = split_fragment(href);
    let path = if file.is_empty() {
        doc_path.to_owned()
    } else {
        join(dir_of(doc_path), file)
    };
    TocEntry {
        title,
        href: href.to_owned(),
        path,
        fragment: frag.filter(|f| !f.is_empty()).map(str::to_owned),
        depth,
    }
}

/// Whether the `<nav>` element has `kind` in its `epub:type`.
fn nav_has_type(dom: &Dom, nav: NodeId, kind: &str) -> bool {
    let value = dom.attr_ns(nav, OPS_NS, "type").or_else(|| {
        // Tolerate a missing namespace declaration.
        dom.element(nav).and_then(|e| e.attr("epub:type"))
    });
    value.is_some_and(|v| v.split_whitespace().any(|t| t == kind))
}

/// Entries of the `<nav epub:type="{kind}">` of a navigation document
/// (`toc`, `page-list`, `landmarks`).
pub(crate) fn from_nav(dom: &Dom, doc_path: &str, kind: &str) -> Vec<TocEntry> {
    let Some(nav) = (0..dom.len()).map(|i| NodeId(i as u32)).find(|&n| {
        dom.element(n).is_some_and(|e| e.local_name() == "nav") && nav_has_type(dom, n, kind)
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in dom.descendants(nav) {
        let Some(e) = dom.element(d) else { continue };
        if e.local_name() != "a" {
            continue;
        }
        let Some(href) = e.attr("href") else { continue };
        let mut depth = 0usize;
        let mut cur = dom.parent(d);
        while let Some(p) = cur {
            if p == nav {
                break;
            }
            if dom.element(p).is_some_and(|e| e.local_name() == "ol") {
                depth += 1;
            }
            cur = dom.parent(p);
        }
        let title = collapse_ws(&dom.text_content(d));
        out.push(entry(doc_path, title, href, depth.saturating_sub(1)));
    }
    out
}

/// Entries of an NCX `navMap`.
pub(crate) fn from_ncx(dom: &Dom, doc_path: &str) -> Vec<TocEntry> {
    let Some(root) = dom.root() else {
        return Vec::new();
    };
    let Some(map) = dom.child_named(root, "navMap") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in dom.descendants(map) {
        if dom.element(d).is_none_or(|e| e.local_name() != "navPoint") {
            continue;
        }
        let Some(src) = dom
            .child_named(d, "content")
            .and_then(|c| dom.element(c))
            .and_then(|e| e.attr("src"))
        else {
            continue;
        };
        let title = dom
            .child_named(d, "navLabel")
            .map(|l| collapse_ws(&dom.text_content(l)))
            .unwrap_or_default();
        let mut depth = 0usize;
        let mut cur = dom.parent(d);
        while let Some(p) = cur {
            if p == map {
                break;
            }
            if dom.element(p).is_some_and(|e| e.local_name() == "navPoint") {
                depth += 1;
            }
            cur = dom.parent(p);
        }
        out.push(entry(doc_path, title, src, depth));
    }
    out
}
