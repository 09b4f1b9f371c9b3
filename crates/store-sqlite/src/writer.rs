//! The writer thread: one connection, jobs grouped into one transaction per batch.

use std::sync::mpsc;

use citeflow_store::StoreError;
use rusqlite::Connection;

/// A job run inside the batch transaction; it answers through its own channel after commit.
pub(crate) type Job = Box<dyn FnOnce(&Connection) -> Reply + Send>;

/// Sends the job's result once the batch is committed (`Some(error)` when the commit failed).
pub(crate) type Reply = Box<dyn FnOnce(Option<StoreError>) + Send>;

/// Most jobs in one transaction.
const MAX_BATCH: usize = 512;

pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Runs jobs until every sender is gone.
pub(crate) fn run(conn: Connection, jobs: mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        if conn.execute_batch("BEGIN IMMEDIATE").is_err() {
            // Dropping the jobs drops their answer channels: each caller gets `Unavailable`.
            drop(batch);
            continue;
        }
        let mut replies = Vec::with_capacity(batch.len());
        for job in batch {
            replies.push(job(&conn));
        }
        let failed = conn.execute_batch("COMMIT").err().map(backend);
        if failed.is_some() {
            let _ = conn.execute_batch("ROLLBACK");
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
    conn.execute_batch("SAVEPOINT job").map_err(backend)?;
    match f(conn) {
        Ok(v) => {
            conn.execute_batch("RELEASE job").map_err(backend)?;
            Ok(v)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK TO job; RELEASE job");
            Err(e)
        }
    }
}
