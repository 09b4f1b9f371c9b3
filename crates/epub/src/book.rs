//! [`Book`]: opening an EPUB and its structure.

use std::collections::{HashMap, HashSet};

use crate::archive::Archive;
use crate::document::Document;
use crate::package::{self, decode_text, ManifestItem, Metadata, PageProgression, SpineItem};
use crate::progress::{Check, ControlFlow, Progress, Stage};
use crate::toc::{self, collapse_ws, TocEntry};
use crate::xml::{Dom, NodeId, XmlLimits};
use crate::{Limits, OpenError, Warning};

/// A chapter: a stretch of the book that starts at a table-of-contents
/// entry and runs to the next one.
///
/// Several chapters can share one spine document (entries pointing at
/// `file.xhtml#anchor`), and a chapter can span several spine documents
/// (spine documents not named in the table of contents belong to the
/// chapter before them). Content before the first entry forms an untitled
/// chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Chapter {
    /// Position in [`Book::chapters`].
    pub index: usize,
    /// The table-of-contents label; `None` for leading untitled content.
    pub title: Option<String>,
    /// Nesting depth of the table-of-contents entry.
    pub depth: usize,
    /// Spine index where the chapter starts.
    pub spine_index: usize,
    /// The entry's link as written (empty for untitled content).
    pub href: String,
    /// The element the chapter starts at, when the entry has a fragment.
    pub start: Option<NodeId>,
}

/// An opened EPUB: metadata, spine, table of contents, chapters and the
/// parsed spine documents.
///
/// Created with [`Book::open`]; everything after that is read-only and
/// works on memory only.
#[derive(Debug, Clone)]
pub struct Book {
    pub(crate) metadata: Metadata,
    pub(crate) package_path: String,
    pub(crate) manifest: Vec<ManifestItem>,
    pub(crate) spine: Vec<SpineItem>,
    pub(crate) spine_step: u32,
    pub(crate) direction: PageProgression,
    pub(crate) docs: Vec<Option<Document>>,
    pub(crate) toc: Vec<TocEntry>,
    pub(crate) page_list: Vec<TocEntry>,
    pub(crate) chapters: Vec<Chapter>,
    /// `(spine_index, node)` where each chapter starts, sorted.
    pub(crate) chapter_starts: Vec<(usize, NodeId)>,
    pub(crate) warnings: Vec<Warning>,
}

const XHTML_TYPES: [&str; 3] = ["application/xhtml+xml", "text/html", "image/svg+xml"];

impl Book {
    /// Opens an EPUB from its bytes.
    ///
    /// Reads the container, the package document, every spine document and
    /// the table of contents (EPUB 3 navigation document, else EPUB 2 NCX).
    /// Broken XHTML is repaired and reported in [`Book::warnings`].
    ///
    /// # Errors
    ///
    /// [`OpenError`] when the bytes are not a zip, not an EPUB, have a
    /// missing or broken package document, encrypted spine documents (DRM;
    /// font obfuscation alone is fine), or exceed `limits`
    /// ([`OpenError::limit`] names the budget).
    pub fn open(bytes: &[u8], limits: &Limits) -> Result<Book, OpenError> {
        Book::open_checked(bytes, limits, &mut |_| ControlFlow::Continue(()))
    }

