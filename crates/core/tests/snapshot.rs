//! Snapshot and restore in the middle of a stream, even in the middle of a marker.

use citeflow_core::{Event, Numbering, Rewriter, Settings, Snapshot, Source, Sources};

fn sources() -> Sources {
    Sources::from_vec(vec![Source::new("source_1"), Source::new("source_2")]).unwrap()
}

fn drain(rw: &mut Rewriter, out: &mut String) {
    while let Some(e) = rw.poll_event() {
        if let Event::Text { text } = e {
            out.push_str(&text);
        }
    }
}

#[test]
fn restored_rewriter_continues_the_same_stream() {
    let input = "x [[source_2]] y [[sou\u{e9}rce]] [[source_1]] \u{6f22} [source_2] end";
    let bytes = input.as_bytes();
    let mut whole = String::new();
    let mut rw = Rewriter::new(Settings::default(), sources(), Numbering::new());
    rw.write(bytes).unwrap();
    rw.end().unwrap();
    drain(&mut rw, &mut whole);
    for cut in 0..=bytes.len() {
        let mut out = String::new();
        let mut rw = Rewriter::new(Settings::default(), sources(), Numbering::new());
        rw.write(&bytes[..cut]).unwrap();
        drain(&mut rw, &mut out);
        let json = serde_json::to_string(&rw.snapshot()).unwrap();
        drop(rw);
        let snap: Snapshot = serde_json::from_str(&json).unwrap();
        let mut rw = Rewriter::from_snapshot(snap).unwrap();
        rw.write(&bytes[cut..]).unwrap();
        rw.end().unwrap();
        drain(&mut rw, &mut out);
        assert_eq!(out, whole, "cut at {cut}");
    }
}

#[test]
fn stream_state_is_small() {
    let mut rw = Rewriter::new(Settings::default(), Sources::new(), Numbering::new());
    rw.write("some text [[sour").unwrap();
    while rw.poll_event().is_some() {}
    let json = serde_json::to_string(&rw.snapshot()).unwrap();
    assert!(json.len() < 1024, "{} bytes: {json}", json.len());
}
