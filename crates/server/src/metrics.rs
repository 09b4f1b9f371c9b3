//! Counters and histograms, rendered as Prometheus text at `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Bucket bounds of the per-chunk latencies, in seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0,
    5.0,
];

/// Bucket bounds of the time to the first token, in seconds (a local model on a CPU can take
/// seconds to read a long prompt).
const FIRST_TOKEN_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0,
];

/// Bucket bounds of the generation speed, in tokens per second.
const SPEED_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 150.0, 200.0, 500.0,
];

/// A Prometheus histogram over fixed bounds; the sum is kept in millionths.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe_value(&self, v: f64) {
        for (i, b) in self.bounds.iter().enumerate() {
            if v <= *b {
                self.counts[i].fetch_add(1, Relaxed);
            }
        }
        self.count.fetch_add(1, Relaxed);
        // Saturating float-to-int conversion: a negative or absurd value cannot wrap the sum.
        self.sum_micros.fetch_add((v * 1e6) as u64, Relaxed);
    }

    fn observe(&self, d: Duration) {
        self.observe_value(d.as_secs_f64());
    }

    fn render(&self, name: &str, help: &str, out: &mut String) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (i, b) in self.bounds.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{b}\"}} {}",
                self.counts[i].load(Relaxed)
            );
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "{name}_sum {}",
            self.sum_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "{name}_count {count}");
    }
}

/// The server's metrics.
#[derive(Debug)]
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
    first_token: Histogram,
    generation_speed: Histogram,
    pub(crate) generated_tokens: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            streams_started: AtomicU64::new(0),
            streams_completed: AtomicU64::new(0),
            streams_failed: AtomicU64::new(0),
            streams_interrupted: AtomicU64::new(0),
            streams_open: AtomicU64::new(0),
            completions: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
            citations: AtomicU64::new(0),
            unresolved: AtomicU64::new(0),
            upstream_errors: AtomicU64::new(0),
            upstream_latency: Histogram::new(LATENCY_BUCKETS),
            added_latency: Histogram::new(LATENCY_BUCKETS),
            first_token: Histogram::new(FIRST_TOKEN_BUCKETS),
            generation_speed: Histogram::new(SPEED_BUCKETS),
            generated_tokens: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    pub(crate) fn observe_first_token(&self, d: Duration) {
        self.first_token.observe(d);
    }

    pub(crate) fn observe_generation_speed(&self, tokens_per_second: f64) {
        self.generation_speed.observe_value(tokens_per_second);
    }

    pub(crate) fn observe_upstream_latency(&self, d: Duration) {
        self.upstream_latency.observe(d);
    }

    pub(crate) fn observe_added_latency(&self, d: Duration) {
        self.added_latency.observe(d);
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let counters: [(&str, &str, &AtomicU64); 10] = [
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
            (
                "citeflow_generated_tokens_total",
                "Tokens the upstream generated in streamed answers (its usage count, else its content chunks).",
                &self.generated_tokens,
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
        self.first_token.render(
            "citeflow_first_token_seconds",
            "Time to first token: from sending a streamed request upstream to its first content chunk.",
            &mut out,
        );
        self.generation_speed.render(
            "citeflow_generation_tokens_per_second",
            "Generation speed of each streamed answer, from its first to its last content chunk.",
            &mut out,
        );
        out
    }
}
