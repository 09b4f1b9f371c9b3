//! [`SqliteStore`].

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};

use async_trait::async_trait;
use citeflow_core::{NumberEntry, Numbering, Source, Sources};
use citeflow_store::{
    decode_record, encode_record, Allocation, NumberScope, SessionRecord, Store, StoreError,
    StoredEvent, StreamRecord, StreamSignals, StreamStatus,
};
use rusqlite::{params, Connection};

use crate::writer::{self, backend, exec, in_savepoint, query_opt, Job, Running};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    sources TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    last_used_ms INTEGER NOT NULL
);
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
    first_pos INTEGER
);
CREATE TABLE IF NOT EXISTS event_log (
    pos INTEGER PRIMARY KEY,
    stream_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS event_index (
    stream_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    pos INTEGER NOT NULL,
    PRIMARY KEY (stream_id, id)
) WITHOUT ROWID;
";

/// The schema version this code writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 3;

// The event log, by version:
// 1. a `WITHOUT ROWID` table keyed by stream: with many streams running, every append landed
//    on a different page;
// 2. a rowid table (its pages fill in order) with a unique index by stream, which still took
//    one index page per append, so a commit wrote one page per running stream to the WAL;
// 3. the rowid table alone on the hot path (`pos`, in append order; `streams.first_pos` is a
//    stream's first event) and an index by stream written when the stream finishes, from the
//    writer's memory, or when the file is opened, for streams that were running.

/// Version 1 and 2 to 3, run after [`SCHEMA`] created the new tables; `{old}` is the old
/// table of events.
const MIGRATE_TO_3: &str = "
INSERT INTO event_log (stream_id, id, data) SELECT stream_id, id, data FROM {old}
    ORDER BY stream_id, id;
INSERT INTO event_index (stream_id, id, pos) SELECT stream_id, id, pos FROM event_log;
UPDATE streams SET first_pos = (SELECT MIN(pos) FROM event_index WHERE stream_id = streams.id);
DROP TABLE {old};
";

/// Pages the writer's connection may cache (`PRAGMA cache_size`, in KiB when negative): the
/// hot pages of a thousand running streams stay in memory.
const WRITER_CACHE_KIB: i64 = 8 * 1024;

/// The page size of a new file. Each commit writes every page it touched to the WAL, and the
/// appends of many streams touch one index page each: small pages write less per event.
const PAGE_SIZE: u32 = 1024;

/// How often the checkpoint thread copies the WAL into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// How many recent events of a running stream stay in memory for live followers.
const TAIL_EVENTS: usize = 128;

/// A [`Store`] in one SQLite file (WAL mode, group commit).
///
/// Open it with [`SqliteStore::open`]; every method of [`Store`] then works from any task.
/// One file is meant for one server process: live followers are woken inside the process.
pub struct SqliteStore {
    path: PathBuf,
    jobs: Mutex<mpsc::Sender<Job>>,
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

/// A running stream as it stands in memory: its record and its newest events. Live followers
/// are served from here, so that a stream's hot path touches the file only to write.
///
/// Tails are updated after each commit; one file belongs to one process, so the tail and the
/// file agree once the writer has answered. A tail is made when the stream is created, so it
/// has seen every event of its stream.
#[derive(Debug)]
struct Tail {
    record: StreamRecord,
    events: VecDeque<StoredEvent>,
    /// The id of the newest event dropped from `events` (0: none was).
    dropped: u64,
    /// The log position of every event: `positions[i]` holds event `i + 1` (8 bytes an event),
    /// so that a follower far behind reads its events by position, not by a scan of the log.
    positions: Vec<i64>,
}

/// Where [`Tail::after`] finds the events asked for.
enum FromTail {
    /// In memory.
    Events(Vec<StoredEvent>),
    /// In the log, at these positions (`(event id, position)`, in order).
    Positions(Vec<(u64, i64)>),
}

impl Tail {
    fn new(record: StreamRecord) -> Self {
        Tail {
            record,
            events: VecDeque::new(),
            dropped: 0,
            positions: Vec::new(),
        }
    }

    /// The events after `after`, at most `limit`: from memory, or the positions of those that
    /// were dropped from it.
    fn after(&self, after: u64, limit: usize) -> FromTail {
        if after >= self.dropped {
            let skip = (after - self.dropped) as usize;
            return FromTail::Events(self.events.iter().skip(skip).take(limit).cloned().collect());
        }
        let from = after as usize;
        let to = self.positions.len().min(from.saturating_add(limit));
        FromTail::Positions(
            (from..to)
                .map(|i| (i as u64 + 1, self.positions[i]))
                .collect(),
        )
    }
}

fn open_conn(path: &Path) -> Result<Connection, StoreError> {
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

fn read_session(conn: &Connection, id: &str) -> Result<SessionRecord, StoreError> {
    let row = query_opt(
        conn,
        "SELECT owner, sources, created_ms, last_used_ms FROM sessions WHERE id = ?1",
        params![id],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        },
    )?
    .ok_or_else(|| StoreError::not_found("session", id))?;
    let sources: Sources = decode_record(&row.1)?;
    Ok(SessionRecord {
        id: id.to_owned(),
        owner: row.0,
        sources,
        created_ms: row.2 as u64,
        last_used_ms: row.3 as u64,
    })
}

/// A stream's row: its record and `first_pos` (the log position of its first event).
fn read_stream(conn: &Connection, id: &str) -> Result<(StreamRecord, Option<i64>), StoreError> {
    let row = query_opt(
        conn,
        "SELECT owner, session_id, status, created_ms, first_pos FROM streams WHERE id = ?1",
        params![id],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<i64>>(4)?,
            ))
        },
    )?
    .ok_or_else(|| StoreError::not_found("stream", id))?;
    let status = StreamStatus::from_name(&row.2)
        .ok_or_else(|| StoreError::Backend(format!("unknown stream status {}", row.2)))?;
    Ok((
        StreamRecord {
            id: id.to_owned(),
            owner: row.0,
            session_id: row.1,
            status,
            created_ms: row.3 as u64,
        },
        row.4,
    ))
}

