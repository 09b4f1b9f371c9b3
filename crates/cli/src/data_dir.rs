//! Where citeflow keeps its files: the store, the book index and the local models.

use std::path::PathBuf;

use anyhow::Context;

/// `$CITEFLOW_DATA_DIR`, else `$XDG_DATA_HOME/citeflow`, else `~/.local/share/citeflow`.
pub(crate) fn data_dir() -> anyhow::Result<PathBuf> {
    Ok(match std::env::var_os("CITEFLOW_DATA_DIR") {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("XDG_DATA_HOME") {
            Some(d) => PathBuf::from(d).join("citeflow"),
            None => PathBuf::from(std::env::var_os("HOME").context(
                "no data directory: set CITEFLOW_DATA_DIR or HOME, or pass --store and --index",
            )?)
            .join(".local/share/citeflow"),
        },
    })
}
