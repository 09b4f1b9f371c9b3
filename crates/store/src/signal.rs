//! Wake-ups for followers of a stream's log inside one process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use event_listener::{Event, EventListener};

/// One wake-up channel per stream id, for stores whose writers and readers share a process.
///
/// # Call protocol
/// A reader calls [`StreamSignals::listen`] *before* it checks the log, then awaits the
/// listener if there was nothing new; a writer calls [`StreamSignals::notify`] after each
/// append and when the stream ends.
#[derive(Debug, Default)]
pub struct StreamSignals {
    events: Mutex<HashMap<String, Arc<Event>>>,
}

impl StreamSignals {
    /// No channels yet.
    pub fn new() -> Self {
        StreamSignals::default()
    }

    fn event(&self, stream_id: &str) -> Arc<Event> {
        let mut map = self.events.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(stream_id.to_owned())
            .or_insert_with(|| Arc::new(Event::new()))
            .clone()
    }

    /// A listener that fires at the next [`StreamSignals::notify`] of this stream.
    pub fn listen(&self, stream_id: &str) -> EventListener {
        self.event(stream_id).listen()
    }

    /// Wakes every listener of this stream.
    pub fn notify(&self, stream_id: &str) {
        let map = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = map.get(stream_id) {
            e.notify(usize::MAX);
        }
    }

    /// Wakes every listener and forgets the stream's channel (it ended).
    pub fn close(&self, stream_id: &str) {
        let mut map = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = map.remove(stream_id) {
            e.notify(usize::MAX);
        }
    }
}
