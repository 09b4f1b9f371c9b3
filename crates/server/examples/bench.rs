//! Load benchmark: N concurrent streams straight from a replaying upstream, then the same N
//! through citeflow, in one run. Prints throughput, per-chunk latency p50/p99 of both paths,
//! the latency citeflow adds, and citeflow's memory per open stream. Run by
//! `scripts/bench-server.sh`, which starts the upstream (with send stamps) and `citeflow serve`.
//!
//! `bench UPSTREAM_URL CITEFLOW_URL CITEFLOW_PID MODEL N[,N…]`

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio::sync::Barrier;

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

/// Resident memory of a process in KiB (Linux).
fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

struct Run {
    seconds: f64,
    chunks: u64,
    bytes: u64,
    latencies_us: Vec<u64>,
    failed: usize,
    peak_rss_kib: u64,
}

/// One stream: posts, reads every event, records each stamped chunk's latency.
async fn one(
    client: reqwest::Client,
    url: String,
    model: String,
) -> Result<(u64, u64, Vec<u64>), String> {
    let body = json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "q"}],
        "sources": [{"id": "source_3"}, {"id": "source_7"}]});
    let mut resp = client
        .post(format!("{url}/chat/completions"))
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !resp.status().is_success() {
        return Err(format!("status {}", resp.status()));
    }
    let mut lat = Vec::with_capacity(256);
    let mut chunks = 0;
    let mut bytes = 0;
    let mut carry = String::new();
    while let Some(b) = resp.chunk().await.map_err(|e| e.to_string())? {
        let t = now_us();
        bytes += b.len() as u64;
        carry.push_str(&String::from_utf8_lossy(&b));
        while let Some(i) = carry.find("\n\n") {
            let ev: String = carry.drain(..i + 2).collect();
            chunks += 1;
            if let Some(p) = ev.find("\"replay_sent_us\":") {
                let digits: String = ev[p + 17..]
                    .trim_start()
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Ok(sent) = digits.parse::<u128>() {
                    lat.push(t.saturating_sub(sent) as u64);
                }
            }
        }
    }
    Ok((chunks, bytes, lat))
}

async fn run(url: &str, model: &str, n: usize, pid: Option<&str>) -> Run {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(n)
        .build()
        .expect("client");
    let barrier = Arc::new(Barrier::new(n));
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (c, u, m, b) = (
                client.clone(),
                url.to_owned(),
                model.to_owned(),
                barrier.clone(),
            );
            tokio::spawn(async move {
                b.wait().await;
                one(c, u, m).await
            })
        })
        .collect();
    let sampler = pid.map(|p| {
        let p = p.to_owned();
        tokio::spawn(async move {
            let mut peak = 0;
            loop {
                peak = peak.max(rss_kib(&p));
                tokio::time::sleep(Duration::from_millis(20)).await;
                if peak == u64::MAX {
                    return peak;
                }
            }
        })
    });
    let mut r = Run {
        seconds: 0.0,
        chunks: 0,
        bytes: 0,
        latencies_us: Vec::new(),
        failed: 0,
        peak_rss_kib: 0,
    };
    let mut peak_seen = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok((c, b, l)) => {
                r.chunks += c;
                r.bytes += b;
                r.latencies_us.extend(l);
            }
            Err(e) => {
                r.failed += 1;
                if r.failed == 1 {
                    eprintln!("stream failed: {e}");
                }
            }
        }
        if let Some(p) = pid {
            peak_seen = peak_seen.max(rss_kib(p));
        }
    }
    r.seconds = start.elapsed().as_secs_f64();
    if let Some(s) = sampler {
        s.abort();
    }
    r.peak_rss_kib = peak_seen;
    r.latencies_us.sort_unstable();
    r
}

fn pct(v: &[u64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i] as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 5 {
        eprintln!("usage: bench UPSTREAM_URL CITEFLOW_URL CITEFLOW_PID MODEL N[,N…]");
        std::process::exit(2);
    }
    let (upstream, citeflow, pid, model) = (&a[0], &a[1], a[2].as_str(), &a[3]);
    let counts: Vec<usize> = a[4].split(',').filter_map(|s| s.parse().ok()).collect();
    println!("| streams | path | seconds | chunks/s | throughput vs direct | chunk latency p50 ms | p99 ms | added p50 ms | added p99 ms | failed | citeflow RSS per open stream |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for n in counts {
        // Warm both paths (connections, caches).
        run(upstream, model, n.min(50), None).await;
        run(citeflow, model, n.min(50), None).await;
        let direct = run(upstream, model, n, None).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let idle = rss_kib(pid);
        let through = run(citeflow, model, n, Some(pid)).await;
        let d_rate = direct.chunks as f64 / direct.seconds;
        let c_rate = through.chunks as f64 / through.seconds;
        // Chunks per second counts upstream chunks on both paths: citeflow adds one source-list
        // chunk per stream, which is not counted.
        let c_rate_upstream = (through.chunks.saturating_sub(n as u64)) as f64 / through.seconds;
        let per_stream_kib = through.peak_rss_kib.saturating_sub(idle) as f64 / n as f64;
        println!(
            "| {n} | direct | {:.2} | {:.0} | 100% | {:.2} | {:.2} | | | {} | |",
            direct.seconds,
            d_rate,
            pct(&direct.latencies_us, 0.5),
            pct(&direct.latencies_us, 0.99),
            direct.failed
        );
        println!(
            "| {n} | citeflow | {:.2} | {:.0} | {:.1}% | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.0} KiB (RSS {} → {} KiB) |",
            through.seconds,
            c_rate,
            100.0 * c_rate_upstream / d_rate,
            pct(&through.latencies_us, 0.5),
            pct(&through.latencies_us, 0.99),
            pct(&through.latencies_us, 0.5) - pct(&direct.latencies_us, 0.5),
            pct(&through.latencies_us, 0.99) - pct(&direct.latencies_us, 0.99),
            through.failed,
            per_stream_kib,
            idle,
            through.peak_rss_kib
        );
        let _ = (direct.bytes, through.bytes);
    }
}
