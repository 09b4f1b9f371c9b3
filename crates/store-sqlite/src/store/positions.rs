//! A stream's index: the log position of each of its events, in event order (event `i + 1`
//! at `i`), kept as one blob on the stream's row (8 bytes an event, little-endian). It is
//! written once, when the stream finishes (or when the file is opened, for the streams a crash
//! left running): one statement per stream instead of one index entry per event.

use citeflow_store::StoreError;
use rusqlite::{params, Connection};

use crate::writer::backend;

/// Bytes per event in the blob.
const WIDTH: usize = 8;

/// The blob of these positions.
pub(super) fn encode(positions: impl IntoIterator<Item = i64>) -> Vec<u8> {
    positions.into_iter().flat_map(i64::to_le_bytes).collect()
}

/// How many events a blob of `len` bytes holds.
pub(super) fn count(len: usize) -> u64 {
    (len / WIDTH) as u64
}

/// `(event id, position)` of the events after `after`, at most `limit`, from stream
/// `stream_id`'s blob.
pub(super) fn after(
    stream_id: &str,
    blob: &[u8],
    after: u64,
    limit: usize,
) -> Result<Vec<(u64, i64)>, StoreError> {
    if !blob.len().is_multiple_of(WIDTH) {
        return Err(StoreError::Backend(format!(
            "the index of stream {stream_id} is {} bytes long, not a multiple of {WIDTH}",
            blob.len()
        )));
    }
    Ok(blob
        .chunks_exact(WIDTH)
        .enumerate()
        .skip(usize::try_from(after).unwrap_or(usize::MAX))
        .take(limit)
        .map(|(i, b)| {
            let mut bytes = [0u8; WIDTH];
            bytes.copy_from_slice(b);
            (i as u64 + 1, i64::from_le_bytes(bytes))
        })
        .collect())
}

/// Writes the index (and `first_pos`) of every stream in the rows of `sql`: `(stream id,
/// event id, position)`, ordered by stream, then event id. A stream's events must be
/// numbered from 1 without a gap, as appends keep them.
pub(super) fn write_all(
    c: &Connection,
    sql: &str,
    args: impl rusqlite::Params,
) -> Result<(), StoreError> {
    let mut st = c.prepare(sql).map_err(backend)?;
    let mut rows = st.query(args).map_err(backend)?;
    let mut stream: Option<String> = None;
    let mut positions: Vec<i64> = Vec::new();
    while let Some(r) = rows.next().map_err(backend)? {
        let id: String = r.get(0).map_err(backend)?;
        let event: i64 = r.get(1).map_err(backend)?;
        let pos: i64 = r.get(2).map_err(backend)?;
        if stream.as_deref() != Some(id.as_str()) {
            if let Some(done) = stream.take() {
                write_one(c, &done, &positions)?;
            }
            stream = Some(id);
            positions.clear();
        }
        if event != positions.len() as i64 + 1 {
            return Err(StoreError::Backend(format!(
                "stream {}: event {event} follows event {} in the log; a stream's events are \
                 numbered from 1 without gaps",
                stream.as_deref().unwrap_or_default(),
                positions.len()
            )));
        }
        positions.push(pos);
    }
    if let Some(done) = stream {
        write_one(c, &done, &positions)?;
    }
    Ok(())
}

fn write_one(c: &Connection, stream_id: &str, positions: &[i64]) -> Result<(), StoreError> {
    c.execute(
        "UPDATE streams SET positions = ?2, first_pos = ?3 WHERE id = ?1",
        params![
            stream_id,
            encode(positions.iter().copied()),
            positions.iter().min()
        ],
    )
    .map_err(backend)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_gives_back_its_positions_by_event_id() {
        let blob = encode([40, 7, 1_i64 << 40]);
        assert_eq!(count(blob.len()), 3);
        assert_eq!(
            after("s", &blob, 0, 10).expect("whole"),
            [(1, 40), (2, 7), (3, 1 << 40)]
        );
        assert_eq!(after("s", &blob, 1, 1).expect("one"), [(2, 7)]);
        assert_eq!(after("s", &blob, 3, 10).expect("none after the last"), []);
        assert_eq!(after("s", &blob, u64::MAX, 10).expect("none"), []);
        assert!(after("s", &blob[..5], 0, 10).is_err());
    }
}
