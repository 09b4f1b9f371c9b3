//! The writer thread: one connection, jobs grouped into one transaction per batch.

use std::collections::HashMap;
use std::sync::mpsc;

use citeflow_store::StoreError;
use rusqlite::Connection;

/// A job run inside the batch transaction; it answers through its own channel after commit.
pub(crate) type Job = Box<dyn FnOnce(&Connection, &mut Running) -> Reply + Send>;

/// What the writer's transaction knows of each running stream: its newest event id, and the
/// log positions of the events it appended that the stream's index (the positions on its row)
/// does not hold yet (the row gets them when the stream finishes, so that appends touch only
/// the log's last page).
///
/// Invariant: for every running stream, the index on its row plus this table's positions cover
/// every event in the file, in order. A stream missing here has all its events indexed (it was
/// recovered when the file was opened, or every event came before a failed commit and was
/// re-indexed), and is looked up on its row (then remembered). Only the writer's jobs change
/// streams and events.
#[derive(Debug, Default)]
pub(crate) struct Running(HashMap<String, RunningStream>);

/// One running stream in [`Running`].
#[derive(Debug)]
pub(crate) struct RunningStream {
    /// The newest event id.
    pub(crate) last: u64,
    /// `(event id, log position)` of events not yet in the index, oldest first (consecutive
    /// ids, after those the index holds).
    pub(crate) unindexed: Vec<(u64, i64)>,
}

impl Running {
    /// The state of a running stream, if known.
    pub(crate) fn get_mut(&mut self, stream_id: &str) -> Option<&mut RunningStream> {
        self.0.get_mut(stream_id)
    }

    /// Starts tracking a running stream whose events up to `last` are all indexed.
    pub(crate) fn insert(&mut self, stream_id: &str, last: u64) -> &mut RunningStream {
        self.0.entry(stream_id.to_owned()).or_insert(RunningStream {
            last,
            unindexed: Vec::new(),
        })
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

/// How long the writer waits after a batch of more than one job before it takes the next:
/// under load, the jobs that come meanwhile share one commit and one wake-up of this thread
/// (a commit rewrites the log's last page whole, and each wake-up is a thread switch), and
/// their senders find no sleeping writer to wake. A lone job (no load) is never delayed.
const GATHER: std::time::Duration = std::time::Duration::from_micros(200);

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
///
/// `reindex` restores the [`Running`] invariant on a table that is empty: it indexes every
/// event of every running stream. It runs first in the batch after a commit failed (the
/// positions the table held are lost with it).
pub(crate) fn run(
    conn: Connection,
    jobs: mpsc::Receiver<Job>,
    reindex: fn(&Connection) -> Result<(), StoreError>,
) {
    let mut running = Running::default();
    let mut lost = false;
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        if exec(&conn, "BEGIN IMMEDIATE", []).is_err() || (lost && reindex(&conn).is_err()) {
            // Dropping the jobs drops their answer channels: each caller gets `Unavailable`.
            let _ = exec(&conn, "ROLLBACK", []);
            drop(batch);
            continue;
        }
        let n = batch.len();
        let mut replies = Vec::with_capacity(n);
        for job in batch {
            replies.push(job(&conn, &mut running));
        }
        let failed = exec(&conn, "COMMIT", []).err();
        if failed.is_some() {
            let _ = exec(&conn, "ROLLBACK", []);
            running = Running::default();
            lost = true;
        } else {
            lost = false;
        }
        for reply in replies {
            reply(failed.clone());
        }
        if n > 1 {
            std::thread::sleep(GATHER);
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