/// Up to `limit` events of a stream after event `after`, read on a reader connection.
///
/// A finished stream's events are all in the index. A running stream's newest ones reach the
/// index only when it finishes, so its events are read from the log itself, from its first
/// position on: a scan over every stream's events since it began. Only a running stream without
/// a tail takes it (one a crash left running, until the server closes it); a tail knows the
/// position of each of its stream's events.
fn read_events(
    c: &Connection,
    stream: &StreamRecord,
    first_pos: Option<i64>,
    after: u64,
    limit: usize,
) -> Result<Vec<StoredEvent>, StoreError> {
    let (sql, from) = if stream.status.is_finished() {
        (
            "SELECT i.id, e.data FROM event_index i JOIN event_log e ON e.pos = i.pos
             WHERE i.stream_id = ?1 AND i.id > ?2 ORDER BY i.id LIMIT ?3",
            None,
        )
    } else {
        let Some(first) = first_pos else {
            return Ok(Vec::new());
        };
        (
            "SELECT id, data FROM event_log WHERE pos >= ?4 AND stream_id = ?1 AND id > ?2
             ORDER BY pos LIMIT ?3",
            Some(first),
        )
    };
    let mut st = c.prepare_cached(sql).map_err(backend)?;
    let row = |r: &rusqlite::Row<'_>| {
        Ok(StoredEvent {
            id: r.get::<_, i64>(0)? as u64,
            data: r.get(1)?,
        })
    };
    let rows = match from {
        None => st.query_map(params![stream.id, after as i64, limit as i64], row),
        Some(first) => st.query_map(params![stream.id, after as i64, limit as i64, first], row),
    }
    .map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

/// The events of a stream at these log positions (`(event id, position)`).
fn read_at(
    c: &Connection,
    stream_id: &str,
    at: &[(u64, i64)],
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut st = c
        .prepare_cached("SELECT stream_id, id, data FROM event_log WHERE pos = ?1")
        .map_err(backend)?;
    let mut events = Vec::with_capacity(at.len());
    for &(id, pos) in at {
        let row = st
            .query_row(params![pos], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(backend)?;
        if row.0 != stream_id || row.1 as u64 != id {
            return Err(StoreError::Backend(format!(
                "event {id} of stream {stream_id} is not at log position {pos}"
            )));
        }
        events.push(StoredEvent { id, data: row.2 });
    }
    Ok(events)
}

/// The newest event id of a running stream in the file (0: none), read as [`read_events`]
/// reads it: from the log, from `first_pos` on.
fn last_running(
    c: &Connection,
    stream_id: &str,
    first_pos: Option<i64>,
) -> Result<u64, StoreError> {
    let Some(first) = first_pos else {
        return Ok(0);
    };
    let last: Option<i64> = query_opt(
        c,
        "SELECT MAX(id) FROM event_log WHERE pos >= ?2 AND stream_id = ?1",
        params![stream_id, first],
        |r| r.get(0),
    )?
    .flatten();
    Ok(last.unwrap_or(0) as u64)
}

/// The newest event id of a stream that may take events and that the writer's [`Running`]
/// table does not hold (so the index holds all its events): `StreamClosed` when it finished,
/// `NotFound` when there is no such stream.
fn last_in_file(c: &Connection, id: &str) -> Result<u64, StoreError> {
    let status: String = query_opt(
        c,
        "SELECT status FROM streams WHERE id = ?1",
        params![id],
        |r| r.get(0),
    )?
    .ok_or_else(|| StoreError::not_found("stream", id))?;
    let status = StreamStatus::from_name(&status)
        .ok_or_else(|| StoreError::Backend(format!("unknown stream status {status}")))?;
    if status.is_finished() {
        return Err(StoreError::StreamClosed {
            stream_id: id.to_owned(),
            status: status.as_str(),
        });
    }
    let last: Option<i64> = query_opt(
        c,
        "SELECT MAX(id) FROM event_index WHERE stream_id = ?1",
        params![id],
        |r| r.get(0),
    )?
    .flatten();
    Ok(last.unwrap_or(0) as u64)
}

/// Indexes every event of every running stream (those already indexed are kept): run when
/// the file is opened (streams a crash left running) and after a failed commit, when the
/// writer's [`Running`] table is lost. Scans the log from the oldest running stream's first
/// event.
fn index_running(c: &Connection) -> Result<(), StoreError> {
    let from: Option<i64> = query_opt(
        c,
        "SELECT MIN(first_pos) FROM streams WHERE status = 'running'",
        [],
        |r| r.get(0),
    )?
    .flatten();
    if let Some(from) = from {
        exec(
            c,
            "INSERT OR IGNORE INTO event_index (stream_id, id, pos)
             SELECT stream_id, id, pos FROM event_log
             WHERE pos >= ?1 AND stream_id IN (SELECT id FROM streams WHERE status = 'running')",
            params![from],
        )?;
    }
    Ok(())
}

/// Creates or upgrades the schema, indexes the streams a crash left running, and tunes the
/// writer's connection.
fn set_up(conn: &Connection) -> Result<(), StoreError> {
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
            conn.execute_batch("ALTER TABLE streams ADD COLUMN first_pos INTEGER")?;
        }
        if version == 2 {
            conn.execute_batch(
                "DROP INDEX event_log_by_stream; ALTER TABLE event_log RENAME TO event_log_v2;",
            )?;
        }
        conn.execute_batch(SCHEMA)?;
        if let Some(old) = old {
            conn.execute_batch(&MIGRATE_TO_3.replace("{old}", old))?;
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
    })()
    .map_err(backend)
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

