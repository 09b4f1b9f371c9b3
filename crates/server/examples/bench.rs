//! Load benchmark: N concurrent streams straight from a replaying upstream, then the same N
//! through a pass-through proxy on citeflow's stack (the `passthrough` example: bytes copied,
//! no work), then through citeflow, in one run. Prints throughput, per-chunk latency p50/p99
//! of each path, the latency citeflow adds, citeflow's memory per open stream, and the CPU
//! time per chunk of every process (upstream, proxy, this client), which shared-machine noise
//! disturbs far less than throughput. Run by `scripts/bench-server.sh`, which starts the
//! upstream (with send stamps), the pass-through proxy and `citeflow serve`.
//!
//! Each count of streams runs twice: all streams starting at once, so that every stream's
//! chunks arrive in the same instant (a burst of N chunks each pace interval: the worst case),
//! then with starts spread evenly over one pace interval `SPREAD_MS` (chunks arrive evenly, as
//! independent users' streams do).
//!
//! With `BENCH_ROUNDS=R` (default 1), the pass-through proxy and citeflow run R times in turn
//! after the direct run, and each ratio line is the round with the median CPU ratio, followed
//! by every round's: on this shared machine one pair of runs can move by a tenth or more.
//!
//! With `DURABLE_URL DURABLE_PID` (the `passthrough` example with `--log`: the same copy, with
//! every SSE event appended to citeflow's SQLite store before it is sent), each round also runs
//! that proxy after the pass-through one, and a `durable …` line after the ratio lines gives
//! citeflow against it, from the round the ratio line shows (and every round's ratio): what
//! citeflow costs above a proxy that keeps the same durable log.
//!
//! With `BENCH_PEER="NAME URL PID"` (another proxy in front of the same upstream: the LiteLLM
//! proxy, started by `scripts/bench-server.sh` with `BENCH_LITELLM=VENV`), each round also runs
//! that proxy after citeflow, with the same streams, and a `peer …` line after the ratio lines
//! gives it against citeflow and the pass-through proxy of the same round. Its CPU and memory are
//! those of PID and every process descended from it (workers). A peer that rebuilds each chunk
//! may send a different number of events (and drops the upstream's send stamps, so its latency
//! columns are empty): its chunks are counted as upstream chunks delivered (the direct run's
//! chunks per stream for each stream that completed), for its CPU per chunk and its throughput.
//! Its failed streams are reported on its line and do not stop the benchmark.
//!
//! `bench UPSTREAM_URL UPSTREAM_PID PASSTHROUGH_URL PASSTHROUGH_PID CITEFLOW_URL CITEFLOW_PID MODEL N[,N…] [SPREAD_MS [DURABLE_URL DURABLE_PID]]`

use std::collections::HashMap;
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

/// `pid` and every process descended from it (Linux), from the parent ids in `/proc/*/stat`.
fn process_tree(pid: &str) -> Vec<String> {
    let mut children: HashMap<String, Vec<String>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // After the parenthesised command name: state, then the parent's id.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            if let Some(ppid) = rest.split_whitespace().nth(1) {
                children.entry(ppid.to_owned()).or_default().push(name);
            }
        }
    }
    let mut all = vec![pid.to_owned()];
    let mut i = 0;
    while i < all.len() {
        if let Some(c) = children.get(&all[i]) {
            all.extend(c.iter().cloned());
        }
        i += 1;
    }
    all
}

/// CPU time of `pid`, or of `pid` and its descendants when `tree` is set, in microseconds.
fn group_cpu_us(pid: &str, tree: bool) -> u64 {
    if tree {
        process_tree(pid).iter().map(|p| cpu_us(p)).sum()
    } else {
        cpu_us(pid)
    }
}

/// Resident memory of `pid`, or of `pid` and its descendants when `tree` is set, in KiB.
fn group_rss_kib(pid: &str, tree: bool) -> u64 {
    if tree {
        process_tree(pid).iter().map(|p| rss_kib(p)).sum()
    } else {
        rss_kib(pid)
    }
}

/// The name prefix of the SQLite store's threads.
const STORE_THREADS: &str = "sqlite-";

/// CPU time (user + system) a process has used so far, in microseconds (Linux).
fn cpu_us(pid: &str) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    // Clock ticks; 100 per second on Linux.
    f.iter().sum::<u64>() * 10_000
}

