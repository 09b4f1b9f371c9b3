//! `citeflow cfi parse|compare|resolve` on the peer vectors and the fixture books.

use serde_json::Value;

use crate::books_support::{book_path, run, run_err, run_ok};
use crate::shared_dir;

fn peer_vectors() -> Value {
    let raw = std::fs::read_to_string(shared_dir().join("fixtures/cfi/peer-vectors.json"))
        .expect("peer-vectors.json");
    serde_json::from_str(&raw).expect("peer vectors are JSON")
}

fn parse_json(cfi: &str) -> Value {
    serde_json::from_str(&run_ok(&["cfi", "parse", cfi])).expect("parse output is JSON")
}

#[test]
fn cfi_parse_round_trips_the_peer_vectors() {
    let v = peer_vectors();
    let p = &v["parse"];
    for s in p["roundtrip_valid"]["cfis"].as_array().unwrap() {
        let s = s.as_str().unwrap();
        assert_eq!(parse_json(s)["cfi"], s, "{s}");
    }
    for s in p["roundtrip_valid"]["parse_only_valid"].as_array().unwrap() {
        let s = s.as_str().unwrap();
        let once = parse_json(s);
        let again = parse_json(once["cfi"].as_str().unwrap());
        assert_eq!(once, again, "{s}");
    }
    for s in p["structure"].as_array().unwrap() {
        parse_json(s["cfi"].as_str().unwrap());
    }
}

