//! Bad input gives typed errors (or warnings), never panics.

use std::io::Write;

use citeflow_epub::{Book, Cfi, Limits, OpenError};
use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

use crate::support::read;

fn stored() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Stored)
}

fn deflated() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Deflated)
}

/// A zip holding exactly these entries.
fn zip_of(entries: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data, deflate) in entries {
        w.start_file(*name, if *deflate { deflated() } else { stored() })
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

const CONTAINER: &[u8] = br#"<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#;

/// An EPUB whose spine is `files` in order (paths under `OEBPS/`), with an
/// optional `META-INF/encryption.xml`.
pub(crate) fn epub_with(files: &[(&str, &[u8])], encryption: Option<&str>) -> Vec<u8> {
    let mut manifest = String::new();
    let mut spine = String::new();
    for (i, (path, _)) in files.iter().enumerate() {
        let href = path.strip_prefix("OEBPS/").unwrap_or(path);
        manifest.push_str(&format!(
            r#"<item id="c{i}" href="{href}" media-type="application/xhtml+xml"/>"#
        ));
        spine.push_str(&format!(r#"<itemref idref="c{i}"/>"#));
    }
    let opf = format!(
        r#"<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:test</dc:identifier><dc:title>Test</dc:title><dc:language>en</dc:language></metadata>
<manifest>{manifest}</manifest><spine>{spine}</spine></package>"#
    );
    let mut entries: Vec<(&str, &[u8], bool)> = vec![
        ("mimetype", b"application/epub+zip", false),
        ("META-INF/container.xml", CONTAINER, true),
        ("OEBPS/content.opf", opf.as_bytes(), true),
    ];
    if let Some(enc) = encryption {
        entries.push(("META-INF/encryption.xml", enc.as_bytes(), true));
    }
    for (p, d) in files {
        entries.push((p, d, true));
    }
    zip_of(&entries)
}

const CHAPTER: &[u8] = br#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body><p>Hello</p></body></html>"#;

fn open(bytes: &[u8]) -> Result<Book, OpenError> {
    Book::open(bytes, &Limits::default())
}

#[test]
fn a_minimal_epub_opens() {
    let b = open(&epub_with(&[("OEBPS/c.xhtml", CHAPTER)], None)).unwrap();
    assert_eq!(b.metadata().title.as_deref(), Some("Test"));
    assert_eq!(b.metadata().identifier.as_deref(), Some("urn:test"));
    assert_eq!(b.metadata().language.as_deref(), Some("en"));
    assert!(b.warnings().is_empty(), "{:?}", b.warnings());
    let nodes: Vec<_> = b.text_nodes().collect();
    assert_eq!(nodes[0].cfi.to_string(), "epubcfi(/6/2!/4/2/1:0)");
}

#[test]
fn not_a_zip_is_reported() {
    let e = open(b"this is not a zip file").unwrap_err();
    assert!(matches!(e, OpenError::NotZip { .. }), "{e}");
    assert!(e.to_string().starts_with("not a zip archive"));
    assert!(matches!(open(&[]).unwrap_err(), OpenError::NotZip { .. }));
}

#[test]
fn a_zip_without_container_is_not_an_epub() {
    let e = open(&zip_of(&[("hello.txt", b"hi", true)])).unwrap_err();
    assert_eq!(e, OpenError::MissingContainer);
    assert!(e.to_string().contains("META-INF/container.xml"));
}

#[test]
fn a_wrong_mimetype_is_not_an_epub() {
    let e = open(&zip_of(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.text",
            false,
        ),
        ("META-INF/container.xml", CONTAINER, true),
    ]))
    .unwrap_err();
    assert!(
        matches!(&e, OpenError::WrongMimetype { found } if found.contains("opendocument")),
        "{e}"
    );
}

#[test]
fn a_missing_or_broken_package_is_reported() {
    let e = open(&zip_of(&[
        ("mimetype", b"application/epub+zip", false),
        ("META-INF/container.xml", CONTAINER, true),
    ]))
    .unwrap_err();
    assert_eq!(
        e,
        OpenError::MissingPackage {
            path: "OEBPS/content.opf".to_owned()
        }
    );
    let e = open(&zip_of(&[
        ("mimetype", b"application/epub+zip", false),
        ("META-INF/container.xml", CONTAINER, true),
        ("OEBPS/content.opf", b"<package><manifest></package>", true),
    ]))
    .unwrap_err();
    assert!(
        matches!(&e, OpenError::BrokenPackage { path, .. } if path == "OEBPS/content.opf"),
        "{e}"
    );
    let e = open(&zip_of(&[
        ("mimetype", b"application/epub+zip", false),
        ("META-INF/container.xml", CONTAINER, true),
        (
            "OEBPS/content.opf",
            b"<package xmlns='http://www.idpf.org/2007/opf'><manifest/><spine><itemref idref='nope'/></spine></package>",
            true,
        ),
    ]))
    .unwrap_err();
    assert!(e.to_string().contains("\"nope\""), "{e}");
    let e = open(&zip_of(&[
        ("mimetype", b"application/epub+zip", false),
        ("META-INF/container.xml", b"<container><rootfiles>", true),
    ]))
    .unwrap_err();
    assert!(matches!(e, OpenError::BrokenContainer { .. }), "{e}");
}

#[test]
fn broken_xhtml_is_recovered_with_warnings() {
    let broken = br#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body><p>First &nbsp; & <b>bold</p><p>Second<p>Third</body>"#;
    let b = open(&epub_with(
        &[("OEBPS/ok.xhtml", CHAPTER), ("OEBPS/bad.xhtml", broken)],
        None,
    ))
    .unwrap();
    assert!(!b.warnings().is_empty());
    assert!(
        b.warnings().iter().all(|w| w.path == "OEBPS/bad.xhtml"),
        "{:?}",
        b.warnings()
    );
    let texts: Vec<&str> = b.text_nodes().map(|n| n.text).collect();
    assert_eq!(
        texts,
        ["Hello", "First \u{a0} & ", "bold", "Second", "Third"]
    );
}

#[test]
fn a_missing_spine_document_is_a_warning() {
    let mut files = vec![("OEBPS/c.xhtml", CHAPTER)];
    let bytes = epub_with(&files, None);
    files.clear();
    let b = open(&bytes).unwrap();
    assert!(b.warnings().is_empty());
    // Same package, chapter removed from the zip.
    let opf = String::from_utf8(
        zip::ZipArchive::new(std::io::Cursor::new(&bytes))
            .unwrap()
            .by_name("OEBPS/content.opf")
            .map(|mut f| {
                let mut s = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut s).unwrap();
                s
            })
            .unwrap(),
    )
    .unwrap();
    let b = open(&zip_of(&[
        ("mimetype", b"application/epub+zip", false),
        ("META-INF/container.xml", CONTAINER, true),
        ("OEBPS/content.opf", opf.as_bytes(), true),
    ]))
    .unwrap();
    assert_eq!(b.warnings()[0].path, "OEBPS/c.xhtml");
    assert!(b.warnings()[0].message.contains("missing"));
    assert_eq!(b.text_nodes().count(), 0);
}

