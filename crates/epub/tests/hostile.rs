//! Hostile books: every budget of `Limits` stops its attack with the typed
//! error that names it, after work bounded by the budget (each input here
//! takes seconds or gigabytes without the budget; the tests assert on the
//! error, not on timing).

use std::io::Write;

use citeflow_epub::{Book, Document, Limits, OpenError, ParseError};
use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

const CONTAINER: &str = r#"<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#;

const CHAPTER: &str = r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body><p>Hello</p></body></html>"#;

/// A zip of these entries, deflated (so that large repetitive hostile
/// files stay small, as an attacker would send them).
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        let method = if *name == "mimetype" {
            CompressionMethod::Stored
        } else {
            CompressionMethod::Deflated
        };
        w.start_file(
            *name,
            SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// The package document for `spine` (manifest ids, in order), with a
/// manifest item per file and `doctype` before the root element.
fn opf(doctype: &str, files: &[&str], spine: &[usize], nav: bool) -> String {
    let mut manifest = String::new();
    for (i, path) in files.iter().enumerate() {
        let href = path.strip_prefix("OEBPS/").unwrap_or(path);
        manifest.push_str(&format!(
            r#"<item id="c{i}" href="{href}" media-type="application/xhtml+xml"/>"#
        ));
    }
    if nav {
        manifest.push_str(
            r#"<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>"#,
        );
    }
    let spine: String = spine
        .iter()
        .map(|i| format!(r#"<itemref idref="c{i}"/>"#))
        .collect();
    format!(
        r#"<?xml version="1.0"?>
{doctype}<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:test</dc:identifier><dc:title>Test</dc:title></metadata>
<manifest>{manifest}</manifest><spine>{spine}</spine></package>"#
    )
}

/// A book whose spine is `files` in order, with an optional navigation
/// document and the package document `opf` (else the plain one).
fn book(files: &[(&str, &[u8])], nav: Option<&[u8]>, package: Option<&str>) -> Vec<u8> {
    let paths: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
    let spine: Vec<usize> = (0..files.len()).collect();
    let plain = opf("", &paths, &spine, nav.is_some());
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("OEBPS/content.opf", package.unwrap_or(&plain).as_bytes()),
    ];
    if let Some(nav) = nav {
        entries.push(("OEBPS/nav.xhtml", nav));
    }
    entries.extend_from_slice(files);
    zip_of(&entries)
}

fn open(bytes: &[u8]) -> Result<Book, OpenError> {
    Book::open(bytes, &Limits::default())
}

/// An XHTML document whose DTD declares `&e;` as `value_bytes` bytes and
/// references it `refs` times: `value_bytes * refs` bytes once expanded.
fn entity_doc(value_bytes: usize, refs: usize) -> String {
    format!(
        "<!DOCTYPE html [<!ENTITY e \"{}\">]>\n<html><head><title>t</title></head><body>\n<p>{}</p></body></html>",
        "x".repeat(value_bytes),
        "&e;".repeat(refs)
    )
}

/// `n` nested copies of `<tag>` with text inside, never closed.
fn nested(tag: &str, n: usize) -> String {
    format!("<{tag}>x").repeat(n)
}

#[test]
fn an_entity_bomb_in_xhtml_stops_at_the_document_budget() {
    // 100 KB x 2,000 references = 200 MB expanded, from a 2.7 KB zip.
    let doc = entity_doc(100_000, 2_000);
    let bytes = book(&[("OEBPS/c.xhtml", doc.as_bytes())], None, None);
    let e = open(&bytes).unwrap_err();
    assert_eq!(
        e,
        OpenError::Xml {
            path: "OEBPS/c.xhtml".to_owned(),
            source: ParseError::EntityExpansion {
                line: 3,
                limit: 1 << 20
            },
        }
    );
    assert_eq!(e.limit(), Some("max_entity_bytes_per_document"));
    // Under the budget the same entity is expanded.
    let small = entity_doc(10, 3);
    let b = open(&book(&[("OEBPS/c.xhtml", small.as_bytes())], None, None)).unwrap();
    assert!(b.text_nodes().any(|n| n.text == "x".repeat(30)));
}

#[test]
fn an_entity_bomb_in_the_package_document_stops_at_the_budget() {
    // The OPF DTD declares a 100 KB entity and the title references it
    // 2,000 times (over 60 s in roxmltree before the budget).
    let doctype = format!(
        "<!DOCTYPE package [<!ENTITY e \"{}\">]>",
        "x".repeat(100_000)
    );
    let package = opf(&doctype, &["OEBPS/c.xhtml"], &[0], false).replace(
        "<dc:title>Test",
        &format!("<dc:title>{}", "&e;".repeat(2_000)),
    );
    let bytes = book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        None,
        Some(&package),
    );
    let e = open(&bytes).unwrap_err();
    assert!(
        matches!(
            &e,
            OpenError::Xml { path, source: ParseError::EntityExpansion { line: 3, limit } }
                if path == "OEBPS/content.opf" && *limit == 1 << 20
        ),
        "{e:?}"
    );
    // Within the budget, a declared entity is still expanded in the OPF.
    let doctype = "<!DOCTYPE package [<!ENTITY who \"World\">]>";
    let package = opf(doctype, &["OEBPS/c.xhtml"], &[0], false)
        .replace("<dc:title>Test", "<dc:title>Hello &who;");
    let b = open(&book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        None,
        Some(&package),
    ))
    .unwrap();
    assert_eq!(b.metadata().title.as_deref(), Some("Hello World"));
}

