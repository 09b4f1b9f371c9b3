//! A source's sentences indexed once for the answer: sentence ranges and each term's postings,
//! ranked against a claim with BM25 at the sentence level.

use rustc_hash::FxHashMap as HashMap;

use super::sentences;
use super::terms::{terms_of, Kind, Term};

// Tuned on WiCE dev (`examples/wice.rs` with the `_tune` feature): hit@1 0.80 with
// Lucene's k1 1.2, b 0.75; 0.87 here. Sentences differ less in length than documents, and a
// long sentence that says the claim should not lose to a heading that names it.
/// See [`SentenceIndex::coverage_idf`].
const MIN_COVERAGE_SENTENCES: f32 = 100.0;
/// BM25's term-frequency saturation.
const K1: f32 = 1.0;
/// BM25's length normalisation (weak: see above).
const B: f32 = 0.25;
/// Sentences with fewer terms than this (menus, headings, captions) rank lower.
const SHORT_SENTENCE_TERMS: usize = 4;
/// The score of a sentence with no terms is this share of its BM25 (rising to 1 at
/// [`SHORT_SENTENCE_TERMS`]).
const SHORT_SENTENCE_BASE: f32 = 0.7;

/// One source's text, split into sentences and indexed.
#[derive(Debug, Clone, Default)]
pub(crate) struct SentenceIndex {
    /// Byte ranges of the sentences in the (possibly cut) text.
    pub(crate) sentences: Vec<(usize, usize)>,
    /// Each sentence's length in terms.
    lengths: Vec<u32>,
    /// Whether each sentence holds a year.
    numbers: Vec<bool>,
    postings: HashMap<u64, Vec<(u32, u16)>>,
    avg_len: f32,
    /// The text was longer than the cap and only its first part was indexed.
    pub(crate) truncated: bool,
}

impl SentenceIndex {
    /// Indexes the first `max_bytes` of `text` (cut at a character boundary) in sentences of
    /// at most `max_sentence_bytes`.
    pub(crate) fn build(text: &str, max_bytes: usize, max_sentence_bytes: usize) -> Self {
        let mut cut = text.len().min(max_bytes);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let text_cut = &text[..cut];
        let sentences = sentences::split(text_cut, max_sentence_bytes);
        let mut postings: HashMap<u64, Vec<(u32, u16)>> = HashMap::default();
        let mut lengths = Vec::with_capacity(sentences.len());
        let mut numbers = Vec::with_capacity(sentences.len());
        let mut terms = Vec::new();
        let mut total = 0u64;
        for (i, &(a, b)) in sentences.iter().enumerate() {
            terms.clear();
            terms_of(&text_cut[a..b], &mut terms);
            lengths.push(terms.len() as u32);
            numbers.push(terms.iter().any(|t| t.kind == Kind::Year));
            total += terms.len() as u64;
            terms.sort_unstable_by_key(|t| t.hash);
            let mut j = 0;
            while j < terms.len() {
                let h = terms[j].hash;
                let mut k = j;
                while k < terms.len() && terms[k].hash == h {
                    k += 1;
                }
                let tf = (k - j).min(u16::MAX as usize) as u16;
                postings.entry(h).or_default().push((i as u32, tf));
                j = k;
            }
        }
        let avg_len = if sentences.is_empty() {
            1.0
        } else {
            (total as f32 / sentences.len() as f32).max(1.0)
        };
        SentenceIndex {
            sentences,
            lengths,
            numbers,
            postings,
            avg_len,
            truncated: cut < text.len(),
        }
    }

    /// How many sentences hold the term.
    pub(crate) fn df(&self, hash: u64) -> usize {
        self.postings.get(&hash).map_or(0, Vec::len)
    }

    /// The inverse document frequency of a term over the sentences (BM25's, never below a
    /// small floor so that a term in every sentence still counts a little).
    pub(crate) fn idf(&self, hash: u64) -> f32 {
        let n = self.sentences.len() as f32;
        let df = self.df(hash) as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln().max(0.05)
    }

    /// The weight of a claim term in coverage: the IDF as if the source had at least
    /// [`MIN_COVERAGE_SENTENCES`] sentences, so that in a short source a paraphrased word
    /// the source lacks does not outweigh the words it has.
    pub(crate) fn coverage_idf(&self, hash: u64) -> f32 {
        let n = (self.sentences.len() as f32).max(super::knob("NMIN", MIN_COVERAGE_SENTENCES));
        let df = self.df(hash) as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln().max(0.05)
    }

    /// Each sentence's BM25 score for the query's distinct terms (0 for those with none).
    pub(crate) fn scores(&self, query: &[Term]) -> Vec<f32> {
        let mut scores = vec![0.0f32; self.sentences.len()];
        for (qi, t) in query.iter().enumerate() {
            if query[..qi].iter().any(|q| q.hash == t.hash) {
                continue;
            }
            let Some(list) = self.postings.get(&t.hash) else {
                continue;
            };
            let w = t.kind.weight() * self.idf(t.hash);
            for &(s, tf) in list {
                let len = self.lengths[s as usize] as f32;
                let tf = f32::from(tf);
                let (k1, b) = (super::knob("K1", K1), super::knob("B", B));
                let norm = tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / self.avg_len));
                scores[s as usize] += w * norm;
            }
        }
        for (s, score) in scores.iter_mut().enumerate() {
            let len = self.lengths[s] as usize;
            let short = super::knob("SHORT", SHORT_SENTENCE_TERMS as f32) as usize;
            if len < short {
                let base = super::knob("SHORTBASE", SHORT_SENTENCE_BASE);
                *score *= base + (1.0 - base) * len as f32 / short as f32;
            }
        }
        scores
    }

    /// Whether the sentence at `i` holds a year.
    pub(crate) fn has_year(&self, i: usize) -> bool {
        self.numbers.get(i).copied().unwrap_or(false)
    }

    /// Whether the sentence at `i` holds the term.
    pub(crate) fn holds(&self, i: usize, hash: u64) -> bool {
        self.postings
            .get(&hash)
            .is_some_and(|l| l.binary_search_by_key(&(i as u32), |p| p.0).is_ok())
    }

    /// Whether any sentence holds a term of this kind and hash.
    pub(crate) fn has_term(&self, t: &Term) -> bool {
        t.kind != Kind::Phrase && self.postings.contains_key(&t.hash)
    }
}
