//! `META-INF/container.xml`, the package document (OPF) and
//! `META-INF/encryption.xml`.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::xml::inline_entities;
use crate::xml::{Dom, XmlLimits};
use crate::{Limits, OpenError};

/// Publication metadata from the package document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Metadata {
    /// The first `dc:title`.
    pub title: Option<String>,
    /// The `dc:identifier` named by `unique-identifier` (else the first).
    pub identifier: Option<String>,
    /// The first `dc:language`.
    pub language: Option<String>,
    /// Every `dc:creator`, in order.
    pub creators: Vec<String>,
    /// The package `version` attribute (such as `3.0`).
    pub version: String,
}

/// Reading direction declared by the spine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PageProgression {
    /// No direction declared (`default`).
    #[default]
    Default,
    /// Left to right.
    Ltr,
    /// Right to left (Arabic, Hebrew, vertical Japanese).
    Rtl,
}

/// One `<item>` of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestItem {
    /// The item's `id`.
    pub id: String,
    /// The `href` as written in the package document.
    pub href: String,
    /// Path of the resource inside the archive.
    pub path: String,
    /// The `media-type`.
    pub media_type: String,
    /// The space-separated `properties` (such as `nav`).
    pub properties: Vec<String>,
}

/// One `<itemref>` of the spine.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpineItem {
    /// Position in the spine, counting from 0 over all itemrefs.
    pub index: usize,
    /// The itemref's `idref` (a manifest id).
    pub idref: String,
    /// The itemref's own `id`, used as the CFI id assertion.
    pub id: Option<String>,
    /// The manifest `href` as written.
    pub href: String,
    /// Path of the document inside the archive.
    pub path: String,
    /// The manifest media type.
    pub media_type: String,
    /// `false` for `linear="no"`.
    pub linear: bool,
    /// The CFI step index of this itemref inside `<spine>` (`/6/N`).
    pub cfi_step: u32,
}

pub(crate) struct Package {
    pub(crate) metadata: Metadata,
    pub(crate) manifest: Vec<ManifestItem>,
    pub(crate) spine: Vec<SpineItem>,
    pub(crate) spine_step: u32,
    pub(crate) toc_idref: Option<String>,
    pub(crate) direction: PageProgression,
}

fn xml_options(limits: &XmlLimits) -> roxmltree::ParsingOptions {
    roxmltree::ParsingOptions {
        allow_dtd: true,
        // Text nodes come between elements; the tolerant pass has counted
        // the elements already.
        nodes_limit: u32::try_from(limits.elements.saturating_mul(3).saturating_add(16))
            .unwrap_or(u32::MAX),
    }
}

/// Checks `text` against the XML budgets with the tolerant parser (linear
/// time) and prepares it for `roxmltree` (entities inlined, see
/// [`inline_entities`]). Returns the text and the entity bytes used.
fn strict_text<'t>(
    path: &str,
    text: &'t str,
    limits: &XmlLimits,
) -> Result<(Cow<'t, str>, u64), OpenError> {
    let xml_err = |source| OpenError::Xml {
        path: path.to_owned(),
        source,
    };
    let dom = Dom::parse_with_limits(text, *limits).map_err(xml_err)?;
    let inlined = inline_entities(text, limits).map_err(xml_err)?;
    Ok((inlined, dom.entity_bytes))
}

/// Decodes bytes as text: UTF-8 (with or without BOM) or UTF-16 with BOM;
/// invalid UTF-8 is replaced and reported.
pub(crate) fn decode_text(bytes: &[u8]) -> (Cow<'_, str>, Option<String>) {
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        return (Cow::Owned(String::from_utf16_lossy(&units)), None);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        return (Cow::Owned(String::from_utf16_lossy(&units)), None);
    }
    let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => (Cow::Borrowed(s), None),
        Err(e) => (
            String::from_utf8_lossy(bytes),
            Some(format!(
                "invalid utf-8 at byte {}, replaced with U+FFFD",
                e.valid_up_to()
            )),
        ),
    }
}

/// The package path named by `container.xml`, and the entity bytes used.
pub(crate) fn rootfile(container: &[u8], limits: &XmlLimits) -> Result<(String, u64), OpenError> {
    let (text, _) = decode_text(container);
    let (text, entity_bytes) = strict_text("META-INF/container.xml", &text, limits)?;
    let doc = roxmltree::Document::parse_with_options(&text, xml_options(limits)).map_err(|e| {
        OpenError::BrokenContainer {
            reason: e.to_string(),
        }
    })?;
    let rootfiles: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rootfile"))
        .collect();
    let chosen = rootfiles
        .iter()
        .find(|n| n.attribute("media-type") == Some("application/oebps-package+xml"))
        .or(rootfiles.first())
        .and_then(|n| n.attribute("full-path"))
        .filter(|p| !p.is_empty());
    chosen
        .map(|p| (percent_decode(p), entity_bytes))
        .ok_or_else(|| OpenError::BrokenContainer {
            reason: "no rootfile with a full-path".to_owned(),
        })
}

