//! Hybrid ranking with the real embedding model (feature `embed`; `CITEFLOW_EMBED_MODEL`
//! names the model file, as `scripts/test-embed.sh` sets it; skipped with a notice when
//! unset).

use citeflow_embed::Embedder;
use citeflow_index::eval::{answering_ids, parse_questions, Question};
use citeflow_index::{DenseIndex, Index};

use crate::passages;

fn question(id: &str) -> Question {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/eval/questions.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_questions(&text)
        .unwrap()
        .into_iter()
        .find(|q| q.id == id)
        .unwrap_or_else(|| panic!("no question {id}"))
}

#[test]
fn hybrid_finds_what_bm25_misses_across_languages() {
    let Some(path) = std::env::var_os("CITEFLOW_EMBED_MODEL") else {
        eprintln!("skipped: set CITEFLOW_EMBED_MODEL to the model file (scripts/test-embed.sh)");
        return;
    };
    let mut e = Embedder::open(std::path::Path::new(&path)).unwrap();
    // A small corpus, to keep the test short: Kusamakura's chapter 2 (the tea house,
    // passages 12-23) and the first 12 passages of Alice (chapter 1).
    let kusa: Vec<_> = passages("kusamakura-japanese-vertical-writing.epub")[12..24].to_vec();
    let alice: Vec<_> = passages("alice.epub")[..12].to_vec();
    let mut index = Index::in_memory().unwrap();
    let mut dense = DenseIndex::new();
    for ps in [&kusa, &alice] {
        index.add_book(ps, "f").unwrap();
        assert_eq!(dense.add_book(&mut e, ps).unwrap(), ps.len());
    }
    assert_eq!(dense.len(), 24);
    assert_eq!(dense.size_bytes(), 24 * 384 * 4);
    // Adding a book again replaces its vectors.
    dense.add_book(&mut e, &alice).unwrap();
    assert_eq!(dense.len(), 24);

    // A Chinese question about the Japanese book: "What became of the Nagara maiden in the
    // old woman's story?" The answer is passage 20 ("淵川へ身を投げて果てました").
    let q = question("zh-01");
    let answers = answering_ids(&kusa, &kusa[0].book_key, &q);
    assert_eq!(answers, [format!("{}#p20", kusa[0].book_key)]);
    let rank = |ids: Vec<String>| ids.iter().position(|id| *id == answers[0]).map(|i| i + 1);
    let bm25 = rank(
        index
            .search(&q.text, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.passage.id)
            .collect(),
    );
    let near = rank(
        dense
            .search(&mut e, &q.text, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.passage.id)
            .collect(),
    );
    let hybrid_hits = index.search_hybrid(&dense, &mut e, &q.text, 10).unwrap();
    assert!(hybrid_hits.windows(2).all(|w| w[0].score >= w[1].score));
    let hybrid = rank(hybrid_hits.into_iter().map(|h| h.passage.id).collect());
    println!("zh-01: bm25 {bm25:?}, dense {near:?}, hybrid {hybrid:?}");
    assert_eq!(near, Some(1));
    assert!(hybrid.is_some_and(|r| r <= 2), "{hybrid:?}");
    assert!(bm25.is_none_or(|r| r > 2), "{bm25:?}");

    // An English question keeps its BM25 answer at the top.
    let q = question("fixed-01");
    let top = index.search_hybrid(&dense, &mut e, &q.text, 3).unwrap();
    assert!(top[0]
        .passage
        .text
        .contains("took a watch out of its waistcoat-pocket"));
}
