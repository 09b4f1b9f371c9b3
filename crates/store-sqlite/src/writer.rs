//! The writer thread: one connection, jobs grouped into one transaction per batch.

use std::collections::HashMap;
use std::sync::mpsc;

use citeflow_store::StoreError;
use rusqlite::Connection;

/// A job run inside the batch transaction; it answers through its own channel after commit.
pub(crate) type Job = Box<dyn FnOnce(&Connection, &mut Running) -> Reply + Send>;

/// The newest event id of each running stream as the writer's transaction stands, so that an
/// append checks its order without two index searches. Only the writer's jobs change streams
/// and events; a stream missing here is looked up in the file (and then remembered). Emptied
/// whenever a transaction does not commit.
#[derive(Debug, Default)]
pub(crate) struct Running(HashMap<String, u64>);

impl Running {
    /// The newest event id of a running stream, if known.
    pub(crate) fn last(&self, stream_id: &str) -> Option<u64> {
        self.0.get(stream_id).copied()
    }

    /// Records the newest event id of a running stream.
    pub(crate) fn set(&mut self, stream_id: &str, last: u64) {
        match self.0.get_mut(stream_id) {
            Some(v) => *v = last,
            None => {
                self.0.insert(stream_id.to_owned(), last);
            }
        }
    }

    /// Forgets a stream (it finished).
    pub(crate) fn remove(&mut self, stream_id: &str) {
        self.0.remove(stream_id);
    }
}

/// Sends the job's result once the batch is committed (`Some(error)` when the commit failed).
pub(crate) type Reply = Box<dyn FnOnce(Option<StoreError>) + Send>;

/// Most jobs in one transaction.
const MAX_BATCH: usize = 512;

pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Runs one statement through the connection's statement cache: the hot paths (a chunk's
/// events, a number) run the same few statements thousands of times a second, and parsing
/// SQL each time cost more than running it.
pub(crate) fn exec(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<usize, StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut st| st.execute(params))
        .map_err(backend)
}

/// Like [`exec`], for a query of at most one row.
pub(crate) fn query_opt<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Option<T>, StoreError> {
    use rusqlite::OptionalExtension;
    conn.prepare_cached(sql)
        .and_then(|mut st| st.query_row(params, f).optional())
        .map_err(backend)
}

/// Runs jobs until every sender is gone.
pub(crate) fn run(conn: Connection, jobs: mpsc::Receiver<Job>) {
    let mut running = Running::default();
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        if exec(&conn, "BEGIN IMMEDIATE", []).is_err() {
            // Dropping the jobs drops their answer channels: each caller gets `Unavailable`.
            drop(batch);
            continue;
        }
        let mut replies = Vec::with_capacity(batch.len());
        for job in batch {
            replies.push(job(&conn, &mut running));
        }
        let failed = exec(&conn, "COMMIT", []).err();
        if failed.is_some() {
            let _ = exec(&conn, "ROLLBACK", []);
            running = Running::default();
        }
        for reply in replies {
            reply(failed.clone());
        }
    }
}

/// Runs `f` inside a savepoint: an error undoes only what `f` did.
pub(crate) fn in_savepoint<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    exec(conn, "SAVEPOINT job", [])?;
    match f(conn) {
        Ok(v) => {
            exec(conn, "RELEASE job", [])?;
            Ok(v)
        }
        Err(e) => {
            let _ = exec(conn, "ROLLBACK TO job", []);
            let _ = exec(conn, "RELEASE job", []);
            Err(e)
        }
    }
}

/// Copies the WAL into the database file every `every`, on a connection of its own, until
/// `stop` is dropped (with the store). `PASSIVE` never blocks the writer or the readers; once
/// every frame is copied, the writer starts the WAL over, so it stays small. A checkpoint that
/// cannot finish (a reader still on old frames) is simply tried again next time.
pub(crate) fn checkpoint(conn: Connection, every: std::time::Duration, stop: mpsc::Receiver<()>) {
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    }
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}
