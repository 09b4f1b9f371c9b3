//! Claim anchors against hostile sources and answers: a 10 MB source, a 1 MB "sentence" with no
//! punctuation (in the source and in the answer), 50,000 one-word sentences, invalid UTF-8 in
//! a provider's quote. Each finishes in bounded time and memory (the figures are printed:
//! `cargo test -p citeflow-core --test hostile -- --nocapture`), never panics, and keeps what
//! was accepted. The bounds asserted are loose (a loaded debug build); the figures are the
//! measurement.

use std::sync::Mutex;
use std::time::Instant;

use citeflow_core::anchor::{Anchor, MAX_CLAIM_BYTES, MAX_SENTENCE_BYTES};
use citeflow_core::provider::{Dialect, ProviderStream};
use citeflow_core::{Event, Numbering, Rewriter, Settings, Source, Sources};
use peak_alloc::PeakAlloc;

/// Counts live bytes and their peak, to bound what anchoring allocates.
#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// One test at a time: the counters are global.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `f`, returning its result, the seconds it took and the peak bytes it allocated above
/// what was live before.
fn measure<T>(f: impl FnOnce() -> T) -> (T, f64, usize) {
    let base = ALLOC.current_usage();
    ALLOC.reset_peak_usage();
    let t = Instant::now();
    let out = f();
    (
        out,
        t.elapsed().as_secs_f64(),
        ALLOC.peak_usage().saturating_sub(base),
    )
}

fn anchors_of(answer: &str, text: String) -> Vec<Anchor> {
    let sources = Sources::from_vec(vec![Source::new("source_1").with_text(text)]).unwrap();
    let mut rw = Rewriter::new(
        Settings::default().with_anchors(true),
        sources,
        Numbering::new(),
    );
    let mut out = Vec::new();
    for chunk in answer.as_bytes().chunks(4096) {
        rw.write(chunk).unwrap();
        while let Some(e) = rw.poll_event() {
            if let Event::Anchor(a) = e {
                out.push(*a);
            }
        }
    }
    rw.end().unwrap();
    while let Some(e) = rw.poll_event() {
        if let Event::Anchor(a) = e {
            out.push(*a);
        }
    }
    out
}

const MIB: usize = 1 << 20;

#[test]
fn a_10_mb_source_is_anchored_over_its_first_mib_and_says_so() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = String::with_capacity(10 * MIB + 100);
    let mut i = 0;
    while text.len() < 10 * MIB {
        text.push_str(&format!(
            "Sentence {i} says that item {} weighs {} grams. ",
            i % 977,
            i % 131
        ));
        i += 1;
    }
    text.push_str("The rare zyzzyva beetle lives only here.");
    let (a, secs, peak) = measure(|| {
        anchors_of(
            "Item 5 weighs 5 grams [[source_1]]. The zyzzyva beetle lives here [[source_1]].",
            text,
        )
    });
    println!(
        "10 MB source: {secs:.3} s, peak {:.1} MB above the source",
        peak as f64 / 1e6
    );
    assert_eq!(a.len(), 2);
    let q = a[0].quote.as_ref().unwrap();
    assert!(q.truncated, "the quote says the source was cut");
    assert!(q.text.contains("item 5 weighs 5 grams"), "{}", q.text);
    assert!(q.range.unwrap().byte_end as usize <= MIB);
    // The sentence past the first MiB is not read: nothing supports the second claim there.
    assert_ne!(
        a[1].quote.as_ref().map(|q| q.text.as_str()),
        Some("The rare zyzzyva beetle lives only here.")
    );
    assert!(secs < 20.0, "{secs} s");
    // The source is cloned once into its source event (10 MB); the index of 1 MiB is a few MB.
    assert!(peak < 48 * MIB, "{peak} bytes");
}

#[test]
fn a_1_mb_sentence_with_no_punctuation_is_cut_in_the_source_and_in_the_answer() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let words = [
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
    ];
    let mut text = String::new();
    let mut i = 0;
    while text.len() < MIB {
        text.push_str(words[i % words.len()]);
        text.push_str(&format!("{} ", i % 1000));
        i += 1;
    }
    let answer = format!("{} [[source_1]] and more", text);
    let (a, secs, peak) = measure(|| anchors_of(&answer, text.clone()));
    println!(
        "1 MB sentence in source and answer: {secs:.3} s, peak {:.1} MB",
        peak as f64 / 1e6
    );
    assert_eq!(a.len(), 1);
    let claim = a[0].claim;
    assert!(
        (claim.byte_end - claim.byte_start) as usize <= MAX_CLAIM_BYTES,
        "{claim:?}"
    );
    let q = a[0].quote.as_ref().unwrap();
    assert!(q.text.len() <= MAX_SENTENCE_BYTES * 3, "{}", q.text.len());
    assert!(secs < 20.0, "{secs} s");
    assert!(peak < 64 * MIB, "{peak} bytes");
}

#[test]
fn fifty_thousand_one_word_sentences() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text: String = (0..50_000).map(|i| format!("Word{i}. ")).collect();
    let (a, secs, peak) = measure(|| anchors_of("It says word49999 [[source_1]].", text.clone()));
    println!(
        "50,000 one-word sentences: {secs:.3} s, peak {:.1} MB",
        peak as f64 / 1e6
    );
    assert_eq!(a[0].quote.as_ref().unwrap().text, "Word49999.");
    assert!(secs < 20.0, "{secs} s");
    assert!(peak < 64 * MIB, "{peak} bytes");
}

#[test]
fn invalid_utf8_in_a_providers_quote_is_a_typed_error_naming_its_line() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut stream: Vec<u8> = Vec::new();
    stream.extend_from_slice(br#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"x"}}"#);
    stream.push(b'\n');
    stream.extend_from_slice(
        br#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    );
    stream.push(b'\n');
    stream.extend_from_slice(br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Apple Ginza reopened on September 26."}}"#);
    stream.push(b'\n');
    stream.extend_from_slice(br#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"Apple Ginza "#);
    stream.extend_from_slice(&[0xFF, 0xFE, 0xC3]);
    stream.extend_from_slice(
        br#" reopens September 26","url":"https://example.com/a","title":"A"}}}"#,
    );
    stream.push(b'\n');
    stream.extend_from_slice(br#"{"type":"content_block_stop","index":0}"#);
    stream.push(b'\n');
    stream.extend_from_slice(br#"{"type":"message_stop"}"#);
    stream.push(b'\n');
    let mut s = ProviderStream::new(
        Settings::default().with_anchors(true),
        Sources::new(),
        Numbering::new(),
    )
    .with_dialect(Dialect::Anthropic);
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for chunk in stream.chunks(5) {
        if let Err(e) = s.write(chunk) {
            errors.push(e.to_string());
        }
        events.extend(std::iter::from_fn(|| s.poll_event()));
    }
    if let Err(e) = s.end() {
        errors.push(e.to_string());
    }
    events.extend(std::iter::from_fn(|| s.poll_event()));
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // What was accepted is kept.
    assert!(
        text.starts_with("Apple Ginza reopened on September 26."),
        "{text:?} {errors:?}"
    );
    let anchors: Vec<&Anchor> = events
        .iter()
        .filter_map(|e| match e {
            Event::Anchor(a) => Some(&**a),
            _ => None,
        })
        .collect();
    // The payload is refused with a typed error that names its line (the provider stream's
    // policy for invalid UTF-8 inside JSON), no anchor is made from it, and nothing panics.
    assert!(anchors.is_empty(), "{anchors:?}");
    assert_eq!(
        errors.first().map(String::as_str),
        Some("line 4: not valid utf-8")
    );
}
