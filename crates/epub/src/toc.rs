//! Tables of contents: the EPUB 3 navigation document and the EPUB 2 NCX.

use crate::package::{dir_of, join, split_fragment};
use crate::xml::{Dom, NodeId};
use crate::{Limits, OpenError};

/// Longest entry title kept, in bytes; longer labels are cut.
pub(crate) const MAX_TITLE_BYTES: usize = 4096;

/// The EPUB 3 structural-semantics namespace (`epub:type`).
const OPS_NS: &str = "http://www.idpf.org/2007/ops";

/// One entry of a table of contents or page list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TocEntry {
    /// The entry's label, whitespace collapsed (cut after about 4 KiB).
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

/// Checks the budgets for one more entry at `depth` after `count` entries.
fn check(
    doc_path: &str,
    href: &str,
    count: usize,
    depth: usize,
    limits: &Limits,
) -> Result<(), OpenError> {
    if count >= limits.max_toc_entries() {
        return Err(OpenError::TooManyTocEntries {
            path: doc_path.to_owned(),
            limit: limits.max_toc_entries(),
        });
    }
    if depth > limits.max_toc_depth() {
        return Err(OpenError::TocTooDeep {
            path: doc_path.to_owned(),
            href: href.to_owned(),
            depth,
            limit: limits.max_toc_depth(),
        });
    }
    Ok(())
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
///
/// # Errors
///
/// Past [`Limits::max_toc_entries`] or [`Limits::max_toc_depth`].
pub(crate) fn from_nav(
    dom: &Dom,
    doc_path: &str,
    kind: &str,
    limits: &Limits,
) -> Result<Vec<TocEntry>, OpenError> {
    let Some(nav) = (0..dom.len()).map(|i| NodeId(i as u32)).find(|&n| {
        dom.element(n).is_some_and(|e| e.local_name() == "nav") && nav_has_type(dom, n, kind)
    }) else {
        return Ok(Vec::new());
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
        let depth = depth.saturating_sub(1);
        check(doc_path, href, out.len(), depth, limits)?;
        let title = collapse_ws(&dom.text_content_capped(d, MAX_TITLE_BYTES));
        out.push(entry(doc_path, title, href, depth));
    }
    Ok(out)
}

/// Entries of an NCX `navMap`.
///
/// # Errors
///
/// Past [`Limits::max_toc_entries`] or [`Limits::max_toc_depth`].
pub(crate) fn from_ncx(
    dom: &Dom,
    doc_path: &str,
    limits: &Limits,
) -> Result<Vec<TocEntry>, OpenError> {
    let Some(root) = dom.root() else {
        return Ok(Vec::new());
    };
    let Some(map) = dom.child_named(root, "navMap") else {
        return Ok(Vec::new());
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
        check(doc_path, src, out.len(), depth, limits)?;
        let title = dom
            .child_named(d, "navLabel")
            .map(|l| collapse_ws(&dom.text_content_capped(l, MAX_TITLE_BYTES)))
            .unwrap_or_default();
        out.push(entry(doc_path, title, src, depth));
    }
    Ok(out)
}
