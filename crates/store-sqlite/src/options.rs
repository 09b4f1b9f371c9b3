//! [`SqliteOptions`]: how a [`SqliteStore`](crate::SqliteStore) runs its file.

/// The default of [`SqliteOptions::wal_max_bytes`]: 64 MiB.
pub const DEFAULT_WAL_MAX_BYTES: u64 = 64 << 20;

/// How a [`SqliteStore`](crate::SqliteStore) runs its file; [`SqliteOptions::default`], then
/// change what you need.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// The most the WAL (`FILE-wal`) should hold, in bytes.
    ///
    /// The store's checkpoint thread copies the WAL into the file four times a second without
    /// stopping the writer, but under steady load the WAL never empties, and only an empty
    /// WAL starts over. Once a copy finds it past three quarters of this size, the writer
    /// copies what remains itself, between two batches of appends (1–3 ms at 50,000 appends
    /// a second), and the WAL starts over; a file that a burst grew past this size is cut back
    /// to it. The WAL can pass it only by what is written between two copies (a quarter
    /// second). Lower keeps less on disk and costs that pause more often; 0 starts the WAL
    /// over after every copy.
    ///
    /// ### Default
    /// [`DEFAULT_WAL_MAX_BYTES`] (64 MiB).
    pub wal_max_bytes: u64,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            wal_max_bytes: DEFAULT_WAL_MAX_BYTES,
        }
    }
}
