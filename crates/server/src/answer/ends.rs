//! What cuts a response's feed short besides its own end, in one layer: the shutdown (the
//! feed then ends with the format's shutdown frame, [`crate::ops::shutdown`]) and a failure
//! the store did not take (its error event, [`crate::unrecorded`]). Both signals are polled
//! only after their wake-up ([`cut_by`]): a frame passes one flag read for the two.

use std::pin::pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::{select, Either};
use futures_util::{Stream, StreamExt};

use crate::cut::cut_by;
use crate::state::AppState;

/// Not cut (yet).
const OPEN: u8 = 0;
/// Cut by the shutdown.
const INTERRUPTED: u8 = 1;
/// Cut by a failure the store did not take.
const UNRECORDED: u8 = 2;

/// `feed` of stream `stream_id` until the server interrupts its streams (then
/// `shutdown_frame`) or the stream has a failure the store did not take (checked first); at
/// the end, cut or not, that failure's error event framed by `failure_frame`, if there is
/// one.
pub(crate) fn until_cut<S>(
    state: &AppState,
    stream_id: &str,
    feed: S,
    shutdown_frame: Bytes,
    failure_frame: fn(&str) -> Bytes,
) -> impl Stream<Item = Bytes> + Send + 'static
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let cut = Arc::new(AtomicU8::new(OPEN));
    let unrecorded = Arc::clone(&state.unrecorded);
    let id = stream_id.to_owned();
    let signal = {
        let (cut, unrecorded, id) = (Arc::clone(&cut), Arc::clone(&unrecorded), id.clone());
        let interrupted = crate::ops::shutdown::interrupted(state);
        async move {
            let failed = pin!(unrecorded.wait_for(&id));
            let by = match select(failed, pin!(interrupted)).await {
                Either::Left(_) => UNRECORDED,
                Either::Right(_) => INTERRUPTED,
            };
            cut.store(by, Ordering::SeqCst);
        }
    };
    cut_by(Box::pin(feed), Box::pin(signal)).chain(
        futures_util::stream::once(async move {
            let shutdown = (cut.load(Ordering::SeqCst) == INTERRUPTED).then_some(shutdown_frame);
            let failure = unrecorded.error_of(&id).map(|data| failure_frame(&data));
            futures_util::stream::iter(shutdown.into_iter().chain(failure))
        })
        .flatten(),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Limits, ServerSettings};

    fn state() -> AppState {
        let limits = Limits {
            shutdown_grace_ms: 10,
            ..Limits::default()
        };
        AppState::new(
            ServerSettings::new("http://127.0.0.1:9/v1").with_limits(limits),
            Arc::new(citeflow_store::MemoryStore::new()),
        )
    }

    fn unused(_: &str) -> Bytes {
        Bytes::from_static(b"data: unrecorded\n\n")
    }

    #[tokio::test]
    async fn a_feed_cut_by_the_shutdown_ends_with_the_event_and_one_that_ends_does_not() {
        let s = state();
        let ended = until_cut(
            &s,
            "strm_a",
            futures_util::stream::iter([Bytes::from_static(b"data: a\n\n")]),
            Bytes::from_static(b"data: end\n\n"),
            unused,
        );
        assert_eq!(ended.collect::<Vec<_>>().await.len(), 1);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        tx.send(Bytes::from_static(b"data: a\n\n")).expect("send");
        let open = until_cut(
            &s,
            "strm_b",
            tokio_stream_of(rx),
            Bytes::from_static(b"data: end\n\n"),
            unused,
        );
        let reader = tokio::spawn(open.collect::<Vec<_>>());
        tokio::time::sleep(Duration::from_millis(20)).await;
        s.begin_shutdown();
        assert_eq!(
            reader.await.expect("join"),
            vec![
                Bytes::from_static(b"data: a\n\n"),
                Bytes::from_static(b"data: end\n\n")
            ],
            "the event, then the last one"
        );
    }

    fn tokio_stream_of<T: Send + 'static>(
        mut rx: tokio::sync::mpsc::UnboundedReceiver<T>,
    ) -> impl Stream<Item = T> + Send + 'static {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
