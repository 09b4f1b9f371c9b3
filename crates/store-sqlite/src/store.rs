//! [`SqliteStore`]: opening a file and the [`Store`] methods. Its parts are child modules that
//! read this module's private types directly: [`schema`] (creation, migration, connection
//! settings), [`rows`] (reading sessions, streams and events), [`positions`] (a stream's index
//! of its events on its row), [`purge`] (idle records, a slice at a time) and [`tail`] (a
//! running stream in memory).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};

use async_trait::async_trait;
use citeflow_core::{NumberEntry, Numbering, Source};
use citeflow_store::{
    encode_record, Allocation, NumberScope, SessionRecord, Store, StoreError, StoredEvent,
    StreamRecord, StreamSignals, StreamStatus,
};
use rusqlite::{params, Connection};

use crate::writer::{self, backend, exec, in_savepoint, query_opt, Job, Running};
use crate::SqliteOptions;

mod positions;
pub(crate) mod purge;
mod rows;
mod schema;
mod tail;

use rows::{index_of, last_in_file, last_running, read_at, read_events, read_session, read_stream};
use schema::{index_running, open_conn, set_up};
use tail::{FromTail, Tail, TAIL_EVENTS};

/// How often the checkpoint thread copies the WAL into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// A [`Store`] in one SQLite file (WAL mode, group commit).
///
/// Open it with [`SqliteStore::open`]; every method of [`Store`] then works from any task.
/// One file is meant for one server process: live followers are woken inside the process.
pub struct SqliteStore {
    path: PathBuf,
    /// The writer's queue (`Sender` is `Sync`: callers send without a lock of their own).
    jobs: mpsc::Sender<Job>,
    readers: Mutex<Vec<Connection>>,
    tails: Mutex<HashMap<String, Tail>>,
    signals: StreamSignals,
    /// Dropped with the store: the checkpoint thread then stops.
    _stop_checkpoints: mpsc::Sender<()>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the database file and starts the writer thread, with
    /// [`SqliteOptions::default`].
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the file cannot be opened or created,
    /// [`StoreError::Backend`] when its schema cannot be set up.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, &SqliteOptions::default())
    }

    /// Opens (or creates) the database file and starts the writer thread.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn open_with(path: impl AsRef<Path>, options: &SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let conn = open_conn(&path)?;
        set_up(&conn)?;
        // A WAL frame is a page and its 24-byte header; the page size is the file's own (files
        // made by earlier versions have 1 KiB pages). The WAL starts over at three quarters of
        // its limit, so that what is written meanwhile stays under it, and the file is not cut
        // back (and grown again) each time; `journal_size_limit` cuts it back after a burst.
        let page: u64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
            .map_err(backend)?
            .try_into()
            .unwrap_or(4096);
        let restart_frames = options.wal_max_bytes / 4 * 3 / (page + 24);
        let limit = i64::try_from(options.wal_max_bytes).unwrap_or(i64::MAX);
        conn.query_row(&format!("PRAGMA journal_size_limit = {limit}"), [], |_| {
            Ok(())
        })
        .map_err(backend)?;
        let (tx, rx) = mpsc::channel();
        let restart = Arc::new(AtomicBool::new(false));
        let restart_by_writer = Arc::clone(&restart);
        std::thread::Builder::new()
            // Thread names are cut at 15 bytes by Linux (`/proc/*/task/*/comm`): these stay whole.
            .name("sqlite-writer".into())
            .spawn(move || writer::run(conn, rx, index_running, restart_by_writer))
            .map_err(|e| StoreError::Unavailable(format!("writer thread: {e}")))?;
        let checkpoints = open_conn(&path)?;
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let (stop_checkpoints, stop) = mpsc::channel();
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                let every = CHECKPOINT_EVERY;
                writer::checkpoint(checkpoints, &wal, every, restart_frames, stop, restart);
            })
            .map_err(|e| StoreError::Unavailable(format!("checkpoint thread: {e}")))?;
        Ok(SqliteStore {
            path,
            jobs: tx,
            readers: Mutex::new(Vec::new()),
            tails: Mutex::new(HashMap::new()),
            signals: StreamSignals::new(),
            _stop_checkpoints: stop_checkpoints,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` in the writer's transaction, inside a savepoint (an error undoes what `f`
    /// did); returns after the commit.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.write_bare(move |c, _| in_savepoint(c, f)).await
    }

    /// Runs `f` in the writer's transaction without a savepoint: `f` must leave nothing behind
    /// when it fails. `f` also gets the writer's table of running streams. Returns after the
    /// commit.
    async fn write_bare<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, &mut Running) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = futures_channel::oneshot::channel();
        let job: Job = Box::new(move |conn, running| {
            let result = f(conn, running);
            Box::new(move |commit_error| {
                let _ = tx.send(match commit_error {
                    Some(e) => Err(e),
                    None => result,
                });
            })
        });
        self.jobs
            .send(job)
            .map_err(|_| StoreError::Unavailable("the sqlite writer has stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Unavailable("the sqlite writer dropped a job".into()))?
    }

    /// Runs `f` on a reader connection.
    fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match conn {
            Some(c) => c,
            None => open_conn(&self.path)?,
        };
        let r = f(&conn);
        let mut pool = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < 8 {
            pool.push(conn);
        }
        r
    }

    fn tails(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tail>> {
        self.tails.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_session(&self, session: SessionRecord) -> Result<(), StoreError> {
        let sources = encode_record(&session.sources)?;
        self.write(move |c| {
            let n = c
                .execute(
                    "INSERT OR IGNORE INTO sessions (id, owner, sources, created_ms, last_used_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![
                        session.id,
                        session.owner,
                        sources,
                        session.created_ms as i64,
                        session.last_used_ms as i64
                    ],
                )
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::Exists {
                    what: "session",
                    id: session.id,
                });
            }
            Ok(())
        })
        .await
    }

    async fn session(&self, id: &str) -> Result<SessionRecord, StoreError> {
        self.read(|c| read_session(c, id))
    }

    async fn count_sessions(&self, owner: &str) -> Result<u64, StoreError> {
        self.read(|c| {
            let n: i64 = c
                .query_row(
                    "SELECT COUNT(*) FROM sessions WHERE owner = ?1",
                    params![owner],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    async fn append_round(
        &self,
        id: &str,
        query: Option<String>,
        sources: Vec<Source>,
        now_ms: u64,
    ) -> Result<SessionRecord, StoreError> {
        let id = id.to_owned();
        self.write(move |c| {
            let mut s = read_session(c, &id)?;
            s.sources.append_round(query, sources)?;
            s.last_used_ms = s.last_used_ms.max(now_ms);
            exec(
                c,
                "UPDATE sessions SET sources = ?2, last_used_ms = ?3 WHERE id = ?1",
                params![id, encode_record(&s.sources)?, s.last_used_ms as i64],
            )?;
            Ok(s)
        })
        .await
    }

    async fn touch_session(&self, id: &str, now_ms: u64) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write(move |c| {
            let n = exec(
                c,
                "UPDATE sessions SET last_used_ms = MAX(last_used_ms, ?2) WHERE id = ?1",
                params![id, now_ms as i64],
            )?;
            if n == 0 {
                return Err(StoreError::not_found("session", &id));
            }
            Ok(())
        })
        .await
    }

    async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write(move |c| {
            let n = c
                .execute("DELETE FROM sessions WHERE id = ?1", params![id])
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::not_found("session", &id));
            }
            c.execute(
                "DELETE FROM numbers WHERE namespace = ?1",
                params![NumberScope::Session(id.clone()).namespace()],
            )
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn allocate(
        &self,
        scope: &NumberScope,
        key: &str,
        source_id: &str,
    ) -> Result<Allocation, StoreError> {
        let ns = scope.namespace();
        let key = key.to_owned();
        let source_id = source_id.to_owned();
        self.write(move |c| {
            let existing: Option<i64> = query_opt(
                c,
                "SELECT number FROM numbers WHERE namespace = ?1 AND key = ?2",
                params![ns, key],
                |r| r.get(0),
            )?;
            if let Some(n) = existing {
                return Ok(Allocation {
                    number: n as u32,
                    is_new: false,
                });
            }
            let next: i64 = query_opt(
                c,
                "SELECT COALESCE(MAX(number), 0) + 1 FROM numbers WHERE namespace = ?1",
                params![ns],
                |r| r.get(0),
            )?
            .unwrap_or(1);
            exec(
                c,
                "INSERT INTO numbers (namespace, key, number, source_id) VALUES (?1, ?2, ?3, ?4)",
                params![ns, key, next, source_id],
            )?;
            Ok(Allocation {
                number: next as u32,
                is_new: true,
            })
        })
        .await
    }

    async fn numbering(&self, scope: &NumberScope) -> Result<Numbering, StoreError> {
        let ns = scope.namespace();
        let entries = self.read(|c| {
            let mut st = c
                .prepare_cached(
                    "SELECT number, key, source_id FROM numbers WHERE namespace = ?1
                     ORDER BY number",
                )
                .map_err(backend)?;
            let rows = st
                .query_map(params![ns], |r| {
                    Ok(NumberEntry {
                        number: r.get::<_, i64>(0)? as u32,
                        key: r.get(1)?,
                        source_id: r.get(2)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        })?;
        Numbering::from_entries(entries)
            .map_err(|e| StoreError::Backend(format!("stored numbering: {e}")))
    }

    async fn create_stream(&self, stream: StreamRecord) -> Result<(), StoreError> {
        let id = stream.id.clone();
        let record = stream.clone();
        let running = !stream.status.is_finished();
        self.write_bare(move |c, streams| {
            let n = exec(
                c,
                "INSERT OR IGNORE INTO streams (id, owner, session_id, status, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    stream.id,
                    stream.owner,
                    stream.session_id,
                    stream.status.as_str(),
                    stream.created_ms as i64
                ],
            )?;
            if n == 0 {
                return Err(StoreError::Exists {
                    what: "stream",
                    id: stream.id,
                });
            }
            if running {
                streams.insert(&stream.id, 0);
            }
            Ok(())
        })
        .await?;
        if !record.status.is_finished() {
            self.tails().insert(id, Tail::new(record));
        }
        Ok(())
    }

    async fn stream(&self, id: &str) -> Result<StreamRecord, StoreError> {
        if let Some(tail) = self.tails().get(id) {
            return Ok(tail.record.clone());
        }
        self.read(|c| read_stream(c, id)).map(|(s, _)| s)
    }

    async fn append_events(
        &self,
        stream_id: &str,
        events: Vec<StoredEvent>,
    ) -> Result<(), StoreError> {
        let id = stream_id.to_owned();
        let batch = events;
        // The hot path: appends to the log, no savepoint, no index. The stream's newest id
        // comes from the writer's table of running streams (the file is asked only for a
        // stream it has not seen running), and the new rows' positions go there until the
        // stream finishes. Everything that can refuse the batch is checked before the first
        // insert; an insert that still fails (a disk error) has the rows before it deleted.
        let (events, positions) = self
            .write_bare(move |c, running| {
                let stream = match running.get_mut(&id) {
                    Some(s) => s,
                    None => {
                        let last = last_in_file(c, &id)?;
                        running.insert(&id, last)
                    }
                };
                let last = stream.last;
                for (i, e) in batch.iter().enumerate() {
                    let want = last + 1 + i as u64;
                    if e.id != want {
                        return Err(StoreError::EventOrder {
                            stream_id: id,
                            last: want - 1,
                            got: e.id,
                        });
                    }
                }
                let mut insert = c
                    .prepare_cached(
                        "INSERT INTO event_log (stream_id, id, data) VALUES (?1, ?2, ?3)",
                    )
                    .map_err(backend)?;
                let before = stream.unindexed.len();
                let mut failed = None;
                for e in &batch {
                    match insert.execute(params![id, e.id as i64, e.data]) {
                        Ok(_) => stream.unindexed.push((e.id, c.last_insert_rowid())),
                        Err(err) => {
                            failed = Some(backend(err));
                            break;
                        }
                    }
                }
                if last == 0 && failed.is_none() {
                    if let Some(&(_, first)) = stream.unindexed.get(before) {
                        failed = exec(
                            c,
                            "UPDATE streams SET first_pos = ?2 WHERE id = ?1",
                            params![id, first],
                        )
                        .err();
                    }
                }
                if let Some(err) = failed {
                    for (_, pos) in stream.unindexed.drain(before..) {
                        let _ = exec(c, "DELETE FROM event_log WHERE pos = ?1", params![pos]);
                    }
                    return Err(err);
                }
                stream.last = last + batch.len() as u64;
                // The events go back to the caller for the tail: no copy of their data.
                let positions: Vec<i64> =
                    stream.unindexed[before..].iter().map(|&(_, p)| p).collect();
                Ok((batch, positions))
            })
            .await?;
        if let Some(tail) = self.tails().get_mut(stream_id) {
            tail.positions.extend(positions);
            tail.events.extend(events);
            while tail.events.len() > TAIL_EVENTS {
                if let Some(e) = tail.events.pop_front() {
                    tail.dropped = e.id;
                }
            }
        }
        self.signals.notify(stream_id);
        Ok(())
    }

    async fn finish_stream(&self, stream_id: &str, status: StreamStatus) -> Result<(), StoreError> {
        let id = stream_id.to_owned();
        // The positions of the stream's events that its row does not hold yet go there now,
        // with the status, in one statement: a finished stream is read through its row alone.
        self.write_bare(move |c, running| {
            // Of a stream the writer tracks: how many events the row holds (those before the
            // first unindexed one), and the positions of the rest. Of any other stream, the
            // row holds every event.
            let (held, unindexed) = running
                .get_mut(&id)
                .map(|s| {
                    let held = s.unindexed.first().map_or(s.last, |&(e, _)| e - 1);
                    (held, s.unindexed.as_slice())
                })
                .unwrap_or_default();
            let n = if unindexed.is_empty() {
                exec(
                    c,
                    "UPDATE streams SET status = ?2 WHERE id = ?1",
                    params![id, status.as_str()],
                )?
            } else {
                let mut index = if held > 0 {
                    index_of(c, &id)?
                } else {
                    Vec::new()
                };
                if positions::count(index.len()) != held {
                    return Err(StoreError::Backend(format!(
                        "the index of stream {id} holds {} events, not {held}",
                        positions::count(index.len())
                    )));
                }
                index.extend(positions::encode(unindexed.iter().map(|&(_, p)| p)));
                exec(
                    c,
                    "UPDATE streams SET status = ?2, positions = ?3 WHERE id = ?1",
                    params![id, status.as_str(), index],
                )?
            };
            if n == 0 {
                return Err(StoreError::not_found("stream", &id));
            }
            running.remove(&id);
            Ok(())
        })
        .await?;
        self.tails().remove(stream_id);
        self.signals.close(stream_id);
        Ok(())
    }

    async fn events_after(
        &self,
        stream_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        // A running stream is answered from its tail, even with nothing new: its followers
        // wait on the tail too (`wait_for_events`), so they never see more than it holds.
        let from_tail = self.tails().get(stream_id).map(|t| t.after(after, limit));
        match from_tail {
            Some(FromTail::Events(events)) => Ok(events),
            Some(FromTail::Positions(at)) => self.read(|c| read_at(c, stream_id, &at)),
            None => self.read(|c| {
                let (stream, first_pos) = read_stream(c, stream_id)?;
                read_events(c, &stream, first_pos, after, limit)
            }),
        }
    }

    async fn wait_for_events(&self, stream_id: &str, after: u64) -> Result<(), StoreError> {
        let listener = self.signals.listen(stream_id);
        // While the stream runs, its tail is what `events_after` reads, and it is updated (then
        // followers are notified) only after the commit: compare against it, not the file, so
        // that a follower never sees "new events" that `events_after` cannot give it yet.
        let in_tail = self
            .tails()
            .get(stream_id)
            .map(|tail| tail.events.back().is_some_and(|e| e.id > after));
        match in_tail {
            Some(true) => return Ok(()),
            Some(false) => {
                listener.await;
                return Ok(());
            }
            None => {}
        }
        let (s, last) = self.read(|c| {
            let (s, first_pos) = read_stream(c, stream_id)?;
            let last = if s.status.is_finished() {
                0
            } else {
                last_running(c, stream_id, first_pos)?
            };
            Ok((s, last))
        })?;
        if s.status.is_finished() || last > after {
            return Ok(());
        }
        listener.await;
        Ok(())
    }

    async fn running_streams(&self) -> Result<Vec<String>, StoreError> {
        self.read(|c| {
            let mut st = c
                .prepare_cached("SELECT id FROM streams WHERE status = 'running' ORDER BY id")
                .map_err(backend)?;
            let rows = st.query_map([], |r| r.get(0)).map_err(backend)?;
            rows.collect::<Result<Vec<String>, _>>().map_err(backend)
        })
    }

    async fn purge_idle(&self, idle_before_ms: u64) -> Result<u64, StoreError> {
        let cutoff = idle_before_ms as i64;
        // A slice per writer job: the live streams' appends wait for one slice at most.
        let mut n = 0;
        loop {
            let (k, done) = self.write(move |c| purge::sessions(c, cutoff)).await?;
            n += k;
            if done {
                break;
            }
        }
        loop {
            let (k, done) = self
                .write(move |c| purge::streams(c, cutoff, purge::PURGE_SLICE_EVENTS))
                .await?;
            n += k;
            if done {
                return Ok(n);
            }
        }
    }

    /// One row of the `probe` table replaced, through the writer (its transaction and its
    /// commit, like every other write).
    async fn probe_write(&self, now_ms: u64) -> Result<(), StoreError> {
        self.write(move |c| {
            exec(
                c,
                "INSERT OR REPLACE INTO probe (id, at_ms) VALUES (1, ?1)",
                params![now_ms as i64],
            )
            .map(drop)
        })
        .await
    }
}
