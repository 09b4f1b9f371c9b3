//! `--cfi-flavor`: `citeflow ingest`, `citeflow epub nodes` and `citeflow cfi resolve` write
//! and read epub.js-flavoured CFIs; the default output stays as it was.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::books_support::{book_path, run_err, run_ok, temp_dir, BOOKS};
use crate::shared_dir;

fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn epub_nodes_with_the_epubjs_flavour_print_the_oracles_epubjs_column() {
    let raw = std::fs::read_to_string(shared_dir().join("fixtures/cfi/oracle-textnode-cfis.jsonl"))
        .expect("oracle");
    let mut want: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for mut v in json_lines(&raw) {
        let o = v.as_object_mut().unwrap();
        let book = o.remove("epub").unwrap().as_str().unwrap().to_owned();
        if let Some(e) = o.remove("epubjs_0_3_93") {
            o.insert("cfi".to_owned(), e);
        }
        o.remove("idref");
        o.remove("readium_vendored");
        want.entry(book).or_default().push(v);
    }
    let mut lines = 0;
    for name in BOOKS {
        let path = book_path(name);
        let got = json_lines(&run_ok(&[
            "epub",
            "nodes",
            "--cfi-flavor",
            "epubjs",
            path.to_str().unwrap(),
        ]));
        assert_eq!(got, want[name], "{name}");
        lines += got.len();
    }
    assert_eq!(lines, 18_765);
}

#[test]
fn ingest_with_the_epubjs_flavour_writes_its_cfis_beside_the_spec_ones() {
    let path = book_path("kusamakura-japanese-vertical-writing.epub");
    let path = path.to_str().unwrap();
    let spec = json_lines(&run_ok(&["ingest", path]));
    assert!(spec.iter().all(|p| p.get("cfi_spec").is_none()));
    let dir = temp_dir();
    let index = dir.path().join("index");
    let out = dir.path().join("passages.jsonl");
    run_ok(&[
        "ingest",
        path,
        "--cfi-flavor",
        "epubjs",
        "--index",
        index.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let ej = json_lines(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(ej.len(), spec.len());
    let mut differing = 0;
    for (s, e) in spec.iter().zip(&ej) {
        assert_eq!(e["cfi_flavor"], "epubjs");
        assert_eq!(e["cfi_spec"], s["cfi"]);
        assert_eq!(e["start_cfi_spec"], s["start_cfi"]);
        assert_eq!(e["locator"]["cfi"], e["cfi"]);
        // Everything else is the spec line.
        let mut rest = e.as_object().unwrap().clone();
        for k in ["cfi_flavor", "cfi_spec", "start_cfi_spec"] {
            rest.remove(k);
        }
        rest.insert("cfi".to_owned(), s["cfi"].clone());
        rest.insert("start_cfi".to_owned(), s["start_cfi"].clone());
        rest["locator"]["cfi"] = s["cfi"].clone();
        assert_eq!(&Value::Object(rest), s);
        if e["cfi"] != s["cfi"] {
            differing += 1;
        }
    }
    assert_eq!(
        (differing, ej.len()),
        (31, 163),
        "kusamakura passages whose CFI differs"
    );
    // The index keeps the spec CFIs (the server opens the book at them).
    let idx = citeflow_index::Index::open_or_create(&index).unwrap();
    let k = ej.iter().position(|p| p["cfi"] != p["cfi_spec"]).unwrap();
    let hits = idx.search(&s_text(&ej[k]), 50).unwrap();
    let hit = hits
        .iter()
        .find(|h| h.passage.passage_index == k)
        .expect("the passage is found");
    assert_eq!(Some(hit.passage.cfi.as_str()), ej[k]["cfi_spec"].as_str());
    assert_eq!(
        Some(hit.passage.start_cfi.as_str()),
        ej[k]["start_cfi_spec"].as_str()
    );
    // The epub.js CFI resolves, read as epub.js, to the passage's text.
    for p in ej.iter().filter(|p| p["cfi"] != p["cfi_spec"]).take(3) {
        let cfi = p["cfi"].as_str().unwrap();
        let r: Value = serde_json::from_str(&run_ok(&[
            "cfi",
            "resolve",
            path,
            cfi,
            "--cfi-flavor",
            "epubjs",
        ]))
        .unwrap();
        let squash = |v: &Value| {
            v.as_str()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join("")
        };
        assert_eq!(squash(&r["text"]), squash(&p["text"]), "{cfi}");
        assert_eq!(r["cfi_epubjs"], p["cfi"]);
        assert_eq!(r["cfi_spec"], p["cfi_spec"]);
    }
}

fn s_text(p: &Value) -> String {
    p["text"].as_str().unwrap().chars().take(60).collect()
}

#[test]
fn cfi_resolve_reads_either_flavour_and_auto_tells_them_apart() {
    let alice = book_path("alice.epub");
    let alice = alice.to_str().unwrap();
    let resolve = |cfi: &str, flavor: &str| -> Value {
        serde_json::from_str(&run_ok(&[
            "cfi",
            "resolve",
            alice,
            cfi,
            "--cfi-flavor",
            flavor,
        ]))
        .unwrap()
    };
    // Text after an empty <a id="…"></a> in the heading: /3 for the spec, /1 for epub.js.
    let spec = "epubcfi(/6/8!/4/2/2[pgepubid00004]/3:0)";
    let ej = "epubcfi(/6/8!/4/2/2[pgepubid00004]/1:0)";
    for (cfi, flavor, read_as) in [
        (spec, "spec", "spec"),
        (ej, "epubjs", "epubjs"),
        (spec, "auto", "spec"),
        (ej, "auto", "epubjs"),
    ] {
        let r = resolve(cfi, flavor);
        assert!(
            r["text"]
                .as_str()
                .unwrap()
                .starts_with("Down The Rabbit-Hole Alice was beginning"),
            "{cfi} as {flavor}: {r}"
        );
        assert_eq!(r["cfi_flavor"], read_as, "{cfi} as {flavor}");
        assert_eq!(
            (r["cfi_spec"].as_str(), r["cfi_epubjs"].as_str()),
            (Some(spec), Some(ej))
        );
    }
    // Text after text is written the same way.
    let same = resolve("epubcfi(/6/8!/4/2/6/1:10)", "auto");
    assert_eq!(same["cfi_flavor"], "both");
    assert!(same["text"]
        .as_str()
        .unwrap()
        .starts_with("beginning to get very tired"));
    assert_eq!(same["cfi_spec"], same["cfi_epubjs"]);
    // Without the flag: the output of before.
    let plain: Value = serde_json::from_str(&run_ok(&["cfi", "resolve", alice, spec])).unwrap();
    assert!(plain.get("cfi_flavor").is_none() && plain.get("cfi_spec").is_none());
    // Read both ways to different text: auto asks for the flavour.
    let kusamakura = book_path("kusamakura-japanese-vertical-writing.epub");
    let err = run_err(&[
        "cfi",
        "resolve",
        kusamakura.to_str().unwrap(),
        "epubcfi(/6/10!/4/2/18/21:0)",
        "--cfi-flavor",
        "auto",
    ]);
    assert!(
        err.contains("as spec at \"と明らかに読まれる。")
            && err.contains("as epubjs at \"のない男だが、"),
        "{err}"
    );
    assert!(
        run_err(&["cfi", "resolve", alice, spec, "--cfi-flavor", "readium"])
            .contains("unknown cfi flavor \"readium\" (expected spec, epubjs or auto)")
    );
}
