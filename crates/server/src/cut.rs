//! A feed that a signal cuts short ([`cut_by`]): what `StreamExt::take_until` does, with the
//! signal polled only after its own wake-up fired. `take_until` polls it before every item, and
//! a response's feed is cut by signals (the shutdown, a failure the store did not take; one
//! layer for both, [`crate::answer::ends`]) over thousands of frames that neither concerns:
//! each poll would re-register its waker under a lock. Here a frame costs one flag read, and the task's waker is registered only
//! when the feed has nothing (the one time the task waits). The same wake-up ([`OwnWake`])
//! serves the keep-alive's timer ([`crate::sse::response`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;
use futures_util::Stream;

/// `feed`'s items until `signal` resolves (checked before each item, as `take_until` does);
/// then, or at the feed's end, the end.
pub(crate) fn cut_by<S, F>(feed: S, signal: F) -> CutBy<S, F>
where
    S: Stream + Unpin,
    F: Future<Output = ()> + Unpin,
{
    CutBy {
        feed,
        signal: Some(signal),
        wake: OwnWake::new(),
        ended: false,
    }
}

/// The own wake-up of something a feed's task polls only when it may be ready (a signal, a
/// timer): it is polled with [`OwnWake::context`], whose waker marks it due and wakes the
/// task. The task registers its waker ([`OwnWake::park`]) only when its feed has nothing,
/// the one time it waits; between, a poll costs a flag read.
pub(crate) struct OwnWake {
    woke: Arc<Woke>,
    /// Wakes `woke`.
    waker: Waker,
}

impl OwnWake {
    /// Due at once: polled at the first chance, which registers its waker.
    pub(crate) fn new() -> Self {
        let woke = Arc::new(Woke {
            pending: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        OwnWake {
            waker: Waker::from(Arc::clone(&woke)),
            woke,
        }
    }

    /// Whether it is due (woken, or not polled since [`OwnWake::rearm`]); clears that.
    pub(crate) fn take_due(&self) -> bool {
        self.woke.pending.swap(false, Ordering::AcqRel)
    }

    /// Marks it due: for a poll that left it ready without registering its waker again.
    pub(crate) fn rearm(&self) {
        self.woke.pending.store(true, Ordering::Release);
    }

    /// The context to poll it with.
    pub(crate) fn context(&self) -> Context<'_> {
        Context::from_waker(&self.waker)
    }

    /// After the feed said `Pending`: registers the task's waker, then says whether it came
    /// due meanwhile (a wake-up before the registration is not lost: poll again).
    pub(crate) fn park(&self, cx: &Context<'_>) -> bool {
        self.woke.task.register(cx.waker());
        self.woke.pending.load(Ordering::Acquire)
    }
}

/// The own wake-up: marks it due, then wakes the task that polls the feed.
#[derive(Debug)]
struct Woke {
    /// Woken (or not polled yet) since its last poll.
    pending: AtomicBool,
    /// The task polling the feed, as of its last wait.
    task: AtomicWaker,
}

impl Wake for Woke {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.pending.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// The stream [`cut_by`] returns.
pub(crate) struct CutBy<S, F> {
    feed: S,
    /// `None` once resolved.
    signal: Option<F>,
    /// The signal's wake-up.
    wake: OwnWake,
    ended: bool,
}

impl<S, F> Stream for CutBy<S, F>
where
    S: Stream + Unpin,
    F: Future<Output = ()> + Unpin,
{
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            if let Some(signal) = &mut this.signal {
                if this.wake.take_due()
                    && Pin::new(signal).poll(&mut this.wake.context()).is_ready()
                {
                    this.signal = None;
                    this.ended = true;
                    return Poll::Ready(None);
                }
            }
            match Pin::new(&mut this.feed).poll_next(cx) {
                Poll::Ready(None) => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(item)) => return Poll::Ready(Some(item)),
                Poll::Pending if this.signal.is_none() => return Poll::Pending,
                Poll::Pending => {
                    if !this.wake.park(cx) {
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;
    use tokio::sync::{mpsc, oneshot};

    use super::*;

    /// Items pass until the signal fires; then the feed ends, even with items still queued;
    /// a signal that never fires lets the feed run to its end.
    #[tokio::test]
    async fn the_signal_cuts_the_feed_and_only_then() {
        let (tx, rx) = mpsc::unbounded_channel::<u32>();
        let (stop, stopped) = oneshot::channel::<()>();
        let feed = tokio_stream_of(rx);
        let mut cut = cut_by(
            feed,
            Box::pin(async move {
                let _ = stopped.await;
            }),
        );
        tx.send(1).expect("send");
        tx.send(2).expect("send");
        assert_eq!(cut.next().await, Some(1));
        assert_eq!(cut.next().await, Some(2));
        // Waiting on the feed: the signal's wake-up alone must end it.
        let waiting = tokio::spawn(async move {
            let rest: Vec<u32> = cut.collect().await;
            rest
        });
        tokio::task::yield_now().await;
        stop.send(()).expect("stop");
        let rest = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("ended by the signal")
            .expect("task");
        assert_eq!(rest, Vec::<u32>::new());

        let (tx, rx) = mpsc::unbounded_channel::<u32>();
        let never = Box::pin(std::future::pending::<()>());
        let cut = cut_by(tokio_stream_of(rx), never);
        for i in 0..5 {
            tx.send(i).expect("send");
        }
        drop(tx);
        assert_eq!(cut.collect::<Vec<u32>>().await, vec![0, 1, 2, 3, 4]);
    }

    /// A signal that fires while items flow (the feed never waited, so the task's waker
    /// was never registered) cuts the feed before its next item.
    #[tokio::test]
    async fn a_signal_between_items_cuts_before_the_next() {
        let (tx, rx) = mpsc::unbounded_channel::<u32>();
        let (stop, stopped) = oneshot::channel::<()>();
        for i in 1..=3 {
            tx.send(i).expect("send");
        }
        let mut cut = cut_by(
            tokio_stream_of(rx),
            Box::pin(async move {
                let _ = stopped.await;
            }),
        );
        assert_eq!(cut.next().await, Some(1));
        stop.send(()).expect("stop");
        assert_eq!(cut.next().await, None);
        assert_eq!(cut.next().await, None);
    }

    /// A signal that already fired ends the feed before its first item.
    #[tokio::test]
    async fn a_fired_signal_sends_nothing() {
        let (tx, rx) = mpsc::unbounded_channel::<u32>();
        tx.send(1).expect("send");
        let cut = cut_by(tokio_stream_of(rx), Box::pin(std::future::ready(())));
        assert_eq!(cut.collect::<Vec<u32>>().await, Vec::<u32>::new());
    }

    fn tokio_stream_of(
        mut rx: mpsc::UnboundedReceiver<u32>,
    ) -> impl Stream<Item = u32> + Unpin + Send {
        Box::pin(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}
