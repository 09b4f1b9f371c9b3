//! Graceful shutdown: when [`launch`](crate::launch)'s shutdown future resolves (SIGTERM or
//! SIGINT in `citeflow serve`), the server stops accepting connections and lets the streams
//! being generated finish, for up to [`Limits::shutdown_grace_ms`](crate::Limits). Past it,
//! every SSE response still open ends with a `shutting_down` error event (no `id:`, so a
//! client's `Last-Event-ID` stays on the last logged event). The interrupted streams are not
//! marked finished: in a durable store they stay `running` until a server starts on it again,
//! marks them `interrupted` and replays them to whoever resumes with `Last-Event-ID`. One log
//! line says how many streams finished during the grace period and how many were interrupted.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::code::ErrorCode;
use crate::state::AppState;

/// The code of the error event an interrupted stream ends with (each output format frames it:
/// [`Answer::shutdown_frame`](crate::answer::Answer::shutdown_frame)).
pub(crate) const CODE: ErrorCode = ErrorCode::ShuttingDown;

/// Its message.
pub(crate) const MESSAGE: &str = "the server is shutting down before this answer finished; \
    resume it with Last-Event-ID (GET /v1/streams/{id}) once a server is back";

/// How long the open responses get to send their last event once interrupted.
const FLUSH: Duration = Duration::from_secs(2);

/// Resolves once the server interrupts its streams ([`AppState::begin_shutdown`]); never
/// once the state is gone (nothing will interrupt them then). A response's feed ends there
/// with its format's shutdown frame ([`crate::answer::ends`]).
pub(crate) fn interrupted(state: &AppState) -> impl Future<Output = ()> + Send + 'static {
    let mut signal = state.shutdown.clone();
    async move {
        if signal.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What a graceful shutdown did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Streams whose generation ended (completed or failed) during the grace period.
    pub(crate) finished: u64,
    /// Streams still being generated when the grace period ran out.
    pub(crate) interrupted: u64,
}

/// Drives `served` (the server, which stops accepting once `signal` resolves and then ends
/// when its last connection closes): after `signal`, waits up to the grace period for it to
/// end and for the generations running here (a client may have left one) to end too; past
/// it, interrupts the open streams and gives their responses [`FLUSH`] to end. Logs and
/// returns the [`Outcome`] (`None` when serving ended without a signal).
pub(crate) async fn drive(
    state: &AppState,
    served: impl Future<Output = ()>,
    signal: impl Future<Output = ()>,
) -> Option<Outcome> {
    tokio::pin!(served, signal);
    let mut served_done = false;
    tokio::select! {
        biased;
        () = &mut signal => {}
        () = &mut served => {
            // Ended with the signal (no connection was open), or by itself.
            served_done = true;
            futures_util::FutureExt::now_or_never(&mut signal)?;
        }
    }
    let m = &state.metrics;
    let grace = Duration::from_millis(state.settings.limits.shutdown_grace_ms);
    let (open, closed) = (m.open_streams(), m.closed_streams());
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + grace;
    tracing::info!(
        open_streams = open,
        grace_ms = grace.as_millis() as u64,
        "shutting down: no new connections; open streams may finish within the grace period"
    );
    let drained = loop {
        if served_done && m.open_streams() == 0 {
            break true;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            break false;
        }
        let tick = tokio::time::sleep_until(deadline.min(now + Duration::from_millis(20)));
        tokio::select! {
            () = &mut served, if !served_done => served_done = true,
            () = tick => {}
        }
    };
    let outcome = Outcome {
        finished: m.closed_streams().saturating_sub(closed),
        interrupted: if drained { 0 } else { m.open_streams() },
    };
    if !drained {
        state.begin_shutdown();
        if !served_done && tokio::time::timeout(FLUSH, &mut served).await.is_err() {
            tracing::warn!("connections still open after the grace period; closing them");
        }
    }
    tracing::info!(
        finished = outcome.finished,
        interrupted = outcome.interrupted,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "shutdown: {} streams finished, {} interrupted",
        outcome.finished,
        outcome.interrupted
    );
    Some(outcome)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Limits, ServerSettings};

    fn state(grace_ms: u64) -> AppState {
        let limits = Limits {
            shutdown_grace_ms: grace_ms,
            ..Limits::default()
        };
        AppState::new(
            ServerSettings::new("http://127.0.0.1:9/v1").with_limits(limits),
            Arc::new(citeflow_store::MemoryStore::new()),
        )
    }

    #[tokio::test]
    async fn a_stream_past_the_grace_period_is_counted_interrupted() {
        let s = state(50);
        s.metrics.stream_opened(crate::metrics::OPENAI);
        s.metrics.stream_opened(crate::metrics::OPENAI);
        let closer = {
            let s = s.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                s.metrics.stream_closed(crate::metrics::OPENAI, true);
                // Serving ends once the interrupted responses are gone.
                let mut rx = s.shutdown.clone();
                let _ = rx.wait_for(|v| *v).await;
            }
        };
        let outcome = drive(&s, closer, async {}).await;
        assert_eq!(
            outcome,
            Some(Outcome {
                finished: 1,
                interrupted: 1
            })
        );
        assert!(*s.shutdown.borrow());
    }

    #[tokio::test]
    async fn a_generation_without_a_client_is_waited_for_and_an_idle_server_stops_at_once() {
        // Serving ends with the signal (no connection) while a generation still runs.
        let s = state(5_000);
        s.metrics.stream_opened(crate::metrics::OPENAI);
        let ender = {
            let s = s.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                s.metrics.stream_closed(crate::metrics::OPENAI, true);
            })
        };
        let started = Instant::now();
        let outcome = drive(&s, async {}, async {}).await;
        assert_eq!(
            outcome,
            Some(Outcome {
                finished: 1,
                interrupted: 0
            })
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(!*s.shutdown.borrow(), "nothing to interrupt");
        ender.await.expect("join");
        // Nothing open: done at once. Serving that ends without a signal: no shutdown.
        let started = Instant::now();
        assert_eq!(
            drive(&s, async {}, async {}).await,
            Some(Outcome {
                finished: 0,
                interrupted: 0
            })
        );
        assert!(started.elapsed() < Duration::from_millis(500));
        assert_eq!(drive(&s, async {}, std::future::pending()).await, None);
    }
}
