//! The server's metrics, kept with the Prometheus project's Rust client (`prometheus-client`)
//! and rendered at `GET /metrics` in the OpenMetrics text format (which Prometheus scrapes).
//!
//! Labels:
//! - `store` (`memory`, `sqlite`, `redis`) on every stream and citation metric: one value per
//!   process, set from [`ServerSettings::store`](crate::ServerSettings);
//! - `upstream` (`openai`: `--upstream`; `anthropic`: `--anthropic-upstream`) on what depends
//!   on an upstream: streams, chunks, upstream latency and errors, time to first token, added
//!   latency, generation speed, tokens, non-streaming answers;
//! - `route` (the matched path template, such as `/v1/streams/{id}`), `method` and `status`
//!   on `citeflow_http_requests_total` and `citeflow_http_response_seconds`.
//!
//! The names are the ones the hand-written exposition had (`citeflow_streams_open`,
//! `citeflow_first_token_seconds`, …); `docs/operations.md` lists them.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::settings::{ServerSettings, StoreLocation};

/// The `upstream` label of `--upstream` (OpenAI-compatible: chat completions, responses).
pub(crate) const OPENAI: &str = "openai";
/// The `upstream` label of `--anthropic-upstream` (messages).
pub(crate) const ANTHROPIC: &str = "anthropic";

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

/// Bucket bounds of the time to a response's headers, in seconds.
const RESPONSE_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The `upstream` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Up {
    upstream: &'static str,
}

/// The labels of an HTTP request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: Cow<'static, str>,
    method: String,
    status: u16,
}

/// The labels of an HTTP response time.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteOnly {
    route: Cow<'static, str>,
    method: String,
}

/// Makes histograms over fixed bounds.
#[derive(Clone, Copy)]
struct Buckets(&'static [f64]);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(self.0.iter().copied())
    }
}

/// A counter per upstream.
#[derive(Debug, Default)]
pub(crate) struct PerUpstream(Family<Up, Counter>);

impl PerUpstream {
    /// Adds one for `upstream`.
    pub(crate) fn inc(&self, upstream: &'static str) {
        self.0.get_or_create(&Up { upstream }).inc();
    }

    /// Adds `n` for `upstream`.
    pub(crate) fn add(&self, upstream: &'static str, n: u64) {
        self.0.get_or_create(&Up { upstream }).inc_by(n);
    }

    /// The counter of `upstream` itself (it shares its count), for a caller that adds to it
    /// often: one look-up in the family instead of one per addition.
    pub(crate) fn counter(&self, upstream: &'static str) -> Counter {
        self.0.get_or_create(&Up { upstream }).clone()
    }
}

/// A histogram per upstream.
pub(crate) struct HistogramPerUpstream(Family<Up, Histogram, Buckets>);

impl HistogramPerUpstream {
    fn new(bounds: &'static [f64]) -> Self {
        HistogramPerUpstream(Family::new_with_constructor(Buckets(bounds)))
    }

    fn observe(&self, upstream: &'static str, v: f64) {
        self.0.get_or_create(&Up { upstream }).observe(v);
    }
}

impl std::fmt::Debug for HistogramPerUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HistogramPerUpstream")
    }
}

/// The server's metrics.
pub struct Metrics {
    pub(crate) streams_started: PerUpstream,
    pub(crate) streams_completed: PerUpstream,
    pub(crate) streams_failed: PerUpstream,
    pub(crate) streams_interrupted: Counter,
    /// Streams whose upstream generation is running (every upstream).
    streams_open_total: Gauge,
    streams_open: Family<Up, Gauge>,
    pub(crate) completions: PerUpstream,
    pub(crate) chunks: PerUpstream,
    pub(crate) citations: Counter,
    pub(crate) unresolved: Counter,
    pub(crate) upstream_errors: PerUpstream,
    pub(crate) generated_tokens: PerUpstream,
    upstream_latency: HistogramPerUpstream,
    added_latency: HistogramPerUpstream,
    first_token: HistogramPerUpstream,
    generation_speed: HistogramPerUpstream,
    http_requests: Family<RouteLabels, Counter>,
    http_response: Family<RouteOnly, Histogram, Buckets>,
    /// What is rendered: the stream metrics (with the `store` label) …
    registry: Registry,
    /// … and the HTTP ones.
    http_registry: Registry,
    /// The base URL of `--anthropic-upstream`, to tell the upstreams apart.
    anthropic_base: Option<String>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new("memory", None)
    }
}

/// The `store` label of a store location.
fn store_label(store: &StoreLocation) -> &'static str {
    match store {
        StoreLocation::Memory => "memory",
        StoreLocation::Sqlite(_) => "sqlite",
        StoreLocation::Redis(_) => "redis",
    }
}

impl Metrics {
    /// The metrics of a server with these settings (their store names the `store` label).
    pub(crate) fn for_settings(settings: &ServerSettings) -> Self {
        Metrics::new(
            store_label(&settings.store),
            settings.anthropic_upstream.clone(),
        )
    }

