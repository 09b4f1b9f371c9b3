//! Peer test vectors (`fixtures/cfi/peer-vectors.json`) and our own edge
//! cases (`fixtures/cfi/edge-cases.vectors.json`).

use std::cmp::Ordering;

use citeflow_epub::cfi::Offset;
use citeflow_epub::{Book, Cfi, Document, Limits, Location, NodeId};

use crate::support::{book, read, read_json};

fn text(rel: &str) -> String {
    String::from_utf8(read(rel)).expect("fixture is utf-8")
}

/// The CFI without its `epubcfi(…)` wrapper.
fn bare(s: &str) -> &str {
    s.strip_prefix("epubcfi(")
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(s)
}

fn id(doc: &Document, id: &str) -> NodeId {
    doc.element_by_id(id)
        .unwrap_or_else(|| panic!("no element #{id}"))
}

/// `node.childNodes[k]`.
fn child(doc: &Document, node: NodeId, k: usize) -> NodeId {
    doc.child_nodes(node)
        .nth(k)
        .unwrap_or_else(|| panic!("no child {k}"))
}

/// `node.children[k]` (elements only).
fn child_el(doc: &Document, node: NodeId, k: usize) -> NodeId {
    doc.child_elements(node)
        .nth(k)
        .unwrap_or_else(|| panic!("no child element {k}"))
}

fn first_text(doc: &Document, node: NodeId) -> NodeId {
    doc.descendants(node)
        .find(|&d| doc.text(d).is_some())
        .expect("a text node")
}

fn pt(doc: &Document, node: NodeId, off: u32) -> Cfi {
    doc.cfi(node, Some(off)).expect("cfi of a text node")
}

fn el(doc: &Document, node: NodeId) -> Cfi {
    doc.cfi(node, None).expect("cfi of an element")
}

fn range(a: &Cfi, b: &Cfi) -> String {
    Cfi::range_from(a, b).to_string()
}

/// Readium's inline documents elide the wrapper as `...`.
fn readium(inner: &str) -> Document {
    Document::parse(&format!(
        "<html><div></div><div>{inner}</div><div></div></html>"
    ))
}

fn chap01ref() -> Cfi {
    Cfi::parse("epubcfi(/6/4[chap01ref])").unwrap()
}