#[test]
fn exponential_entities_in_the_package_document_are_refused_quickly() {
    // Billion laughs: each level references the previous one ten times.
    let mut dtd = String::from("<!ENTITY l0 \"lol\">");
    for i in 1..10 {
        dtd.push_str(&format!(
            "<!ENTITY l{i} \"{}\">",
            format!("&l{};", i - 1).repeat(10)
        ));
    }
    let doctype = format!("<!DOCTYPE package [{dtd}]>");
    let package = opf(&doctype, &["OEBPS/c.xhtml"], &[0], false).replace(
        "<dc:title>Test",
        &format!("<dc:title>{}", "&l9;".repeat(100)),
    );
    let bytes = book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        None,
        Some(&package),
    );
    let e = open(&bytes).unwrap_err();
    // Entities are inlined one level deep; the nested references left are
    // undeclared, so the package is broken.
    assert!(
        matches!(&e, OpenError::BrokenPackage { path, .. } if path == "OEBPS/content.opf"),
        "{e:?}"
    );
}

#[test]
fn entity_expansion_is_budgeted_per_book() {
    // Three documents expanding 400 KB each: each fits the 1 MiB document
    // budget, the third passes a 1 MiB book budget.
    let doc = entity_doc(100_000, 4);
    let files = [
        ("OEBPS/c0.xhtml", doc.as_bytes()),
        ("OEBPS/c1.xhtml", doc.as_bytes()),
        ("OEBPS/c2.xhtml", doc.as_bytes()),
    ];
    let limits = Limits::new().with_max_entity_bytes_per_book(1 << 20);
    let e = Book::open(&book(&files, None, None), &limits).unwrap_err();
    assert_eq!(
        e,
        OpenError::Xml {
            path: "OEBPS/c2.xhtml".to_owned(),
            source: ParseError::BookEntityExpansion {
                line: 3,
                limit: 1 << 20
            },
        }
    );
    assert_eq!(e.limit(), Some("max_entity_bytes_per_book"));
    assert!(open(&book(&files, None, None)).is_ok());
}

#[test]
fn deep_nesting_stops_at_the_depth_budget() {
    let doc = format!(
        "<html><head><title>t</title></head>\n<body>\n{}</body></html>",
        nested("div", 20_000)
    );
    let e = open(&book(&[("OEBPS/c.xhtml", doc.as_bytes())], None, None)).unwrap_err();
    assert_eq!(
        e,
        OpenError::Xml {
            path: "OEBPS/c.xhtml".to_owned(),
            source: ParseError::TooDeep {
                line: 3,
                limit: 256
            },
        }
    );
    assert_eq!(e.limit(), Some("max_depth"));
    let limits = Limits::new().with_max_depth(2);
    let e = Document::parse_with_limits("<a><b><c/></b></a>", &limits).unwrap_err();
    assert_eq!(e, ParseError::TooDeep { line: 1, limit: 2 });
    assert!(Document::parse_with_limits("<a><b/></a>", &limits).is_ok());
}

