//! The local model's recorded streams in `tests/fixtures/streams/` (SmolLM2-135M-Instruct
//! through citeflow-llm's OpenAI-compatible SSE interface, recorded with the request that made
//! each) replayed through the rewriter with the settings of their request: every marker the
//! model wrote is resolved or reported unresolved, numbers are handed out in order of first
//! appearance and never change, and the source list matches the body.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use citeflow_core::sse::{chunk_text, SseDecoder};
use citeflow_core::{Event, Numbering, PromptMarker, Settings, Source, Sources};
use regex::Regex;
use serde_json::Value;

use crate::support::{chunkings, naive::oracle, run_chunks, Run};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/streams")
}

/// One recorded stream and what made it.
struct Recording {
    file: String,
    marker: PromptMarker,
    sources: Sources,
    /// The content chunks as the model streamed them.
    chunks: Vec<String>,
}

fn recordings() -> Vec<Recording> {
    let dir = dir();
    let manifest = std::fs::read_to_string(dir.join("manifest.jsonl"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("manifest.jsonl").display()));
    manifest
        .lines()
        .map(|line| {
            let m: Value = serde_json::from_str(line).expect("manifest line");
            let file = m["file"].as_str().expect("file").to_owned();
            let marker = m["citeflow"]["marker"]
                .as_str()
                .expect("marker")
                .parse::<PromptMarker>()
                .expect("known marker");
            let sources: Vec<Source> =
                serde_json::from_value(m["sources"].clone()).expect("sources");
            let sse = std::fs::read(dir.join(&file))
                .unwrap_or_else(|e| panic!("{}: {e}", dir.join(&file).display()));
            let mut decoder = SseDecoder::default();
            decoder.write(&sse).expect("sse");
            decoder.end().expect("sse end");
            let mut chunks = Vec::new();
            while let Some(ev) = decoder.poll_event() {
                if ev.data == "[DONE]" {
                    continue;
                }
                let payload: Value = serde_json::from_str(&ev.data).expect("chunk json");
                if let Some(t) = chunk_text(&payload).filter(|t| !t.is_empty()) {
                    chunks.push(t.to_owned());
                }
            }
            Recording {
                file,
                marker,
                sources: Sources::from_vec(sources).expect("distinct ids"),
                chunks,
            }
        })
        .collect()
}

/// Markers of the requested form in the model's text, found apart from the scanner: (byte
/// offset, what names the source: an id or a rank).
fn requested_markers(marker: PromptMarker, content: &str) -> Vec<(usize, String)> {
    let pattern = match marker {
        PromptMarker::DoubleBracket => r"\[\[([^\[\]\n]+)\]\]",
        PromptMarker::CiteColon => r"<cite:([^<>\n]+)>",
        PromptMarker::CiteTag => r#"<cite id="([^"\n]+)"/>"#,
        PromptMarker::SingleBracket => r"\[(source_\d+)\]",
        PromptMarker::Rank => r"\[(\d+)\]",
        PromptMarker::RankFullWidth => r"【(\d+)】",
        other => panic!("no pattern for {other:?}"),
    };
    Regex::new(pattern)
        .unwrap()
        .captures_iter(content)
        .map(|c| (c.get(0).unwrap().start(), c[1].to_owned()))
        .collect()
}

fn replay(r: &Recording, chunks: &[&[u8]]) -> Run {
    let settings = r.marker.settings(Settings::default());
    run_chunks(chunks, &settings, &r.sources, Numbering::new())
}

