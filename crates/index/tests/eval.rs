//! The retrieval evaluation (`eval/questions.json`, `examples/retrieval_eval.rs`): its
//! scoring on a hand-checked case, and the BM25 recall it must keep.

use citeflow_index::eval::{
    answering_ids, first_answer_rank, normalize, parse_questions, reciprocal_rank_fusion, Question,
    Scores,
};
use citeflow_index::{BookPassage, Index};

use crate::passages;

fn questions() -> Vec<Question> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/eval/questions.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_questions(&text).expect("questions.json parses")
}

/// The books of the evaluation corpus, as the example cuts them.
const BOOKS: [&str; 5] = [
    "alice.epub",
    "kusamakura-japanese-vertical-writing.epub",
    "childrens-literature.epub",
    "wasteland.epub",
    "regime-anticancer-arabic.epub",
];

#[test]
fn scoring_of_a_hand_checked_case() {
    let alice = passages("alice.epub");
    let key = alice[0].book_key.clone();
    let q = questions()
        .into_iter()
        .find(|q| q.id == "fixed-01")
        .expect("fixed-01");
    assert_eq!(q.evidence, ["took a watch out of its waistcoat-pocket"]);
    // Exactly one passage holds the words: the third of chapter 1 (passage 3 of the book).
    let answers = answering_ids(&alice, &key, &q);
    assert_eq!(answers, [format!("{key}#p3")]);
    assert!(alice[3]
        .text
        .contains("took a watch out of its waistcoat-pocket"));
    // Passages of another book never answer, even with the same words.
    assert!(answering_ids(&alice, "other-000000", &q).is_empty());
    // Evidence is compared without whitespace, case or curly quotes: the book has
    // "alanguid" (sic) and ’.
    assert_eq!(normalize(" A languid\n‘Sleepy’ "), "alanguid'sleepy'");
    assert!(alice
        .iter()
        .any(|p| normalize(&p.text).contains(&normalize("in a languid, sleepy voice"))));

    let ranked = [
        format!("{key}#p7"),
        format!("{key}#p3"),
        format!("{key}#p4"),
    ];
    assert_eq!(first_answer_rank(&ranked, &answers), Some(2));
    assert_eq!(first_answer_rank(&ranked[..1], &answers), None);
    // Beyond the top 10 does not count.
    let deep: Vec<String> = (10..20)
        .map(|i| format!("{key}#p{i}"))
        .chain([answers[0].clone()])
        .collect();
    assert_eq!(first_answer_rank(&deep, &answers), None);

    // Ranks 2, 1, none, 7: recall@1 1/4, @3 2/4, @5 2/4, @10 3/4; MRR (1/2 + 1 + 1/7) / 4.
    let s = Scores::of(&[Some(2), Some(1), None, Some(7)]);
    assert_eq!(s.questions, 4);
    assert_eq!(s.recall, [0.25, 0.5, 0.5, 0.75]);
    assert!(
        (s.mrr - (0.5 + 1.0 + 1.0 / 7.0) / 4.0).abs() < 1e-12,
        "{}",
        s.mrr
    );
    assert_eq!(Scores::of(&[]).recall, [0.0; 4]);

    // RRF with c = 60: a = 1/61 + 1/62, b = 1/62, c = 1/63 + 1/61, d = 1/63.
    let fused = reciprocal_rank_fusion(&[&["a", "b", "c"], &["c", "a", "d"]], 60.0, 10);
    assert_eq!(fused, ["a", "c", "b", "d"]);
    assert_eq!(reciprocal_rank_fusion(&[&["x"], &["y"]], 60.0, 1), ["x"]);
}

/// Recall@5 of BM25 over the whole question set, measured with the tokenizer of
/// 2026-11-25 (`retrieval_eval`: 50 of 63 questions). A tokenizer or ranking change that
/// loses a question fails here; one that gains raises the floor.
const BM25_HITS_AT_5_FLOOR: usize = 50;

#[test]
fn every_question_has_an_answer_and_bm25_keeps_its_recall() {
    let qs = questions();
    assert!(qs.len() >= 40, "{} questions", qs.len());
    let mut ids: Vec<&str> = qs.iter().map(|q| q.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), qs.len(), "question ids are unique");
    for lang in ["en", "ja", "zh"] {
        assert!(qs.iter().any(|q| q.lang == lang), "no {lang} question");
    }

    let mut index = Index::in_memory().unwrap();
    let mut all: Vec<BookPassage> = Vec::new();
    let mut keys = std::collections::HashMap::new();
    for name in BOOKS {
        let ps = passages(name);
        index.add_book(&ps, name).unwrap();
        keys.insert(name, ps[0].book_key.clone());
        all.extend(ps);
    }
    let mut ranks = Vec::new();
    for q in &qs {
        let key = &keys[q.book.as_str()];
        let answers = answering_ids(&all, key, q);
        assert!(
            !answers.is_empty(),
            "{}: no passage holds {:?}",
            q.id,
            q.evidence
        );
        let hits: Vec<String> = index
            .search(&q.text, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.passage.id)
            .collect();
        ranks.push(first_answer_rank(&hits, &answers));
    }
    let at5 = ranks
        .iter()
        .filter(|r| matches!(r, Some(r) if *r <= 5))
        .count();
    let s = Scores::of(&ranks);
    println!(
        "bm25 over {} questions: recall@1/3/5/10 {:?}, MRR@10 {:.3}",
        s.questions, s.recall, s.mrr
    );
    assert!(
        at5 >= BM25_HITS_AT_5_FLOOR,
        "recall@5 fell: {at5} of {} questions (floor {BM25_HITS_AT_5_FLOOR})",
        qs.len()
    );
}
