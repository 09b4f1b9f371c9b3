//! Group commit: the requests that arrive while a script call is under way go together in the
//! next one, so a busy store sends one `EVALSHA` for many requests instead of one each.
//! [`Batches`] holds the waiting requests by group and counts each group's flushers; the
//! allocation batches (`store/allocate.rs`) and the append batches (`store/append.rs`) use it.

use std::collections::HashMap;
use std::sync::Mutex;

/// Script calls of one group that may be under way at once (one runs in Redis while the next
/// one is being filled).
const FLUSHERS: usize = 2;

struct Group<R> {
    pending: Vec<R>,
    flushers: usize,
}

/// The requests waiting, by group (for allocations: the table's `num` key on a Cluster, `""`
/// standalone).
pub(crate) struct Batches<R> {
    groups: Mutex<HashMap<String, Group<R>>>,
}

impl<R> Default for Batches<R> {
    fn default() -> Self {
        Batches {
            groups: Mutex::new(HashMap::new()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<R> Batches<R> {
    /// Queues `requests` (kept together and in order) in `group`; returns whether the caller
    /// must start a flusher for it.
    pub(crate) fn push(&self, group: &str, requests: Vec<R>) -> bool {
        let mut groups = lock(&self.groups);
        let g = groups.entry(group.to_owned()).or_insert_with(|| Group {
            pending: Vec::new(),
            flushers: 0,
        });
        g.pending.extend(requests);
        if g.flushers < FLUSHERS {
            g.flushers += 1;
            true
        } else {
            false
        }
    }

    /// The next batch of `group` (at most `max`), or `None` when nothing waits (the flusher
    /// then ends).
    pub(crate) fn take(&self, group: &str, max: usize) -> Option<Vec<R>> {
        let mut groups = lock(&self.groups);
        let g = groups.get_mut(group)?;
        if g.pending.is_empty() {
            g.flushers = g.flushers.saturating_sub(1);
            if g.flushers == 0 {
                groups.remove(group);
            }
            return None;
        }
        let n = g.pending.len().min(max.max(1));
        Some(g.pending.drain(..n).collect())
    }

    /// Every allocation waiting in `group` (the flusher's count stays).
    pub(crate) fn drain(&self, group: &str) -> Vec<R> {
        lock(&self.groups)
            .get_mut(group)
            .map(|g| std::mem::take(&mut g.pending))
            .unwrap_or_default()
    }

    /// A flusher that ends without `take` returning `None` (its task was cancelled or
    /// panicked): the next allocation must be able to start one. When it was the last, the
    /// waiting allocations fail (their senders are dropped).
    fn abandon(&self, group: &str) {
        let mut groups = lock(&self.groups);
        if let Some(g) = groups.get_mut(group) {
            g.flushers = g.flushers.saturating_sub(1);
            if g.flushers == 0 {
                groups.remove(group);
            }
        }
    }
}

/// Removes a flusher from its group's count if its task ends early.
pub(crate) struct Flushing<'a, R> {
    pub(crate) batches: &'a Batches<R>,
    pub(crate) group: &'a str,
    pub(crate) done: bool,
}

impl<R> Drop for Flushing<'_, R> {
    fn drop(&mut self) {
        if !self.done {
            self.batches.abandon(self.group);
        }
    }
}
