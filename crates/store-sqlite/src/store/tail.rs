//! A running stream's tail in memory, from which its live followers are served.

use std::collections::VecDeque;

use citeflow_store::{StoredEvent, StreamRecord};

/// How many recent events of a running stream stay in memory for live followers.
pub(super) const TAIL_EVENTS: usize = 128;

/// A running stream as it stands in memory: its record and its newest events. Live followers
/// are served from here, so that a stream's hot path touches the file only to write.
///
/// Tails are updated after each commit; one file belongs to one process, so the tail and the
/// file agree once the writer has answered. A tail is made when the stream is created, so it
/// has seen every event of its stream.
#[derive(Debug)]
pub(super) struct Tail {
    pub(super) record: StreamRecord,
    pub(super) events: VecDeque<StoredEvent>,
    /// The id of the newest event dropped from `events` (0: none was).
    pub(super) dropped: u64,
    /// The log position of every event: `positions[i]` holds event `i + 1` (8 bytes an event),
    /// so that a follower far behind reads its events by position, not by a scan of the log.
    pub(super) positions: Vec<i64>,
}

/// Where [`Tail::after`] finds the events asked for.
pub(super) enum FromTail {
    /// In memory.
    Events(Vec<StoredEvent>),
    /// In the log, at these positions (`(event id, position)`, in order).
    Positions(Vec<(u64, i64)>),
}

impl Tail {
    pub(super) fn new(record: StreamRecord) -> Self {
        Tail {
            record,
            events: VecDeque::new(),
            dropped: 0,
            positions: Vec::new(),
        }
    }

    /// The events after `after`, at most `limit`: from memory, or the positions of those that
    /// were dropped from it.
    pub(super) fn after(&self, after: u64, limit: usize) -> FromTail {
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
