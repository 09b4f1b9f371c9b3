//! The queue between one generation and its live response ([`live`](crate::answer::live)):
//! one producer, one consumer, at most a given number of items waiting. It is what a bounded
//! `tokio::sync::mpsc` channel does for this one pair, in one uncontended lock a side: a
//! batch goes in under one lock, the consumer is woken once a batch and only when it waits
//! (its waker is taken by the wake), and an item is taken under one lock with no semaphore
//! to give its slot back to.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A new queue of at most `capacity` waiting items: its producer's and its consumer's ends.
pub(crate) fn queue<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            waker: None,
            producer_gone: false,
            consumer_gone: false,
        }),
        capacity,
    });
    (Producer(Arc::clone(&shared)), Consumer(shared))
}

struct Shared<T> {
    state: Mutex<State<T>>,
    capacity: usize,
}

struct State<T> {
    items: VecDeque<T>,
    /// The consumer's waker while it waits for an item.
    waker: Option<Waker>,
    producer_gone: bool,
    consumer_gone: bool,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Nothing panics while it is held; a poisoned lock's state is whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Why a batch did not all go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The queue held `capacity` items: the items from there on were not put in.
    Full,
    /// The consumer is gone: nothing was put in.
    Gone,
}

/// The producer's end. Dropping it ends the queue: the consumer gets the items still in
/// it, then the end.
pub(crate) struct Producer<T>(Arc<Shared<T>>);

impl<T> Producer<T> {
    /// Puts `items` in, in order, until the queue is full; wakes the consumer if it waits.
    ///
    /// # Errors
    /// [`Refused::Full`] when some did not fit (those before them went in), [`Refused::Gone`]
    /// when the consumer is gone.
    pub(crate) fn send_all(&self, items: impl IntoIterator<Item = T>) -> Result<(), Refused> {
        let (result, waker) = {
            let mut s = self.0.lock();
            if s.consumer_gone {
                return Err(Refused::Gone);
            }
            let mut result = Ok(());
            for item in items {
                if s.items.len() >= self.0.capacity {
                    result = Err(Refused::Full);
                    break;
                }
                s.items.push_back(item);
            }
            let waker = if s.items.is_empty() {
                None
            } else {
                s.waker.take()
            };
            (result, waker)
        };
        if let Some(w) = waker {
            w.wake();
        }
        result
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        let waker = {
            let mut s = self.0.lock();
            s.producer_gone = true;
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The consumer's end.
pub(crate) struct Consumer<T>(Arc<Shared<T>>);

impl<T> Consumer<T> {
    /// The next item; `None` once the producer is gone and every item was taken.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut s = self.0.lock();
        if let Some(item) = s.items.pop_front() {
            return Poll::Ready(Some(item));
        }
        if s.producer_gone {
            return Poll::Ready(None);
        }
        match &mut s.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            w => *w = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        let items = {
            let mut s = self.0.lock();
            s.consumer_gone = true;
            s.waker = None;
            std::mem::take(&mut s.items)
        };
        // Dropped outside the lock.
        drop(items);
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::time::Duration;

    use super::*;

    /// Items come out in order, the queue takes at most its capacity, and the consumer gets
    /// what was in it after the producer left, then the end.
    #[tokio::test]
    async fn items_in_order_up_to_capacity_then_the_end() {
        let (tx, mut rx) = queue::<u32>(3);
        assert_eq!(tx.send_all([1, 2]), Ok(()));
        assert_eq!(tx.send_all([3, 4, 5]), Err(Refused::Full));
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(poll_fn(|cx| rx.poll_recv(cx)).await);
        }
        assert_eq!(got, vec![Some(1), Some(2), Some(3)]);
        // Room again once taken.
        assert_eq!(tx.send_all([6]), Ok(()));
        drop(tx);
        assert_eq!(poll_fn(|cx| rx.poll_recv(cx)).await, Some(6));
        assert_eq!(poll_fn(|cx| rx.poll_recv(cx)).await, None);
    }

    /// A consumer waiting in another task is woken by a batch, and by the producer leaving.
    #[tokio::test]
    async fn a_waiting_consumer_is_woken() {
        let (tx, mut rx) = queue::<u32>(8);
        let waiting = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(i) = poll_fn(|cx| rx.poll_recv(cx)).await {
                got.push(i);
            }
            got
        });
        tokio::task::yield_now().await;
        assert_eq!(tx.send_all([1, 2]), Ok(()));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(tx.send_all([3]), Ok(()));
        drop(tx);
        let got = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("task");
        assert_eq!(got, vec![1, 2, 3]);
    }

    /// A producer whose consumer left is told so, and puts nothing in.
    #[test]
    fn a_gone_consumer_refuses() {
        let (tx, rx) = queue::<u32>(8);
        drop(rx);
        assert_eq!(tx.send_all([1]), Err(Refused::Gone));
    }
}