    /// [`Book::open`] that calls `check` before reading each spine document: a check that
    /// breaks stops the job with [`OpenError::Stopped`] (a deadline, a client gone), and it
    /// can show progress.
    ///
    /// # Errors
    ///
    /// As [`Book::open`], and [`OpenError::Stopped`].
    pub fn open_checked(
        bytes: &[u8],
        limits: &Limits,
        check: &mut Check<'_>,
    ) -> Result<Book, OpenError> {
        let mut zip = Archive::open(bytes, limits)?;
        // What is left of the book's entity-expansion budget.
        let mut entity_left = limits.max_entity_bytes_per_book();
        let xml_limits = |left: u64| XmlLimits::of(limits, Some(left));
        let mut warnings = Vec::new();
        let warn = |w: &mut Vec<Warning>, path: &str, message: String| {
            w.push(Warning {
                path: path.to_owned(),
                message,
            });
        };

        let has_container = zip.names().any(|n| n == "META-INF/container.xml");
        match zip.read("mimetype")? {
            Some(m) => {
                let found = String::from_utf8_lossy(&m).trim().to_owned();
                if found != "application/epub+zip" {
                    return Err(OpenError::WrongMimetype { found });
                }
            }
            None if has_container => {
                warn(
                    &mut warnings,
                    "mimetype",
                    "missing mimetype entry".to_owned(),
                );
            }
            None => {}
        }
        let container = zip
            .read("META-INF/container.xml")?
            .ok_or(OpenError::MissingContainer)?;
        let (package_path, used) = package::rootfile(&container, &xml_limits(entity_left))?;
        entity_left = entity_left.saturating_sub(used);
        let encrypted = match zip.read("META-INF/encryption.xml")? {
            Some(e) => {
                let (found, used) = package::encrypted_resources(&e, &xml_limits(entity_left))?;
                entity_left = entity_left.saturating_sub(used);
                found
            }
            None => Vec::new(),
        };
        let opf = zip
            .read(&package_path)?
            .ok_or_else(|| OpenError::MissingPackage {
                path: package_path.clone(),
            })?;
        let (pkg, used) =
            package::parse_package(&package_path, &opf, limits, &xml_limits(entity_left))?;
        entity_left = entity_left.saturating_sub(used);

        let nav_item = pkg
            .manifest
            .iter()
            .find(|m| m.properties.iter().any(|p| p == "nav"))
            .cloned();
        for (path, algorithm, obfuscation) in &encrypted {
            let needed = path.is_empty()
                || pkg.spine.iter().any(|s| &s.path == path)
                || nav_item.as_ref().is_some_and(|n| &n.path == path);
            if needed && !obfuscation {
                let path = if path.is_empty() {
                    "META-INF/encryption.xml".to_owned()
                } else {
                    path.clone()
                };
                return Err(OpenError::Encrypted {
                    path,
                    algorithm: algorithm.clone(),
                });
            }
            if !obfuscation {
                warn(
                    &mut warnings,
                    path,
                    format!("resource is encrypted with {algorithm}"),
                );
            }
        }

        let mut docs = Vec::with_capacity(pkg.spine.len());
        for (done, item) in pkg.spine.iter().enumerate() {
            let progress = Progress {
                stage: Stage::Reading,
                done,
                total: pkg.spine.len(),
                path: &item.path,
            };
            if check(progress).is_break() {
                return Err(OpenError::Stopped {
                    path: item.path.clone(),
                });
            }
            if !XHTML_TYPES.contains(&item.media_type.as_str()) {
                warn(
                    &mut warnings,
                    &item.path,
                    format!("spine item has media type {:?}, not read", item.media_type),
                );
                docs.push(None);
                continue;
            }
            match zip.read(&item.path)? {
                Some(bytes) => {
                    let doc =
                        parse_doc(&item.path, &bytes, &xml_limits(entity_left), &mut warnings)?;
                    entity_left = entity_left.saturating_sub(doc.dom.entity_bytes);
                    docs.push(Some(doc));
                }
                None => {
                    warn(
                        &mut warnings,
                        &item.path,
                        "spine document is missing".to_owned(),
                    );
                    docs.push(None);
                }
            }
        }

        let mut toc_entries = Vec::new();
        let mut page_list = Vec::new();
        if let Some(nav) = &nav_item {
            let in_spine = pkg.spine.iter().position(|s| s.path == nav.path);
            let parsed;
            let dom = match in_spine.and_then(|i| docs[i].as_ref()) {
                Some(d) => Some(&d.dom),
                None => match zip.read(&nav.path)? {
                    Some(bytes) => {
                        parsed =
                            parse_doc(&nav.path, &bytes, &xml_limits(entity_left), &mut warnings)?;
                        entity_left = entity_left.saturating_sub(parsed.dom.entity_bytes);
                        Some(&parsed.dom)
                    }
                    None => {
                        warn(
                            &mut warnings,
                            &nav.path,
                            "navigation document is missing".to_owned(),
                        );
                        None
                    }
                },
            };
            if let Some(dom) = dom {
                toc_entries = toc::from_nav(dom, &nav.path, "toc", limits)?;
                page_list = toc::from_nav(dom, &nav.path, "page-list", limits)?;
            }
        }
        if toc_entries.is_empty() {
            let ncx = pkg
                .toc_idref
                .as_ref()
                .and_then(|id| pkg.manifest.iter().find(|m| &m.id == id))
                .or_else(|| {
                    pkg.manifest
                        .iter()
                        .find(|m| m.media_type == "application/x-dtbncx+xml")
                });
            if let Some(ncx) = ncx {
                if let Some(bytes) = zip.read(&ncx.path)? {
                    let doc =
                        parse_doc(&ncx.path, &bytes, &xml_limits(entity_left), &mut warnings)?;
                    toc_entries = toc::from_ncx(&doc.dom, &ncx.path, limits)?;
                }
            }
        }

        let mut book = Book {
            metadata: pkg.metadata,
            package_path,
            manifest: pkg.manifest,
            spine: pkg.spine,
            spine_step: pkg.spine_step,
            direction: pkg.direction,
            docs,
            toc: toc_entries,
            page_list,
            chapters: Vec::new(),
            chapter_starts: Vec::new(),
            warnings,
        };
        book.build_chapters();
        Ok(book)
    }

