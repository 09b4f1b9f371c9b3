//! The quote for a claim: the best sentence of the source by BM25, widened to an adjacent
//! sentence or two when they carry claim terms the best one lacks.

use super::index::SentenceIndex;
use super::terms::{Kind, Term};

/// The most sentences a quote spans.
pub(crate) const MAX_WINDOW: usize = 3;
/// How many of the best sentences the support score reads.
const TOP: usize = 3;
/// A neighbour joins the quote when it adds at least this share of the claim's weight…
const MIN_GAIN: f32 = 0.2;
/// …and the quote so far covers less than this share.
const FULL_ENOUGH: f32 = 0.7;

/// The claim's content terms with their weights (distinct, phrases left out).
#[derive(Debug, Default)]
pub(crate) struct Claim {
    pub(crate) terms: Vec<(Term, f32)>,
    pub(crate) total: f32,
    /// All terms, phrases included, for ranking.
    pub(crate) query: Vec<Term>,
}

impl Claim {
    pub(crate) fn new(query: Vec<Term>, index: &SentenceIndex) -> Self {
        let mut terms: Vec<(Term, f32)> = Vec::new();
        for t in &query {
            if t.kind == Kind::Phrase || terms.iter().any(|(u, _)| u.hash == t.hash) {
                continue;
            }
            terms.push((*t, t.kind.weight() * index.coverage_idf(t.hash)));
        }
        let total = terms.iter().map(|(_, w)| w).sum();
        Claim {
            terms,
            total,
            query,
        }
    }

    /// The weighted share of the claim's terms that `holds` says are there.
    pub(crate) fn coverage(&self, holds: impl Fn(&Term) -> bool) -> f32 {
        if self.total <= 0.0 {
            return 0.0;
        }
        let got: f32 = self
            .terms
            .iter()
            .filter(|(t, _)| holds(t))
            .map(|(_, w)| w)
            .sum();
        got / self.total
    }
}

/// The chosen quote and what the support score reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    /// First and last sentence of the quote (indexes into the index's sentences).
    pub(crate) first: usize,
    pub(crate) last: usize,
    /// Coverage of the claim by the quote.
    pub(crate) cov_quote: f32,
    /// Coverage by the best few sentences together.
    pub(crate) cov_top: f32,
    /// Coverage by the whole (indexed) source.
    pub(crate) cov_source: f32,
    /// The share of the claim's numbers that the best sentences lack.
    pub(crate) numbers_missing: f32,
    /// A year of the claim is missing from the quote while the quote states another: the
    /// quote contradicts the claim (`1925` against `1889`).
    pub(crate) numbers_differ: bool,
}

/// The best window for `claim`, or `None` when no sentence shares a term with it.
pub(crate) fn best(index: &SentenceIndex, claim: &Claim) -> Option<Window> {
    let scores = index.scores(&claim.query);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
    if order.is_empty() {
        return None;
    }
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let top = &order[..order.len().min(TOP)];
    let best = top[0];
    let (mut first, mut last) = (best, best);
    let in_window =
        |first: usize, last: usize, t: &Term| (first..=last).any(|i| index.holds(i, t.hash));
    let mut cov = claim.coverage(|t| in_window(first, last, t));
    while last - first + 1 < MAX_WINDOW {
        let before = (first > 0).then(|| claim.coverage(|t| in_window(first - 1, last, t)));
        let after = (last + 1 < index.sentences.len())
            .then(|| claim.coverage(|t| in_window(first, last + 1, t)));
        let (gain, grow_before) = match (before, after) {
            (Some(b), Some(a)) if b > a => (b, true),
            (_, Some(a)) => (a, false),
            (Some(b), None) => (b, true),
            (None, None) => break,
        };
        if gain - cov < super::knob("GAIN", MIN_GAIN) || cov >= super::knob("COVSTOP", FULL_ENOUGH)
        {
            break;
        }
        cov = gain;
        if grow_before {
            first -= 1;
        } else {
            last += 1;
        }
    }
    let cov_top = claim
        .coverage(|t| top.iter().any(|&i| index.holds(i, t.hash)) || in_window(first, last, t));
    let cov_source = claim.coverage(|t| index.has_term(t));
    let numbers: Vec<&Term> = claim
        .terms
        .iter()
        .map(|(t, _)| t)
        .filter(|t| matches!(t.kind, Kind::Number | Kind::Year))
        .collect();
    let numbers_missing = if numbers.is_empty() {
        0.0
    } else {
        let missing = numbers
            .iter()
            .filter(|t| !top.iter().any(|&i| index.holds(i, t.hash)) && !in_window(first, last, t))
            .count();
        missing as f32 / numbers.len() as f32
    };
    let numbers_differ = numbers
        .iter()
        .any(|t| t.kind == Kind::Year && !in_window(first, last, t))
        && (first..=last).any(|i| index.has_year(i));
    Some(Window {
        first,
        last,
        cov_quote: cov,
        cov_top,
        cov_source,
        numbers_missing,
        numbers_differ,
    })
}
