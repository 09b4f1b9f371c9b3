//! The acceptance test: every text node CFI of the seven books equals the
//! oracle in `fixtures/cfi/oracle-textnode-cfis.jsonl`.

use std::collections::BTreeMap;

use citeflow_epub::Cfi;

use crate::support::{book, read, BOOKS};

/// The oracle's `text`: whitespace collapsed, trimmed, first 40 characters.
fn oracle_text(t: &str) -> String {
    t.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(40)
        .collect()
}

#[derive(Debug, PartialEq)]
struct Line {
    spine_index: usize,
    href: String,
    node_ordinal: usize,
    text: String,
    cfi: String,
}

#[test]
fn every_text_node_cfi_matches_the_oracle() {
    let raw = read("cfi/oracle-textnode-cfis.jsonl");
    let raw = String::from_utf8(raw).expect("oracle is utf-8");
    let mut expected: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for line in raw.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("oracle line is json");
        expected
            .entry(v["epub"].as_str().unwrap().to_owned())
            .or_default()
            .push(Line {
                spine_index: v["spine_index"].as_u64().unwrap() as usize,
                href: v["href"].as_str().unwrap().to_owned(),
                node_ordinal: v["node_ordinal"].as_u64().unwrap() as usize,
                text: v["text"].as_str().unwrap().to_owned(),
                cfi: v["cfi"].as_str().unwrap().to_owned(),
            });
    }
    assert_eq!(expected.values().map(Vec::len).sum::<usize>(), 18_765);
    let mut matched = 0;
    let mut failures = Vec::new();
    for name in BOOKS {
        let b = book(name);
        let got: Vec<Line> = b
            .text_nodes()
            .map(|n| Line {
                spine_index: n.spine_index,
                href: n.href.to_owned(),
                node_ordinal: n.node_ordinal,
                text: oracle_text(n.text),
                cfi: n.cfi.to_string(),
            })
            .collect();
        let want = &expected[name];
        if got.len() != want.len() {
            failures.push(format!(
                "{name}: {} text nodes, oracle has {}",
                got.len(),
                want.len()
            ));
        }
        for (g, w) in got.iter().zip(want) {
            if g == w {
                matched += 1;
            } else if failures.len() < 20 {
                failures.push(format!("{name}:\n  got  {g:?}\n  want {w:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{matched}/18765 matched\n{}",
        failures.join("\n")
    );
    assert_eq!(matched, 18_765);
}

#[test]
fn every_text_node_cfi_resolves_back_to_its_node() {
    for name in BOOKS {
        let b = book(name);
        for n in b.text_nodes() {
            let cfi = Cfi::parse(&n.cfi.to_string()).expect("own cfi parses");
            assert_eq!(cfi, n.cfi, "{name}: round trip of {}", n.cfi);
            let r = b.resolve(&cfi).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(r.start.spine_index, n.spine_index);
            assert_eq!(
                r.start.location,
                Some(citeflow_epub::Location::Text {
                    node: n.node,
                    utf16_offset: 0
                }),
                "{name}: {}",
                n.cfi
            );
        }
    }
}