    fn new(store: &'static str, anthropic_base: Option<String>) -> Self {
        let m = Metrics {
            streams_started: PerUpstream::default(),
            streams_completed: PerUpstream::default(),
            streams_failed: PerUpstream::default(),
            streams_interrupted: Counter::default(),
            streams_open_total: Gauge::default(),
            streams_open: Family::default(),
            completions: PerUpstream::default(),
            chunks: PerUpstream::default(),
            citations: Counter::default(),
            unresolved: Counter::default(),
            upstream_errors: PerUpstream::default(),
            generated_tokens: PerUpstream::default(),
            upstream_latency: HistogramPerUpstream::new(LATENCY_BUCKETS),
            added_latency: HistogramPerUpstream::new(LATENCY_BUCKETS),
            first_token: HistogramPerUpstream::new(FIRST_TOKEN_BUCKETS),
            generation_speed: HistogramPerUpstream::new(SPEED_BUCKETS),
            http_requests: Family::default(),
            http_response: Family::new_with_constructor(Buckets(RESPONSE_BUCKETS)),
            registry: Registry::with_labels(
                [(Cow::Borrowed("store"), Cow::Borrowed(store))].into_iter(),
            ),
            http_registry: Registry::default(),
            anthropic_base: anthropic_base.map(|u| u.trim_end_matches('/').to_owned()),
        };
        m.register()
    }

    /// Registers every metric under its name (a counter's `_total` is added by the encoder).
    fn register(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "citeflow_streams_started",
            "Streams started",
            self.streams_started.0.clone(),
        );
        r.register(
            "citeflow_streams_completed",
            "Streams that ended normally",
            self.streams_completed.0.clone(),
        );
        r.register(
            "citeflow_streams_failed",
            "Streams that ended with an error event",
            self.streams_failed.0.clone(),
        );
        r.register(
            "citeflow_streams_interrupted",
            "Streams found running at start-up and marked interrupted",
            self.streams_interrupted.clone(),
        );
        r.register(
            "citeflow_completions",
            "Non-streaming answers",
            self.completions.0.clone(),
        );
        r.register(
            "citeflow_chunks",
            "Upstream chunks rewritten",
            self.chunks.0.clone(),
        );
        r.register(
            "citeflow_citations",
            "Resolved citations",
            self.citations.clone(),
        );
        r.register(
            "citeflow_unresolved",
            "Markers that did not resolve",
            self.unresolved.clone(),
        );
        r.register(
            "citeflow_upstream_errors",
            "Upstream failures",
            self.upstream_errors.0.clone(),
        );
        r.register(
            "citeflow_generated_tokens",
            "Tokens the upstream generated in streamed answers (its usage count, else its \
             content chunks)",
            self.generated_tokens.0.clone(),
        );
        r.register(
            "citeflow_streams_open",
            "Streams whose upstream generation is running",
            self.streams_open.clone(),
        );
        r.register(
            "citeflow_upstream_latency_seconds",
            "Time from sending the upstream request to its response headers",
            self.upstream_latency.0.clone(),
        );
        r.register(
            "citeflow_added_latency_seconds",
            "Time from receiving an upstream chunk to its rewritten event being persisted and \
             published",
            self.added_latency.0.clone(),
        );
        r.register(
            "citeflow_first_token_seconds",
            "Time to first token: from sending a streamed request upstream to its first \
             content chunk",
            self.first_token.0.clone(),
        );
        r.register(
            "citeflow_generation_tokens_per_second",
            "Generation speed of each streamed answer, from its first to its last content chunk",
            self.generation_speed.0.clone(),
        );
        let h = &mut self.http_registry;
        h.register(
            "citeflow_http_requests",
            "HTTP requests answered, by matched route, method and status",
            self.http_requests.clone(),
        );
        h.register(
            "citeflow_http_response_seconds",
            "Time from a request's arrival to its response headers (a stream's first byte)",
            self.http_response.clone(),
        );
        self
    }

    /// The `upstream` label of a request to `url`: `anthropic` under `--anthropic-upstream`,
    /// else `openai`.
    pub(crate) fn upstream_of(&self, url: &str) -> &'static str {
        match &self.anthropic_base {
            Some(base) if url.starts_with(base.as_str()) => ANTHROPIC,
            _ => OPENAI,
        }
    }

    /// A stream of `upstream` starts: counted as started and open.
    pub(crate) fn stream_opened(&self, upstream: &'static str) {
        self.streams_started.inc(upstream);
        self.streams_open.get_or_create(&Up { upstream }).inc();
        self.streams_open_total.inc();
    }

    /// A stream of `upstream` ended (`completed` or failed).
    pub(crate) fn stream_closed(&self, upstream: &'static str, completed: bool) {
        self.streams_open.get_or_create(&Up { upstream }).dec();
        self.streams_open_total.dec();
        if completed {
            self.streams_completed.inc(upstream);
        } else {
            self.streams_failed.inc(upstream);
        }
    }

    /// Streams whose generation is running here, of every upstream.
    pub(crate) fn open_streams(&self) -> u64 {
        u64::try_from(self.streams_open_total.get()).unwrap_or(0)
    }

    /// Streams that ended here (completed or failed), of every upstream.
    pub(crate) fn closed_streams(&self) -> u64 {
        let sum = |f: &PerUpstream| {
            [OPENAI, ANTHROPIC]
                .iter()
                .map(|u| f.0.get(&Up { upstream: u }).map_or(0, |c| c.get()))
                .sum::<u64>()
        };
        sum(&self.streams_completed) + sum(&self.streams_failed)
    }

    /// Time to the first token of a chat completions stream (upstream `openai`).
    pub(crate) fn observe_first_token(&self, d: Duration) {
        self.first_token.observe(OPENAI, d.as_secs_f64());
    }

    /// Generation speed of a chat completions stream (upstream `openai`).
    pub(crate) fn observe_generation_speed(&self, tokens_per_second: f64) {
        self.generation_speed.observe(OPENAI, tokens_per_second);
    }

    /// Time to the upstream's response headers.
    pub(crate) fn observe_upstream_latency(&self, upstream: &'static str, d: Duration) {
        self.upstream_latency.observe(upstream, d.as_secs_f64());
    }

    /// Added latency of a chat completions chunk (upstream `openai`).
    /// The histogram of the latency the server adds to a batch of upstream events (in
    /// seconds; it shares its observations), taken once by an answer's runner.
    pub(crate) fn added_latency(&self) -> Histogram {
        self.added_latency
            .0
            .get_or_create(&Up { upstream: OPENAI })
            .clone()
    }

    /// OpenMetrics text exposition (ends with `# EOF`).
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::text::encode_registry(&mut out, &self.registry);
        let _ = prometheus_client::encoding::text::encode_registry(&mut out, &self.http_registry);
        let _ = prometheus_client::encoding::text::encode_eof(&mut out);
        out
    }
}