#[test]
fn an_attribute_flood_stops_at_the_attribute_budget() {
    // 60,000 attributes on one element (5.2 s before the budget, from the
    // quadratic duplicate check).
    let attrs: String = (0..60_000).map(|i| format!(" a{i}=\"\"")).collect();
    let doc = format!("<html><head><title>t</title></head><body>\n<p{attrs}>x</p></body></html>");
    let e = open(&book(&[("OEBPS/c.xhtml", doc.as_bytes())], None, None)).unwrap_err();
    assert_eq!(
        e,
        OpenError::Xml {
            path: "OEBPS/c.xhtml".to_owned(),
            source: ParseError::TooManyAttributes {
                line: 2,
                limit: 256
            },
        }
    );
    assert_eq!(e.limit(), Some("max_attributes_per_element"));
}

#[test]
fn duplicate_attributes_are_checked_in_linear_time() {
    // With the budget lifted, 60,000 attributes (half of them duplicates)
    // are parsed; the duplicates are warnings. This took seconds with the
    // old rescan.
    let attrs: String = (0..60_000)
        .map(|i| format!(" a{}=\"{i}\"", i % 30_000))
        .collect();
    let doc = format!("<html><body><p{attrs}>x</p></body></html>");
    let limits = Limits::new().with_max_attributes_per_element(usize::MAX);
    let d = Document::parse_with_limits(&doc, &limits).unwrap();
    let p = d.descendants(d.body().unwrap()).next().unwrap();
    assert_eq!(d.attribute(p, "a29999"), Some("29999"));
    assert!(d.warnings()[0].starts_with("duplicate attribute a0 at line 1"));
    assert_eq!(d.warnings().len(), 51);
}

#[test]
fn an_element_flood_stops_at_the_element_budget() {
    let doc = format!(
        "<html><head><title>t</title></head><body>\n{}</body></html>",
        "<p/><!--c-->".repeat(1_000)
    );
    let limits = Limits::new().with_max_elements_per_document(1_000);
    let e = Book::open(
        &book(&[("OEBPS/c.xhtml", doc.as_bytes())], None, None),
        &limits,
    )
    .unwrap_err();
    assert_eq!(
        e,
        OpenError::Xml {
            path: "OEBPS/c.xhtml".to_owned(),
            source: ParseError::TooManyElements {
                line: 2,
                limit: 1_000
            },
        }
    );
    assert_eq!(e.limit(), Some("max_elements_per_document"));
    // The package document is under the same budget.
    let limits = Limits::new().with_max_elements_per_document(5);
    let e = Book::open(
        &book(&[("OEBPS/c.xhtml", CHAPTER.as_bytes())], None, None),
        &limits,
    )
    .unwrap_err();
    assert!(
        matches!(&e, OpenError::Xml { path, source: ParseError::TooManyElements { limit: 5, .. } } if path == "OEBPS/content.opf"),
        "{e:?}"
    );
}

fn nav_doc(body: &str) -> String {
    format!(
        r#"<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>nav</title></head><body>
<nav epub:type="toc">{body}</nav></body></html>"#
    )
}

#[test]
fn a_nested_link_flood_in_the_nav_stops_at_the_depth_budget() {
    // 20,000 nested <a> in a 2.3 KB book (7.2 s and 1.97 GB before).
    let nav = nav_doc(&format!(
        "<ol><li>{}</li></ol>",
        nested("a href=\"c.xhtml\"", 20_000)
    ));
    let bytes = book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        Some(nav.as_bytes()),
        None,
    );
    assert!(bytes.len() < 4_000, "{}", bytes.len());
    let e = open(&bytes).unwrap_err();
    assert!(
        matches!(&e, OpenError::Xml { path, source: ParseError::TooDeep { line: 2, limit: 256 } } if path == "OEBPS/nav.xhtml"),
        "{e:?}"
    );
}

#[test]
fn a_flat_nav_flood_stops_at_the_entry_budget() {
    let items = "<li><a href=\"c.xhtml\">x</a></li>".repeat(200);
    let nav = nav_doc(&format!("<ol>{items}</ol>"));
    let bytes = book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        Some(nav.as_bytes()),
        None,
    );
    let limits = Limits::new().with_max_toc_entries(100);
    let e = Book::open(&bytes, &limits).unwrap_err();
    assert_eq!(
        e,
        OpenError::TooManyTocEntries {
            path: "OEBPS/nav.xhtml".to_owned(),
            limit: 100
        }
    );
    assert_eq!(e.limit(), Some("max_toc_entries"));
    assert_eq!(open(&bytes).unwrap().toc().len(), 200);
}

