//! Criterion benchmark of the provider stream readers: each recorded stream of
//! `../shared/fixtures/streams/*.chunks.txt` fed through [`ProviderStream`] one payload line per
//! `write` (as an adapter gets them), polled after each, then ended. Throughput is in chunks
//! (payload lines), so criterion's `elem/s` is chunks per second; µs per chunk is its inverse.
//!
//! Run: `cargo bench -p citeflow-core --bench provider`
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented function"
)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use citeflow_core::provider::ProviderStream;
use citeflow_core::{Event, Numbering, Settings, Sources};

/// The recordings and the citations each gives (checked once before timing).
const EXPECTED: [(&str, usize); 17] = [
    ("amazon-bedrock-document-citations", 6),
    ("anthropic-web-search-citation-replay.1", 14),
    ("anthropic-web-search-tool.1", 9),
    ("azure-web-search-preview-tool.1", 1),
    ("cohere-citations", 1),
    ("google-interactions-google-search", 14),
    ("openai-code-interpreter-tool.1", 1),
    ("openai-file-search-tool.1", 2),
    ("openai-file-search-tool.2", 1),
    ("openai-text", 0),
    ("openai-web-search-tool.1", 12),
    ("openai-web-search-tool.2025-09", 6),
    ("perplexity-citations", 2),
    ("perplexity-text", 2),
    ("xai-13218-web-search-provider-tool-result.1", 9),
    ("xai-web-search-tool.1", 5),
    ("xai-x-search-tool", 20),
];

fn shared_dir() -> PathBuf {
    std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

/// Each recording's payload lines, each with its newline.
fn recordings() -> Vec<(String, Vec<Vec<u8>>)> {
    let dir = shared_dir().join("fixtures/streams");
    EXPECTED
        .iter()
        .map(|(name, _)| {
            let path = dir.join(format!("{name}.chunks.txt"));
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let lines = bytes
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| [l, b"\n"].concat())
                .collect();
            ((*name).to_owned(), lines)
        })
        .collect()
}

/// Feeds the lines, one `write` each, and returns the citation events.
fn run(lines: &[Vec<u8>]) -> usize {
    let mut s = ProviderStream::new(Settings::default(), Sources::new(), Numbering::new());
    let mut citations = 0;
    let mut count = |s: &mut ProviderStream| {
        while let Some(e) = s.poll_event() {
            citations += usize::from(matches!(e, Event::Citation { .. }));
            black_box(e);
        }
    };
    for l in lines {
        s.write(l).expect("recording reads");
        count(&mut s);
    }
    s.end().expect("recording ends");
    count(&mut s);
    citations
}

fn bench_provider(c: &mut Criterion) {
    let mut g = c.benchmark_group("provider");
    for ((name, lines), (_, expected)) in recordings().iter().zip(EXPECTED) {
        assert_eq!(run(lines), expected, "{name}: citations");
        g.throughput(Throughput::Elements(lines.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), lines, |b, lines| {
            b.iter(|| run(black_box(lines)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_provider);
criterion_main!(benches);
