//! The writer thread: one connection, jobs grouped into one transaction per batch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

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

/// The store error of an SQLite error, by its result code: a file that cannot take writes
/// now (full disk, read-only file or file system, a lock held too long, an I/O error, a file
/// that cannot be opened) is [`StoreError::Unavailable`], to be retried later; anything else
/// (a broken file, a misuse) is [`StoreError::Backend`].
pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode as C;
    match e.sqlite_error_code() {
        Some(
            C::DiskFull
            | C::ReadOnly
            | C::DatabaseBusy
            | C::DatabaseLocked
            | C::SystemIoFailure
            | C::CannotOpen
            | C::OutOfMemory,
        ) => StoreError::Unavailable(e.to_string()),
        _ => StoreError::Backend(e.to_string()),
    }
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
/// When the checkpoint thread sets `restart` (the WAL is near its limit), the writer copies,
/// between two batches, what was written since that thread's last pass, and waits for the
/// readers still on the WAL, so that its next transaction starts the WAL over; see
/// [`checkpoint`].
///
/// `reindex` restores the [`Running`] invariant on a table that is empty: it indexes every
/// event of every running stream. It runs first in the batch after a commit failed (the
/// positions the table held are lost with it).
pub(crate) fn run(
    conn: Connection,
    jobs: mpsc::Receiver<Job>,
    reindex: fn(&Connection) -> Result<(), StoreError>,
    restart: Arc<AtomicBool>,
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
        if restart.swap(false, Ordering::AcqRel) {
            // `RESTART`: copies the rest, then waits (the busy handler) for the readers still
            // on the WAL, so that the next commit starts it over. A `PASSIVE` copy here left
            // that to the next commit, which could not restart while any reader was reading.
            let _ = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
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
/// `stop` is dropped (with the store). `PASSIVE` never blocks the writer or the readers. A
/// checkpoint that cannot finish (a reader still on old frames) is simply tried again next
/// time.
///
/// The WAL starts over (its file is written again from the start) only when a write
/// transaction begins with every frame copied. Under steady load the writer commits while
/// this thread copies, so a pass never ends with every frame copied and, left alone, the WAL
/// would grow as long as the load lasts: 150 MB in 4 s at 50,000 appends a second
/// (`examples/append_cost`). So once a pass finds more than `restart_frames` frames in the
/// WAL, this thread gets it ready to start over, doing the slow parts itself:
///
/// 1. it syncs the WAL file (`wal`), so that no checkpoint's sync has to write out tens of
///    megabytes of it (the writer's took 28–36 ms when it had to);
/// 2. two more passes copy what was written during the pass before (milliseconds' worth);
/// 3. it sets `restart`: the writer, between two batches, copies the little written since and
///    waits for the readers still on the WAL (a `RESTART` checkpoint; 1–3 ms of its
///    time at 50,000 appends a second), and its next transaction starts the WAL over
///    ([`run`]). Readers that begin after the copy read the file alone and do not hold it up.
pub(crate) fn checkpoint(
    conn: Connection,
    wal: &std::path::Path,
    every: std::time::Duration,
    restart_frames: u64,
    stop: mpsc::Receiver<()>,
    restart: Arc<AtomicBool>,
) {
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
        if checkpoint_now(&conn).is_some_and(|frames| frames > restart_frames) {
            if let Ok(file) = std::fs::File::open(wal) {
                let _ = file.sync_data();
            }
            for _ in 0..2 {
                let _ = checkpoint_now(&conn);
            }
            restart.store(true, Ordering::Release);
        }
    }
    let _ = checkpoint_now(&conn);
}

/// One `PASSIVE` checkpoint on `conn`: the frames in the WAL, or `None` when it could not run
/// (busy, or an error; the next one tries again).
fn checkpoint_now(conn: &Connection) -> Option<u64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1))
        .ok()
        .and_then(|frames| u64::try_from(frames).ok())
}

#[cfg(test)]
mod tests {
    use super::backend;
    use citeflow_store::StoreError;
    use rusqlite::ffi;

    fn of(code: std::ffi::c_int) -> StoreError {
        backend(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None))
    }

    #[test]
    fn a_file_that_cannot_take_writes_now_is_unavailable_other_faults_are_backend_errors() {
        for (code, message) in [
            (ffi::SQLITE_FULL, "database or disk is full"),
            (ffi::SQLITE_READONLY, "attempt to write a readonly database"),
            (ffi::SQLITE_BUSY, "database is locked"),
            (ffi::SQLITE_LOCKED, "database table is locked"),
            (ffi::SQLITE_IOERR_WRITE, "disk I/O error"),
            (ffi::SQLITE_CANTOPEN, "unable to open database file"),
            (ffi::SQLITE_NOMEM, "out of memory"),
        ] {
            let e = of(code);
            assert!(
                matches!(&e, StoreError::Unavailable(m) if m.ends_with(message)),
                "{code}: {e:?}"
            );
        }
        for (code, message) in [
            (ffi::SQLITE_CORRUPT, "database disk image is malformed"),
            (ffi::SQLITE_NOTADB, "file is not a database"),
            (ffi::SQLITE_CONSTRAINT, "constraint failed"),
        ] {
            let e = of(code);
            assert!(
                matches!(&e, StoreError::Backend(m) if m.ends_with(message)),
                "{code}: {e:?}"
            );
        }
        let misuse = backend(rusqlite::Error::InvalidColumnIndex(9));
        assert!(matches!(misuse, StoreError::Backend(_)), "{misuse}");
    }
}