impl SqliteStore {
    /// Opens (or creates) the database file and starts the writer thread.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the file cannot be opened or created,
    /// [`StoreError::Backend`] when its schema cannot be set up.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let conn = open_conn(&path)?;
        set_up(&conn)?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("citeflow-sqlite-writer".into())
            .spawn(move || writer::run(conn, rx, index_running))
            .map_err(|e| StoreError::Unavailable(format!("writer thread: {e}")))?;
        let checkpoints = open_conn(&path)?;
        let (stop_checkpoints, stop) = mpsc::channel();
        std::thread::Builder::new()
            .name("citeflow-sqlite-checkpoint".into())
            .spawn(move || writer::checkpoint(checkpoints, CHECKPOINT_EVERY, stop))
            .map_err(|e| StoreError::Unavailable(format!("checkpoint thread: {e}")))?;
        Ok(SqliteStore {
            path,
            jobs: Mutex::new(tx),
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
            .lock()
            .unwrap_or_else(|e| e.into_inner())
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
        // The stream's events that are not in the index yet go there now, with the status,
        // in one savepoint: a finished stream is read through the index alone.
        self.write_bare(move |c, running| {
            let unindexed = running
                .get_mut(&id)
                .map(|s| s.unindexed.as_slice())
                .unwrap_or_default();
            in_savepoint(c, |c| {
                let n = exec(
                    c,
                    "UPDATE streams SET status = ?2 WHERE id = ?1",
                    params![id, status.as_str()],
                )?;
                if n == 0 {
                    return Err(StoreError::not_found("stream", &id));
                }
                let mut index = c
                    .prepare_cached(
                        "INSERT OR IGNORE INTO event_index (stream_id, id, pos) VALUES (?1, ?2, ?3)",
                    )
                    .map_err(backend)?;
                for &(event, pos) in unindexed {
                    index
                        .execute(params![id, event as i64, pos])
                        .map_err(backend)?;
                }
                Ok(())
            })?;
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
        self.write(move |c| {
            let mut n = 0u64;
            c.execute(
                "DELETE FROM numbers WHERE namespace IN
                 (SELECT 'session:' || id FROM sessions WHERE last_used_ms < ?1)",
                params![cutoff],
            )
            .map_err(backend)?;
            n += c
                .execute(
                    "DELETE FROM sessions WHERE last_used_ms < ?1",
                    params![cutoff],
                )
                .map_err(backend)? as u64;
            let old = "SELECT id FROM streams WHERE status != 'running' AND created_ms < ?1";
            c.execute(
                &format!(
                    "DELETE FROM event_log WHERE pos IN
                     (SELECT pos FROM event_index WHERE stream_id IN ({old}))"
                ),
                params![cutoff],
            )
            .map_err(backend)?;
            c.execute(
                &format!("DELETE FROM event_index WHERE stream_id IN ({old})"),
                params![cutoff],
            )
            .map_err(backend)?;
            c.execute(
                &format!(
                    "DELETE FROM numbers WHERE namespace IN (SELECT 'stream:' || id FROM ({old}))"
                ),
                params![cutoff],
            )
            .map_err(backend)?;
            n += c
                .execute(
                    "DELETE FROM streams WHERE status != 'running' AND created_ms < ?1",
                    params![cutoff],
                )
                .map_err(backend)? as u64;
            Ok(n)
        })
        .await
    }
}
