//! Criterion benchmarks of the core.
//!
//! Groups: `scan` (marker-free text), `rewrite` (a citation every ~200 bytes, fed in 4 B, 64 B
//! and whole chunks; `_into` polls with `poll_event_into`, the others with `poll_event`),
//! `numbering` (1,000 sources), `linear` (1× and 100× the text), and `baseline` (a naive
//! processor that re-scans the accumulated text with a regex per chunk), measured beside
//! citeflow on the same input in the same run.
//!
//! Run: `cargo bench -p citeflow-core --bench rewrite`
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented function"
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};

/// A deterministic answer of about `len` bytes with a `[[source_N]]` every ~200 bytes.
fn answer(len: usize, sources: usize, seed: u64) -> (String, usize) {
    let words = [
        "the",
        "capital",
        "of",
        "France",
        "is",
        "Paris,",
        "a",
        "city",
        "on",
        "Seine.",
        "Its",
        "population",
        "grew",
        "quickly",
        "during",
        "nineteenth",
        "century",
        "and",
        "today",
    ];
    let mut x = seed.max(1);
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = String::with_capacity(len + 64);
    let mut since = 0;
    let mut citations = 0;
    while out.len() < len {
        let w = words[(next() % words.len() as u64) as usize];
        out.push_str(w);
        out.push(' ');
        since += w.len() + 1;
        if since >= 200 {
            let n = next() % sources as u64 + 1;
            out.push_str(&format!("[[source_{n}]] "));
            citations += 1;
            since = 0;
        }
        if next() % 40 == 0 {
            out.push('\n');
        }
    }
    (out, citations)
}

fn plain(len: usize) -> String {
    let line = "Plain answer text without any citation markers, just words and punctuation.\n";
    line.repeat(len / line.len() + 1)[..len].to_owned()
}

fn sources(n: usize) -> Sources {
    Sources::from_vec(
        (1..=n)
            .map(|i| {
                Source::new(format!("source_{i}"))
                    .with_title(format!("Title {i}"))
                    .with_url(format!("https://example.org/{i}"))
            })
            .collect(),
    )
    .expect("sources")
}

/// Feeds `text` in `chunk`-byte chunks, polling after each; returns the citation count.
fn run(text: &[u8], chunk: usize, sources: &Sources) -> usize {
    let mut rw = Rewriter::new(Settings::default(), sources.clone(), Numbering::new());
    let mut citations = 0;
    let mut count = |rw: &mut Rewriter| {
        while let Some(e) = rw.poll_event() {
            if let Event::Citation { .. } = e {
                citations += 1;
            }
            black_box(e);
        }
    };
    for c in text.chunks(chunk) {
        rw.write(c).expect("write");
        count(&mut rw);
    }
    rw.end().expect("end");
    count(&mut rw);
    citations
}

/// As [`run`], polling with `poll_event_into`: the text goes into one buffer that is cleared
/// after each chunk, as a caller writing it out would, so text costs no allocation.
fn run_into(text: &[u8], chunk: usize, sources: &Sources) -> usize {
    let mut rw = Rewriter::new(Settings::default(), sources.clone(), Numbering::new());
    let mut citations = 0;
    let mut out = String::new();
    let mut count = |rw: &mut Rewriter| {
        while let Some(e) = rw.poll_event_into(&mut out) {
            if let Event::Citation { .. } = e {
                citations += 1;
            }
            black_box(e);
        }
        black_box(&out);
        out.clear();
    };
    for c in text.chunks(chunk) {
        rw.write(c).expect("write");
        count(&mut rw);
    }
    rw.end().expect("end");
    count(&mut rw);
    citations
}

/// The naive baseline: accumulate, re-run a regex over everything, re-render, emit the new
/// suffix (what a quick hand-written proxy does).
fn naive(text: &[u8], chunk: usize, ids: &std::collections::HashMap<String, usize>) -> usize {
    let re = regex::Regex::new(r"\[\[(source_\d+)\]\]").expect("regex");
    let mut acc = String::new();
    let mut emitted = 0usize;
    let mut cites = 0;
    for c in text.chunks(chunk) {
        acc.push_str(&String::from_utf8_lossy(c));
        let mut numbers: Vec<usize> = Vec::new();
        let mut rendered = String::with_capacity(acc.len());
        let mut last = 0;
        cites = 0;
        for m in re.captures_iter(&acc) {
            let whole = m.get(0).expect("match");
            rendered.push_str(&acc[last..whole.start()]);
            if let Some(&id) = ids.get(&m[1]) {
                let n = match numbers.iter().position(|&x| x == id) {
                    Some(p) => p + 1,
                    None => {
                        numbers.push(id);
                        numbers.len()
                    }
                };
                rendered.push_str(&format!("[{n}]"));
                cites += 1;
            }
            last = whole.end();
        }
        // Hold back a possible unfinished marker.
        let tail = &acc[last..];
        let keep = tail
            .rfind("[[")
            .filter(|&p| !tail[p..].contains("]]"))
            .unwrap_or(tail.len());
        rendered.push_str(&tail[..keep]);
        if rendered.len() > emitted {
            black_box(&rendered[emitted..]);
            emitted = rendered.len();
        }
    }
    cites
}