/// Builds a minimal EPUB around a package document and content files.
fn epub(opf_path: &str, opf: &str, files: &[(&str, &str)]) -> Vec<u8> {
    use std::io::Write;
    use zip::write::SimpleFileOptions;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("mimetype", stored).unwrap();
    w.write_all(b"application/epub+zip").unwrap();
    w.start_file("META-INF/container.xml", stored).unwrap();
    write!(
        w,
        r#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="{opf_path}" media-type="application/oebps-package+xml"/></rootfiles></container>"#
    )
    .unwrap();
    w.start_file(opf_path, stored).unwrap();
    w.write_all(opf.as_bytes()).unwrap();
    for (name, content) in files {
        w.start_file(*name, stored).unwrap();
        w.write_all(content.as_bytes()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// Computes the generation vector `i`; `None` for vectors not checked.
fn generate(i: usize) -> Option<Vec<String>> {
    let one = |s: String| Some(vec![s]);
    match i {
        0 | 1 => {
            let doc = Document::parse(&text("cfi/epubjs-chapter1-highlights.xhtml"));
            let span = id(&doc, "c001p0004");
            let c = if i == 0 {
                el(&doc, span)
            } else {
                doc.cfi(child(&doc, span, 0), None).unwrap()
            };
            one(c.with_base(&chap01ref()).to_string())
        }
        2..=4 => {
            let doc = Document::parse(&text("cfi/epubjs-chapter1.xhtml"));
            let a = first_text(&doc, id(&doc, "c001p0004"));
            let b = first_text(&doc, id(&doc, "c001p0007"));
            let c = match i {
                2 => pt(&doc, a, 6).to_string(),
                3 => range(&pt(&doc, a, 6), &pt(&doc, b, 27)),
                _ => range(&pt(&doc, a, 0), &pt(&doc, a, 1)),
            };
            one(Cfi::parse(&c).unwrap().with_base(&chap01ref()).to_string())
        }
        5 => {
            let doc = Document::parse(&text("cfi/epubjs-highlight.xhtml"));
            let t = child(&doc, id(&doc, "p3"), 2);
            one(pt(&doc, t, 4).with_base(&chap01ref()).to_string())
        }
        10 => {
            let doc = readium(
                "<div id='startParent'><div></div>textnode1<div></div>textNode2<div></div></div>",
            );
            one(el(&doc, child_el(&doc, id(&doc, "startParent"), 0)).to_string())
        }
        11 | 12 => {
            let doc =
                readium("<div id='startParent'>textnode<div></div>textnode1<div></div></div>");
            let sp = id(&doc, "startParent");
            let div1 = child_el(&doc, sp, 0);
            one(if i == 11 {
                range(&pt(&doc, child(&doc, sp, 0), 1), &el(&doc, div1))
            } else {
                range(&el(&doc, div1), &pt(&doc, child(&doc, sp, 2), 1))
            })
        }
        13 => {
            let doc = readium("<div id='startParent'>textnode0<div id='startElement'>textnode1</div>textnode2<div></div></div>");
            let sp = id(&doc, "startParent");
            let t1 = first_text(&doc, id(&doc, "startElement"));
            one(range(&pt(&doc, t1, 4), &pt(&doc, child(&doc, sp, 2), 4)))
        }
        14 => {
            // The common ancestor is the root element itself; Readium writes
            // it as step /2 from the document node.
            let doc = Document::parse("<html><div></div><div><div id='startParent'>textnode<div></div>textnode1<div></div></div></div><div id='end'></div></html>");
            let sp = id(&doc, "startParent");
            let a = Cfi::parse(&format!(
                "/2{}",
                bare(&pt(&doc, child(&doc, sp, 0), 1).to_string())
            ))
            .unwrap();
            let b = Cfi::parse(&format!(
                "/2{}",
                bare(&el(&doc, id(&doc, "end")).to_string())
            ))
            .unwrap();
            one(range(&a, &b))
        }
        15 => {
            let doc = readium(
                r#"<div id='startParent'><div id="period-.-in.id"></div>textnode1<div></div>textNode2<div></div></div>"#,
            );
            let sp = id(&doc, "startParent");
            one(range(
                &el(&doc, child_el(&doc, sp, 0)),
                &el(&doc, child_el(&doc, sp, 2)),
            ))
        }
        16 | 17 => {
            let doc = readium("<div id='startParent'><div>text target for start</div>textnode1<div></div>textNode2<div>text target for end</div></div>");
            let sp = id(&doc, "startParent");
            let a = first_text(&doc, child_el(&doc, sp, 0));
            let b = first_text(&doc, child_el(&doc, sp, 2));
            one(if i == 16 {
                range(&pt(&doc, a, 6), &pt(&doc, b, 2))
            } else {
                range(&pt(&doc, a, 2), &pt(&doc, a, 6))
            })
        }
        18 => {
            let doc = readium(
                "<div id='startParent'>text target for start<div>text target for end</div></div>",
            );
            let sp = id(&doc, "startParent");
            let b = first_text(&doc, child_el(&doc, sp, 0));
            one(range(&pt(&doc, child(&doc, sp, 0), 2), &pt(&doc, b, 6)))
        }
        19 => {
            let doc = Document::parse("<html> <body> <h1>Title</h1> <p>Some <strong>very important</strong> text</p> </body></html>");
            let body = child_el(&doc, doc.root().unwrap(), 0);
            let p = child_el(&doc, body, 1);
            let strong = child_el(&doc, p, 0);
            let a = first_text(&doc, strong);
            one(range(&pt(&doc, a, 5), &pt(&doc, child(&doc, p, 2), 5)))
        }
        20 => {
            let doc = readium("<div id='startParent'><div>content</div>textnode1<div></div>textNode2<div>content</div>textNode3textNode4</div>");
            let sp = id(&doc, "startParent");
            one(range(
                &pt(&doc, child(&doc, sp, 1), 2),
                &pt(&doc, child(&doc, sp, 5), 6),
            ))
        }
        // spec_ok: false vectors, checked against their `spec_value`.
        21 | 23 => {
            let mid = if i == 21 {
                "<!-- comment -->"
            } else {
                "<?xml-stylesheet type='text/css' href='style.css'?>"
            };
            let doc = readium(&format!(
                "<div id='startParent'>textnode{mid}textnode</div>"
            ));
            let sp = id(&doc, "startParent");
            one(range(
                &pt(&doc, child(&doc, sp, 0), 4),
                &pt(&doc, child(&doc, sp, 2), 4),
            ))
        }
        22 | 24 => {
            let lead = if i == 22 {
                "<!-- comment -->"
            } else {
                "<?xml-stylesheet type='text/css' href='style.css'?>"
            };
            let doc = readium(&format!("<div id='startParent'>{lead}textnode</div>"));
            let t = child(&doc, id(&doc, "startParent"), 1);
            one(range(&pt(&doc, t, 4), &pt(&doc, t, 8)))
        }
        25 => {
            let doc = readium("<div id='startParent'>0123456789</div>");
            let t = child(&doc, id(&doc, "startParent"), 0);
            Some(
                [(0, 1), (1, 2), (2, 4)]
                    .iter()
                    .map(|&(a, b)| range(&pt(&doc, t, a), &pt(&doc, t, b)))
                    .collect(),
            )
        }
        26 => {
            let doc = readium("<div id='startParent'><div>content</div>textnode1<div></div>textNode2<div>content</div></div>");
            let sp = id(&doc, "startParent");
            one(range(
                &pt(&doc, child(&doc, sp, 1), 2),
                &pt(&doc, child(&doc, sp, 3), 6),
            ))
        }
        29 => {
            let doc = Document::parse(
                "<svg><g></g><g><text id='startParent'><tspan></tspan></text></g><g></g></svg>",
            );
            one(el(&doc, child_el(&doc, id(&doc, "startParent"), 0)).to_string())
        }
        31 => {
            let opf = r#"<opf:package xmlns:opf="http://www.idpf.org/2007/opf" version="3.0"><opf:metadata/><opf:manifest><opf:item id="a" href="a.xhtml" media-type="application/xhtml+xml"/><opf:item id="b" href="b.xhtml" media-type="application/xhtml+xml"/><opf:item id="contentDocId" href="c.xhtml" media-type="application/xhtml+xml"/></opf:manifest><opf:spine><opf:itemref idref="a"/><opf:itemref idref="b"/><opf:itemref idref="contentDocId"/></opf:spine></opf:package>"#;
            let b = Book::open(&epub("content.opf", opf, &[]), &Limits::default()).unwrap();
            assert_eq!(b.spine()[2].idref, "contentDocId");
            one(format!("{}!", bare(&b.spine_cfi(2).unwrap().to_string())))
        }
        32 => {
            let doc = Document::parse("<html><div></div><div><div id='startParent'><div></div>textnode1<div></div>textNode2<div></div></div></div><div></div></html>");
            let t = child(&doc, id(&doc, "startParent"), 1);
            let base = Cfi::parse("/6/2/6").unwrap();
            one(pt(&doc, t, 3).with_base(&base).to_string())
        }
        33 | 34 => {
            let content = text("cfi/readium-moby_dick_content_doc.xhtml");
            let bytes = epub(
                "OPS/package.opf",
                &text("cfi/readium-moby_dick_package.opf"),
                &[("OPS/chapter_001.xhtml", &content)],
            );
            let b = Book::open(&bytes, &Limits::default()).unwrap();
            let si = b
                .spine()
                .iter()
                .position(|s| s.idref == "xchapter_001")
                .unwrap();
            let doc = b.document(si).unwrap();
            let p = id(doc, "c01p0008");
            one(if i == 33 {
                b.cfi_at(si, first_text(doc, p), Some(103))
                    .unwrap()
                    .to_string()
            } else {
                b.cfi_at(si, p, None).unwrap().to_string()
            })
        }
        36 => {
            let doc = foliate_page2();
            let expected = [
                "/4[body01]/10[para05]/3:10",
                "/4[body01]/16[svgimg]",
                "/4[body01]/10[para05]/1:0",
                "/4[body01]/10[para05]/2/1:0",
                "/4[body01]/10[para05]/2/1:3",
            ];
            let mut out = Vec::new();
            for e in expected {
                let (loc, _) = doc.resolve(&Cfi::parse(e).unwrap()).unwrap();
                let again = match loc {
                    Location::Element(n) => el(&doc, n),
                    Location::Text { node, utf16_offset } => pt(&doc, node, utf16_offset),
                    other => panic!("unexpected {other:?}"),
                };
                out.push(bare(&again.to_string()).to_owned());
            }
            for d in 0..10u32 {
                let r = Cfi::parse(&format!("epubcfi(/4/10,/3:{d},/3:{})", d + 1)).unwrap();
                let (a, b) = doc.resolve(&r).unwrap();
                assert_eq!(doc.text_between(&a, &b.unwrap()), d.to_string());
            }
            Some(out)
        }
        37 => {
            let doc = Document::parse(
                r#"<html><head/><body><p id="test-skip-1">Hello, World</p><p id="test-skip-2"><span class="SKIP">H</span>e<span class="SKIP">ll</span>o, World</p></body></html>"#,
            );
            let t = first_text(&doc, id(&doc, "test-skip-1"));
            one(range(&pt(&doc, t, 3), &pt(&doc, t, 8)))
        }
        40 => {
            let b = book("cfi-spec-example.epub");
            let doc = b.document(1).unwrap();
            let base = Cfi::parse("/6/2[testref]").unwrap();
            Some(
                doc.text_nodes()
                    .map(|n| bare(&pt(doc, n, 0).with_base(&base).to_string()).to_owned())
                    .collect(),
            )
        }
        _ => None,
    }
}

/// The spec's chapter01 with `0123456789` spread over CDATA sections,
/// comments and character references (foliate-js test page 2).
fn foliate_page2() -> Document {
    Document::parse(
        r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head>
<body id="body01">
<p>a</p><p>b</p><p>c</p><p>d</p>
<p id="para05">xxx<em>yyy</em><![CDATA[]]><!--comment1--><![CDATA[0123]]>4<!--comment2-->5<![CDATA[67]]>&#56;&#57;</p>
<p>e</p><p>f</p><img id="svgimg" src="foo.svg" alt="x"/><p>g</p><p>h</p>
</body></html>"#,
    )
}

#[test]
fn spec_ok_generation_vectors_match() {
    let v = read_json("cfi/peer-vectors.json");
    let mut checked = 0;
    for (i, g) in v["generation"].as_array().unwrap().iter().enumerate() {
        let want: Vec<String> = match (&g["spec_ok"], g.get("spec_value")) {
            (serde_json::Value::Bool(true), _) => match &g["expected"] {
                serde_json::Value::String(s) => vec![s.clone()],
                serde_json::Value::Array(a) => {
                    a.iter().map(|x| x.as_str().unwrap().to_owned()).collect()
                }
                other => panic!("vector {i}: odd expected {other}"),
            },
            (serde_json::Value::Bool(false), Some(sv)) => vec![sv.as_str().unwrap().to_owned()],
            _ => continue,
        };
        let got =
            generate(i).unwrap_or_else(|| panic!("generation vector {i} is not covered: {g}"));
        let got: Vec<&str> = got.iter().map(|s| bare(s)).collect();
        let want: Vec<&str> = want.iter().map(|s| bare(s)).collect();
        assert_eq!(got, want, "generation vector {i}: {}", g["target"]);
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} vectors checked");
}

#[test]
fn parse_vectors_round_trip_and_reject() {
    let v = read_json("cfi/peer-vectors.json");
    let p = &v["parse"];
    for s in p["roundtrip_valid"]["cfis"].as_array().unwrap() {
        let s = s.as_str().unwrap();
        let c = Cfi::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(c.to_string(), s);
    }
    for s in p["roundtrip_valid"]["parse_only_valid"].as_array().unwrap() {
        let s = s.as_str().unwrap();
        let c = Cfi::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        // Canonical output parses to the same value.
        assert_eq!(Cfi::parse(&c.to_string()).unwrap(), c);
    }
    for s in p["invalid"]["cfis"].as_array().unwrap() {
        let s = s.as_str().unwrap();
        assert!(Cfi::parse(s).is_err(), "{s:?} should be rejected");
    }
    for s in p["invalid"]["lenient_in_fread"].as_object().unwrap().keys() {
        assert!(
            Cfi::parse(s).is_err(),
            "{s:?} should be rejected by a strict parser"
        );
    }
    for s in p["structure"].as_array().unwrap() {
        let cfi = s["cfi"].as_str().unwrap();
        Cfi::parse(cfi).unwrap_or_else(|e| panic!("{cfi}: {e}"));
    }
}

#[test]
fn parse_structure_matches_the_peers() {
    let ids = |s: &str| -> Vec<Option<String>> {
        let c = Cfi::parse(s).unwrap();
        c.path()
            .steps()
            .iter()
            .map(|st| st.id().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        ids("epubcfi(/4[4^^^[^]^(^)^,^;^=]/6!/4:9)")[0].as_deref(),
        Some("4^[](),;=")
    );
    assert_eq!(ids("epubcfi(/1[^^^]])")[0].as_deref(), Some("^]"));
    assert_eq!(
        ids("/6/4[chap0^]!/1ref^^]")[1].as_deref(),
        Some("chap0]!/1ref^")
    );
    let i = ids("/4[body0^]!/1^^]/10[para^]/0^,/5]/3:10");
    assert_eq!(i[0].as_deref(), Some("body0]!/1^"));
    assert_eq!(i[1].as_deref(), Some("para]/0,/5"));

    let c = Cfi::parse("epubcfi(/6/14[cha!/p05ref]!/4[bo!/dy01]/10/2/1[foo]:5[don't!/ panic;s=b])")
        .unwrap();
    let steps = c.path().steps();
    assert_eq!(steps.len(), 6);
    assert_eq!(steps[1].id(), Some("cha!/p05ref"));
    assert!(steps[2].is_redirected());
    assert_eq!(steps[5].id(), Some("foo"));
    match c.path().offset() {
        Some(Offset::Character {
            utf16_offset: 5,
            assertion: Some(a),
        }) => {
            assert_eq!(a.before(), "don't!/ panic");
            assert_eq!(a.params()[0].name(), "s");
            assert_eq!(a.params()[0].values(), ["b"]);
        }
        other => panic!("{other:?}"),
    }

    let c = Cfi::parse("epubcfi(/4/6!/4:9[aaa,])").unwrap();
    match c.path().offset() {
        Some(Offset::Character {
            assertion: Some(a), ..
        }) => {
            assert_eq!((a.before(), a.after()), ("aaa", Some("")));
        }
        other => panic!("{other:?}"),
    }
    let c = Cfi::parse("epubcfi(/2/2/4,/2/4:3,/4/6:9)").unwrap();
    let (s, e) = c.range_paths().unwrap();
    assert_eq!(c.path().steps().len(), 3);
    assert_eq!(s.to_string(), "/2/4:3");
    assert_eq!(e.to_string(), "/4/6:9");
}

#[test]
fn compare_vectors_order_like_the_spec() {
    let v = read_json("cfi/peer-vectors.json");
    for c in v["compare"].as_array().unwrap() {
        let a = Cfi::parse(c["a"].as_str().unwrap()).unwrap();
        let b = Cfi::parse(c["b"].as_str().unwrap()).unwrap();
        let sign = |o: Option<Ordering>| o.map(|o| o as i64);
        match &c["expected"] {
            serde_json::Value::Number(n) => {
                assert_eq!(sign(a.compare(&b)), n.as_i64(), "{c}");
                assert_eq!(sign(b.compare(&a)), n.as_i64().map(|x| -x), "{c} reversed");
            }
            serde_json::Value::String(s) if s.starts_with("nil") => {
                assert_eq!(a.compare(&b), None, "{c}");
            }
            serde_json::Value::String(s) => {
                let nums: Vec<i64> = s
                    .trim_start_matches('[')
                    .split(']')
                    .next()
                    .unwrap()
                    .split(',')
                    .map(|x| x.trim().parse().unwrap())
                    .collect();
                assert_eq!(
                    sign(a.start().compare(&b.start())),
                    Some(nums[0]),
                    "{c} start"
                );
                assert_eq!(sign(a.end().compare(&b.end())), Some(nums[1]), "{c} end");
            }
            other => panic!("odd expected {other}"),
        }
    }
}

#[test]
fn spec_examples_resolve_in_the_spec_publication() {
    let b = book("cfi-spec-example.epub");
    let r = |s: &str| {
        b.resolve(&Cfi::parse(s).unwrap())
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    };
    let after = |s: &str| b.text_after(&r(s).start, 20);
    let before = |s: &str| b.text_before(&r(s).start, 20);
    let base = "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]";
    assert!(before(&format!("{base}/3:10)")).ends_with(" xxxyyy0123456789"));
    assert!(after(&format!("{base}/3:10)")).starts_with("\n"));
    assert!(after(&format!("{base}/1:0)")).starts_with("xxxyyy0123456789\n"));
    assert!(after(&format!("{base}/2/1:0)")).starts_with("yyy0"));
    assert!(before(&format!("{base}/2/1:3)")).ends_with("xxxyyy"));
    assert!(after(&format!("{base}/2/1:3)")).starts_with("0123"));
    let img = r("epubcfi(/6/4[chap01ref]!/4[body01]/16[svgimg])").start;
    let doc = b.document(img.spine_index).unwrap();
    match img.location {
        Some(Location::Element(n)) => assert_eq!(doc.attribute(n, "id"), Some("svgimg")),
        other => panic!("{other:?}"),
    }
    let range = r(&format!("{base},/2/1:1,/3:4)"));
    assert_eq!(b.text_of(&range), "yy0123");
    for s in [
        "/2/1:3[yyy])",
        "/1:3[xx,y])",
        "/2/1:3[,y])",
        "/2/1:3[;s=b])",
        "/2/1:3[yyy;s=b])",
        "/2[;s=b])",
    ] {
        r(&format!("{base}{s}"));
    }
    r("../pub.opf#epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/2/1:3[;s=b])");
    // Every spec example parses; the chap05 one points past this book's spine.
    let v = read_json("cfi/peer-vectors.json");
    for e in v["spec_examples"]["resolve"].as_array().unwrap() {
        let s = e["cfi"].as_str().unwrap();
        let c = Cfi::parse(s).unwrap();
        if s.contains("chap05ref") {
            assert!(b.resolve(&c).is_err());
        } else {
            b.resolve(&c).unwrap_or_else(|err| panic!("{s}: {err}"));
        }
    }
    // Every text node of the spec chapter resolves to the right text.
    let nodes: Vec<_> = b.document_text_nodes(1).collect();
    assert_eq!(nodes.len(), 11);
}

/// Each run of whitespace becomes one space (ends kept).
fn squash(s: &str) -> String {
    let mut out = String::new();
    let mut ws = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if !ws {
                out.push(' ');
            }
            ws = true;
        } else {
            out.push(c);
            ws = false;
        }
    }
    out
}

#[test]
fn georgia_page_list_cfis_resolve_to_the_right_text() {
    let b = book("georgia-cfi.epub");
    let v = read_json("cfi/peer-vectors.json");
    let vectors = v["georgia_page_list"]["vectors"].as_array().unwrap();
    assert_eq!(b.page_list().len(), 7);
    for (entry, vec) in b.page_list().iter().zip(vectors) {
        let frag = entry.fragment.as_deref().unwrap();
        assert_eq!(frag, vec["cfi"].as_str().unwrap());
        let cfi = Cfi::parse_percent_encoded(frag).unwrap();
        let r = b.resolve(&cfi).unwrap_or_else(|e| panic!("{frag}: {e}"));
        let before = squash(&b.text_before(&r.start, 60));
        let after = squash(&b.text_after(&r.start, 60));
        let want_before = vec["before"].as_str().unwrap().trim_start_matches("...");
        let want_after = vec["after"].as_str().unwrap().trim_end_matches("...");
        assert!(before.ends_with(want_before), "{frag}: before {before:?}");
        assert!(after.starts_with(want_after), "{frag}: after {after:?}");
        // Text-location assertions hold.
        if let Some(Offset::Character {
            assertion: Some(a), ..
        }) = cfi.path().offset()
        {
            let raw_before = b.text_before(&r.start, 60);
            let raw_after = b.text_after(&r.start, 60);
            assert!(raw_before.ends_with(a.before()), "{frag}");
            assert!(raw_after.starts_with(a.after().unwrap_or("")), "{frag}");
        }
        assert_eq!(entry.title, vec["page"].as_str().unwrap());
    }
}

/// Parses an edge-case target such as `comment text#1 "cd" @end`.
fn edge_target(doc: &Document, target: &str) -> Cfi {
    if let Some(rest) = target.strip_prefix("element #") {
        return el(doc, id(doc, rest));
    }
    let (owner, rest) = match target.strip_prefix("p(no id) ") {
        Some(r) => ("p(no id)", r),
        None => target.split_once(' ').unwrap(),
    };
    let owner = match owner {
        "p(no id)" => doc
            .descendants(doc.body().unwrap())
            .filter(|&n| doc.element_name(n) == Some("p"))
            .last()
            .unwrap(),
        o => id(doc, o),
    };
    let texts: Vec<NodeId> = doc
        .descendants(owner)
        .filter(|&d| doc.text(d).is_some())
        .collect();
    let (node, rest) = if let Some(r) = rest.strip_prefix("text#") {
        let (k, r) = r.split_once(' ').unwrap();
        (texts[k.parse::<usize>().unwrap()], r)
    } else {
        // `"Title " @1`: the node with this text.
        let quoted = rest.split('"').nth(1).unwrap();
        (
            *texts
                .iter()
                .find(|&&t| doc.text(t) == Some(quoted))
                .unwrap(),
            rest,
        )
    };
    let at = rest.rsplit('@').next().unwrap();
    let off = if at == "end" {
        doc.text(node).unwrap().encode_utf16().count() as u32
    } else {
        at.parse().unwrap()
    };
    pt(doc, node, off)
}

#[test]
fn edge_case_vectors_match_and_resolve_back() {
    let doc = Document::parse(&text("cfi/edge-cases.xhtml"));
    assert!(doc.warnings().is_empty(), "{:?}", doc.warnings());
    let v = read_json("cfi/edge-cases.vectors.json");
    let base = Cfi::parse(&format!("epubcfi({})", v["base"].as_str().unwrap())).unwrap();
    let mut n = 0;
    for vec in v["vectors"].as_array().unwrap() {
        let target = vec["target"].as_str().unwrap();
        let expected = vec["expected"].as_str().unwrap();
        let got = if target.starts_with("range \"live\"") {
            let t = first_text(&doc, id(&doc, "lead-elem"));
            Cfi::range_from(&pt(&doc, t, 3), &pt(&doc, t, 7))
        } else if target.starts_with("range \"ne\"") {
            let p = id(&doc, "two-elems");
            let one = first_text(&doc, child_el(&doc, p, 0));
            let tail = child(&doc, p, 2);
            Cfi::range_from(&pt(&doc, one, 1), &pt(&doc, tail, 2))
        } else {
            edge_target(&doc, target)
        };
        let got = got.with_base(&base);
        assert_eq!(got.to_string(), expected, "{target}");
        // Parse, resolve and regenerate.
        let parsed = Cfi::parse(expected).unwrap();
        assert_eq!(parsed, got);
        let local = Cfi::parse(&format!(
            "epubcfi({})",
            bare(expected).split_once('!').unwrap().1
        ))
        .unwrap();
        let (loc, end) = doc
            .resolve(&local)
            .unwrap_or_else(|e| panic!("{target}: {e}"));
        if end.is_none() {
            let again = match loc {
                Location::Element(e) => el(&doc, e),
                Location::Text { node, utf16_offset } => pt(&doc, node, utf16_offset),
                other => panic!("{other:?}"),
            };
            assert_eq!(again.with_base(&base).to_string(), expected, "{target}");
        }
        n += 1;
    }
    assert_eq!(n, v["vectors"].as_array().unwrap().len());
    // The two ranges select the right text.
    let r = |s: &str| {
        let (a, b) = doc.resolve(&Cfi::parse(s).unwrap()).unwrap();
        doc.text_between(&a, &b.unwrap())
    };
    assert_eq!(r("epubcfi(/4[b]/2[lead-elem],/3:3,/3:7)"), "live");
    assert_eq!(r("epubcfi(/4[b]/14[two-elems],/2/1:1,/5:2)"), "netwota");
}
