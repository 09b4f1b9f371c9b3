//! Golden vectors shared with the Python and JS test suites (`tests/vectors/*.json` at the
//! repository root). `CITEFLOW_BLESS=1` rewrites the expected values.

use std::path::PathBuf;

use citeflow_core::{Numbering, Settings, Source, Sources};
use serde_json::Value;

use crate::support::{chunkings, run, run_chunks};

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

#[test]
fn golden_vectors_hold_under_every_chunking() {
    let bless = std::env::var("CITEFLOW_BLESS").is_ok_and(|v| v == "1");
    let dir = vectors_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected golden vectors in {}",
        dir.display()
    );
    let mut count = 0;
    for path in files {
        let raw = std::fs::read_to_string(&path).unwrap();
        let mut doc: Value = serde_json::from_str(&raw).unwrap();
        let cases = doc["cases"].as_array_mut().expect("cases array");
        for case in cases.iter_mut() {
            let name = case["name"].as_str().unwrap().to_owned();
            let settings: Settings = serde_json::from_value(case["settings"].clone()).unwrap();
            let srcs: Vec<Source> = serde_json::from_value(case["sources"].clone()).unwrap();
            let sources = Sources::from_vec(srcs).unwrap();
            let chunks: Vec<String> = serde_json::from_value(case["chunks"].clone()).unwrap();
            let chunk_bytes: Vec<&[u8]> = chunks.iter().map(|c| c.as_bytes()).collect();
            let got = run_chunks(&chunk_bytes, &settings, &sources, Numbering::new());
            let events = serde_json::to_value(&got.events).unwrap();
            if bless {
                case["expected_text"] = Value::String(got.text.clone());
                case["expected_events"] = events;
            } else {
                assert_eq!(
                    got.text,
                    case["expected_text"],
                    "{}: {name}",
                    path.display()
                );
                assert_eq!(
                    events,
                    case["expected_events"],
                    "{}: {name}",
                    path.display()
                );
            }
            let input = chunks.concat();
            for ch in chunkings(&input, 7) {
                let other = run(&input, &ch, &settings, &sources);
                assert_eq!(other, got, "{name}: chunking {ch:?}");
            }
            count += 1;
        }
        if bless {
            std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
        }
    }
    assert!(count >= 20, "only {count} vectors");
}
