//! The schema: what [`super::SqliteStore::open`] creates or upgrades a file to, the connection
//! settings, and the indexing of streams a crash left running.

use std::path::Path;

use citeflow_store::StoreError;
use rusqlite::{params, Connection};

use super::positions;
use crate::writer::{backend, query_opt};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    sources TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    last_used_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_owner ON sessions (owner);
CREATE INDEX IF NOT EXISTS sessions_by_last_used ON sessions (last_used_ms);
CREATE TABLE IF NOT EXISTS numbers (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    number INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    PRIMARY KEY (namespace, key),
    UNIQUE (namespace, number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS streams (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    first_pos INTEGER,
    positions BLOB
);
CREATE INDEX IF NOT EXISTS streams_by_created ON streams (created_ms);
CREATE TABLE IF NOT EXISTS probe (
    id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS event_log (
    pos INTEGER PRIMARY KEY,
    stream_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    data TEXT NOT NULL
);
";

/// The schema version this code writes (`PRAGMA user_version`).
pub(super) const SCHEMA_VERSION: i64 = 4;

// The event log, by version:
// 1. a `WITHOUT ROWID` table keyed by stream: with many streams running, every append landed
//    on a different page;
// 2. a rowid table (its pages fill in order) with a unique index by stream, which still took
//    one index page per append, so a commit wrote one page per running stream to the WAL;
// 3. the rowid table alone on the hot path (`pos`, in append order; `streams.first_pos` is a
//    stream's first event) and an index by stream written when the stream finishes, from the
//    writer's memory, or when the file is opened, for streams that were running: one
//    `(stream_id, id, pos)` row per event, a B-tree insert each (about a sixth of the writer
//    thread's time in `scripts/bench-server.sh 1000 20`);
// 4. that index as one blob of positions on the stream's row (`streams.positions`, see
//    [`super::positions`]): one statement per stream.

/// Version 1 and 2 to 4, run after [`SCHEMA`] created the new tables; `{old}` is the old
/// table of events. The streams' indexes are written next, from the log.
pub(super) const MIGRATE_LOG: &str = "
INSERT INTO event_log (stream_id, id, data) SELECT stream_id, id, data FROM {old}
    ORDER BY stream_id, id;
DROP TABLE {old};
";

/// Pages the writer's connection may cache (`PRAGMA cache_size`, in KiB when negative): the
/// hot pages of a thousand running streams stay in memory.
pub(super) const WRITER_CACHE_KIB: i64 = 8 * 1024;

/// The page size of a new file. Appends touch only the log's last pages (the by-stream index
/// is written when a stream finishes), and SQLite writes each WAL frame with two `pwrite`s: at
/// 4 KiB, the events of one commit (400-600 bytes each) share frames instead of taking about
/// one each at 1 KiB. No CPU difference was measurable in `scripts/bench-server.sh 1000 20`.
pub(super) const PAGE_SIZE: u32 = 4096;

pub(super) fn open_conn(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)
        .map_err(|e| StoreError::Unavailable(format!("cannot open {}: {e}", path.display())))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(backend)?;
    // The page size counts only when the file is created (before WAL mode is set).
    conn.execute_batch(&format!(
        "PRAGMA page_size = {PAGE_SIZE}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
    ))
    .map_err(backend)?;
    Ok(conn)
}

/// Indexes every event of every running stream: run when the file is opened (streams a crash
/// left running) and after a failed commit, when the writer's
/// [`Running`](crate::writer::Running) table is lost. Scans the log from the oldest running
/// stream's first event and writes each running stream's index whole.
pub(super) fn index_running(c: &Connection) -> Result<(), StoreError> {
    let from: Option<i64> = query_opt(
        c,
        "SELECT MIN(first_pos) FROM streams WHERE status = 'running'",
        [],
        |r| r.get(0),
    )?
    .flatten();
    if let Some(from) = from {
        positions::write_all(
            c,
            "SELECT stream_id, id, pos FROM event_log
             WHERE pos >= ?1 AND stream_id IN (SELECT id FROM streams WHERE status = 'running')
             ORDER BY stream_id, id",
            params![from],
        )?;
    }
    Ok(())
}

/// Creates or upgrades the schema, indexes the streams a crash left running, and tunes the
/// writer's connection.
pub(super) fn set_up(conn: &Connection) -> Result<(), StoreError> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(backend)?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::Backend(format!(
            "the database has schema version {version}; this citeflow knows up to \
             {SCHEMA_VERSION}"
        )));
    }
    conn.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
    let upgrade = (|| {
        let old = match version {
            1 => Some("events"),
            2 => Some("event_log_v2"),
            _ => None,
        };
        if old.is_some() {
            conn.execute_batch("ALTER TABLE streams ADD COLUMN first_pos INTEGER")
                .map_err(backend)?;
        }
        if (1..=3).contains(&version) {
            conn.execute_batch("ALTER TABLE streams ADD COLUMN positions BLOB")
                .map_err(backend)?;
        }
        if version == 2 {
            conn.execute_batch(
                "DROP INDEX event_log_by_stream; ALTER TABLE event_log RENAME TO event_log_v2;",
            )
            .map_err(backend)?;
        }
        conn.execute_batch(SCHEMA).map_err(backend)?;
        if let Some(old) = old {
            conn.execute_batch(&MIGRATE_LOG.replace("{old}", old))
                .map_err(backend)?;
            positions::write_all(
                conn,
                "SELECT stream_id, id, pos FROM event_log ORDER BY stream_id, id",
                [],
            )?;
        }
        if version == 3 {
            // The index by stream, already in order, becomes one blob per stream.
            positions::write_all(
                conn,
                "SELECT stream_id, id, pos FROM event_index ORDER BY stream_id, id",
                [],
            )?;
            conn.execute_batch("DROP TABLE event_index")
                .map_err(backend)?;
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .map_err(backend)
    })()
    .and_then(|()| index_running(conn));
    match upgrade {
        Ok(()) => conn.execute_batch("COMMIT").map_err(backend)?,
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
    }
    // The checkpoint thread moves the WAL into the file, so that the writer never waits for it.
    conn.execute_batch(&format!(
        "PRAGMA cache_size = -{WRITER_CACHE_KIB}; PRAGMA wal_autocheckpoint = 0;"
    ))
    .map_err(backend)
}
