//! Recorded real streams replayed by a loopback upstream, through the server, against the
//! core's whole-string oracle.

use citeflow_core::{rewrite_str, Event, Numbering, PromptMarker, Settings, Source, Sources};
use citeflow_replay::Script;
use serde_json::{json, Value};

use crate::support::{citeflow_events, read_sse, shared_dir, text_of, Harness, Received};

/// What a recorded stream was asked to cite: its marker and source ids.
fn citation_setup(file: &str, manifest: &[Value]) -> (PromptMarker, Vec<Source>) {
    let entry = manifest.iter().find(|m| m["file"] == file);
    let (marker, ids): (PromptMarker, Vec<String>) = match entry {
        Some(m) => {
            let ids: Vec<String> = m["source_ids"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let marker = match m["marker_syntax"].as_str().unwrap_or_default() {
                "<cite:source_N>" => PromptMarker::CiteColon,
                "[N]" => PromptMarker::Rank,
                "【N】" => PromptMarker::RankFullWidth,
                _ => PromptMarker::DoubleBracket,
            };
            (marker, ids)
        }
        // Perplexity cites ranks into its 5-7 urls; the others carry no markers.
        None if file.starts_with("perplexity") => {
            (PromptMarker::Rank, (1..=7).map(|i| i.to_string()).collect())
        }
        None => (
            PromptMarker::DoubleBracket,
            vec!["source_3".into(), "source_7".into()],
        ),
    };
    let sources = ids
        .iter()
        .map(|id| {
            let id = if id.starts_with("source_") {
                id.clone()
            } else {
                format!("source_{id}")
            };
            Source::new(id.clone()).with_title(format!("Title of {id}"))
        })
        .collect();
    (marker, sources)
}

fn marker_name(m: PromptMarker) -> &'static str {
    match m {
        PromptMarker::CiteColon => "cite_colon",
        PromptMarker::Rank => "rank",
        PromptMarker::RankFullWidth => "rank_full_width",
        _ => "double_bracket",
    }
}

/// Streams `model` through the server and checks it against the oracle.
async fn check(
    h: &Harness,
    model: &str,
    script: &Script,
    marker: PromptMarker,
    sources: Vec<Source>,
) -> Vec<Received> {
    let body = json!({
        "model": model, "stream": true,
        "messages": [{"role": "user", "content": "q"}],
        "sources": sources,
        "citeflow": {"marker": marker_name(marker), "inject_prompt": false},
    });
    let resp = h
        .post("/v1/chat/completions")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200, "{model}");
    let events = read_sse(resp, usize::MAX).await;
    let ids: Vec<Option<u64>> = events.iter().map(|e| e.id).collect();
    let want: Vec<Option<u64>> = (1..=events.len() as u64).map(Some).collect();
    assert_eq!(ids, want, "{model}: event ids are 1..n");
    assert_eq!(
        events.last().map(|e| e.data.as_str()),
        Some("[DONE]"),
        "{model}"
    );
    let oracle = rewrite_str(
        &script.text(),
        marker.settings(Settings::default()),
        Sources::from_vec(sources).expect("sources"),
        Numbering::new(),
    )
    .expect("oracle");
    assert_eq!(text_of(&events), oracle.text, "{model}: text");
    let got = citeflow_events(&events);
    let want: Vec<Value> = oracle
        .events
        .iter()
        .filter(|e| !matches!(e, Event::Text { .. }))
        .map(|e| serde_json::to_value(e).expect("json"))
        .collect();
    assert_eq!(got, want, "{model}: events");
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recorded_stream_matches_the_core_oracle() {
    let dir = shared_dir().join("fixtures/streams");
    let manifest: Vec<Value> = std::fs::read_to_string(dir.join("smollm2-manifest.jsonl"))
        .expect("manifest")
        .lines()
        .map(|l| serde_json::from_str(l).expect("manifest line"))
        .collect();
    let h = Harness::start().await;
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".sse") || n.ends_with(".chunks.txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 60, "{} recorded streams", files.len());
    let mut citations = 0;
    for file in &files {
        let raw = std::fs::read(dir.join(file)).expect("read");
        let script = if file.ends_with(".sse") {
            Script::from_sse(&raw)
        } else {
            Script::from_chunk_lines(&String::from_utf8(raw).expect("utf-8"))
        };
        h.replay.insert(file, script.clone());
        let (marker, sources) = citation_setup(file, &manifest);
        let events = check(&h, file, &script, marker, sources).await;
        citations += citeflow_events(&events)
            .iter()
            .filter(|e| e["type"] == "citation")
            .count();
    }
    assert!(
        citations >= 10,
        "only {citations} citations in all recordings"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_streams_cut_at_every_byte_give_the_same_answer() {
    let dir = shared_dir().join("fixtures/streams");
    let h = Harness::start().await;
    for (file, marker) in [
        ("smollm2-17.sse", PromptMarker::Rank),
        ("smollm2-43.sse", PromptMarker::RankFullWidth),
        ("smollm2-31.sse", PromptMarker::DoubleBracket),
    ] {
        let script = Script::from_sse(&std::fs::read(dir.join(file)).expect("read"));
        let ids = [
            "source_1", "source_2", "source_3", "source_4", "source_5", "source_7",
        ];
        let sources: Vec<Source> = ids.iter().map(|i| Source::new(*i)).collect();
        for n in [1, 7, 64] {
            let model = format!("{file}/{n}");
            let cut = script.rechunked(n);
            h.replay.insert(&model, cut.clone());
            check(&h, &model, &cut, marker, sources.clone()).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_marker_split_at_every_boundary_renders_the_same() {
    let text = "Paris [[source_3]] is large. 東京【2】 and <cite:source_7> too [source_3, source_7]. End <cite id=\"source_9\"/>.";
    let sources = vec![
        Source::new("source_3").with_title("Paris"),
        Source::new("source_7").with_title("Tokyo"),
        Source::new("source_9").with_title("Nine"),
    ];
    let markers = [
        "[[source_3]]",
        "【2】",
        "<cite:source_7>",
        "[source_3, source_7]",
        "<cite id=\"source_9\"/>",
    ];
    let h = Harness::start().await;
    let mut runs = 0;
    for m in markers {
        let start = text.find(m).expect("marker in text");
        for cut in start..=start + m.len() {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let pieces = [&text[..cut], &text[cut..]];
            let script = Script::chat(&pieces);
            let model = format!("split-{start}-{cut}");
            h.replay.insert(&model, script.clone());
            check(
                &h,
                &model,
                &script,
                PromptMarker::RankFullWidth,
                sources.clone(),
            )
            .await;
            // The same pieces, with the SSE bytes themselves cut one byte at a time.
            let bytes = script.rechunked(1);
            let model = format!("split-bytes-{start}-{cut}");
            h.replay.insert(&model, bytes.clone());
            check(
                &h,
                &model,
                &bytes,
                PromptMarker::RankFullWidth,
                sources.clone(),
            )
            .await;
            runs += 2;
        }
    }
    // One char per chunk, too.
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
    let script = Script::chat(&pieces);
    h.replay.insert("split-chars", script.clone());
    let events = check(
        &h,
        "split-chars",
        &script,
        PromptMarker::RankFullWidth,
        sources,
    )
    .await;
    assert_eq!(
        text_of(&events),
        "Paris [1] is large. 東京[2] and [2] too [1][2]. End [3]."
    );
    assert!(runs > 80, "{runs} runs");
}
