//! Telling a closed stdout (`citeflow … | head`) from a failure.

/// Whether `e` comes from writing to a closed pipe: the reader is gone, which is no error.
pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
