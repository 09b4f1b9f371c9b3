//! `citeflow ingest`: every fixture book, CFI round trips, sources for `render`, the index,
//! and bad input.

use std::io::Write;
use std::process::{Command, Stdio};

use citeflow_core::Source;
use citeflow_epub::{Book, Cfi, Limits};
use citeflow_index::BookPassage;
use serde_json::Value;

use crate::books_support::{book_path, no_ws, run, run_err, run_ok, temp_dir, BOOKS};

fn read_passages(path: &std::path::Path) -> Vec<BookPassage> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn ingest_every_fixture_book_and_passage_cfis_resolve_back() {
    let dir = temp_dir();
    let out = dir.path().join("all.jsonl");
    let paths: Vec<String> = BOOKS
        .iter()
        .map(|b| book_path(b).to_str().unwrap().to_owned())
        .collect();
    let mut args = vec!["ingest", "--out", out.to_str().unwrap()];
    args.extend(paths.iter().map(String::as_str));
    let o = run(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no progress bar without a terminal"
    );
    for b in BOOKS {
        assert!(
            stderr.contains(&format!("{b}: ")),
            "summary for {b}: {stderr}"
        );
    }
    let passages = read_passages(&out);
    let raw = std::fs::read_to_string(&out).unwrap();
    let mut resolved_by_cli = 0;
    for name in BOOKS {
        let bytes = std::fs::read(book_path(name)).unwrap();
        let book = Book::open(&bytes, &Limits::default()).unwrap();
        let title = book.metadata().title.clone().unwrap_or_default();
        let mine: Vec<&BookPassage> = passages.iter().filter(|p| p.book_title == title).collect();
        assert!(!mine.is_empty(), "{name}: no passages");
        let mut last_chapter = None;
        for (i, p) in mine.iter().enumerate() {
            assert_eq!(p.passage_index, i, "{name}");
            assert_eq!(p.id, format!("{}#p{i}", p.book_key));
            assert_eq!(p.locator.cfi.as_deref(), Some(p.cfi.as_str()));
            assert_eq!(p.chapter_title, book.chapters()[p.chapter_index].title);
            let start = Cfi::parse(&p.start_cfi).unwrap();
            let r = book
                .resolve(&start)
                .unwrap_or_else(|e| panic!("{name}: {}: {e}", p.start_cfi));
            assert_eq!(r.start.spine_index, p.spine_index, "{name}");
            let head: String = no_ws(&p.text).chars().take(24).collect();
            let found = no_ws(&book.text_after(&r.start, 4000));
            assert!(
                found.starts_with(&head),
                "{name} passage {i}: {} gives {found:?}, want {head:?}",
                p.start_cfi
            );
            let range = book.resolve(&Cfi::parse(&p.cfi).unwrap()).unwrap();
            assert_eq!(
                no_ws(&book.text_of(&range)),
                no_ws(&p.text),
                "{name}: {}",
                p.cfi
            );
            // The first passage of each chapter also through `citeflow cfi resolve`.
            if last_chapter != Some(p.chapter_index) {
                last_chapter = Some(p.chapter_index);
                let path = book_path(name);
                let j: Value = serde_json::from_str(&run_ok(&[
                    "cfi",
                    "resolve",
                    path.to_str().unwrap(),
                    &p.start_cfi,
                    "--chars",
                    "400",
                ]))
                .unwrap();
                assert_eq!(j["href"], p.href.as_str());
                assert_eq!(j["chapter_index"], p.chapter_index);
                let head: String = no_ws(&p.text).chars().take(16).collect();
                assert!(
                    no_ws(j["text"].as_str().unwrap()).starts_with(&head),
                    "{name}: {j} vs {head:?}"
                );
                resolved_by_cli += 1;
            }
        }
    }
    assert!(resolved_by_cli >= 40, "{resolved_by_cli}");
    // Every line is also a core source, numbered apart from the others.
    let mut keys = std::collections::HashSet::new();
    for line in raw.lines() {
        let s: Source = serde_json::from_str(line).unwrap();
        assert!(s.url.as_deref().unwrap().starts_with("book:"));
        assert!(keys.insert(citeflow_core::Sources::key_of(&s, true)));
    }
}