fn bench_scan(c: &mut Criterion) {
    let text = plain(4 << 20);
    let src = sources(10);
    assert_eq!(run(text.as_bytes(), 64 << 10, &src), 0);
    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Bytes(text.len() as u64));
    for chunk in [64 << 10, 64] {
        g.bench_with_input(
            BenchmarkId::new("plain_ascii", chunk),
            &chunk,
            |b, &chunk| b.iter(|| run(text.as_bytes(), chunk, &src)),
        );
        g.bench_with_input(
            BenchmarkId::new("plain_ascii_into", chunk),
            &chunk,
            |b, &chunk| b.iter(|| run_into(text.as_bytes(), chunk, &src)),
        );
    }
    g.finish();
}

fn bench_rewrite(c: &mut Criterion) {
    let (text, citations) = answer(1 << 20, 20, 7);
    let src = sources(20);
    assert_eq!(run(text.as_bytes(), 4, &src), citations);
    assert_eq!(run_into(text.as_bytes(), 4, &src), citations);
    let mut g = c.benchmark_group("rewrite");
    g.throughput(Throughput::Bytes(text.len() as u64));
    for chunk in [4, 64, text.len()] {
        g.bench_with_input(
            BenchmarkId::new("cite_every_200b", chunk),
            &chunk,
            |b, &chunk| b.iter(|| run(text.as_bytes(), chunk, &src)),
        );
        g.bench_with_input(
            BenchmarkId::new("cite_every_200b_into", chunk),
            &chunk,
            |b, &chunk| b.iter(|| run_into(text.as_bytes(), chunk, &src)),
        );
    }
    g.finish();
}

fn bench_numbering(c: &mut Criterion) {
    let (text, citations) = answer(1 << 20, 1000, 11);
    let src = sources(1000);
    assert_eq!(run(text.as_bytes(), 64, &src), citations);
    let mut g = c.benchmark_group("numbering");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("1000_sources_64b", |b| {
        b.iter(|| run(text.as_bytes(), 64, &src))
    });
    g.finish();
}

fn bench_linear(c: &mut Criterion) {
    let src = sources(20);
    let mut g = c.benchmark_group("linear");
    for len in [10 << 10, 1000 << 10] {
        let (text, citations) = answer(len, 20, 3);
        assert_eq!(run(text.as_bytes(), 4, &src), citations);
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::new("4b_chunks", len), &text, |b, text| {
            b.iter(|| run(text.as_bytes(), 4, &src))
        });
    }
    g.finish();
}

fn bench_baseline(c: &mut Criterion) {
    let (text, citations) = answer(16 << 10, 20, 5);
    let src = sources(20);
    let ids = (1..=20).map(|i| (format!("source_{i}"), i)).collect();
    assert_eq!(run(text.as_bytes(), 4, &src), citations);
    assert_eq!(naive(text.as_bytes(), 4, &ids), citations);
    let mut g = c.benchmark_group("baseline");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("citeflow_16k_4b", |b| {
        b.iter(|| run(text.as_bytes(), 4, &src))
    });
    g.bench_function("naive_regex_rescan_16k_4b", |b| {
        b.iter(|| naive(text.as_bytes(), 4, &ids))
    });
    g.finish();
}

fn state_size(_: &mut Criterion) {
    let mut rw = Rewriter::new(Settings::default(), Sources::new(), Numbering::new());
    rw.write("Some text and a marker cut [[sour")
        .expect("write");
    while rw.poll_event().is_some() {}
    let json = serde_json::to_string(&rw.snapshot()).expect("json");
    println!(
        "state: size_of::<Rewriter>() = {} bytes; snapshot of a mid-marker stream without sources = {} bytes of JSON",
        std::mem::size_of::<Rewriter>(),
        json.len()
    );
}

criterion_group!(
    benches,
    state_size,
    bench_scan,
    bench_rewrite,
    bench_numbering,
    bench_linear,
    bench_baseline
);
criterion_main!(benches);
