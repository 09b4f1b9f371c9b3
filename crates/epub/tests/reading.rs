//! Reading views: the chapter around a CFI with the cited place marked.

use citeflow_epub::{Cfi, ChunkSettings};

use crate::support::{book, BOOKS};

/// For every passage of every fixture book (with and without ruby text), the reading view of
/// its range CFI is its chapter, in its document, and marks exactly the passage's text; the
/// view of its start CFI marks the point where that text starts; every paragraph's CFI
/// resolves to the paragraph's first characters. Ruby readings are only in the Japanese book.
#[test]
fn a_passage_cfi_opens_its_chapter_with_exactly_the_passage_marked() {
    for ruby in [false, true] {
        let settings = ChunkSettings::default().with_ruby_text(ruby);
        for name in BOOKS {
            if ruby && !name.starts_with("kusamakura") {
                continue;
            }
            let b = book(name);
            let mut checked_paragraphs = std::collections::BTreeSet::new();
            for p in b.passages(&settings) {
                let r = b
                    .reading(&p.cfi, ruby)
                    .unwrap_or_else(|e| panic!("{name}: {}: {e}", p.cfi));
                assert_eq!(r.spine_index, p.spine_index, "{name}: {}", p.cfi);
                assert_eq!(r.href, p.href);
                assert_eq!(r.chapter_index, p.chapter_index, "{name}: {}", p.cfi);
                assert_eq!(r.chapter_title, p.chapter_title);
                assert_eq!(r.marked_text(), p.text, "{name} ruby={ruby}: {}", p.cfi);
                // The paragraphs are the chapter's text: the passage is inside it.
                let all: Vec<&str> = r.paragraphs.iter().map(|q| q.text.as_str()).collect();
                assert!(all.join("\n\n").contains(&p.text), "{name}: {}", p.cfi);

                let point = b.reading(&p.start_cfi, ruby).expect("start cfi");
                let span = point.mark.expect("a point is marked");
                assert_eq!(span.start, span.end);
                let full = r.mark.expect("a range is marked");
                assert_eq!(span.start, full.start, "{name}: {}", p.start_cfi);
                let para = &point.paragraphs[span.start.paragraph].text;
                let first_line = p.text.split("\n\n").next().unwrap_or_default();
                let after: String = para.chars().skip(span.start.char_offset).collect();
                assert!(after.starts_with(first_line), "{name}: {}", p.start_cfi);

                if checked_paragraphs.insert((r.spine_index, r.chapter_index)) {
                    for q in &r.paragraphs {
                        let back = b.reading(&q.cfi, ruby).expect("paragraph cfi");
                        let s = back.mark.expect("marked");
                        assert_eq!(back.paragraphs[s.start.paragraph].text, q.text, "{}", q.cfi);
                        assert_eq!(s.start.char_offset, 0, "{}", q.cfi);
                    }
                }
            }
        }
    }
}

#[test]
fn the_spec_example_range_marks_the_spec_text() {
    let b = book("cfi-spec-example.epub");
    let cfi = Cfi::parse("epubcfi(/6/4[chap01ref]!/4[body01]/10[para05],/2/1:1,/3:4)").unwrap();
    let r = b.reading(&cfi, false).unwrap();
    assert_eq!(r.marked_text(), "yy0123");
    assert_eq!(r.chapter_title.as_deref(), Some("Chapter 1"));
}

#[test]
fn chapters_sharing_a_file_are_read_apart_and_errors_are_typed() {
    let b = book("childrens-literature.epub");
    let passages = b.passages(&ChunkSettings::default());
    let (x, y) = passages
        .windows(2)
        .find(|w| w[0].spine_index == w[1].spine_index && w[0].chapter_index != w[1].chapter_index)
        .map(|w| (&w[0], &w[1]))
        .expect("two chapters in one file");
    let rx = b.reading(&x.cfi, false).unwrap();
    let ry = b.reading(&y.cfi, false).unwrap();
    assert_ne!(rx.chapter_index, ry.chapter_index);
    assert!(!rx.paragraphs.iter().any(|p| ry.paragraphs.contains(p)));

    let bad = Cfi::parse("epubcfi(/6/9999!/4/2/1:0)").unwrap();
    let err = b.reading(&bad, false).unwrap_err();
    assert!(err.to_string().contains("9999"), "{err}");
}

/// Each reading of the Japanese book, written back after its base characters, gives the text
/// read with ruby included: the annotations are the book's `<rt>` readings, at their bases.
#[test]
fn ruby_readings_sit_on_their_base_characters() {
    let b = book("kusamakura-japanese-vertical-writing.epub");
    let mut seen = std::collections::BTreeSet::new();
    let mut annotations = 0;
    for p in b.passages(&ChunkSettings::default()) {
        if !seen.insert((p.spine_index, p.chapter_index)) {
            continue;
        }
        let without = b.reading(&p.cfi, false).unwrap();
        let with = b.reading(&p.cfi, true).unwrap();
        assert_eq!(without.paragraphs.len(), with.paragraphs.len(), "{}", p.cfi);
        for (q, full) in without.paragraphs.iter().zip(&with.paragraphs) {
            assert!(
                full.ruby.is_empty(),
                "readings in the text are not annotations"
            );
            let chars: Vec<char> = q.text.chars().collect();
            let mut rebuilt = String::new();
            let mut at = 0;
            for r in &q.ruby {
                assert!(
                    at <= r.start && r.start < r.end && r.end <= chars.len(),
                    "{}",
                    q.cfi
                );
                rebuilt.extend(&chars[at..r.end]);
                rebuilt.push_str(&r.text);
                at = r.end;
            }
            rebuilt.extend(&chars[at..]);
            assert_eq!(rebuilt, full.text, "{}", q.cfi);
            annotations += q.ruby.len();
        }
    }
    assert!(annotations > 1000, "only {annotations} ruby readings");
}

