//! Row readers: sessions, streams and events read on a connection (a reader's, or the
//! writer's inside its transaction).

use citeflow_core::Sources;
use citeflow_store::{
    decode_record, SessionRecord, StoreError, StoredEvent, StreamRecord, StreamStatus,
};
use rusqlite::{params, Connection};

use super::positions;
use crate::writer::{backend, query_opt};

pub(super) fn read_session(conn: &Connection, id: &str) -> Result<SessionRecord, StoreError> {
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
pub(super) fn read_stream(
    conn: &Connection,
    id: &str,
) -> Result<(StreamRecord, Option<i64>), StoreError> {
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
/// A finished stream's events are all in its index (the positions on its row). A running
/// stream's positions reach the row only when it finishes, so its events are read from the log
/// itself, from its first position on: a scan over every stream's events since it began. Only
/// a running stream without a tail takes it (one a crash left running, until the server closes
/// it); a tail knows the position of each of its stream's events.
pub(super) fn read_events(
    c: &Connection,
    stream: &StreamRecord,
    first_pos: Option<i64>,
    after: u64,
    limit: usize,
) -> Result<Vec<StoredEvent>, StoreError> {
    if stream.status.is_finished() {
        let blob = index_of(c, &stream.id)?;
        let at = positions::after(&stream.id, &blob, after, limit)?;
        return read_at(c, &stream.id, &at);
    }
    let Some(first) = first_pos else {
        return Ok(Vec::new());
    };
    let mut st = c
        .prepare_cached(
            "SELECT id, data FROM event_log WHERE pos >= ?4 AND stream_id = ?1 AND id > ?2
             ORDER BY pos LIMIT ?3",
        )
        .map_err(backend)?;
    let rows = st
        .query_map(params![stream.id, after as i64, limit as i64, first], |r| {
            Ok(StoredEvent {
                id: r.get::<_, i64>(0)? as u64,
                data: r.get(1)?,
            })
        })
        .map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

/// The events of a stream at these log positions (`(event id, position)`).
pub(super) fn read_at(
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
pub(super) fn last_running(
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

/// The newest event id of a stream that may take events and that the writer's [`Running`](crate::writer::Running)
/// table does not hold (so its index holds all its events): `StreamClosed` when it finished,
/// `NotFound` when there is no such stream.
pub(super) fn last_in_file(c: &Connection, id: &str) -> Result<u64, StoreError> {
    let (status, bytes): (String, Option<i64>) = query_opt(
        c,
        "SELECT status, length(positions) FROM streams WHERE id = ?1",
        params![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
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
    Ok(positions::count(bytes.unwrap_or(0) as usize))
}

/// The index of a stream as its row holds it (empty: none yet).
pub(super) fn index_of(c: &Connection, id: &str) -> Result<Vec<u8>, StoreError> {
    Ok(query_opt(
        c,
        "SELECT positions FROM streams WHERE id = ?1",
        params![id],
        |r| r.get::<_, Option<Vec<u8>>>(0),
    )?
    .flatten()
    .unwrap_or_default())
}