/// The content type of [`Metrics::render`].
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The middleware counting each request by its matched route, method and status, and timing
/// it to its response headers.
pub(crate) async fn track(
    axum::extract::State(m): axum::extract::State<Arc<Metrics>>,
    req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let route: Cow<'static, str> = match req.extensions().get::<MatchedPath>() {
        Some(p) => Cow::Owned(p.as_str().to_owned()),
        None => Cow::Borrowed("unmatched"),
    };
    // Standard methods by name; any other one (a client may invent them) as `other`, so
    // clients cannot grow the number of series.
    let method = match *req.method() {
        Method::GET
        | Method::POST
        | Method::PUT
        | Method::DELETE
        | Method::HEAD
        | Method::OPTIONS
        | Method::PATCH => req.method().as_str().to_owned(),
        _ => "other".to_owned(),
    };
    let resp = next.run(req).await;
    m.http_response
        .get_or_create(&RouteOnly {
            route: route.clone(),
            method: method.clone(),
        })
        .observe(started.elapsed().as_secs_f64());
    m.http_requests
        .get_or_create(&RouteLabels {
            route,
            method,
            status: resp.status().as_u16(),
        })
        .inc();
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_has_labels_and_the_old_names() {
        let m = Metrics::new("sqlite", Some("http://127.0.0.1:9/v1/".into()));
        assert_eq!(m.upstream_of("http://127.0.0.1:9/v1/messages"), ANTHROPIC);
        assert_eq!(m.upstream_of("http://127.0.0.1:8/v1/chat"), OPENAI);
        m.stream_opened(OPENAI);
        m.stream_opened(ANTHROPIC);
        m.stream_closed(ANTHROPIC, true);
        m.observe_first_token(Duration::from_millis(300));
        let text = m.render();
        for line in [
            "citeflow_streams_started_total{store=\"sqlite\",upstream=\"openai\"} 1",
            "citeflow_streams_started_total{store=\"sqlite\",upstream=\"anthropic\"} 1",
            "citeflow_streams_completed_total{store=\"sqlite\",upstream=\"anthropic\"} 1",
            "citeflow_streams_open{store=\"sqlite\",upstream=\"openai\"} 1",
            "citeflow_streams_open{store=\"sqlite\",upstream=\"anthropic\"} 0",
            "citeflow_first_token_seconds_bucket{store=\"sqlite\",le=\"0.25\",upstream=\"openai\"} 0",
            "citeflow_first_token_seconds_bucket{store=\"sqlite\",le=\"0.5\",upstream=\"openai\"} 1",
            "citeflow_first_token_seconds_count{store=\"sqlite\",upstream=\"openai\"} 1",
            "citeflow_streams_interrupted_total{store=\"sqlite\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        assert_eq!((m.open_streams(), m.closed_streams()), (1, 1));
    }
}
