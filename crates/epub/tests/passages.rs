//! Passages: chunking, CFIs back to text, Japanese, ruby, right-to-left.

use citeflow_epub::{Book, ChunkSettings, Limits, PageProgression};

use crate::support::{book, BOOKS};

fn no_ws(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[test]
fn every_passage_start_cfi_resolves_to_its_text() {
    let settings = ChunkSettings::default();
    for name in BOOKS {
        let b = book(name);
        let passages = b.passages(&settings);
        assert!(!passages.is_empty(), "{name}: no passages");
        for p in &passages {
            assert!(
                !p.text.trim().is_empty(),
                "{name}: empty passage {}",
                p.index
            );
            assert!(
                p.text.chars().count() <= settings.target_chars(),
                "{name}: passage {} too long",
                p.index
            );
            assert_eq!(
                p.start_cfi.compare(&p.cfi.start()),
                Some(std::cmp::Ordering::Equal)
            );
            let r = b
                .resolve(&p.start_cfi)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(r.start.spine_index, p.spine_index);
            let head: String = no_ws(&p.text).chars().take(24).collect();
            let found = no_ws(&b.text_after(&r.start, 4000));
            assert!(
                found.starts_with(&head),
                "{name} passage {}: {} gives {found:?}, want {head:?}",
                p.index,
                p.start_cfi
            );
            // The whole range covers exactly the passage's text.
            let range = b
                .resolve(&p.cfi)
                .unwrap_or_else(|e| panic!("{name}: {}: {e}", p.cfi));
            assert_eq!(
                no_ws(&b.text_of(&range)),
                no_ws(&p.text),
                "{name}: {}",
                p.cfi
            );
            assert_eq!(p.book_title, b.metadata().title.clone().unwrap_or_default());
            assert_eq!(p.chapter_title, b.chapters()[p.chapter_index].title);
        }
    }
}

#[test]
fn consecutive_passages_overlap_within_a_chapter() {
    let b = book("alice.epub");
    let passages = b.passages(
        &ChunkSettings::new()
            .with_target_chars(300)
            .with_overlap_chars(60),
    );
    let mut overlapping = 0;
    for w in passages.windows(2) {
        let (a, n) = (&w[0], &w[1]);
        assert!(
            a.start_cfi.compare(&n.start_cfi).is_some_and(|o| o.is_lt()),
            "{} !< {}",
            a.start_cfi,
            n.start_cfi
        );
        if a.chapter_index == n.chapter_index && a.spine_index == n.spine_index {
            assert!(
                n.start_cfi.compare(&a.cfi.end()).is_some_and(|o| o.is_lt()),
                "{} does not overlap {}",
                n.cfi,
                a.cfi
            );
            overlapping += 1;
        }
    }
    assert!(overlapping > 50);
    let none = b.passages(
        &ChunkSettings::new()
            .with_target_chars(300)
            .with_overlap_chars(0),
    );
    for w in none.windows(2) {
        assert!(w[1]
            .start_cfi
            .compare(&w[0].cfi.end())
            .is_some_and(|o| o.is_ge()));
    }
}

#[test]
fn japanese_vertical_book_splits_on_sentence_ends_without_ruby() {
    let b = book("kusamakura-japanese-vertical-writing.epub");
    assert_eq!(b.page_progression(), PageProgression::Rtl);
    let passages = b.passages(&ChunkSettings::default());
    let ends_sentence = passages
        .iter()
        .filter(|p| p.text.ends_with(['。', '」', '』', '？', '！']))
        .count();
    assert!(
        ends_sentence * 10 >= passages.len() * 8,
        "{ends_sentence}/{}",
        passages.len()
    );
    // 山路を登りながら: the reading やまみち is an <rt> and stays out.
    let first = passages
        .iter()
        .find(|p| p.text.contains("山路を登りながら"))
        .expect("the famous opening");
    assert!(
        first.text.contains("山路を登りながら、こう考えた。"),
        "{}",
        first.text
    );
    let with_ruby = b.passages(&ChunkSettings::new().with_ruby_text(true));
    assert!(with_ruby.iter().any(|p| p.text.contains("山路やまみち")));
}

#[test]
fn arabic_right_to_left_book_has_passages() {
    let b = book("regime-anticancer-arabic.epub");
    assert_eq!(b.page_progression(), PageProgression::Rtl);
    let passages = b.passages(&ChunkSettings::default());
    assert!(passages
        .iter()
        .any(|p| p.text.chars().any(|c| ('\u{600}'..='\u{6ff}').contains(&c))));
}

#[test]
fn ruby_is_left_out_of_passages_but_counted_in_cfis() {
    let xhtml = r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body id="b"><p id="ruby"><ruby>漢<rt>かん</rt>字<rt>じ</rt></ruby>を書く。次の文。</p></body></html>"#;
    let bytes = crate::errors::epub_with(&[("OEBPS/c.xhtml", xhtml.as_bytes())], None);
    let b = Book::open(&bytes, &Limits::default()).unwrap();
    let p = b.passages(&ChunkSettings::default());
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].text, "漢字を書く。次の文。");
    assert_eq!(
        p[0].cfi.to_string(),
        "epubcfi(/6/2!/4[b]/2[ruby],/2/1:0,/3:8)"
    );
    let small = b.passages(
        &ChunkSettings::new()
            .with_target_chars(7)
            .with_overlap_chars(0),
    );
    let texts: Vec<&str> = small.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, ["漢字を書く。", "次の文。"]);
    assert_eq!(
        small[1].start_cfi.to_string(),
        "epubcfi(/6/2!/4[b]/2[ruby]/3:4)"
    );
    let with = b.passages(&ChunkSettings::new().with_ruby_text(true));
    assert_eq!(with[0].text, "漢かん字じを書く。次の文。");
}
