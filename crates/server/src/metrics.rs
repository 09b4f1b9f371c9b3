//! Counters and histograms, rendered as Prometheus text at `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Histogram bucket bounds in seconds.
const BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0,
    5.0,
];

#[derive(Debug, Default)]
struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Histogram {
    fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if s <= *b {
                self.counts[i].fetch_add(1, Relaxed);
            }
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_ns
            .fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    fn render(&self, name: &str, help: &str, out: &mut String) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{b}\"}} {}",
                self.counts[i].load(Relaxed)
            );
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {}", self.sum_ns.load(Relaxed) as f64 / 1e9);
        let _ = writeln!(out, "{name}_count {count}");
    }
}

/// The server's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    pub(crate) streams_started: AtomicU64,
    pub(crate) streams_completed: AtomicU64,
    pub(crate) streams_failed: AtomicU64,
    pub(crate) streams_interrupted: AtomicU64,
    pub(crate) streams_open: AtomicU64,
    pub(crate) completions: AtomicU64,
    pub(crate) chunks: AtomicU64,
    pub(crate) citations: AtomicU64,
    pub(crate) unresolved: AtomicU64,
    pub(crate) upstream_errors: AtomicU64,
    upstream_latency: Histogram,
    added_latency: Histogram,
}

impl Metrics {
    pub(crate) fn observe_upstream_latency(&self, d: Duration) {
        self.upstream_latency.observe(d);
    }

    pub(crate) fn observe_added_latency(&self, d: Duration) {
        self.added_latency.observe(d);
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let counters: [(&str, &str, &AtomicU64); 9] = [
            (
                "citeflow_streams_started_total",
                "Streams started.",
                &self.streams_started,
            ),
            (
                "citeflow_streams_completed_total",
                "Streams that ended normally.",
                &self.streams_completed,
            ),
            (
                "citeflow_streams_failed_total",
                "Streams that ended with an error event.",
                &self.streams_failed,
            ),
            (
                "citeflow_streams_interrupted_total",
                "Streams found running at start-up and marked interrupted.",
                &self.streams_interrupted,
            ),
            (
                "citeflow_completions_total",
                "Non-streaming chat completions.",
                &self.completions,
            ),
            (
                "citeflow_chunks_total",
                "Upstream chunks rewritten.",
                &self.chunks,
            ),
            (
                "citeflow_citations_total",
                "Resolved citations.",
                &self.citations,
            ),
            (
                "citeflow_unresolved_total",
                "Markers that did not resolve.",
                &self.unresolved,
            ),
            (
                "citeflow_upstream_errors_total",
                "Upstream failures.",
                &self.upstream_errors,
            ),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                v.load(Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP citeflow_streams_open Streams whose upstream generation is running.\n# TYPE citeflow_streams_open gauge\nciteflow_streams_open {}",
            self.streams_open.load(Relaxed)
        );
        self.upstream_latency.render(
            "citeflow_upstream_latency_seconds",
            "Time from sending the upstream request to its response headers.",
            &mut out,
        );
        self.added_latency.render(
            "citeflow_added_latency_seconds",
            "Time from receiving an upstream chunk to its rewritten event being persisted and published.",
            &mut out,
        );
        out
    }
}
