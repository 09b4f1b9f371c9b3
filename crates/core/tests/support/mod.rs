//! Test harness: run the rewriter under many chunkings and compare.

pub(crate) mod naive;

use citeflow_core::{Event, Numbering, Rewriter, Settings, Sources};

/// How the input is cut.
#[derive(Debug, Clone)]
pub(crate) enum Chunking {
    Whole,
    /// One byte per chunk (cuts inside UTF-8 characters and markers).
    Bytes,
    /// One char per chunk.
    Chars,
    /// Cut at these byte offsets.
    Cuts(Vec<usize>),
}

impl Chunking {
    pub(crate) fn split<'a>(&self, input: &'a [u8]) -> Vec<&'a [u8]> {
        match self {
            Chunking::Whole => vec![input],
            Chunking::Bytes => input.chunks(1).collect(),
            Chunking::Chars => {
                let s = std::str::from_utf8(input).expect("Chars chunking needs UTF-8");
                s.char_indices()
                    .map(|(i, c)| &input[i..i + c.len_utf8()])
                    .collect()
            }
            Chunking::Cuts(cuts) => {
                let mut out = Vec::new();
                let mut at = 0;
                for &c in cuts {
                    let c = c.min(input.len()).max(at);
                    out.push(&input[at..c]);
                    at = c;
                }
                out.push(&input[at..]);
                out
            }
        }
    }
}

/// The output of one run: rendered text and events with adjacent texts merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) text: String,
    pub(crate) events: Vec<Event>,
    pub(crate) numbering: Numbering,
}

pub(crate) fn run_chunks(
    chunks: &[&[u8]],
    settings: &Settings,
    sources: &Sources,
    numbering: Numbering,
) -> Run {
    let mut rw = Rewriter::new(settings.clone(), sources.clone(), numbering);
    let mut events: Vec<Event> = Vec::new();
    let drain = |rw: &mut Rewriter, events: &mut Vec<Event>| {
        while let Some(e) = rw.poll_event() {
            if let Event::Text { text } = &e {
                assert!(!text.is_empty(), "empty text event");
                if let Some(Event::Text { text: last }) = events.last_mut() {
                    last.push_str(text);
                    continue;
                }
            }
            events.push(e);
        }
    };
    for c in chunks {
        rw.write(c).expect("write");
        drain(&mut rw, &mut events);
    }
    rw.end().expect("end");
    drain(&mut rw, &mut events);
    let text = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    Run {
        text,
        events,
        numbering: rw.into_numbering(),
    }
}

/// As [`run_chunks`], polling with `Rewriter::poll_event_into`: the text appended before each
/// event becomes a text event in front of it (merged with the text before), so the two runs
/// compare event for event.
pub(crate) fn run_chunks_into(
    chunks: &[&[u8]],
    settings: &Settings,
    sources: &Sources,
    numbering: Numbering,
) -> Run {
    let mut rw = Rewriter::new(settings.clone(), sources.clone(), numbering);
    let mut events: Vec<Event> = Vec::new();
    let mut buf = String::new();
    let mut text = String::new();
    let drain =
        |rw: &mut Rewriter, events: &mut Vec<Event>, buf: &mut String, text: &mut String| loop {
            let next = rw.poll_event_into(buf);
            if !buf.is_empty() {
                text.push_str(buf);
                match events.last_mut() {
                    Some(Event::Text { text: last }) => last.push_str(buf),
                    _ => events.push(Event::Text { text: buf.clone() }),
                }
                buf.clear();
            }
            match next {
                Some(e) => events.push(e),
                None => break,
            }
        };
    for c in chunks {
        rw.write(c).expect("write");
        drain(&mut rw, &mut events, &mut buf, &mut text);
    }
    rw.end().expect("end");
    drain(&mut rw, &mut events, &mut buf, &mut text);
    Run {
        text,
        events,
        numbering: rw.into_numbering(),
    }
}

/// As [`run_chunks_into`], writing each chunk that is valid UTF-8 with
/// `Rewriter::write_through`: a chunk it hands back is appended to the text as it is.
pub(crate) fn run_chunks_through(
    chunks: &[&[u8]],
    settings: &Settings,
    sources: &Sources,
    numbering: Numbering,
) -> Run {
    let mut rw = Rewriter::new(settings.clone(), sources.clone(), numbering);
    let mut events: Vec<Event> = Vec::new();
    let mut buf = String::new();
    let mut text = String::new();
    let push_text = |events: &mut Vec<Event>, text: &mut String, t: &str| {
        if t.is_empty() {
            return;
        }
        text.push_str(t);
        match events.last_mut() {
            Some(Event::Text { text: last }) => last.push_str(t),
            _ => events.push(Event::Text { text: t.to_owned() }),
        }
    };
    let drain =
        |rw: &mut Rewriter, events: &mut Vec<Event>, buf: &mut String, text: &mut String| loop {
            let next = rw.poll_event_into(buf);
            push_text(events, text, buf);
            buf.clear();
            match next {
                Some(e) => events.push(e),
                None => break,
            }
        };
    for c in chunks {
        match std::str::from_utf8(c) {
            Ok(s) => {
                if rw.write_through(s).expect("write_through") {
                    assert!(!s.is_empty(), "write_through handed back an empty chunk");
                    push_text(&mut events, &mut text, s);
                    assert!(rw.poll_event().is_none(), "write_through queued output");
                }
            }
            Err(_) => rw.write(c).expect("write"),
        }
        drain(&mut rw, &mut events, &mut buf, &mut text);
    }
    rw.end().expect("end");
    drain(&mut rw, &mut events, &mut buf, &mut text);
    Run {
        text,
        events,
        numbering: rw.into_numbering(),
    }
}

pub(crate) fn run(input: &str, chunking: &Chunking, settings: &Settings, sources: &Sources) -> Run {
    run_chunks(
        &chunking.split(input.as_bytes()),
        settings,
        sources,
        Numbering::new(),
    )
}

/// A small deterministic generator (xorshift), seeded from `CITEFLOW_CHUNK_SEED` if set.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn from_env(default: u64) -> Self {
        let seed = std::env::var("CITEFLOW_CHUNK_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default);
        Rng(seed.max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Every chunking the house style asks for: whole, bytes, chars, every two-cut split for short
/// inputs, and seeded random cuts.
pub(crate) fn chunkings(input: &str, seed: u64) -> Vec<Chunking> {
    let n = input.len();
    let mut out = vec![Chunking::Whole, Chunking::Bytes, Chunking::Chars];
    if input.chars().count() <= 64 {
        for a in 0..=n {
            for b in a..=n {
                out.push(Chunking::Cuts(vec![a, b]));
            }
        }
    }
    let mut rng = Rng::from_env(seed);
    for _ in 0..8 {
        let mut cuts: Vec<usize> = (0..rng.below(8) + 1).map(|_| rng.below(n + 1)).collect();
        cuts.sort_unstable();
        out.push(Chunking::Cuts(cuts));
    }
    out
}

/// Asserts that every chunking gives the same output as one chunk, printing the chunking.
pub(crate) fn assert_chunk_invariant(input: &str, settings: &Settings, sources: &Sources) -> Run {
    let whole = run(input, &Chunking::Whole, settings, sources);
    for ch in chunkings(input, 0x5EED) {
        let got = run(input, &ch, settings, sources);
        assert_eq!(
            got, whole,
            "chunking {ch:?} of {input:?} differs (pin random cuts with CITEFLOW_CHUNK_SEED)"
        );
    }
    whole
}
