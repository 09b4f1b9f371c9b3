//! `citeflow epub nodes` against the CFI oracle, and `citeflow epub chapters`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::books_support::{book_path, run_ok, BOOKS};
use crate::shared_dir;

/// The fields `citeflow epub nodes` prints, in the oracle's form.
fn line_fields(v: &Value) -> (u64, String, u64, String, String) {
    (
        v["spine_index"].as_u64().expect("spine_index"),
        v["href"].as_str().expect("href").to_owned(),
        v["node_ordinal"].as_u64().expect("node_ordinal"),
        v["text"].as_str().expect("text").to_owned(),
        v["cfi"].as_str().expect("cfi").to_owned(),
    )
}

#[test]
fn epub_nodes_equals_the_oracle_for_every_line() {
    let oracle =
        std::fs::read_to_string(shared_dir().join("fixtures/cfi/oracle-textnode-cfis.jsonl"))
            .expect("oracle file");
    let mut want: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in oracle.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("oracle line is JSON");
        let book = v["epub"].as_str().expect("epub").to_owned();
        want.entry(book).or_default().push(v);
    }
    assert_eq!(want.values().map(Vec::len).sum::<usize>(), 18_765);
    let mut matched = 0;
    for name in BOOKS {
        let path = book_path(name);
        let out = run_ok(&["epub", "nodes", path.to_str().unwrap()]);
        let lines: Vec<&str> = out.lines().collect();
        let got: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).expect("nodes line is JSON"))
            .collect();
        let want = &want[name];
        assert_eq!(got.len(), want.len(), "{name}: number of text nodes");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let at: Vec<usize> = ["spine_index", "href", "node_ordinal", "text", "cfi"]
                .iter()
                .map(|k| lines[i].find(&format!("\"{k}\":")).expect("field"))
                .collect();
            assert!(
                at.windows(2).all(|w| w[0] < w[1]),
                "{name} line {i}: field order"
            );
            assert_eq!(g.as_object().unwrap().len(), 5, "{name} line {i}: fields");
            assert_eq!(line_fields(g), line_fields(w), "{name} line {i}");
            matched += 1;
        }
    }
    assert_eq!(matched, 18_765);
}

#[test]
fn epub_nodes_full_text_keeps_the_whole_node() {
    let path = book_path("alice.epub");
    let out = run_ok(&["epub", "nodes", "--full-text", path.to_str().unwrap()]);
    let longest = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .chars()
                .count()
        })
        .max()
        .unwrap();
    assert!(longest > 40, "{longest}");
}

#[test]
fn childrens_literature_chapters_share_one_spine_file() {
    let path = book_path("childrens-literature.epub");
    let out = run_ok(&["epub", "chapters", path.to_str().unwrap()]);
    let chapters: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(chapters.len(), 23, "22 toc chapters + the untitled cover");
    let in_s04: Vec<&Value> = chapters
        .iter()
        .filter(|c| c["href"] == "s04.xhtml")
        .collect();
    assert_eq!(in_s04.len(), 22);
    let titles: Vec<&str> = in_s04.iter().filter_map(|c| c["title"].as_str()).collect();
    assert_eq!(titles[0], "SECTION IV FAIRY STORIES—MODERN FANTASTIC TALES");
    assert!(titles.contains(&"192 THE REAL PRINCESS"));
    assert!(titles.contains(&"193 THE EMPEROR'S NEW CLOTHES"));
    for (i, c) in chapters.iter().enumerate() {
        assert_eq!(c["index"], i);
    }
}
