//! Fuzzes the streaming scanner: the fuzzer picks the settings, the cut points and the bytes.
//! Any cut must give the output of the whole input, and nothing may panic.
#![no_main]

use citeflow_core::{
    Event, Numbering, RankMode, Rewriter, Settings, Source, Sources, Syntax, MIN_PENDING_BYTES,
};
use libfuzzer_sys::fuzz_target;

fn run(chunks: &[&[u8]], settings: &Settings, sources: &Sources) -> (String, Vec<Event>) {
    let mut rw = Rewriter::new(settings.clone(), sources.clone(), Numbering::new());
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
    if data.len() < 3 {
        return;
    }
    let (head, input) = data.split_at(3);
    let settings = match head[0] % 4 {
        0 => Settings::default(),
        1 => Settings::default().with_rank(RankMode::Renumber),
        2 => Settings::default().with_syntaxes(&Syntax::ALL).with_rank(RankMode::Keep),
        _ => Settings::default()
            .with_max_pending_bytes(MIN_PENDING_BYTES)
            .expect("cap"),
    };
    let sources = Sources::from_vec(vec![
        Source::new("source_1"),
        Source::new("source_2").with_url("https://e.x/2"),
        Source::new("doc-a"),
    ])
    .expect("sources");
    let whole = run(&[input], &settings, &sources);
    // Cut into pieces of 1..=head[1] bytes, shifting by head[2].
    let step = usize::from(head[1] % 16) + 1;
    let mut chunks = Vec::new();
    let mut at = usize::from(head[2]) % (input.len() + 1);
    chunks.push(&input[..at]);
    while at < input.len() {
        let end = (at + step).min(input.len());
        chunks.push(&input[at..end]);
        at = end;
    }
    assert_eq!(run(&chunks, &settings, &sources), whole);
});
