//! The shared golden vectors (`tests/vectors/*.json` at the repository root) inside wasm.
//! wasm has no file system, so the files are compiled in; a host test checks the list is
//! complete.

/// Every vector file, compiled in.
const FILES: [(&str, &str); 6] = [
    (
        "basic.json",
        include_str!("../../../tests/vectors/basic.json"),
    ),
    ("cjk.json", include_str!("../../../tests/vectors/cjk.json")),
    (
        "markdown.json",
        include_str!("../../../tests/vectors/markdown.json"),
    ),
    (
        "rank.json",
        include_str!("../../../tests/vectors/rank.json"),
    ),
    (
        "styles.json",
        include_str!("../../../tests/vectors/styles.json"),
    ),
    (
        "unknown.json",
        include_str!("../../../tests/vectors/unknown.json"),
    ),
];

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn every_vector_file_is_compiled_in() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        on_disk, listed,
        "update FILES in crates/wasm/tests/vectors.rs"
    );
}

#[cfg(target_arch = "wasm32")]
mod wasm {
    use citeflow_wasm::{JsRewriterOptions, JsSourceArray, Rewriter, Sources};
    use serde_json::{Map, Value};
    use wasm_bindgen_test::wasm_bindgen_test;

    use crate::support::{js, json, s};

    /// Core settings JSON (snake_case keys) as JS settings (camelCase keys).
    fn camel(settings: &Value) -> Value {
        let mut out = Map::new();
        for (k, v) in settings.as_object().expect("settings object") {
            let mut key = String::new();
            let mut up = false;
            for c in k.chars() {
                if c == '_' {
                    up = true;
                } else if up {
                    key.extend(c.to_uppercase());
                    up = false;
                } else {
                    key.push(c);
                }
            }
            out.insert(key, v.clone());
        }
        Value::Object(out)
    }

    fn push(events: &mut Vec<Value>, e: Value) {
        if e["type"] == "text" {
            if let Some(last) = events.last_mut().filter(|l| l["type"] == "text") {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap(),
                    e["text"].as_str().unwrap()
                );
                last["text"] = Value::String(joined);
                return;
            }
        }
        events.push(e);
    }

    #[wasm_bindgen_test]
    fn golden_vectors_give_identical_events() {
        let mut count = 0;
        for (file, raw) in super::FILES {
            let doc: Value = serde_json::from_str(raw).expect("vector json");
            for case in doc["cases"].as_array().expect("cases") {
                let name = format!("{file}: {}", case["name"]);
                let sources =
                    Sources::from_array(&js::<JsSourceArray>(&case["sources"].to_string()))
                        .expect("sources");
                let opts = serde_json::json!({ "settings": camel(&case["settings"]) });
                let mut rw =
                    Rewriter::new(&sources, Some(js::<JsRewriterOptions>(&opts.to_string())))
                        .expect("rewriter");
                let mut events = Vec::new();
                for chunk in case["chunks"].as_array().expect("chunks") {
                    let got = json(&rw.feed(&s(chunk.as_str().expect("chunk"))).expect("feed"));
                    for e in got.as_array().unwrap() {
                        push(&mut events, e.clone());
                    }
                }
                let got = json(&rw.finish().expect("finish"));
                for e in got.as_array().unwrap() {
                    push(&mut events, e.clone());
                }
                assert_eq!(Value::Array(events), case["expected_events"], "{name}");
                count += 1;
            }
        }
        assert!(count >= 20, "only {count} vectors");
    }
}
