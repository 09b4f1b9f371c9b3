//! A part of a passage as a range CFI of its own (`Book::passage_range_cfi`, issue 43): the
//! sentence a citation quotes, so that a reader opens the book at that sentence.

use citeflow_epub::{Book, Cfi, CfiFlavor, ChunkSettings, PassageRangeError};

use crate::support::book;

const KUSAMAKURA: &str = "kusamakura-japanese-vertical-writing.epub";

/// The sentences of `text` as character ranges: each ends after `。！？.!?` and the closing
/// quotes after it; whitespace between sentences belongs to neither.
fn sentences(text: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let end_mark = matches!(chars[i], '。' | '！' | '？')
            || (matches!(chars[i], '.' | '!' | '?')
                && chars.get(i + 1).is_none_or(|c| c.is_whitespace()));
        i += 1;
        if end_mark {
            while i < chars.len() && matches!(chars[i], '」' | '』' | '）' | '"' | '”' | '’')
            {
                i += 1;
            }
            out.push((start, i));
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            start = i;
        }
    }
    if start < chars.len() {
        out.push((start, chars.len()));
    }
    out
}

fn slice(text: &str, (a, b): (usize, usize)) -> String {
    text.chars().skip(a).take(b - a).collect()
}

/// Sentences of every passage of `name` (with `settings`): each one's range CFI, read back with
/// the crate's own reading view, marks exactly that sentence; in the epub.js flavour it is the
/// same place as the specification's CFI. Returns how many sentences were checked.
fn every_sentence_resolves_to_itself(b: &Book, name: &str, settings: &ChunkSettings) -> usize {
    let spec = settings.clone().with_cfi_flavor(CfiFlavor::Spec);
    let epubjs = settings.clone().with_cfi_flavor(CfiFlavor::Epubjs);
    let js_passages = b.passages(&epubjs);
    let mut checked = 0;
    for (p, js) in b.passages(&spec).iter().zip(&js_passages) {
        assert_eq!(p.text, js.text);
        // The first, a middle and the last sentence of each passage (every sentence of the
        // book takes minutes in a debug build).
        let all = sentences(&p.text);
        let mut some = vec![all[0], all[all.len() / 2], all[all.len() - 1]];
        some.dedup();
        for range in some {
            let sentence = slice(&p.text, range);
            let cfi = b
                .passage_range_cfi(&p.cfi, &p.text, range.0..range.1, &spec)
                .unwrap_or_else(|e| panic!("{name}: {} {range:?}: {e}", p.cfi));
            let marked = b
                .reading(&cfi, settings.ruby_text())
                .unwrap_or_else(|e| panic!("{name}: {cfi}: {e}"))
                .marked_text();
            assert_eq!(marked, sentence.trim(), "{name}: {cfi} in {}", p.cfi);
            let js_cfi = b
                .passage_range_cfi(&js.cfi, &js.text, range.0..range.1, &epubjs)
                .unwrap_or_else(|e| panic!("{name}: {} {range:?}: {e}", js.cfi));
            let back = b
                .convert_cfi(&js_cfi, CfiFlavor::Epubjs, CfiFlavor::Spec)
                .unwrap_or_else(|e| panic!("{name}: {js_cfi}: {e}"));
            assert_eq!(back.to_string(), cfi.to_string(), "{name}: {js_cfi}");
            checked += 1;
        }
    }
    checked
}

#[test]
fn sentences_of_the_japanese_book_have_cfi_ranges_that_mark_exactly_them() {
    let b = book(KUSAMAKURA);
    for ruby in [false, true] {
        let settings = ChunkSettings::default().with_ruby_text(ruby);
        let n = every_sentence_resolves_to_itself(b, KUSAMAKURA, &settings);
        assert!(n > 400, "only {n} sentences");
    }
}

#[test]
fn sentences_of_an_english_book_have_cfi_ranges_that_mark_exactly_them() {
    let n = every_sentence_resolves_to_itself(
        book("alice.epub"),
        "alice.epub",
        &ChunkSettings::default(),
    );
    assert!(n > 200, "only {n} sentences");
}

/// The book's opening, 「智に働けば角が立つ。」: a sentence with ruby on 智 and 角, whose CFI
/// range (pinned here, the one `docs/books.md` shows) runs over the ruby's text nodes.
#[test]
fn the_opening_sentence_of_kusamakura_has_its_own_range() {
    let b = book(KUSAMAKURA);
    let settings = ChunkSettings::default();
    let sentence = "智に働けば角が立つ。";
    let p = b
        .passages(&settings)
        .into_iter()
        .find(|p| p.text.contains(sentence))
        .expect("a passage with the sentence");
    let start = p.text[..p.text.find(sentence).unwrap()].chars().count();
    let range = start..start + sentence.chars().count();
    let cfi = b
        .passage_range_cfi(&p.cfi, &p.text, range.clone(), &settings)
        .expect("cfi");
    let reading = b.reading(&cfi, false).expect("reads");
    assert_eq!(reading.marked_text(), sentence);
    assert_eq!(reading.chapter_title.as_deref(), Some("一"));
    // With ruby text, the readings are inside the marked range.
    assert_eq!(
        b.reading(&cfi, true).expect("reads").marked_text(),
        "智ちに働けば角かどが立つ。"
    );
    insta_like(&cfi, "epubcfi(/6/6!/4/2/6/2[fgyq_0003],/2/1:0,/5:4)");
    // A point names no text; a CFI of another passage's text is a mismatch.
    let err = b
        .passage_range_cfi(&p.cfi, &p.text, 3..3, &settings)
        .unwrap_err();
    assert!(matches!(err, PassageRangeError::Blank { .. }), "{err}");
    let err = b
        .passage_range_cfi(&p.cfi, &p.text, 0..p.text.chars().count() + 1, &settings)
        .unwrap_err();
    assert!(matches!(err, PassageRangeError::OutOfRange { .. }), "{err}");
    let other = Cfi::parse("epubcfi(/6/8!/4/2/2/1:0)").expect("cfi");
    let err = b
        .passage_range_cfi(&other, &p.text, range, &settings)
        .unwrap_err();
    assert!(
        matches!(err, PassageRangeError::TextMismatch { .. }),
        "{err}"
    );
    let err = b
        .passage_range_cfi(
            &Cfi::parse("epubcfi(/6/9999!/4/2/1:0)").expect("cfi"),
            "x",
            0..1,
            &settings,
        )
        .unwrap_err();
    assert!(matches!(err, PassageRangeError::Resolve(_)), "{err}");
}

/// Compares a CFI with the value this test pins, printing the new one when it changed.
fn insta_like(cfi: &Cfi, pinned: &str) {
    assert_eq!(cfi.to_string(), pinned, "the pinned CFI changed");
}