const ENCRYPTION: &str = r#"<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc="http://www.w3.org/2001/04/xmlenc#">
<enc:EncryptedData><enc:EncryptionMethod Algorithm="ALGO"/><enc:CipherData><enc:CipherReference URI="TARGET"/></enc:CipherData></enc:EncryptedData>
</encryption>"#;

#[test]
fn encrypted_spine_documents_are_refused() {
    let enc = ENCRYPTION
        .replace("ALGO", "http://www.w3.org/2001/04/xmlenc#aes128-cbc")
        .replace("TARGET", "OEBPS/c.xhtml");
    let e = open(&epub_with(&[("OEBPS/c.xhtml", CHAPTER)], Some(&enc))).unwrap_err();
    assert!(
        matches!(&e, OpenError::Encrypted { path, .. } if path == "OEBPS/c.xhtml"),
        "{e}"
    );
    assert!(e.to_string().contains("DRM"), "{e}");
}

#[test]
fn font_obfuscation_alone_is_fine() {
    let enc = ENCRYPTION
        .replace("ALGO", "http://www.idpf.org/2008/embedding")
        .replace("TARGET", "OEBPS/fonts/f.otf");
    let b = open(&epub_with(&[("OEBPS/c.xhtml", CHAPTER)], Some(&enc))).unwrap();
    assert_eq!(b.text_nodes().count(), 1);
    // Encrypted images (not needed for text) are only a warning.
    let enc = ENCRYPTION
        .replace("ALGO", "http://www.w3.org/2001/04/xmlenc#aes256-cbc")
        .replace("TARGET", "OEBPS/images/a.jpg");
    let b = open(&epub_with(&[("OEBPS/c.xhtml", CHAPTER)], Some(&enc))).unwrap();
    assert!(b.warnings()[0].message.contains("encrypted"));
}