#[test]
fn recorded_local_model_streams_resolve_or_report_every_marker() {
    let recs = recordings();
    assert!(recs.len() >= 6, "only {} recorded streams", recs.len());
    let readme = std::fs::read_to_string(dir().join("README.md")).expect("README.md");
    let (mut markers_total, mut cited_streams) = (0, 0);
    for r in &recs {
        assert!(readme.contains(&r.file), "{}: not in README.md", r.file);
        let f = &r.file;
        let content: String = r.chunks.concat();
        assert!(!content.is_empty(), "{f}: no text");
        let settings = r.marker.settings(Settings::default());
        let ids: Vec<&str> = r.sources.iter().map(|s| s.id.as_str()).collect();

        // As streamed, token by token.
        let recorded: Vec<&[u8]> = r.chunks.iter().map(|c| c.as_bytes()).collect();
        let run = replay(r, &recorded);
        // The same under every other chunking, and the same as the whole-string oracle.
        for ch in chunkings(&content, 0x5EED) {
            assert_eq!(
                replay(r, &ch.split(content.as_bytes())),
                run,
                "{f}: chunking {ch:?} differs from the recorded one (pin with CITEFLOW_CHUNK_SEED)"
            );
        }
        assert_eq!(run.text, oracle(&content, &settings, &r.sources), "{f}");

        // Every marker the model wrote is resolved (an offered id, a rank in range) or reported.
        let found = requested_markers(r.marker, &content);
        markers_total += found.len();
        let at = |offset: usize| {
            run.events.iter().filter(move |e| match e {
                Event::Citation {
                    input_byte_offset, ..
                }
                | Event::Unresolved {
                    input_byte_offset, ..
                } => *input_byte_offset == offset as u64,
                _ => false,
            })
        };
        for (offset, name) in &found {
            let offered = if r.marker.is_rank() {
                name.parse::<usize>()
                    .ok()
                    .filter(|n| (1..=ids.len()).contains(n))
                    .map(|n| ids[n - 1])
            } else {
                ids.iter().copied().find(|id| id == name)
            };
            let events: Vec<&Event> = at(*offset).collect();
            match offered {
                Some(id) => assert!(
                    matches!(events.as_slice(), [Event::Citation { source_id, .. }] if source_id == id),
                    "{f}: marker {name:?} at {offset} should cite {id}: {events:?}"
                ),
                None => assert!(
                    matches!(events.as_slice(), [Event::Unresolved { .. }]),
                    "{f}: marker {name:?} at {offset} should be reported: {events:?}"
                ),
            }
        }
        // And the rewriter saw no marker where there is none.
        for e in &run.events {
            if let Event::Citation {
                input_byte_offset: o,
                ..
            }
            | Event::Unresolved {
                input_byte_offset: o,
                ..
            } = e
            {
                let rest = &content[*o as usize..];
                assert!(
                    rest.starts_with(['[', '<', '【']),
                    "{f}: a citation event at {o} where the text is {rest:?}"
                );
            }
        }

        // Numbers: first appearance, one per source, announced before they are shown, and
        // shown where the citation event says.
        let mut number_of: HashMap<&str, u32> = HashMap::new();
        let mut announced: BTreeSet<u32> = BTreeSet::new();
        let mut cited: Vec<u32> = Vec::new();
        for e in &run.events {
            match e {
                Event::Source { number, source, .. } => {
                    assert_eq!(*number as usize, announced.len() + 1, "{f}: source numbers");
                    assert!(announced.insert(*number), "{f}: {number} announced twice");
                    assert!(ids.contains(&source.id.as_str()), "{f}: {}", source.id);
                }
                Event::Citation {
                    number,
                    source_id,
                    byte_offset,
                    ..
                } => {
                    assert!(
                        announced.contains(number),
                        "{f}: {number} shown unannounced"
                    );
                    let n = *number_of.entry(source_id.as_str()).or_insert(*number);
                    assert_eq!(n, *number, "{f}: {source_id} changed its number");
                    assert_eq!(
                        number_of.values().filter(|v| **v == n).count(),
                        1,
                        "{f}: two sources share {n}"
                    );
                    let shown = format!("[{number}]");
                    assert!(
                        run.text[*byte_offset as usize..].starts_with(&shown),
                        "{f}: {shown} is not at {byte_offset}"
                    );
                    if !cited.contains(number) {
                        cited.push(*number);
                    }
                }
                Event::Unresolved { byte_offset, .. } => assert!(
                    run.text[*byte_offset as usize..].starts_with("[?]"),
                    "{f}: [?] is not at {byte_offset}"
                ),
                _ => {}
            }
        }
        let in_order: Vec<u32> = (1..=cited.len() as u32).collect();
        assert_eq!(cited, in_order, "{f}: numbers in order of first appearance");
        cited_streams += usize::from(!cited.is_empty());

        // The source list is exactly the numbers in the body.
        let Some(Event::Done {
            sources, report, ..
        }) = run.events.last()
        else {
            panic!("{f}: no done event")
        };
        let listed: Vec<u32> = sources.iter().map(|s| s.number).collect();
        assert_eq!(listed, in_order, "{f}: source list");
        for s in sources {
            assert_eq!(Some(&s.number), number_of.get(s.source.id.as_str()), "{f}");
        }
        assert_eq!(report.numbers_in_body, in_order, "{f}");
        assert_eq!(report.numbers_listed, in_order, "{f}");
        assert!(report.verified, "{f}: report not verified");
        assert_eq!(report.input_bytes, content.len() as u64, "{f}");
    }
    assert!(markers_total > 0, "no marker in any recorded stream");
    assert!(cited_streams > 0, "no recorded stream cites");
}
