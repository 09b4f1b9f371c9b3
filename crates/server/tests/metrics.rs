//! `/metrics` after real requests through a real (replaying) upstream and a real SQLite store:
//! the exposition text is parsed (names, labels, values) and checked value by value.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use citeflow_replay::Script;
use citeflow_server::{AppState, StoreLocation};
use citeflow_store_sqlite::SqliteStore;
use serde_json::json;

use crate::support::{read_sse, Harness};

/// One sample of the exposition: name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

fn bad(line: &str) -> ! {
    panic!("not an exposition line: {line:?}")
}

/// Parses Prometheus / OpenMetrics text: every line that is not a comment is
/// `name{k="v",…} value`. Panics on a line it cannot read, naming it.
pub(crate) fn parse(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => bad(line),
        };
        let mut labels = BTreeMap::new();
        let mut rest = rest;
        if let Some(r) = rest.strip_prefix('{') {
            let mut chars = r.char_indices().peekable();
            let end = loop {
                let Some((i, c)) = chars.next() else {
                    bad(line)
                };
                if c == '}' {
                    break i;
                }
                if c == ',' {
                    continue;
                }
                let mut key = String::from(c);
                for (_, c) in chars.by_ref() {
                    if c == '=' {
                        break;
                    }
                    key.push(c);
                }
                if chars.next().map(|(_, c)| c) != Some('"') {
                    bad(line);
                }
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, c)) => value.push(c),
                            None => bad(line),
                        },
                        Some((_, c)) => value.push(c),
                        None => bad(line),
                    }
                }
                labels.insert(key, value);
            };
            rest = &r[end + 1..];
        }
        let value = rest.split_whitespace().next().unwrap_or_else(|| bad(line));
        let value = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| bad(line)),
        };
        out.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    out
}

/// The sum of the samples named `name` whose labels include `labels` (0 when none is there).
pub(crate) fn sum(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    parse(text)
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

/// The metrics text once no stream is open, and the open streams then: a stream's task lowers
/// the gauge just after the client read its last event, so the text is rendered again every
/// 50 ms until the gauge is 0, at most 5 s (the last text read when it never is).
pub(crate) async fn open_streams_settled(state: &AppState) -> (f64, String) {
    let mut text = state.metrics().render();
    for _ in 0..100 {
        let open = sum(&text, "citeflow_streams_open", &[]);
        if open == 0.0 {
            return (open, text);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        text = state.metrics().render();
    }
    (sum(&text, "citeflow_streams_open", &[]), text)
}

/// The buckets of histogram `name` with these labels, by bound, in bound order.
fn buckets(text: &str, name: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
    let bucket = format!("{name}_bucket");
    let mut b: Vec<(f64, f64)> = parse(text)
        .into_iter()
        .filter(|s| s.name == bucket)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| {
            let le = s.labels["le"].as_str();
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().expect("le is a number")
            };
            (bound, s.value)
        })
        .collect();
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    b
}

/// Checks a histogram: buckets cumulative (never decreasing), the `+Inf` bucket equal to the
/// count, and the count equal to `count`.
fn assert_histogram(text: &str, name: &str, labels: &[(&str, &str)], count: f64) {
    let b = buckets(text, name, labels);
    assert!(b.len() > 2, "{name}: buckets {b:?}");
    for w in b.windows(2) {
        assert!(w[0].1 <= w[1].1, "{name}: buckets not monotone: {b:?}");
    }
    let inf = b.last().expect("a bucket");
    assert_eq!(inf.0, f64::INFINITY, "{name}: last bucket {b:?}");
    assert_eq!(
        sum(text, &format!("{name}_count"), labels),
        count,
        "{name}_count"
    );
    assert_eq!(inf.1, count, "{name}: +Inf bucket");
    assert!(sum(text, &format!("{name}_sum"), labels) >= 0.0);
}