    fn build_chapters(&mut self) {
        let mut starts: Vec<(usize, NodeId, Chapter)> = Vec::new();
        // Lookups in linear time overall: first spine index per path, the
        // starts seen, and each document's ids (built when first needed).
        let mut spine_of: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.spine.iter().enumerate() {
            spine_of.entry(s.path.as_str()).or_insert(i);
        }
        let mut seen: HashSet<(usize, NodeId)> = HashSet::new();
        let mut ids: HashMap<usize, HashMap<&str, NodeId>> = HashMap::new();
        for e in &self.toc {
            let Some(&spine_index) = spine_of.get(e.path.as_str()) else {
                self.warnings.push(Warning {
                    path: e.path.clone(),
                    message: format!("table of contents entry {:?} is not in the spine", e.href),
                });
                continue;
            };
            let mut node = None;
            if let (Some(frag), Some(doc)) = (&e.fragment, &self.docs[spine_index]) {
                let frag = package::percent_decode(frag);
                node = ids
                    .entry(spine_index)
                    .or_insert_with(|| doc.dom.ids())
                    .get(frag.as_str())
                    .copied();
                if node.is_none() {
                    self.warnings.push(Warning {
                        path: e.path.clone(),
                        message: format!("table of contents target #{frag} not found"),
                    });
                }
            }
            let at = node.unwrap_or(NodeId(0));
            if !seen.insert((spine_index, at)) {
                continue;
            }
            starts.push((
                spine_index,
                at,
                Chapter {
                    index: 0,
                    title: Some(e.title.clone()),
                    depth: e.depth,
                    spine_index,
                    href: e.href.clone(),
                    start: node,
                },
            ));
        }
        if starts.is_empty() {
            // No usable table of contents: one chapter per spine document.
            for (i, item) in self.spine.iter().enumerate() {
                let title = self.docs[i].as_ref().and_then(|d| doc_title(&d.dom));
                starts.push((
                    i,
                    NodeId(0),
                    Chapter {
                        index: 0,
                        title,
                        depth: 0,
                        spine_index: i,
                        href: item.href.clone(),
                        start: None,
                    },
                ));
            }
        }
        starts.sort_by_key(|(s, n, _)| (*s, *n));
        if starts
            .first()
            .is_some_and(|(s, n, _)| (*s, *n) != (0, NodeId(0)))
        {
            starts.insert(
                0,
                (
                    0,
                    NodeId(0),
                    Chapter {
                        index: 0,
                        title: None,
                        depth: 0,
                        spine_index: 0,
                        href: String::new(),
                        start: None,
                    },
                ),
            );
        }
        for (i, (_, _, c)) in starts.iter_mut().enumerate() {
            c.index = i;
        }
        self.chapter_starts = starts.iter().map(|(s, n, _)| (*s, *n)).collect();
        self.chapters = starts.into_iter().map(|(_, _, c)| c).collect();
    }

    /// Publication metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Path of the package document inside the archive.
    pub fn package_path(&self) -> &str {
        &self.package_path
    }

    /// The manifest items.
    pub fn manifest(&self) -> &[ManifestItem] {
        &self.manifest
    }

    /// The spine in reading order (all itemrefs, linear or not).
    pub fn spine(&self) -> &[SpineItem] {
        &self.spine
    }

    /// The CFI step of the `<spine>` element inside `<package>` (normally 6).
    pub fn spine_step(&self) -> u32 {
        self.spine_step
    }

    /// The spine's `page-progression-direction`.
    pub fn page_progression(&self) -> PageProgression {
        self.direction
    }

    /// The table of contents, flattened in document order (see
    /// [`TocEntry::depth`]).
    pub fn toc(&self) -> &[TocEntry] {
        &self.toc
    }

    /// The navigation document's page list (empty if there is none).
    pub fn page_list(&self) -> &[TocEntry] {
        &self.page_list
    }

    /// Chapters in reading order.
    pub fn chapters(&self) -> &[Chapter] {
        &self.chapters
    }

    /// Index of the chapter that contains `node` of spine item
    /// `spine_index`.
    pub fn chapter_index_at(&self, spine_index: usize, node: NodeId) -> usize {
        self.chapter_starts
            .partition_point(|&start| start <= (spine_index, node))
            .saturating_sub(1)
    }

    /// Problems found while reading (broken markup, missing files…).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Total size in bytes of the spine documents that were read.
    pub fn content_bytes(&self) -> usize {
        self.docs.iter().flatten().map(|d| d.bytes).sum()
    }

    /// The parsed document of spine item `spine_index` (`None` if it could
    /// not be read).
    pub fn document(&self, spine_index: usize) -> Option<&Document> {
        self.docs.get(spine_index)?.as_ref()
    }
}

fn parse_doc(
    path: &str,
    bytes: &[u8],
    limits: &XmlLimits,
    warnings: &mut Vec<Warning>,
) -> Result<Document, OpenError> {
    let (text, problem) = decode_text(bytes);
    if let Some(message) = problem {
        warnings.push(Warning {
            path: path.to_owned(),
            message,
        });
    }
    let dom = Dom::parse_with_limits(&text, *limits).map_err(|source| OpenError::Xml {
        path: path.to_owned(),
        source,
    })?;
    for message in &dom.warnings {
        warnings.push(Warning {
            path: path.to_owned(),
            message: message.clone(),
        });
    }
    Ok(Document {
        dom,
        bytes: bytes.len(),
    })
}

/// The `<title>` of an XHTML document.
fn doc_title(dom: &Dom) -> Option<String> {
    let head = dom.child_named(dom.root()?, "head")?;
    let title = dom.child_named(head, "title")?;
    let t = collapse_ws(&dom.text_content(title));
    (!t.is_empty()).then_some(t)
}