#[test]
fn ingest_childrens_literature_tells_chapters_in_one_file_apart() {
    let dir = temp_dir();
    let out = dir.path().join("c.jsonl");
    let path = book_path("childrens-literature.epub");
    run_ok(&[
        "ingest",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let passages = read_passages(&out);
    let princess: Vec<&BookPassage> = passages
        .iter()
        .filter(|p| p.chapter_title.as_deref() == Some("192 THE REAL PRINCESS"))
        .collect();
    assert!(!princess.is_empty());
    assert!(princess.iter().all(|p| p.href == "s04.xhtml"));
    assert!(princess.iter().any(|p| p.text.contains("princess")));
    assert!(princess
        .iter()
        .all(|p| p.title.ends_with("— 192 THE REAL PRINCESS")));
    let chapters: std::collections::BTreeSet<usize> = passages
        .iter()
        .filter(|p| p.href == "s04.xhtml")
        .map(|p| p.chapter_index)
        .collect();
    assert!(chapters.len() >= 20, "{chapters:?}");
}

#[test]
fn ingest_json_sources_feed_render() {
    let dir = temp_dir();
    let out = dir.path().join("sources.json");
    let path = book_path("alice.epub");
    run_ok(&[
        "ingest",
        path.to_str().unwrap(),
        "--format",
        "json",
        "--out",
        out.to_str().unwrap(),
        "--target-chars",
        "400",
        "--overlap-chars",
        "40",
    ]);
    let sources: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(sources
        .iter()
        .all(|s| s["text"].as_str().unwrap().chars().count() <= 400));
    let (a, b) = (&sources[10], &sources[20]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_citeflow"))
        .args(["render", "--sources", out.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let text = format!(
        "First [[{}]], then [[{}]], again [[{}]].",
        b["id"].as_str().unwrap(),
        a["id"].as_str().unwrap(),
        b["id"].as_str().unwrap()
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(
        stdout.starts_with("First [1], then [2], again [1]."),
        "{stdout}"
    );
    for (n, s) in [(1, b), (2, a)] {
        let loc = &s["locator"];
        let want = match loc["chapter_title"].as_str() {
            Some(c) => format!("(chapter: {c}, CFI: {})", loc["cfi"].as_str().unwrap()),
            None => format!("CFI: {})", loc["cfi"].as_str().unwrap()),
        };
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("[{n}] ")))
            .unwrap();
        assert!(line.contains(&want), "{line} lacks {want}");
    }
}

#[test]
fn ingest_ruby_flag_keeps_readings_in_the_text() {
    let dir = temp_dir();
    let path = book_path("kusamakura-japanese-vertical-writing.epub");
    let plain = dir.path().join("plain.jsonl");
    let ruby = dir.path().join("ruby.jsonl");
    run_ok(&[
        "ingest",
        path.to_str().unwrap(),
        "--out",
        plain.to_str().unwrap(),
    ]);
    run_ok(&[
        "ingest",
        path.to_str().unwrap(),
        "--ruby",
        "--out",
        ruby.to_str().unwrap(),
    ]);
    let len = |p: &std::path::Path| -> usize {
        read_passages(p)
            .iter()
            .map(|p| p.text.chars().count())
            .sum()
    };
    assert!(
        len(&ruby) > len(&plain) + 1000,
        "{} vs {}",
        len(&ruby),
        len(&plain)
    );
    let first = &read_passages(&plain)[..];
    assert!(first.iter().any(|p| p.text.contains("智に働けば角が立つ")));
}

#[test]
fn ingest_into_an_index_reuses_an_unchanged_book() {
    let dir = temp_dir();
    let index = dir.path().join("index");
    let path = book_path("wasteland.epub");
    let first = run(&[
        "ingest",
        path.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
    ]);
    assert!(first.status.success());
    assert!(
        first.stdout.is_empty(),
        "no passages on stdout with --index alone"
    );
    let again = run(&[
        "ingest",
        path.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("the index already had this book"),
        "{stderr}"
    );
    let idx = citeflow_index::Index::open_or_create(&index).unwrap();
    let hits = idx.search("April is the cruellest month", 1).unwrap();
    assert!(hits[0]
        .passage
        .text
        .contains("April is the cruellest month"));
    // The book's file is kept with the index, byte for byte.
    let kept = idx.epub(&hits[0].passage.book_key).unwrap().expect("kept");
    assert_eq!(&kept[..], &std::fs::read(&path).unwrap()[..]);
    // Other chunk settings: the book is cut and indexed again.
    let other = run(&[
        "ingest",
        path.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
        "--target-chars",
        "300",
    ]);
    assert!(!String::from_utf8_lossy(&other.stderr).contains("already had"));
}

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

#[test]
fn bad_input_gives_clear_errors_and_no_panic() {
    let dir = temp_dir();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let alice = std::fs::read(book_path("alice.epub")).unwrap();
    let cases: Vec<(String, &str)> = vec![
        (write("text.epub", b"just some text, not a zip"), "not a zip archive"),
        (write("empty.epub", b""), "not a zip archive"),
        (write("truncated.epub", &alice[..alice.len() / 2]), "not a zip archive"),
        (
            write("plain.zip", &zip_of(&[("readme.txt", b"hello")])),
            "not an epub",
        ),
        (
            write(
                "wrong-mimetype.epub",
                &zip_of(&[("mimetype", b"application/zip"), ("META-INF/container.xml", b"<x/>")]),
            ),
            "not an epub: mimetype",
        ),
        (
            write(
                "no-package.epub",
                &zip_of(&[
                    ("mimetype", b"application/epub+zip"),
                    (
                        "META-INF/container.xml",
                        br#"<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#,
                    ),
                ]),
            ),
            "package document",
        ),
        (dir.path().join("missing.epub").to_str().unwrap().to_owned(), "cannot read"),
    ];
    for (path, want) in &cases {
        for args in [
            vec!["ingest", path.as_str()],
            vec!["epub", "nodes", path.as_str()],
            vec!["cfi", "resolve", path.as_str(), "epubcfi(/6/2)"],
        ] {
            let err = run_err(&args);
            assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
            assert!(
                err.contains(path.as_str()),
                "{args:?}: names the file: {err}"
            );
        }
    }
    // One bad book among good ones: the good ones are written, the exit code says failure.
    let out = dir.path().join("mixed.jsonl");
    let good = book_path("wasteland.epub");
    let o = run(&[
        "ingest",
        good.to_str().unwrap(),
        &cases[0].0,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(!read_passages(&out).is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a zip archive"));
}

/// `alice.epub` with one chapter's markup cut off mid-element.
fn alice_with_broken_chapter() -> Vec<u8> {
    let bytes = std::fs::read(book_path("alice.epub")).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).unwrap();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut data).unwrap();
        if f.name().ends_with("chapter_001.xhtml") {
            let text = String::from_utf8(data).unwrap();
            let cut = text.find("</p>").unwrap() + 2;
            data = text.as_bytes()[..cut].to_vec();
        }
        entries.push((f.name().to_owned(), data));
    }
    let refs: Vec<(&str, &[u8])> = entries
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    zip_of(&refs)
}

#[test]
fn ingest_warns_per_broken_file_and_keeps_what_it_can_read() {
    let dir = temp_dir();
    let path = dir.path().join("broken-alice.epub");
    std::fs::write(&path, alice_with_broken_chapter()).unwrap();
    let out = dir.path().join("p.jsonl");
    let o = run(&[
        "ingest",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("citeflow: warning: ") && l.contains("chapter_001.xhtml"))
        .unwrap_or_else(|| panic!("no warning naming the broken file: {stderr}"));
    assert!(warning.contains(path.to_str().unwrap()), "{warning}");
    let passages = read_passages(&out);
    assert!(passages
        .iter()
        .any(|p| p.href.ends_with("chapter_002.xhtml")));
}