#[test]
fn the_parser_reads_labels_with_escapes() {
    let s = parse(
        "# TYPE x counter\nx_total{a=\"1\",b=\"q\\\"uote\"} 2\ny 3.5\nz_bucket{le=\"+Inf\"} 4\n# EOF\n",
    );
    assert_eq!(s.len(), 3);
    assert_eq!(s[0].labels["b"], "q\"uote");
    assert_eq!((s[0].value, s[1].value, s[2].value), (2.0, 3.5, 4.0));
    assert_eq!(s[2].labels["le"], "+Inf");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_streams_by_store_upstream_route_and_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("m.db");
    let store = Arc::new(SqliteStore::open(&db).expect("sqlite"));
    let h = Harness::with(|s| s.with_store(StoreLocation::Sqlite(db.clone())), store).await;
    h.replay.insert(
        "m",
        Script::chat(&["The cat ", "sat [[source_1]]", " on ", "the mat."]).paced(5),
    );
    let streams = 3;
    let mut ids = Vec::new();
    for _ in 0..streams {
        let r = h
            .post("/v1/chat/completions")
            .json(&json!({"model": "m", "stream": true, "messages": [],
                "sources": [{"id": "source_1", "title": "A"}]}))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        ids.push(
            r.headers()["x-citeflow-stream-id"]
                .to_str()
                .expect("id")
                .to_owned(),
        );
        let events = read_sse(r, usize::MAX).await;
        assert!(events.iter().any(|e| e.data.contains("\"done\"")));
    }
    // One resume of a finished stream, one unknown path.
    let r = h
        .get(&format!("/v1/streams/{}", ids[0]))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    read_sse(r, usize::MAX).await;
    assert_eq!(h.get("/nowhere").send().await.expect("send").status(), 404);
    // An invented method counts as `other`.
    let brew = reqwest::Method::from_bytes(b"BREW").expect("method");
    let r = h.client.request(brew, format!("{}/healthz", h.base)).send();
    assert_eq!(r.await.expect("send").status(), 405);

    // The generations record their end just after their last event: wait for it.
    let scrape = || async {
        let r = h.get("/metrics").send().await.expect("send");
        assert_eq!(
            r.headers()["content-type"],
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        r.text().await.expect("text")
    };
    let mut text = scrape().await;
    for _ in 0..100 {
        if sum(&text, "citeflow_streams_completed_total", &[]) == f64::from(streams) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = scrape().await;
    }
    assert!(text.ends_with("# EOF\n"), "{text}");
    let up = [("store", "sqlite"), ("upstream", "openai")];
    let n = f64::from(streams);
    assert_eq!(sum(&text, "citeflow_streams_started_total", &up), n);
    assert_eq!(sum(&text, "citeflow_streams_completed_total", &up), n);
    assert_eq!(sum(&text, "citeflow_streams_failed_total", &[]), 0.0);
    assert_eq!(sum(&text, "citeflow_streams_open", &up), 0.0);
    // The role chunk, four content chunks, the finish chunk.
    assert_eq!(sum(&text, "citeflow_chunks_total", &up), 6.0 * n);
    assert_eq!(
        sum(&text, "citeflow_citations_total", &[("store", "sqlite")]),
        n
    );
    assert_eq!(sum(&text, "citeflow_generated_tokens_total", &up), 4.0 * n);
    // Nothing was counted under another store or upstream.
    assert_eq!(sum(&text, "citeflow_streams_started_total", &[]), n);
    assert_eq!(
        sum(
            &text,
            "citeflow_streams_started_total",
            &[("upstream", "anthropic")]
        ),
        0.0
    );
    // Requests by matched route, method and status.
    let req = |route: &str, method: &str, status: &str| {
        sum(
            &text,
            "citeflow_http_requests_total",
            &[("route", route), ("method", method), ("status", status)],
        )
    };
    assert_eq!(req("/v1/chat/completions", "POST", "200"), n);
    assert_eq!(req("/v1/streams/{id}", "GET", "200"), 1.0);
    assert_eq!(req("unmatched", "GET", "404"), 1.0);
    assert_eq!(req("/healthz", "other", "405"), 1.0);
    // Histograms: time to first token and upstream latency once per stream, added latency
    // once per logged batch; buckets cumulative.
    assert_histogram(&text, "citeflow_first_token_seconds", &up, n);
    assert_histogram(&text, "citeflow_upstream_latency_seconds", &up, n);
    let added = sum(&text, "citeflow_added_latency_seconds_count", &up);
    assert!(added >= n, "an added latency per stream at least: {added}");
    assert_histogram(&text, "citeflow_added_latency_seconds", &up, added);
    assert_histogram(
        &text,
        "citeflow_http_response_seconds",
        &[("route", "/v1/chat/completions"), ("method", "POST")],
        n,
    );
}