/// Decodes `%XX` escapes in a URL path (invalid escapes stay as written).
pub(crate) fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// Directory part of an archive path, with a trailing slash (or empty).
pub(crate) fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// Resolves a relative URL (without fragment) against an archive directory.
pub(crate) fn join(base_dir: &str, href: &str) -> String {
    let href = percent_decode(href);
    let mut parts: Vec<&str> = if href.starts_with('/') {
        Vec::new()
    } else {
        base_dir.split('/').filter(|p| !p.is_empty()).collect()
    };
    for seg in href.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// Splits `file#fragment`.
pub(crate) fn split_fragment(href: &str) -> (&str, Option<&str>) {
    match href.split_once('#') {
        Some((f, frag)) => (f, Some(frag)),
        None => (href, None),
    }
}

/// Reads the package document; returns it and the entity bytes used.
pub(crate) fn parse_package(
    path: &str,
    bytes: &[u8],
    limits: &Limits,
    xml_limits: &XmlLimits,
) -> Result<(Package, u64), OpenError> {
    let broken = |reason: String| OpenError::BrokenPackage {
        path: path.to_owned(),
        reason,
    };
    let (text, _) = decode_text(bytes);
    let (text, entity_bytes) = strict_text(path, &text, xml_limits)?;
    let doc = roxmltree::Document::parse_with_options(&text, xml_options(xml_limits))
        .map_err(|e| broken(e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().name() != "package" {
        return Err(broken(format!(
            "root element is <{}>, expected <package>",
            root.tag_name().name()
        )));
    }
    let base = dir_of(path);
    let children: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    let find = |name: &str| {
        children
            .iter()
            .enumerate()
            .find(|(_, n)| n.tag_name().name() == name)
            .map(|(i, n)| (i, *n))
    };
    let Some((spine_pos, spine)) = find("spine") else {
        return Err(broken("no <spine>".to_owned()));
    };
    let Some((_, manifest_el)) = find("manifest") else {
        return Err(broken("no <manifest>".to_owned()));
    };

    let mut metadata = Metadata {
        version: root.attribute("version").unwrap_or_default().to_owned(),
        ..Metadata::default()
    };
    if let Some((_, md)) = find("metadata") {
        let unique = root.attribute("unique-identifier");
        let text_of = |n: roxmltree::Node<'_, '_>| {
            let t: String = n
                .descendants()
                .filter(|d| d.is_text())
                .filter_map(|d| d.text())
                .collect();
            let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
            (!t.is_empty()).then_some(t)
        };
        let dc = |n: &roxmltree::Node<'_, '_>, name: &str| {
            n.is_element()
                && n.tag_name().name() == name
                && n.tag_name().namespace() == Some("http://purl.org/dc/elements/1.1/")
        };
        for n in md.descendants() {
            if dc(&n, "title") && metadata.title.is_none() {
                metadata.title = text_of(n);
            } else if dc(&n, "language") && metadata.language.is_none() {
                metadata.language = text_of(n);
            } else if dc(&n, "creator") {
                metadata.creators.extend(text_of(n));
            } else if dc(&n, "identifier") && metadata.identifier.is_none() {
                metadata.identifier = text_of(n);
            }
        }
        // The unique identifier wins over an earlier identifier.
        if let Some(u) = unique {
            if let Some(n) = md
                .descendants()
                .find(|n| dc(n, "identifier") && n.attribute("id") == Some(u))
            {
                if let Some(t) = text_of(n) {
                    metadata.identifier = Some(t);
                }
            }
        }
    }

    let mut manifest = Vec::new();
    for item in manifest_el
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "item")
    {
        let (Some(id), Some(href)) = (item.attribute("id"), item.attribute("href")) else {
            continue;
        };
        let (file, _) = split_fragment(href);
        manifest.push(ManifestItem {
            id: id.to_owned(),
            href: href.to_owned(),
            path: join(base, file),
            media_type: item.attribute("media-type").unwrap_or_default().to_owned(),
            properties: item
                .attribute("properties")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        });
    }

    // First item per id, as a linear search would find it.
    let mut by_id: HashMap<&str, &ManifestItem> = HashMap::with_capacity(manifest.len());
    for m in &manifest {
        by_id.entry(m.id.as_str()).or_insert(m);
    }
    let mut refs_per_file: HashMap<&str, usize> = HashMap::new();
    let mut items = Vec::new();
    for (pos, itemref) in spine.children().filter(|n| n.is_element()).enumerate() {
        if itemref.tag_name().name() != "itemref" {
            continue;
        }
        if items.len() >= limits.max_spine_items() {
            return Err(OpenError::TooManySpineItems {
                path: path.to_owned(),
                limit: limits.max_spine_items(),
            });
        }
        let idref = itemref.attribute("idref").unwrap_or_default();
        let Some(m) = by_id.get(idref).copied() else {
            return Err(broken(format!(
                "spine itemref idref {idref:?} is not in the manifest"
            )));
        };
        let refs = refs_per_file.entry(m.path.as_str()).or_insert(0);
        *refs += 1;
        if *refs > limits.max_spine_refs_per_file() {
            return Err(OpenError::SpineRepeats {
                path: m.path.clone(),
                limit: limits.max_spine_refs_per_file(),
            });
        }
        items.push(SpineItem {
            index: items.len(),
            idref: idref.to_owned(),
            id: itemref.attribute("id").map(str::to_owned),
            href: m.href.clone(),
            path: m.path.clone(),
            media_type: m.media_type.clone(),
            linear: itemref.attribute("linear") != Some("no"),
            cfi_step: step_of(pos),
        });
    }
    if items.is_empty() {
        return Err(broken("the spine is empty".to_owned()));
    }
    let direction = match spine.attribute("page-progression-direction") {
        Some("rtl") => PageProgression::Rtl,
        Some("ltr") => PageProgression::Ltr,
        _ => PageProgression::Default,
    };
    let toc_idref = spine.attribute("toc").map(str::to_owned);
    Ok((
        Package {
            metadata,
            manifest,
            spine: items,
            spine_step: step_of(spine_pos),
            toc_idref,
            direction,
        },
        entity_bytes,
    ))
}

/// CFI step of the element child at `pos` (0-based).
fn step_of(pos: usize) -> u32 {
    u32::try_from(pos)
        .unwrap_or(u32::MAX / 2 - 1)
        .saturating_add(1)
        .saturating_mul(2)
}

/// Font obfuscation algorithms: these only scramble fonts, not content.
const OBFUSCATION: [&str; 2] = [
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
];

/// An encrypted resource: `(archive path, algorithm, is_font_obfuscation)`.
pub(crate) type Encrypted = (String, String, bool);

/// Encrypted resources listed in `META-INF/encryption.xml`, and the entity
/// bytes used.
pub(crate) fn encrypted_resources(
    bytes: &[u8],
    limits: &XmlLimits,
) -> Result<(Vec<Encrypted>, u64), OpenError> {
    let (text, _) = decode_text(bytes);
    let (text, entity_bytes) = strict_text("META-INF/encryption.xml", &text, limits)?;
    let Ok(doc) = roxmltree::Document::parse_with_options(&text, xml_options(limits)) else {
        // Unreadable encryption information: assume the worst for nothing
        // in particular, the caller reports it.
        return Ok((
            vec![(
                String::new(),
                "unreadable META-INF/encryption.xml".to_owned(),
                false,
            )],
            entity_bytes,
        ));
    };
    let mut out = Vec::new();
    for data in doc
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "EncryptedData")
    {
        let algorithm = data
            .descendants()
            .find(|n| n.is_element() && n.tag_name().name() == "EncryptionMethod")
            .and_then(|n| n.attribute("Algorithm"))
            .unwrap_or("unknown")
            .to_owned();
        for r in data
            .descendants()
            .filter(|n| n.is_element() && n.tag_name().name() == "CipherReference")
        {
            if let Some(uri) = r.attribute("URI") {
                let obfuscation = OBFUSCATION.contains(&algorithm.as_str());
                out.push((join("", uri), algorithm.clone(), obfuscation));
            }
        }
    }
    Ok((out, entity_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_resolves_dots_and_escapes() {
        assert_eq!(join("OPS/", "xhtml/a%20b.xhtml"), "OPS/xhtml/a b.xhtml");
        assert_eq!(join("OPS/text/", "../img/x.png"), "OPS/img/x.png");
        assert_eq!(join("", "./a.xhtml"), "a.xhtml");
    }
}