/// Several base–reading pairs in one `<ruby>`, `<rb>` bases, `<rp>` parentheses, and books
/// without ruby.
#[test]
fn ruby_forms_are_read_as_html_pairs_them() {
    let xhtml = r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body>
<p id="p">A <ruby>漢<rt>かん</rt>字<rt>じ</rt></ruby> and <ruby><rb>東京</rb><rp>(</rp><rt> とう
 きょう </rt><rp>)</rp></ruby>.</p><p><ruby><rt>no base</rt></ruby>x</p></body></html>"#;
    let starts_with_ruby = r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body><p><ruby>草枕<rt>くさまくら</rt></ruby>の話</p></body></html>"#;
    let bytes = crate::errors::epub_with(
        &[
            ("OEBPS/a.xhtml", xhtml.as_bytes()),
            ("OEBPS/b.xhtml", starts_with_ruby.as_bytes()),
        ],
        None,
    );
    let b = citeflow_epub::Book::open(&bytes, &citeflow_epub::Limits::default()).unwrap();
    let cfi = Cfi::parse("epubcfi(/6/2!/4[p]/1:0)").unwrap();
    let r = b.reading(&cfi, false).unwrap();
    let p = &r.paragraphs[0];
    assert_eq!(p.text, "A 漢字 and 東京.");
    let got: Vec<(usize, usize, &str)> = p
        .ruby
        .iter()
        .map(|r| (r.start, r.end, r.text.as_str()))
        .collect();
    assert_eq!(got, [(2, 3, "かん"), (3, 4, "じ"), (9, 11, "とう きょう")]);
    assert_eq!(r.paragraphs[1].text, "x");
    assert!(r.paragraphs[1].ruby.is_empty());

    let with = b.reading(&cfi, true).unwrap();
    assert_eq!(
        with.paragraphs[0].text,
        "A 漢かん字じ and 東京( とう きょう )."
    );
    assert!(with.paragraphs.iter().all(|p| p.ruby.is_empty()));

    // A document whose text starts inside a ruby base.
    let r = b
        .reading(&Cfi::parse("epubcfi(/6/4!/4/2/2/1:0)").unwrap(), false)
        .unwrap();
    assert_eq!(r.paragraphs[0].text, "草枕の話");
    assert_eq!(r.paragraphs[0].ruby.len(), 1);
    assert_eq!(
        (r.paragraphs[0].ruby[0].start, r.paragraphs[0].ruby[0].end),
        (0, 2)
    );
    assert_eq!(r.paragraphs[0].ruby[0].text, "くさまくら");

    let alice = book("alice.epub");
    let first = &alice.passages(&ChunkSettings::default())[0];
    let r = alice.reading(&first.cfi, false).unwrap();
    assert!(r.paragraphs.iter().all(|p| p.ruby.is_empty()));
}

/// From the first chapter, "next chapter" walks every chapter that has text, in order, each
/// opened at its start; "previous chapter" leads back the same way.
#[test]
fn next_and_previous_chapter_walk_every_chapter_with_text() {
    for name in BOOKS {
        let b = book(name);
        let with_text: std::collections::BTreeSet<usize> = b
            .passages(&ChunkSettings::default())
            .iter()
            .map(|p| p.chapter_index)
            .collect();
        let mut at = (0..b.chapters().len())
            .find(|&j| b.chapter_cfi(j).is_some())
            .expect("a chapter");
        let mut visited: Vec<usize> = Vec::new();
        loop {
            let cfi = b.chapter_cfi(at).expect("reachable");
            let r = b
                .reading(&cfi, false)
                .unwrap_or_else(|e| panic!("{name}: {cfi}: {e}"));
            assert_eq!(r.chapter_index, at, "{name}: {cfi}");
            assert_eq!(r.previous_chapter, visited.last().copied(), "{name}: {cfi}");
            if let Some(m) = r.mark {
                let start = (m.start.paragraph, m.start.char_offset);
                assert_eq!(start, (0, 0), "{name}: {cfi} opens at the chapter's start");
            }
            visited.push(at);
            match r.next_chapter {
                Some(next) => {
                    assert!(next > at, "{name}: {next} after {at}");
                    at = next;
                }
                None => break,
            }
        }
        let visited: std::collections::BTreeSet<usize> = visited.into_iter().collect();
        assert!(
            with_text.is_subset(&visited),
            "{name}: chapters with text not reached: {:?}",
            with_text.difference(&visited).collect::<Vec<_>>()
        );
    }
}
