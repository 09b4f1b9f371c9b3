//! Retrieval evaluation: questions about books with the words that locate their answer,
//! and the scores of a ranking (recall@k, MRR@10), plus reciprocal rank fusion.
//!
//! A [`Question`] names its book (the fixture file name), its language, the question text
//! and one or more `evidence` strings. A passage *answers* the question when it belongs to
//! that book and its text holds one of the evidence strings, compared by
//! [`normalize`] (lowercase, whitespace removed, curly quotes made straight), so the
//! overlapping passages of the default cutting may both answer. A ranking is scored by the
//! rank of its first answering passage ([`first_answer_rank`]); [`Scores::of`] turns the
//! ranks of a question set into recall@1/3/5/10 and MRR@10.
//!
//! ```
//! use citeflow_index::eval::{reciprocal_rank_fusion, Scores};
//!
//! // Three questions: answered at rank 1, at rank 4, and not in the top 10.
//! let s = Scores::of(&[Some(1), Some(4), None]);
//! assert_eq!(s.recall_at(1), 1.0 / 3.0);
//! assert_eq!(s.recall_at(5), 2.0 / 3.0);
//! assert_eq!(s.mrr, (1.0 + 0.25) / 3.0);
//!
//! let fused = reciprocal_rank_fusion(&[&["a", "b", "c"], &["c", "a"]], 60.0, 3);
//! assert_eq!(fused, ["a", "c", "b"]);
//! ```

use std::collections::HashMap;

use crate::BookPassage;

/// The cut-offs of recall@k, and MRR is counted within the last of them.
pub const RECALL_KS: [usize; 4] = [1, 3, 5, 10];

/// One question of a retrieval evaluation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Question {
    /// A short unique id (`alice-07`).
    pub id: String,
    /// The book, as the file name of the fixture (`alice.epub`).
    pub book: String,
    /// The language of the question (`en`, `ja`, `zh`).
    pub lang: String,
    /// The question as a user would type it.
    pub text: String,
    /// Words of the book that locate the answering passage(s); any one is enough.
    pub evidence: Vec<String>,
    /// Where the book says it (chapter), for people.
    pub place: String,
}

/// Reads a question file: a JSON array of [`Question`]s.
///
/// # Errors
///
/// The JSON error when the text is not such an array.
pub fn parse_questions(json: &str) -> Result<Vec<Question>, serde_json::Error> {
    serde_json::from_str(json)
}

/// The form in which evidence and passage text are compared: lowercase, no whitespace,
/// curly quotes and apostrophes made straight.
pub fn normalize(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            _ => c,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether a passage text (already [`normalize`]d) holds one of the evidence strings.
pub fn holds_evidence(normalized_text: &str, evidence: &[String]) -> bool {
    evidence
        .iter()
        .map(|e| normalize(e))
        .any(|e| !e.is_empty() && normalized_text.contains(&e))
}

/// The ids of the passages of `book_key` that answer `question`.
pub fn answering_ids(passages: &[BookPassage], book_key: &str, question: &Question) -> Vec<String> {
    passages
        .iter()
        .filter(|p| {
            p.book_key == book_key && holds_evidence(&normalize(&p.text), &question.evidence)
        })
        .map(|p| p.id.clone())
        .collect()
}

/// The 1-based rank of the first id of `ranked` that is in `answers`, if it is within
/// the top 10 (the last of [`RECALL_KS`]).
pub fn first_answer_rank<S: AsRef<str>>(ranked: &[S], answers: &[String]) -> Option<usize> {
    let cut = RECALL_KS[RECALL_KS.len() - 1];
    ranked
        .iter()
        .take(cut)
        .position(|id| answers.iter().any(|a| a == id.as_ref()))
        .map(|i| i + 1)
}

/// recall@k and MRR@10 of a question set.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Scores {
    /// Number of questions.
    pub questions: usize,
    /// Fraction of questions answered within the top k, for each k of [`RECALL_KS`].
    pub recall: [f64; RECALL_KS.len()],
    /// Mean reciprocal rank of the first answering passage (0 when not in the top 10).
    pub mrr: f64,
}

impl Scores {
    /// The scores of the first-answer ranks of a question set (see [`first_answer_rank`]);
    /// all zero for no questions.
    pub fn of(ranks: &[Option<usize>]) -> Scores {
        let n = ranks.len();
        let mut recall = [0.0; RECALL_KS.len()];
        let mut mrr = 0.0;
        if n == 0 {
            return Scores {
                questions: 0,
                recall,
                mrr,
            };
        }
        for (slot, &k) in recall.iter_mut().zip(RECALL_KS.iter()) {
            let hits = ranks
                .iter()
                .filter(|r| matches!(r, Some(r) if *r <= k))
                .count();
            *slot = hits as f64 / n as f64;
        }
        for r in ranks.iter().flatten() {
            mrr += 1.0 / *r as f64;
        }
        Scores {
            questions: n,
            recall,
            mrr: mrr / n as f64,
        }
    }

    /// recall@k for a k of [`RECALL_KS`] (NaN for another k).
    pub fn recall_at(&self, k: usize) -> f64 {
        RECALL_KS
            .iter()
            .position(|&x| x == k)
            .map_or(f64::NAN, |i| self.recall[i])
    }
}

/// Reciprocal rank fusion: each id scores the sum of `1 / (c + rank)` over the lists that
/// hold it (rank from 1), and the `k` best come first (ties keep the order in which ids
/// were first met). `c = 60` is the constant of Cormack, Clarke and Büttcher (2009).
pub fn reciprocal_rank_fusion<S: AsRef<str>>(lists: &[&[S]], c: f64, k: usize) -> Vec<String> {
    let mut score: HashMap<&str, (f64, usize)> = HashMap::new();
    let mut seen = 0usize;
    for list in lists {
        for (i, id) in list.iter().enumerate() {
            let e = score.entry(id.as_ref()).or_insert_with(|| {
                seen += 1;
                (0.0, seen)
            });
            e.0 += 1.0 / (c + (i + 1) as f64);
        }
    }
    let mut all: Vec<(&str, (f64, usize))> = score.into_iter().collect();
    all.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    all.into_iter()
        .take(k)
        .map(|(id, _)| id.to_owned())
        .collect()
}
