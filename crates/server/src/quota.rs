//! Per-key quotas: how many answers one API key may have running at once on this server
//! ([`Limits::max_streams_per_key`](crate::Limits::max_streams_per_key)). A slot is taken
//! before the upstream is called and given back when the generation ends, however it ends
//! (the slot is dropped with the task). Counted per process: with several servers behind a
//! balancer each enforces its own bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::ApiError;
use crate::tenancy::Owner;

/// Running answers per key.
#[derive(Debug, Default)]
pub(crate) struct StreamQuota {
    running: Arc<Mutex<HashMap<String, usize>>>,
}

/// One running answer of a key; gives its slot back when dropped.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    running: Arc<Mutex<HashMap<String, usize>>>,
    owner: String,
}

impl StreamQuota {
    /// Takes a slot for `owner`, or `too_many_streams` (429) when it has `max` running.
    pub(crate) fn acquire(&self, owner: &Owner, max: usize) -> Result<StreamSlot, ApiError> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let n = running.entry(owner.0.clone()).or_insert(0);
        if *n >= max {
            return Err(ApiError::TooManyStreams { max });
        }
        *n += 1;
        Ok(StreamSlot {
            running: Arc::clone(&self.running),
            owner: owner.0.clone(),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = running.get_mut(&self.owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                running.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_key_and_given_back_on_drop() {
        let q = StreamQuota::default();
        let (a, b) = (Owner("a".into()), Owner("b".into()));
        let one = q.acquire(&a, 2).expect("first");
        let two = q.acquire(&a, 2).expect("second");
        let e = q.acquire(&a, 2).unwrap_err();
        assert_eq!(e.code(), "too_many_streams");
        assert_eq!(e.status().as_u16(), 429);
        // Another key is not held back by a's streams.
        let _other = q.acquire(&b, 2).expect("b");
        drop(one);
        let _three = q.acquire(&a, 2).expect("a slot came back");
        drop(two);
        assert_eq!(q.running.lock().unwrap().get("a"), Some(&1));
    }
}
