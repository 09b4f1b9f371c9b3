//! Fuzzes claim anchors: the fuzzer picks a source's text, the answer's bytes and the cut
//! points. Nothing may panic; any cut gives the events of the whole input; every anchor's
//! claim lies in the rendered output and its quote is the source's text at its offsets.
#![no_main]

use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};
use libfuzzer_sys::fuzz_target;

fn run(chunks: &[&[u8]], sources: &Sources) -> (String, Vec<Event>) {
    let settings = Settings::default()
        .with_anchors(true)
        .with_max_anchor_source_bytes(1024)
        .expect("cap");
    let mut rw = Rewriter::new(settings, sources.clone(), Numbering::new());
    let mut text = String::new();
    let mut events = Vec::new();
    let mut take = |rw: &mut Rewriter| {
        while let Some(e) = rw.poll_event() {
            match e {
                Event::Text { text: t } => text.push_str(&t),
                other => events.push(other),
            }
        }
    };
    for c in chunks {
        rw.write(c).expect("write");
        take(&mut rw);
    }
    rw.end().expect("end");
    take(&mut rw);
    (text, events)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    // The first byte: how much of the rest is the source's text.
    let split = (usize::from(data[0]) * (data.len() - 1) / 255).min(data.len() - 1);
    let (source, answer) = data[1..].split_at(split);
    let source = String::from_utf8_lossy(source).into_owned();
    let sources = Sources::from_vec(vec![
        Source::new("source_1").with_text(source.clone()),
        Source::new("source_2").with_text("A second source. It has two sentences."),
    ])
    .expect("sources");
    let whole = run(&[answer], &sources);
    let cuts: Vec<&[u8]> = answer.chunks(1 + usize::from(data[1 % data.len()] % 7)).collect();
    assert_eq!(run(&cuts, &sources), whole);
    let (text, events) = whole;
    for e in &events {
        let Event::Anchor(a) = e else { continue };
        let c = a.claim;
        assert!(c.byte_start <= c.byte_end && c.byte_end as usize <= text.len());
        assert!(text.is_char_boundary(c.byte_start as usize) && text.is_char_boundary(c.byte_end as usize));
        if let Some(q) = &a.quote {
            let src = if a.source_id == "source_1" { source.as_str() } else { "A second source. It has two sentences." };
            if let Some(r) = q.range {
                assert_eq!(&src[r.byte_start as usize..r.byte_end as usize], q.text);
            }
        }
    }
});