#[test]
fn a_deep_toc_stops_at_the_toc_depth_budget() {
    let nav = nav_doc(&format!(
        "{}</ol>",
        "<ol><li><a href=\"c.xhtml\">x</a>".repeat(70)
    ));
    let bytes = book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        Some(nav.as_bytes()),
        None,
    );
    let e = open(&bytes).unwrap_err();
    assert_eq!(
        e,
        OpenError::TocTooDeep {
            path: "OEBPS/nav.xhtml".to_owned(),
            href: "c.xhtml".to_owned(),
            depth: 65,
            limit: 64
        }
    );
    assert_eq!(e.limit(), Some("max_toc_depth"));
}

#[test]
fn a_long_spine_stops_at_the_spine_budget() {
    let files: Vec<(String, &[u8])> = (0..20)
        .map(|i| (format!("OEBPS/c{i}.xhtml"), CHAPTER.as_bytes()))
        .collect();
    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, d)| (p.as_str(), *d)).collect();
    let limits = Limits::new().with_max_spine_items(10);
    let e = Book::open(&book(&files, None, None), &limits).unwrap_err();
    assert_eq!(
        e,
        OpenError::TooManySpineItems {
            path: "OEBPS/content.opf".to_owned(),
            limit: 10
        }
    );
    assert_eq!(e.limit(), Some("max_spine_items"));
}

#[test]
fn spine_repeats_stop_at_the_per_file_budget() {
    // 10,000 itemrefs naming one document: each would be parsed again.
    let package = opf("", &["OEBPS/c.xhtml"], &[0; 10_000], false);
    let bytes = book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        None,
        Some(&package),
    );
    let e = open(&bytes).unwrap_err();
    assert_eq!(
        e,
        OpenError::SpineRepeats {
            path: "OEBPS/c.xhtml".to_owned(),
            limit: 4
        }
    );
    assert_eq!(e.limit(), Some("max_spine_refs_per_file"));
    let package = opf("", &["OEBPS/c.xhtml"], &[0; 4], false);
    let bytes = book(
        &[("OEBPS/c.xhtml", CHAPTER.as_bytes())],
        None,
        Some(&package),
    );
    assert_eq!(open(&bytes).unwrap().spine().len(), 4);
}

#[test]
fn ten_thousand_entries_are_refused_before_reading_any() {
    let names: Vec<String> = (0..10_001).map(|i| format!("f{i}")).collect();
    let mut entries: Vec<(&str, &[u8])> = vec![("mimetype", b"application/epub+zip")];
    entries.extend(names.iter().map(|n| (n.as_str(), &b""[..])));
    let e = open(&zip_of(&entries)).unwrap_err();
    assert_eq!(
        e,
        OpenError::TooManyEntries {
            entries: 10_002,
            limit: 10_000
        }
    );
    assert_eq!(e.limit(), Some("max_entries"));
}

#[test]
fn a_deflate_bomb_stops_at_the_entry_budget_and_the_ratio_budget() {
    // 80 MB of one byte deflates to about 80 KB.
    let page = format!("<html><body><p>{}</p></body></html>", "a".repeat(80 << 20));
    let bytes = book(&[("OEBPS/c.xhtml", page.as_bytes())], None, None);
    drop(page);
    let e = open(&bytes).unwrap_err();
    assert!(
        matches!(&e, OpenError::EntryTooLarge { path, limit, .. } if path == "OEBPS/c.xhtml" && *limit == 64 << 20),
        "{e:?}"
    );
    assert_eq!(e.limit(), Some("max_entry_bytes"));
    let limits = Limits::new().with_max_entry_bytes(u64::MAX);
    let e = Book::open(&bytes, &limits).unwrap_err();
    assert!(
        matches!(&e, OpenError::CompressionRatio { path, limit: 100, .. } if path == "OEBPS/c.xhtml"),
        "{e:?}"
    );
    assert_eq!(e.limit(), Some("max_compression_ratio"));
}

#[test]
fn budget_errors_name_their_limit_and_others_do_not() {
    assert_eq!(OpenError::MissingContainer.limit(), None);
    let e = OpenError::Xml {
        path: "a.xhtml".to_owned(),
        source: ParseError::TooDeep { line: 7, limit: 3 },
    };
    assert_eq!(
        e.to_string(),
        "\"a.xhtml\": element at line 7 nests deeper than the limit of 3"
    );
}