#[test]
fn a_zip_bomb_is_stopped_by_the_compression_ratio() {
    let zeros = vec![b' '; 8 << 20];
    let mut page = CHAPTER.to_vec();
    page.extend_from_slice(&zeros);
    let e = open(&epub_with(&[("OEBPS/c.xhtml", &page)], None)).unwrap_err();
    assert!(
        matches!(&e, OpenError::CompressionRatio { path, .. } if path == "OEBPS/c.xhtml"),
        "{e}"
    );
    // A generous ratio lets it through, the entry size limit still applies.
    let limits = Limits::new()
        .with_max_compression_ratio(u64::MAX)
        .with_max_entry_bytes(1 << 20);
    let e = Book::open(&epub_with(&[("OEBPS/c.xhtml", &page)], None), &limits).unwrap_err();
    assert!(
        matches!(e, OpenError::EntryTooLarge { limit: 1048576, .. }),
        "{e}"
    );
}

#[test]
fn size_and_entry_limits_are_enforced() {
    let bytes = read("epub/alice.epub");
    let e = Book::open(&bytes, &Limits::new().with_max_entries(5)).unwrap_err();
    assert!(
        matches!(e, OpenError::TooManyEntries { limit: 5, .. }),
        "{e}"
    );
    let e = Book::open(
        &bytes,
        &Limits::new().with_max_total_uncompressed_bytes(10_000),
    )
    .unwrap_err();
    assert!(
        matches!(e, OpenError::TotalTooLarge { limit: 10_000, .. }),
        "{e}"
    );
    let e = Book::open(&bytes, &Limits::new().with_max_entry_bytes(2_000)).unwrap_err();
    assert!(
        matches!(e, OpenError::EntryTooLarge { limit: 2_000, .. }),
        "{e}"
    );
}

#[test]
fn an_entry_that_lies_about_its_size_is_still_capped() {
    let big = vec![b'a'; 3 << 20];
    let mut page = CHAPTER.to_vec();
    page.extend_from_slice(&big);
    let mut bytes = epub_with(&[("OEBPS/c.xhtml", &page)], None);
    // Patch the declared uncompressed size of c.xhtml to 100 bytes in both
    // the local header and the central directory.
    let name = b"OEBPS/c.xhtml";
    let mut i = 0;
    while let Some(p) = find(&bytes[i..], name) {
        let at = i + p;
        if bytes[at - 30..at - 26] == [0x50, 0x4b, 0x03, 0x04] {
            bytes[at - 30 + 22..at - 30 + 26].copy_from_slice(&100u32.to_le_bytes());
        } else if at >= 46 && bytes[at - 46..at - 42] == [0x50, 0x4b, 0x01, 0x02] {
            bytes[at - 46 + 24..at - 46 + 28].copy_from_slice(&100u32.to_le_bytes());
        }
        i = at + name.len();
    }
    let limits = Limits::new().with_max_entry_bytes(1 << 20);
    match Book::open(&bytes, &limits) {
        Ok(b) => assert!(b.content_bytes() <= 1 << 20),
        Err(e) => assert!(
            matches!(e, OpenError::EntryTooLarge { .. } | OpenError::Entry { .. }),
            "{e}"
        ),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn corrupted_books_never_panic() {
    let bytes = read("epub/cfi-spec-example.epub");
    let mut seed = 0x2545_f491_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for cut in (0..bytes.len()).step_by(97) {
        let _ = open(&bytes[..cut]);
    }
    for _ in 0..300 {
        let mut b = bytes.clone();
        for _ in 0..4 {
            let i = (next() as usize) % b.len();
            b[i] = next() as u8;
        }
        if let Ok(book) = open(&b) {
            let _ = book.text_nodes().count();
            let _ = book.passages(&citeflow_epub::ChunkSettings::default());
        }
    }
}

#[test]
fn malformed_cfis_never_panic() {
    let b = crate::support::book("cfi-spec-example.epub");
    let good = "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05],/2/1:1,/3:4[a^,b;s=b])";
    for end in 0..=good.len() {
        if let Ok(c) = Cfi::parse(&good[..end]) {
            let _ = b.resolve(&c);
        }
    }
    for bad in [
        "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:99)",
        "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3/2)",
        "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/999)",
        "epubcfi(/6/40!/4)",
        "epubcfi(/4/4!/4)",
        "epubcfi(/6/4/4)",
        "epubcfi(/6/4[chap01ref]!/4!/2)",
        "epubcfi(/6/4!/4/10/4294967295)",
        "epubcfi(/6/4!/4/10/99999999999)",
        "epubcfi(/6/2!/4,/6/6!/4/2,/6/8!/4)",
    ] {
        if let Ok(c) = Cfi::parse(bad) {
            assert!(b.resolve(&c).is_err(), "{bad}");
        }
    }
    let e = Cfi::parse("epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:10").unwrap_err();
    assert!(e.to_string().contains("at byte 50"), "{e}");
}
