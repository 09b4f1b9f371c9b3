//! Hybrid ranking (feature `embed`): dense passage vectors beside the BM25 index, the two
//! rankings fused by reciprocal rank fusion.

use citeflow_embed::{Embedder, Vectors};

use crate::eval::reciprocal_rank_fusion;
use crate::{BookPassage, Hit, Index, IndexError};

/// How many hits of each ranking [`Index::search_hybrid`] fuses.
pub const FUSE_DEPTH: usize = 50;

/// The reciprocal rank fusion constant of [`Index::search_hybrid`] (Cormack, Clarke and
/// Büttcher 2009).
pub const RRF_C: f64 = 60.0;

/// Passage vectors of multilingual-e5-small, held in memory beside an [`Index`].
///
/// Build it with [`DenseIndex::add_book`] for the same passages as
/// [`Index::add_book`]; rank with [`DenseIndex::search`] or, fused with BM25,
/// [`Index::search_hybrid`].
#[derive(Debug, Clone, Default)]
pub struct DenseIndex {
    vectors: Option<Vectors>,
    passages: Vec<BookPassage>,
}

fn embed_err(e: citeflow_embed::EmbedError) -> IndexError {
    IndexError::Search {
        reason: e.to_string(),
    }
}

impl DenseIndex {
    /// An empty dense index.
    pub fn new() -> DenseIndex {
        DenseIndex::default()
    }

    /// Embeds `passages` (in batches of 32) and adds them, replacing the passages already
    /// held for the books they belong to. Returns the number added.
    ///
    /// # Errors
    ///
    /// [`IndexError::Search`] when the embedder fails on a text.
    pub fn add_book(
        &mut self,
        embedder: &mut Embedder,
        passages: &[BookPassage],
    ) -> Result<usize, IndexError> {
        let mut new = Vec::with_capacity(passages.len());
        for chunk in passages.chunks(32) {
            let texts: Vec<&str> = chunk.iter().map(|p| p.text.as_str()).collect();
            new.extend(embedder.embed_passages(&texts).map_err(embed_err)?);
        }
        let dim = embedder.dim();
        let old = self.vectors.take().unwrap_or_else(|| Vectors::new(dim));
        let mut vectors = Vectors::new(dim);
        let mut kept = Vec::with_capacity(self.passages.len() + passages.len());
        for (i, p) in std::mem::take(&mut self.passages).into_iter().enumerate() {
            if passages.iter().all(|n| n.book_key != p.book_key) {
                vectors.push(old.get(i));
                kept.push(p);
            }
        }
        for (p, v) in passages.iter().zip(&new) {
            vectors.push(v);
            kept.push(p.clone());
        }
        self.vectors = Some(vectors);
        self.passages = kept;
        Ok(passages.len())
    }

    /// Number of passages held.
    pub fn len(&self) -> usize {
        self.passages.len()
    }

    /// Whether no passage is held.
    pub fn is_empty(&self) -> bool {
        self.passages.is_empty()
    }

    /// Bytes of vector data (384 × 4 a passage).
    pub fn size_bytes(&self) -> usize {
        self.vectors.as_ref().map_or(0, Vectors::size_bytes)
    }

    /// The `k` passages nearest to the query (cosine), best first.
    ///
    /// # Errors
    ///
    /// [`IndexError::Search`] when the embedder fails on the query.
    pub fn search(
        &self,
        embedder: &mut Embedder,
        query: &str,
        k: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        let Some(vectors) = &self.vectors else {
            return Ok(Vec::new());
        };
        let q = embedder.embed_query(query).map_err(embed_err)?;
        Ok(vectors
            .top_k(&q, k)
            .into_iter()
            .map(|(i, score)| Hit {
                score,
                passage: self.passages[i].clone(),
            })
            .collect())
    }
}

impl Index {
    /// The `k` best passages for `query` by BM25 and by `dense` fused: the top
    /// [`FUSE_DEPTH`] of each ranking, combined by reciprocal rank fusion with
    /// [`RRF_C`]. A hit's score is its fused score.
    ///
    /// # Errors
    ///
    /// As [`Index::search`], and [`IndexError::Search`] when the embedder fails on the
    /// query.
    pub fn search_hybrid(
        &self,
        dense: &DenseIndex,
        embedder: &mut Embedder,
        query: &str,
        k: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        let bm25 = self.search(query, FUSE_DEPTH)?;
        let near = dense.search(embedder, query, FUSE_DEPTH)?;
        let a: Vec<&str> = bm25.iter().map(|h| h.passage.id.as_str()).collect();
        let b: Vec<&str> = near.iter().map(|h| h.passage.id.as_str()).collect();
        let fused = reciprocal_rank_fusion(&[&a[..], &b[..]], RRF_C, k);
        let rank = |list: &[&str], id: &str| list.iter().position(|x| *x == id);
        Ok(fused
            .iter()
            .filter_map(|id| {
                let score = [rank(&a, id), rank(&b, id)]
                    .into_iter()
                    .flatten()
                    .map(|r| 1.0 / (RRF_C + (r + 1) as f64))
                    .sum::<f64>() as f32;
                let passage = bm25
                    .iter()
                    .chain(&near)
                    .find(|h| h.passage.id == *id)?
                    .passage
                    .clone();
                Some(Hit { score, passage })
            })
            .collect())
    }
}
