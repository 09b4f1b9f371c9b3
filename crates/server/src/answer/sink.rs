//! Where the runner puts an answer's events: the stream's log ([`Log`](crate::answer::live::Log),
//! for a streamed answer, with its live hand-off), or a list (a non-streamed one).

use std::future::Future;

use crate::error::StreamError;

/// Takes each batch of an answer's events.
pub(crate) trait Sink: Send {
    /// Takes a batch of events (JSON texts, or a bare `[DONE]`).
    fn send(&mut self, events: Vec<String>)
        -> impl Future<Output = Result<(), StreamError>> + Send;
}

/// Collects the events (a non-streamed answer).
impl Sink for Vec<String> {
    async fn send(&mut self, events: Vec<String>) -> Result<(), StreamError> {
        self.extend(events);
        Ok(())
    }
}
