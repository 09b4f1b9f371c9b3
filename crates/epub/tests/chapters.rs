//! Chapters from the table of contents.

use crate::support::{book, BOOKS};
use citeflow_epub::ChunkSettings;

#[test]
fn childrens_literature_has_many_chapters_in_one_spine_file() {
    let b = book("childrens-literature.epub");
    let s04 = b
        .spine()
        .iter()
        .position(|s| s.href == "s04.xhtml")
        .unwrap();
    let inside: Vec<_> = b
        .chapters()
        .iter()
        .filter(|c| c.spine_index == s04)
        .collect();
    // Every linked toc entry is a chapter, all 22 inside s04.xhtml.
    assert_eq!(b.toc().len(), 22);
    assert_eq!(inside.len(), 22, "chapters in s04.xhtml");
    assert_eq!(b.chapters().len(), 23, "22 + the untitled cover and nav");
    let titles: Vec<&str> = inside.iter().filter_map(|c| c.title.as_deref()).collect();
    assert_eq!(titles[0], "SECTION IV FAIRY STORIES—MODERN FANTASTIC TALES");
    assert!(titles.contains(&"192 THE REAL PRINCESS"));
    assert!(titles.contains(&"I. The Rabbi and the Diadem"));
    // Passages carry the chapter they are in.
    let passages = b.passages(&ChunkSettings::default());
    let princess: Vec<_> = passages
        .iter()
        .filter(|p| p.chapter_title.as_deref() == Some("192 THE REAL PRINCESS"))
        .collect();
    assert!(!princess.is_empty());
    assert!(princess.iter().any(|p| p.text.contains("princess")));
    assert!(princess
        .iter()
        .all(|p| !p.text.contains("EMPEROR'S NEW CLOTHES")));
    let clothes = b
        .chapters()
        .iter()
        .find(|c| c.title.as_deref() == Some("193 THE EMPEROR'S NEW CLOTHES"))
        .unwrap();
    let first = passages
        .iter()
        .find(|p| p.chapter_index == clothes.index)
        .unwrap();
    assert!(first.text.starts_with("193"), "{}", first.text);
}

#[test]
fn chapters_are_in_reading_order_and_cover_every_text_node() {
    for name in BOOKS {
        let b = book(name);
        assert!(!b.chapters().is_empty(), "{name}");
        let mut last = 0;
        for n in b.text_nodes() {
            let c = b.chapter_index_at(n.spine_index, n.node);
            assert!(c >= last, "{name}: chapter order");
            last = c;
        }
        for (i, c) in b.chapters().iter().enumerate() {
            assert_eq!(c.index, i);
        }
    }
}

#[test]
fn spine_files_outside_the_toc_join_the_chapter_before() {
    // kusamakura: 目次 (the nav) is in the spine and in no toc entry.
    let b = book("kusamakura-japanese-vertical-writing.epub");
    let titled = b.chapters().iter().filter(|c| c.title.is_some()).count();
    assert!(titled >= 13, "{titled}");
    let alice = book("alice.epub");
    let names: Vec<_> = alice.chapters().iter().map(|c| c.title.clone()).collect();
    assert!(
        names.iter().flatten().any(|t| t.contains("Rabbit")),
        "{names:?}"
    );
}
