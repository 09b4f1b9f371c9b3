//! The real recorded streams in `../shared/fixtures/streams/` render through the CLI.

use regex::Regex;
use serde_json::Value;

use crate::{citeflow, shared_dir, temp_file};

fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The content the model streamed, straight from the SSE file (independent of citeflow).
fn raw_content(sse: &str) -> String {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| {
            let v: Value = serde_json::from_str(d).ok()?;
            let c = &v["choices"][0];
            c["delta"]["content"]
                .as_str()
                .or(c["text"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn smollm2_streams_resolve_offered_ids_and_report_invented_ones() {
    let dir = shared_dir().join("fixtures/streams");
    let manifest = std::fs::read_to_string(dir.join("smollm2-manifest.jsonl")).unwrap();
    let (mut total_markers, mut total_offered, mut files) = (0, 0, 0);
    let rendered_number = Regex::new(r"\[\d+\]|\[\?\]").unwrap();
    for line in manifest.lines() {
        let m: Value = serde_json::from_str(line).unwrap();
        let file = m["file"].as_str().unwrap();
        let syntax = m["marker_syntax"].as_str().unwrap();
        let ids: Vec<String> = m["source_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        let sse = std::fs::read_to_string(dir.join(file)).unwrap();
        let content = raw_content(&sse);
        let (flags, pattern, offered): (Vec<&str>, &str, Vec<String>) = match syntax {
            "[[source_N]]" => (
                vec!["--syntax", "double_bracket"],
                r"\[\[source_(\d+)\]\]",
                ids.iter()
                    .map(|i| i.trim_start_matches("source_").to_owned())
                    .collect(),
            ),
            "<cite:source_N>" => (
                vec!["--syntax", "cite_colon"],
                r"<cite:source_(\d+)>",
                ids.iter()
                    .map(|i| i.trim_start_matches("source_").to_owned())
                    .collect(),
            ),
            "[N]" => (
                vec!["--syntax", "double_bracket", "--rank"],
                r"\[(\d+)\]",
                (1..=ids.len()).map(|n| n.to_string()).collect(),
            ),
            "【N】" => (
                vec!["--syntax", "double_bracket", "--rank"],
                r"【(\d+)】",
                (1..=ids.len()).map(|n| n.to_string()).collect(),
            ),
            other => panic!("unknown syntax {other}"),
        };
        let sources: Vec<Value> = if syntax.contains("source_") {
            offered.iter().map(|n| serde_json::json!({"id": format!("source_{n}"), "title": format!("source {n}")})).collect()
        } else {
            offered.iter().map(|n| serde_json::json!({"id": format!("doc{n}"), "title": format!("source {n}")})).collect()
        };
        let src = temp_file(
            &format!("{file}.sources.json"),
            &serde_json::to_string(&sources).unwrap(),
        );
        let mut args = vec![
            "render",
            "--input",
            "openai-sse",
            "--output",
            "jsonl",
            "--sources",
            src.to_str().unwrap(),
        ];
        args.extend(flags);
        let out = citeflow(&args, sse.as_bytes());
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let evs = events(&out.stdout);

        let re = Regex::new(pattern).unwrap();
        let found: Vec<String> = re
            .captures_iter(&content)
            .map(|c| c[1].to_owned())
            .collect();
        let good: Vec<&String> = found.iter().filter(|n| offered.contains(n)).collect();
        total_markers += found.len();
        total_offered += good.len();
        let citations = evs.iter().filter(|e| e["type"] == "citation").count();
        let unresolved: Vec<&Value> = evs.iter().filter(|e| e["type"] == "unresolved").collect();
        assert_eq!(citations, good.len(), "{file}: every offered id resolves");
        assert_eq!(
            unresolved.len(),
            found.len() - good.len(),
            "{file}: invented ids are reported"
        );
        let done = evs.last().unwrap();
        assert_eq!(done["type"], "done", "{file}");
        assert_eq!(done["report"]["verified"], true, "{file}");
        let mut distinct: Vec<&String> = good.clone();
        distinct.dedup();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            done["report"]["new_numbers"].as_u64().unwrap() as usize,
            distinct.len(),
            "{file}: invented ids use no number"
        );
        // Numbers are dense and in first-appearance order.
        let mut seen: Vec<u64> = Vec::new();
        for e in &evs {
            if e["type"] == "citation" {
                let n = e["number"].as_u64().unwrap();
                if !seen.contains(&n) {
                    assert_eq!(n, seen.len() as u64 + 1, "{file}");
                    seen.push(n);
                }
            }
        }
        // Text outside markers passes through byte for byte.
        let text: String = evs
            .iter()
            .filter(|e| e["type"] == "text")
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        let stripped_in = re.replace_all(&content, "");
        let stripped_out = rendered_number.replace_all(&text, "");
        if syntax == "[N]" || syntax == "【N】" {
            assert_eq!(stripped_out, re.replace_all(&stripped_in, ""), "{file}");
        } else {
            assert_eq!(stripped_out, stripped_in, "{file}");
        }
        for near_miss in ["【1904年】", "[cite source_2]", "[FB_SHOP]"] {
            assert_eq!(
                content.matches(near_miss).count(),
                text.matches(near_miss).count(),
                "{file}: {near_miss}"
            );
        }
        files += 1;
    }
    assert_eq!(files, 46);
    // The fixture README counts 31 markers and 16 with an offered id; file 38's
    // `<cite:source_3>` (copied from the one-shot example) is counted there as not offered, but
    // source_3 is among that request's sources, so it resolves: 17.
    assert_eq!((total_markers, total_offered), (31, 17));
}

#[test]
fn provider_chunk_recordings_render_without_error() {
    let dir = shared_dir().join("fixtures/streams");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if !name.ends_with(".chunks.txt") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let rank = name.starts_with("perplexity");
        let mut args = vec!["render", "--input", "jsonl", "--output", "jsonl"];
        if rank {
            args.push("--rank");
        }
        let out = citeflow(&args, &data);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let evs = events(&out.stdout);
        assert_eq!(evs.last().unwrap()["type"], "done", "{name}");
        if name == "openai-text.chunks.txt" {
            let want: String = String::from_utf8_lossy(&data)
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|v| {
                    v["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_owned)
                })
                .collect();
            let got: String = evs
                .iter()
                .filter(|e| e["type"] == "text")
                .map(|e| e["text"].as_str().unwrap())
                .collect();
            assert_eq!(got, want, "plain text passes through byte for byte");
        }
        if name == "perplexity-text.chunks.txt" {
            let got: String = evs
                .iter()
                .filter(|e| e["type"] == "text")
                .map(|e| e["text"].as_str().unwrap())
                .collect();
            assert!(got.starts_with("**EcoVista Day**[1][2]"), "{got}");
            let urls: Vec<&str> = evs
                .iter()
                .filter(|e| e["type"] == "source")
                .map(|e| e["source"]["url"].as_str().unwrap())
                .collect();
            assert!(
                urls[0].contains("modernchristmastrees") && urls[1].contains("jjonesdesignco"),
                "[1][5] are the 1st and 5th citations: {urls:?}"
            );
        }
        if name == "perplexity-citations.chunks.txt" {
            let got: String = evs
                .iter()
                .filter(|e| e["type"] == "text")
                .map(|e| e["text"].as_str().unwrap())
                .collect();
            assert_eq!(got, "The current population of **[1][2]");
        }
        n += 1;
    }
    assert!(n >= 15, "only {n} recordings");
}
