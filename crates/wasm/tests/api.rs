//! The exported API called from Rust inside wasm, under Node.

use citeflow_wasm::{
    default_settings, render_list, rewrite, JsRewriterOptions, JsSourceArray, Rewriter, Sources,
};
use serde_json::{json as j, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use crate::support::{js, json, name_code, s};

fn paris_and_france() -> Sources {
    Sources::from_array(&js::<JsSourceArray>(
        r#"[{"id":"source_7","title":"Paris"},{"id":"source_3","title":"France"}]"#,
    ))
    .expect("sources")
}

fn texts(events: &Value) -> String {
    events
        .as_array()
        .expect("array")
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().expect("text"))
        .collect()
}

#[wasm_bindgen_test]
fn marker_split_in_id_is_held_back() {
    let mut rw = Rewriter::new(&paris_and_france(), None).expect("rewriter");
    let first = json(&rw.feed(&s("Paris is the capital [[sou")).expect("feed"));
    assert_eq!(
        first,
        j!([{"type": "text", "text": "Paris is the capital "}])
    );
    let second = json(&rw.feed(&s("rce_7]], see [source_3].")).expect("feed"));
    let kinds: Vec<&str> = second
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["source", "citation", "text", "source", "citation", "text"]
    );
    let rest = json(&rw.finish().expect("finish"));
    assert_eq!(rest[0]["type"], "done");
    assert_eq!(rest[0]["report"]["numbers_in_body"], j!([1, 2]));
    assert_eq!(texts(&second), "[1], see [2].");
}

#[wasm_bindgen_test]
fn bytes_cut_inside_a_character_are_held() {
    let bytes = "【source_3】 é".as_bytes();
    let mut rw = Rewriter::new(
        &paris_and_france(),
        Some(js::<JsRewriterOptions>(
            r#"{"settings":{"style":"full_width"}}"#,
        )),
    )
    .expect("rewriter");
    let mut out = String::new();
    for piece in bytes.chunks(1) {
        let chunk = js_sys::Uint8Array::from(piece);
        out += &texts(&json(&rw.feed(chunk.unchecked_ref()).expect("feed")));
    }
    out += &texts(&json(&rw.finish().expect("finish")));
    assert_eq!(out, "【1】 é");
}

#[wasm_bindgen_test]
fn session_numbering_continues_across_answers() {
    let sources = paris_and_france();
    let mut a1 = Rewriter::new(&sources, None).expect("rewriter");
    a1.feed(&s("[[source_3]]")).expect("feed");
    a1.finish().expect("finish");
    let saved = json(&a1.numbering().expect("numbering"));
    let opts = format!(r#"{{"numbering":{saved}}}"#);
    let r = rewrite(
        "[[source_7]] [[source_3]]",
        &sources,
        Some(js::<JsRewriterOptions>(&opts)),
    )
    .expect("rewrite");
    assert_eq!(json(&r)["text"], "[2] [1]");
}

#[wasm_bindgen_test]
fn snapshot_round_trips() {
    let mut rw = Rewriter::new(&paris_and_france(), None).expect("rewriter");
    rw.feed(&s("x <cite:sour")).expect("feed");
    let snap = rw.snapshot().expect("snapshot");
    let parsed: Value = serde_json::from_str(&snap).expect("json");
    assert_eq!(parsed["version"], 1);
    let mut back = Rewriter::restore(&snap).expect("restore");
    let events = json(&back.feed(&s("ce_7>!")).expect("feed"));
    assert_eq!(texts(&events), "[1]!");
    let e = Rewriter::restore("[]").expect_err("bad snapshot");
    assert_eq!(
        name_code(&e),
        ("RestoreError".into(), "invalid_snapshot".into())
    );
}

#[wasm_bindgen_test]
fn errors_are_js_errors_with_name_and_code() {
    let e = Rewriter::new(
        &paris_and_france(),
        Some(js::<JsRewriterOptions>(
            r#"{"settings":{"rank":"sometimes"}}"#,
        )),
    )
    .expect_err("bad rank");
    assert!(e.is_instance_of::<js_sys::Error>());
    assert_eq!(
        name_code(&e),
        ("SettingsError".into(), "invalid_settings".into())
    );
    let mut rw = Rewriter::new(&paris_and_france(), None).expect("rewriter");
    let e = rw
        .write(&JsValue::from_f64(1.0).unchecked_into())
        .expect_err("number chunk");
    assert_eq!(name_code(&e), ("TypeError".into(), "invalid_chunk".into()));
    rw.end().expect("end");
    let e = rw.write(&s("more")).expect_err("after end");
    assert_eq!(name_code(&e), ("RewriteError".into(), "ended".into()));
    let mut src = Sources::new();
    let e = src
        .append_round(&js::<JsSourceArray>(r#"[{"id":"a"},{"id":"a"}]"#), None)
        .expect_err("duplicate");
    assert_eq!(name_code(&e), ("SourceError".into(), "duplicate_id".into()));
    assert_eq!(src.length(), 0);
}

#[wasm_bindgen_test]
fn lists_and_settings_come_from_the_core() {
    let mut rw = Rewriter::new(&paris_and_france(), None).expect("rewriter");
    rw.feed(&s("[[source_3]] [[source_7]]")).expect("feed");
    let done = json(&rw.finish().expect("finish"));
    let list = done.as_array().unwrap().last().unwrap()["sources"].to_string();
    let text = render_list(&js(&list), &s("text"), None).expect("render");
    assert_eq!(text, "[1] France\n[2] Paris\n");
    assert_eq!(
        json(&default_settings().expect("defaults"))["maxPendingBytes"],
        64
    );
}
