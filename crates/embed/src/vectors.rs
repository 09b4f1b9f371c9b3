//! [`Vectors`]: passage vectors ranked by cosine similarity.

/// L2-normalized vectors of one dimension, ranked by dot product (= cosine).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vectors {
    dim: usize,
    data: Vec<f32>,
}

impl Vectors {
    /// No vectors yet, of `dim` dimensions.
    pub fn new(dim: usize) -> Vectors {
        Vectors {
            dim,
            data: Vec::new(),
        }
    }

    /// Appends a vector; its position is its index in [`Vectors::top_k`] answers.
    ///
    /// # Panics
    ///
    /// When `v` does not have the set number of dimensions.
    pub fn push(&mut self, v: &[f32]) {
        assert_eq!(v.len(), self.dim, "vector of {} dimensions", v.len());
        self.data.extend_from_slice(v);
    }

    /// The vector at `index`.
    ///
    /// # Panics
    ///
    /// When `index` is not below [`Vectors::len`].
    pub fn get(&self, index: usize) -> &[f32] {
        &self.data[index * self.dim..(index + 1) * self.dim]
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes of vector data (4 per dimension).
    pub fn size_bytes(&self) -> usize {
        self.data.len() * std::mem::size_of::<f32>()
    }

    /// The `k` vectors most similar to `query` (exhaustive scan): `(index, cosine)`, best
    /// first; ties keep the lower index first.
    pub fn top_k(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        if self.dim == 0 || query.len() != self.dim {
            return Vec::new();
        }
        let mut scored: Vec<(usize, f32)> = self
            .data
            .chunks_exact(self.dim)
            .map(|v| v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>())
            .enumerate()
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_ranks_by_dot_product() {
        let mut v = Vectors::new(2);
        v.push(&[1.0, 0.0]);
        v.push(&[0.0, 1.0]);
        v.push(&[0.6, 0.8]);
        assert_eq!(v.len(), 3);
        assert_eq!(v.get(2), [0.6, 0.8]);
        assert_eq!(v.size_bytes(), 24);
        let top = v.top_k(&[0.0, 1.0], 2);
        assert_eq!(top, [(1, 1.0), (2, 0.8)]);
        assert!(v.top_k(&[1.0], 2).is_empty());
    }
}
