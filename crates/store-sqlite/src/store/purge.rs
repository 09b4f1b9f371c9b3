//! Purging idle records a slice at a time: each slice is one job of the writer, so the live
//! streams' appends, queued behind it, wait for one slice, never for the whole purge. Both
//! scans run on an index (`sessions_by_last_used`, `streams_by_created`), oldest first.

use citeflow_store::StoreError;
use rusqlite::{params, Connection};

use super::positions;
use crate::writer::{backend, exec};

/// Most log events one slice of a purge deletes (a stream is never split across slices, so a
/// slice holds at least one whole stream): about 3–7 ms of the writer at 2,000
/// (`examples/purge_stall.rs`).
pub const PURGE_SLICE_EVENTS: u64 = 2_000;

/// Most sessions one slice of a purge deletes, with their numbers.
pub const PURGE_SLICE_SESSIONS: usize = 200;

/// Deletes up to [`PURGE_SLICE_SESSIONS`] sessions last used before `cutoff` (ms), with their
/// number tables. Returns how many, and whether none is left.
pub(super) fn sessions(c: &Connection, cutoff: i64) -> Result<(u64, bool), StoreError> {
    let ids: Vec<String> = c
        .prepare_cached("SELECT id FROM sessions WHERE last_used_ms < ?1 LIMIT ?2")
        .and_then(|mut st| {
            st.query_map(params![cutoff, PURGE_SLICE_SESSIONS as i64], |r| r.get(0))?
                .collect()
        })
        .map_err(backend)?;
    for id in &ids {
        exec(
            c,
            "DELETE FROM numbers WHERE namespace = 'session:' || ?1",
            params![id],
        )?;
        exec(c, "DELETE FROM sessions WHERE id = ?1", params![id])?;
    }
    Ok((ids.len() as u64, ids.len() < PURGE_SLICE_SESSIONS))
}

/// Deletes the oldest finished streams created before `cutoff` (ms), whole (row, events and
/// numbers), until their events reach `budget`. Returns how many streams, and whether none is
/// left. Running streams are never touched.
pub(super) fn streams(c: &Connection, cutoff: i64, budget: u64) -> Result<(u64, bool), StoreError> {
    let mut picked: Vec<(String, Vec<u8>)> = Vec::new();
    let mut events = 0u64;
    let mut done = true;
    {
        let mut st = c
            .prepare_cached(
                "SELECT id, positions FROM streams
                 WHERE created_ms < ?1 AND status != 'running' ORDER BY created_ms",
            )
            .map_err(backend)?;
        let mut rows = st.query(params![cutoff]).map_err(backend)?;
        while let Some(r) = rows.next().map_err(backend)? {
            if events >= budget {
                done = false;
                break;
            }
            let index: Option<Vec<u8>> = r.get(1).map_err(backend)?;
            let index = index.unwrap_or_default();
            events += positions::count(index.len());
            picked.push((r.get(0).map_err(backend)?, index));
        }
    }
    for (id, index) in &picked {
        for (_, pos) in positions::after(id, index, 0, usize::MAX)? {
            exec(c, "DELETE FROM event_log WHERE pos = ?1", params![pos])?;
        }
        exec(
            c,
            "DELETE FROM numbers WHERE namespace = 'stream:' || ?1",
            params![id],
        )?;
        exec(c, "DELETE FROM streams WHERE id = ?1", params![id])?;
    }
    Ok((picked.len() as u64, done))
}