/// CPU time of a process's threads whose name starts with `prefix` (the SQLite store's
/// `sqlite-writer` and `sqlite-checkpoint`), in microseconds (Linux).
fn threads_cpu_us(pid: &str, prefix: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
        })
        .map(|t| cpu_us(&format!("{pid}/task/{}", t.file_name().to_string_lossy())))
        .sum()
}

struct Run {
    seconds: f64,
    chunks: u64,
    bytes: u64,
    latencies_us: Vec<u64>,
    failed: usize,
    peak_rss_kib: u64,
    /// CPU microseconds per chunk: upstream, proxy (0 when direct), this client.
    cpu_per_chunk_us: [f64; 3],
    /// Of the proxy's, the SQLite store's own threads (writer and checkpoints).
    store_cpu_per_chunk_us: f64,
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

/// `n` streams at once, the `i`-th starting `spread * i / n` after the first.
///
/// With `tree`, the proxy's CPU and memory are those of its process and every descendant.
async fn run(
    url: &str,
    model: &str,
    n: usize,
    pids: [Option<&str>; 2],
    spread: Duration,
    tree: bool,
) -> Run {
    let [upstream_pid, pid] = pids;
    let me = std::process::id().to_string();
    let cpu_before = [
        upstream_pid.map_or(0, cpu_us),
        pid.map_or(0, |p| group_cpu_us(p, tree)),
        cpu_us(&me),
    ];
    let store_before = pid.map_or(0, |p| threads_cpu_us(p, STORE_THREADS));
    citeflow_server::install_crypto_provider();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(n)
        .build()
        .expect("client");
    let barrier = Arc::new(Barrier::new(n));
    let start = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let delay = spread.mul_f64(i as f64 / n as f64);
            let (c, u, m, b) = (
                client.clone(),
                url.to_owned(),
                model.to_owned(),
                barrier.clone(),
            );
            tokio::spawn(async move {
                b.wait().await;
                tokio::time::sleep(delay).await;
                one(c, u, m).await
            })
        })
        .collect();
    let sampler = pid.map(|p| {
        let p = p.to_owned();
        tokio::spawn(async move {
            let mut peak = 0;
            loop {
                peak = peak.max(group_rss_kib(&p, tree));
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
        cpu_per_chunk_us: [0.0; 3],
        store_cpu_per_chunk_us: 0.0,
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
            peak_seen = peak_seen.max(group_rss_kib(p, tree));
        }
    }
    r.seconds = start.elapsed().as_secs_f64();
    if let Some(s) = sampler {
        s.abort();
    }
    r.peak_rss_kib = peak_seen;
    let cpu_after = [
        upstream_pid.map_or(0, cpu_us),
        pid.map_or(0, |p| group_cpu_us(p, tree)),
        cpu_us(&me),
    ];
    for i in 0..3 {
        r.cpu_per_chunk_us[i] =
            cpu_after[i].saturating_sub(cpu_before[i]) as f64 / r.chunks.max(1) as f64;
    }
    let store_after = pid.map_or(0, |p| threads_cpu_us(p, STORE_THREADS));
    r.store_cpu_per_chunk_us =
        store_after.saturating_sub(store_before) as f64 / r.chunks.max(1) as f64;
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

fn row(n: usize, starts: &str, name: &str, r: &Run, direct: &Run) -> String {
    let rate = r.chunks as f64 / r.seconds;
    // Chunks per second counts upstream chunks on every path: citeflow adds one source-list
    // chunk per stream, which is not counted.
    let extra = if name.starts_with("citeflow") {
        n as u64
    } else {
        0
    };
    let upstream_rate = r.chunks.saturating_sub(extra) as f64 / r.seconds;
    let d_rate = direct.chunks as f64 / direct.seconds;
    let added = |p| pct(&r.latencies_us, p) - pct(&direct.latencies_us, p);
    let [u, p, c] = r.cpu_per_chunk_us;
    format!(
        "| {n} | {starts} | {name} | {:.2} | {rate:.0} | {:.1}% | {:.2} | {:.2} | {:.2} | {:.2} | {} | {u:.1} / {p:.1} / {c:.1} |",
        r.seconds,
        100.0 * upstream_rate / d_rate,
        pct(&r.latencies_us, 0.5),
        pct(&r.latencies_us, 0.99),
        added(0.5),
        added(0.99),
        r.failed,
    )
}

#[tokio::main]
async fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 8 {
        eprintln!("usage: bench UPSTREAM_URL UPSTREAM_PID PASSTHROUGH_URL PASSTHROUGH_PID CITEFLOW_URL CITEFLOW_PID MODEL N[,N…]");
        std::process::exit(2);
    }
    let (upstream, upstream_pid) = (&a[0], a[1].as_str());
    let (pass, pass_pid) = (&a[2], a[3].as_str());
    let (citeflow, pid, model) = (&a[4], a[5].as_str(), &a[6]);
    let counts: Vec<usize> = a[7].split(',').filter_map(|s| s.parse().ok()).collect();
    let spread_ms: u64 = a.get(8).and_then(|s| s.parse().ok()).unwrap_or(20);
    let durable = a.get(9).zip(a.get(10).map(String::as_str));
    // BENCH_PEER="NAME URL PID": another proxy in front of the same upstream, run after citeflow.
    let peer_spec = std::env::var("BENCH_PEER").unwrap_or_default();
    let peer: Option<(&str, &str, &str)> = match peer_spec.split_whitespace().collect::<Vec<_>>()[..]
    {
        [name, url, pid] => Some((name, url, pid)),
        [] => None,
        _ => {
            eprintln!("BENCH_PEER must be \"NAME URL PID\", not {peer_spec:?}");
            std::process::exit(2);
        }
    };
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    println!("| streams | starts | path | seconds | chunks/s | throughput vs direct | chunk latency p50 ms | p99 ms | added p50 ms | added p99 ms | failed | CPU µs per chunk: upstream / proxy / client |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut memory = Vec::new();
    let mut ratios = Vec::new();
    let mut durables = Vec::new();
    let mut peers = Vec::new();
    let mut failed = 0;
    for n in counts {
        // Warm every path (connections, caches).
        for url in [upstream.as_str(), pass.as_str(), citeflow.as_str()]
            .into_iter()
            .chain(durable.map(|d| d.0.as_str()))
            .chain(peer.map(|p| p.1))
        {
            run(url, model, n.min(50), [None, None], Duration::ZERO, false).await;
        }
        let spread_label = format!("spread over {spread_ms} ms");
        for (starts, spread) in [
            ("together", Duration::ZERO),
            (spread_label.as_str(), Duration::from_millis(spread_ms)),
        ] {
            let direct = run(
                upstream,
                model,
                n,
                [Some(upstream_pid), None],
                spread,
                false,
            )
            .await;
            println!("{}", row(n, starts, "direct", &direct, &direct));
            failed += direct.failed;
            let mut pairs = Vec::new();
            for round in 0..rounds {
                let label = |name: &str| match rounds {
                    1 => name.to_owned(),
                    _ => format!("{name}, round {}", round + 1),
                };
                let pids = [Some(upstream_pid), Some(pass_pid)];
                let through = run(pass, model, n, pids, spread, false).await;
                println!(
                    "{}",
                    row(n, starts, &label("pass-through proxy"), &through, &direct)
                );
                let logged = match durable {
                    Some((url, dpid)) => {
                        let d = run(
                            url,
                            model,
                            n,
                            [Some(upstream_pid), Some(dpid)],
                            spread,
                            false,
                        )
                        .await;
                        println!(
                            "{}",
                            row(n, starts, &label("durable pass-through"), &d, &direct)
                        );
                        failed += d.failed;
                        Some(d)
                    }
                    None => None,
                };
                tokio::time::sleep(Duration::from_millis(500)).await;
                let idle = rss_kib(pid);
                let cf = run(
                    citeflow,
                    model,
                    n,
                    [Some(upstream_pid), Some(pid)],
                    spread,
                    false,
                )
                .await;
                println!("{}", row(n, starts, &label("citeflow"), &cf, &direct));
                let other = match peer {
                    Some((name, url, ppid)) => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        let peer_idle = group_rss_kib(ppid, true);
                        let mut p = run(
                            url,
                            model,
                            n,
                            [Some(upstream_pid), Some(ppid)],
                            spread,
                            true,
                        )
                        .await;
                        let events = p.chunks;
                        as_upstream_chunks(&mut p, n, &direct);
                        println!("{}", row(n, starts, &label(name), &p, &direct));
                        Some(Peer {
                            run: p,
                            events,
                            idle_kib: peer_idle,
                            citeflow_idle_kib: idle,
                            first: spread.is_zero() && round == 0,
                        })
                    }
                    None => None,
                };
                failed += through.failed + cf.failed;
                // Memory per open stream from the first run of each count only: the allocator
                // keeps what a run freed, so the growth in a later run says little.
                if spread.is_zero() && round == 0 {
                    let per_stream_kib = cf.peak_rss_kib.saturating_sub(idle) as f64 / n as f64;
                    memory.push(format!(
                        "{n} streams: citeflow RSS {idle} → {} KiB, {per_stream_kib:.0} KiB per open stream",
                        cf.peak_rss_kib
                    ));
                }
                pairs.push((cpu_ratio(&cf, &through), cf, through, logged, other));
            }
            pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (_, cf, through, logged, other) = &pairs[pairs.len() / 2];
            if let (Some((name, _, _)), Some(o)) = (peer, other) {
                peers.push(peer_line(name, n, starts, o, cf, through, &direct));
            }
            let mut line = ratio_line(n, starts, cf, through);
            if let Some(d) = logged {
                let mut dl = durable_line(n, starts, cf, d);
                if pairs.len() > 1 {
                    let each: Vec<String> = pairs
                        .iter()
                        .filter_map(|p| p.3.as_ref().map(|d| format!("{:.2}×", cpu_ratio(&p.1, d))))
                        .collect();
                    dl.push_str(&format!(" (the same rounds: {})", each.join(", ")));
                }
                durables.push(dl);
            }
            if pairs.len() > 1 {
                let each: Vec<String> = pairs.iter().map(|p| format!("{:.2}×", p.0)).collect();
                line.push_str(&format!(
                    " (the median of {} rounds; CPU ratios {})",
                    pairs.len(),
                    each.join(", ")
                ));
            }
            ratios.push(line);
        }
    }
    println!();
    for m in memory {
        println!("{m}");
    }
    println!();
    if failed > 0 {
        // A ratio over streams that failed measures the failure, not the proxy.
        eprintln!("{failed} streams failed: no ratio is printed");
        std::process::exit(1);
    }
    for r in ratios.into_iter().chain(durables).chain(peers) {
        println!("{r}");
    }
}

/// citeflow's CPU per chunk against the pass-through proxy's.
fn cpu_ratio(cf: &Run, pass: &Run) -> f64 {
    cf.cpu_per_chunk_us[1] / pass.cpu_per_chunk_us[1].max(f64::MIN_POSITIVE)
}

/// citeflow against the pass-through proxy of the same run: CPU per chunk of the proxy
/// process, throughput, and the p99 added latency.
fn ratio_line(n: usize, starts: &str, cf: &Run, pass: &Run) -> String {
    let cpu = cpu_ratio(cf, pass);
    // citeflow's extra source-list chunk per stream is not upstream work.
    let cf_rate = cf.chunks.saturating_sub(n as u64) as f64 / cf.seconds;
    let pass_rate = pass.chunks as f64 / pass.seconds;
    let p99 = pct(&cf.latencies_us, 0.99) - pct(&pass.latencies_us, 0.99);
    let mut line = format!(
        "ratio {n} streams, {starts}: citeflow / pass-through CPU per chunk {cpu:.2}× ({:.1} / {:.1} µs), throughput {:.1}% of pass-through, p99 latency {p99:+.2} ms against pass-through",
        cf.cpu_per_chunk_us[1],
        pass.cpu_per_chunk_us[1],
        100.0 * cf_rate / pass_rate,
    );
    // Where the durable log's own threads are in citeflow's CPU: their share, as a ratio to
    // the pass-through proxy's whole CPU per chunk, and what the rest comes to.
    let store = cf.store_cpu_per_chunk_us;
    if store > 0.0 {
        let base = pass.cpu_per_chunk_us[1].max(f64::MIN_POSITIVE);
        line.push_str(&format!(
            "; of citeflow's, the SQLite store's threads {store:.1} µs ({:.2}× the pass-through's), the rest {:.2}×",
            store / base,
            (cf.cpu_per_chunk_us[1] - store) / base,
        ));
    }
    line
}

/// citeflow against the pass-through proxy that keeps the same durable log (`passthrough
/// --log`), from the same round: CPU per chunk, the log's threads in each, and the p99 added
/// latency.
fn durable_line(n: usize, starts: &str, cf: &Run, durable: &Run) -> String {
    format!(
        "durable {n} streams, {starts}: citeflow / durable pass-through CPU per chunk {:.2}× ({:.1} / {:.1} µs; the SQLite store's threads {:.1} / {:.1} µs), p99 latency {:+.2} ms against it",
        cpu_ratio(cf, durable),
        cf.cpu_per_chunk_us[1],
        durable.cpu_per_chunk_us[1],
        cf.store_cpu_per_chunk_us,
        durable.store_cpu_per_chunk_us,
        pct(&cf.latencies_us, 0.99) - pct(&durable.latencies_us, 0.99),
    )
}

/// A peer proxy's run of one round, with what its line needs beside it.
struct Peer {
    /// Counted in upstream chunks delivered (`as_upstream_chunks`).
    run: Run,
    /// The events the client read from it.
    events: u64,
    /// Resident memory of its processes before the run, and of citeflow before citeflow's.
    idle_kib: u64,
    citeflow_idle_kib: u64,
    /// The first run of this count (streams starting together, round 1): the only one whose
    /// memory growth says something, as allocators keep what an earlier run freed.
    first: bool,
}

/// Counts a run in upstream chunks delivered: the direct run's chunks per stream for each stream
/// that completed (a proxy that rebuilds chunks may send more or fewer events than it received).
/// Its CPU per chunk is divided again accordingly.
fn as_upstream_chunks(r: &mut Run, n: usize, direct: &Run) {
    let per_stream = direct.chunks as f64 / n.max(1) as f64;
    let delivered = (per_stream * n.saturating_sub(r.failed) as f64).round() as u64;
    let scale = r.chunks.max(1) as f64 / delivered.max(1) as f64;
    for c in &mut r.cpu_per_chunk_us {
        *c *= scale;
    }
    r.store_cpu_per_chunk_us *= scale;
    r.chunks = delivered;
}

/// The peer against citeflow and the pass-through proxy of the same round: CPU per upstream
/// chunk, the share of the offered load (the direct run's rate) each kept up with, and memory
/// per open stream (peak RSS of the run over the RSS before it, per stream).
fn peer_line(
    name: &str,
    n: usize,
    starts: &str,
    peer: &Peer,
    cf: &Run,
    pass: &Run,
    direct: &Run,
) -> String {
    let p = &peer.run;
    let offered = direct.chunks as f64 / direct.seconds;
    // citeflow's extra source-list chunk per stream is not upstream work.
    let cf_rate = cf.chunks.saturating_sub(n as u64) as f64 / cf.seconds;
    let per_stream = |peak: u64, idle: u64| peak.saturating_sub(idle) as f64 / n.max(1) as f64;
    let memory = if peer.first {
        format!(
            "memory per open stream {name} {:.0} KiB (RSS {} → {} KiB), citeflow {:.0} KiB (RSS {} → {} KiB)",
            per_stream(p.peak_rss_kib, peer.idle_kib),
            peer.idle_kib,
            p.peak_rss_kib,
            per_stream(cf.peak_rss_kib, peer.citeflow_idle_kib),
            peer.citeflow_idle_kib,
            cf.peak_rss_kib,
        )
    } else {
        format!(
            "RSS {name} {} KiB, citeflow {} KiB at the peak (memory per open stream: the first run of this count)",
            p.peak_rss_kib, cf.peak_rss_kib
        )
    };
    format!(
        "peer {n} streams, {starts}: {name} / citeflow CPU per chunk {:.2}× ({:.1} / {:.1} µs), {name} / pass-through {:.2}× ({:.1} µs); throughput (of the offered load) {name} {:.1}%, citeflow {:.1}%, pass-through {:.1}%; {memory}; {name} sent {:.1} events per stream (the upstream {:.1}); {} of {n} {name} streams failed",
        cpu_ratio(p, cf),
        p.cpu_per_chunk_us[1],
        cf.cpu_per_chunk_us[1],
        cpu_ratio(p, pass),
        pass.cpu_per_chunk_us[1],
        100.0 * p.chunks as f64 / p.seconds / offered,
        100.0 * cf_rate / offered,
        100.0 * pass.chunks as f64 / pass.seconds / offered,
        peer.events as f64 / n.saturating_sub(p.failed).max(1) as f64,
        direct.chunks as f64 / n.max(1) as f64,
        p.failed,
    )
}