#[test]
fn cfi_parse_structure_names_steps_ids_and_offsets() {
    let j = parse_json("epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:10[xx,y;s=b])");
    assert_eq!(j["kind"], "point");
    let steps = j["path"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    assert_eq!(steps[1]["id"], "chap01ref");
    assert_eq!(steps[2]["indirection"], true);
    assert_eq!(steps[4]["kind"], "text");
    let off = &j["path"]["offset"];
    assert_eq!(off["type"], "character");
    assert_eq!(off["utf16_offset"], 10);
    assert_eq!(off["assertion"]["before"], "xx");
    assert_eq!(off["assertion"]["after"], "y");
    assert_eq!(off["assertion"]["params"][0]["name"], "s");
    let j = parse_json("epubcfi(/4[4^^^[^]^(^)^,^;^=]/6!/4:9)");
    assert_eq!(j["path"]["steps"][0]["id"], "4^[](),;=");
    let r = parse_json("epubcfi(/6/4[chap01ref]!/4[body01]/10[para05],/2/1:1,/3:4)");
    assert_eq!(r["kind"], "range");
    assert_eq!(
        r["start"],
        "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/2/1:1)"
    );
    assert_eq!(
        r["end"],
        "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]/3:4)"
    );
}

#[test]
fn cfi_parse_rejects_malformed_cfis_with_a_position() {
    let v = peer_vectors();
    let p = &v["parse"]["invalid"];
    let mut cases: Vec<String> = p["cfis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    cases.extend(p["lenient_in_fread"].as_object().unwrap().keys().cloned());
    for s in &cases {
        let err = run_err(&["cfi", "parse", s]);
        assert!(err.contains("cfi"), "{s:?}: {err}");
    }
    let err = run_err(&["cfi", "parse", "epubcfi(/6/4[chap01ref]!/4[bo"]);
    assert!(err.contains("at byte 29"), "{err}");
    // The caret sits under the problem.
    let caret_line = err.lines().last().unwrap();
    assert_eq!(caret_line.find('^'), Some(2 + 29), "{err}");
}

#[test]
fn cfi_compare_orders_the_peer_vectors() {
    let v = peer_vectors();
    let cmp = |a: &str, b: &str| run_ok(&["cfi", "compare", a, b]).trim().to_owned();
    let mut checked = 0;
    for c in v["compare"].as_array().unwrap() {
        let (a, b) = (c["a"].as_str().unwrap(), c["b"].as_str().unwrap());
        match &c["expected"] {
            Value::Number(n) => {
                assert_eq!(cmp(a, b), n.to_string(), "{c}");
                assert_eq!(
                    cmp(b, a),
                    (-n.as_i64().unwrap()).to_string(),
                    "{c} reversed"
                );
            }
            Value::String(s) if s.starts_with("nil") => {
                assert_eq!(cmp(a, b), "incomparable", "{c}");
            }
            Value::String(s) => {
                // "[start, end]": compare the ranges' start points and end points.
                let nums: Vec<String> = s
                    .trim_start_matches('[')
                    .split(']')
                    .next()
                    .unwrap()
                    .split(',')
                    .map(|x| x.trim().to_owned())
                    .collect();
                let (pa, pb) = (parse_json(a), parse_json(b));
                let point = |j: &Value, end: &str| {
                    j[end]
                        .as_str()
                        .unwrap_or(j["cfi"].as_str().unwrap())
                        .to_owned()
                };
                assert_eq!(
                    cmp(&point(&pa, "start"), &point(&pb, "start")),
                    nums[0],
                    "{c}"
                );
                assert_eq!(cmp(&point(&pa, "end"), &point(&pb, "end")), nums[1], "{c}");
            }
            other => panic!("odd expected {other}"),
        }
        checked += 1;
    }
    assert_eq!(checked, v["compare"].as_array().unwrap().len());
}

fn resolve(book: &str, cfi: &str, extra: &[&str]) -> Value {
    let path = book_path(book);
    let mut args = vec!["cfi", "resolve", path.to_str().unwrap(), cfi];
    args.extend_from_slice(extra);
    serde_json::from_str(&run_ok(&args)).expect("resolve output is JSON")
}

#[test]
fn cfi_resolve_finds_the_georgia_page_list_text() {
    let v = peer_vectors();
    let vectors = v["georgia_page_list"]["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 7);
    for vec in vectors {
        let cfi = vec["cfi"].as_str().unwrap();
        let out = resolve(
            "georgia-cfi.epub",
            cfi,
            &["--percent-encoded", "--chars", "60"],
        );
        assert_eq!(out["kind"], "point");
        assert_eq!(out["href"], "georgia.xhtml", "{out}");
        let want_before = vec["before"].as_str().unwrap().trim_start_matches("...");
        let want_after = vec["after"].as_str().unwrap().trim_end_matches("...");
        let before = out["text_before"].as_str().unwrap();
        let text = out["text"].as_str().unwrap();
        assert!(
            before.ends_with(want_before.trim()),
            "{cfi}: before {before:?}"
        );
        assert!(text.starts_with(want_after.trim()), "{cfi}: text {text:?}");
    }
}

#[test]
fn cfi_resolve_finds_the_spec_examples() {
    let book = "cfi-spec-example.epub";
    let base = "epubcfi(/6/4[chap01ref]!/4[body01]/10[para05]";
    let range = resolve(book, &format!("{base},/2/1:1,/3:4)"), &[]);
    assert_eq!(range["kind"], "range");
    assert_eq!(range["text"], "yy0123");
    let point = resolve(book, &format!("{base}/2/1:3)"), &["--raw", "--chars", "20"]);
    assert!(point["text"].as_str().unwrap().starts_with("0123456789\n"));
    assert!(point["text_before"].as_str().unwrap().ends_with("xxxyyy"));
    let v = peer_vectors();
    for e in v["spec_examples"]["resolve"].as_array().unwrap() {
        let s = e["cfi"].as_str().unwrap();
        let path = book_path(book);
        let out = run(&["cfi", "resolve", path.to_str().unwrap(), s]);
        // The chap05 example points past this book's spine.
        assert_eq!(out.status.success(), !s.contains("chap05ref"), "{s}");
    }
}

#[test]
fn cfi_resolve_reports_missing_targets_and_bad_books() {
    let alice = book_path("alice.epub");
    let err = run_err(&[
        "cfi",
        "resolve",
        alice.to_str().unwrap(),
        "epubcfi(/6/999!/4)",
    ]);
    assert!(err.contains("cannot resolve"), "{err}");
    let err = run_err(&["cfi", "resolve", "/nonexistent/book.epub", "epubcfi(/6/4)"]);
    assert!(err.contains("cannot read"), "{err}");
    let out = run(&["cfi", "compare", "epubcfi(/6/4)", "nonsense"]);
    assert!(!out.status.success());
}
