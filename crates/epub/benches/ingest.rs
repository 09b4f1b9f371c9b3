//! Ingestion throughput: MB/s of spine XHTML per fixture book and in total.
//!
//! `ingest` = `Book::open` (unzip, parse container, package, toc and every
//! spine document) + every text node's CFI rendered as a string.
//! `passages` = `Book::open` + `Book::passages` with the default settings.
//! `reading` = `Book::reading` of a passage's range CFI in an opened book (ruby readings as
//! annotations; for kusamakura also with them in the text, the baseline for their cost).
#![expect(missing_docs, reason = "criterion_group! generates an undocumented fn")]

use std::path::PathBuf;

use citeflow_epub::{Book, ChunkSettings, Limits};
use criterion::{criterion_group, Criterion, Throughput};
use std::hint::black_box;

const BOOKS: [&str; 7] = [
    "alice.epub",
    "cfi-spec-example.epub",
    "childrens-literature.epub",
    "georgia-cfi.epub",
    "kusamakura-japanese-vertical-writing.epub",
    "regime-anticancer-arabic.epub",
    "wasteland.epub",
];

fn books() -> Vec<(&'static str, Vec<u8>, u64)> {
    let dir = std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")));
    BOOKS
        .iter()
        .map(|name| {
            let path = dir.join("fixtures/epub").join(name);
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let book = Book::open(&bytes, &Limits::default()).expect("fixture opens");
            assert!(book.text_nodes().count() > 0, "{name} has text");
            (*name, bytes, book.content_bytes() as u64)
        })
        .collect()
}

fn ingest(bytes: &[u8]) -> usize {
    let book = Book::open(bytes, &Limits::default()).expect("fixture opens");
    book.text_nodes().map(|n| n.cfi.to_string().len()).sum()
}

fn bench(c: &mut Criterion) {
    let books = books();
    let total: u64 = books.iter().map(|b| b.2).sum();
    let mut g = c.benchmark_group("ingest");
    g.sample_size(10);
    for (name, bytes, xhtml) in &books {
        g.throughput(Throughput::Bytes(*xhtml));
        g.bench_function(*name, |b| b.iter(|| ingest(black_box(bytes))));
    }
    g.throughput(Throughput::Bytes(total));
    g.bench_function("all-seven", |b| {
        b.iter(|| {
            books
                .iter()
                .map(|(_, bytes, _)| ingest(black_box(bytes)))
                .sum::<usize>()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("passages");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(total));
    let settings = ChunkSettings::default();
    g.bench_function("all-seven", |b| {
        b.iter(|| {
            books
                .iter()
                .map(|(_, bytes, _)| {
                    let book = Book::open(black_box(bytes), &Limits::default()).expect("opens");
                    book.passages(&settings).len()
                })
                .sum::<usize>()
        })
    });
    g.finish();

    // Opening an opened book at a cited place (what GET /v1/books/{key}/read does per
    // request): the chapter of a passage in the middle of each book, the passage marked.
    let mut g = c.benchmark_group("reading");
    g.sample_size(20);
    for (name, bytes, _) in &books {
        let book = Book::open(bytes, &Limits::default()).expect("opens");
        let passages = book.passages(&settings);
        let cfi = passages[passages.len() / 2].cfi.clone();
        g.bench_function(*name, |b| {
            b.iter(|| book.reading(black_box(&cfi), false).expect("resolves"))
        });
        if name.starts_with("kusamakura") {
            // Readings in the text instead of as annotations: the baseline for their cost.
            g.bench_function(format!("{name} (ruby in text)"), |b| {
                b.iter(|| book.reading(black_box(&cfi), true).expect("resolves"))
            });
        }
    }
    g.finish();
}

/// User + system CPU seconds of this process (Linux `/proc/self/stat`).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// `CITEFLOW_BENCH_CPU=1`: throughput per CPU second instead of wall time,
/// for machines where other jobs compete for the cores.
fn cpu_report() {
    let books = books();
    for (name, bytes, xhtml) in &books {
        // At least 20 MiB of XHTML per book, so clock ticks do not matter.
        let rounds = (20u64 << 20).div_ceil((*xhtml).max(1)).max(20);
        let start = cpu_seconds().unwrap_or(0.0);
        for _ in 0..rounds {
            black_box(ingest(black_box(bytes)));
        }
        let cpu = cpu_seconds().unwrap_or(0.0) - start;
        let mb = (*xhtml * rounds) as f64 / (1 << 20) as f64;
        println!(
            "ingest/{name}: {:.1} MiB/s per CPU second",
            mb / cpu.max(0.01)
        );
    }
    let total: u64 = books.iter().map(|b| b.2).sum();
    let rounds = (20u64 << 20).div_ceil(total.max(1)).max(5);
    let start = cpu_seconds().unwrap_or(0.0);
    for _ in 0..rounds {
        for (_, bytes, _) in &books {
            black_box(ingest(black_box(bytes)));
        }
    }
    let cpu = cpu_seconds().unwrap_or(0.0) - start;
    let mb = (total * rounds) as f64 / (1 << 20) as f64;
    println!(
        "ingest/all-seven: {:.1} MiB/s per CPU second",
        mb / cpu.max(0.01)
    );
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("CITEFLOW_BENCH_CPU").is_some() {
        cpu_report();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
