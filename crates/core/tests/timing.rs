//! Timing is input: every shared recording with provider citations, its text deltas re-cut
//! anywhere and each citation event moved later within its content part.
//!
//! - Re-cutting the deltas (down to one character each, then the bytes of the stream cut
//!   anywhere, inside UTF-8 sequences too) gives the same events as the recording.
//! - Moving citation events later gives the same final text and the same list.
//! - In every run the final text's numbers are dense in first-appearance order, every listed
//!   number is shown, and the streamed text never shows a number before a smaller one.

use citeflow_core::Settings;
use proptest::prelude::*;
use serde_json::Value;

use crate::provider::{recordings, run_with as run, run_with_store_settings};

/// What one payload of a recording is, for re-cutting and moving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A text delta: the JSON pointer of its text.
    Text(&'static str),
    /// A provider citation event (movable later within its part).
    Cite,
    /// The end of a content part (a citation is never moved past it); for Bedrock, the
    /// content block it closes.
    End(Option<u64>),
    Other,
}

fn kind(v: &Value) -> Kind {
    let t = v["type"]
        .as_str()
        .or_else(|| v["event_type"].as_str())
        .unwrap_or("");
    let dt = v["delta"]["type"].as_str().unwrap_or("");
    match (t, dt) {
        ("response.output_text.delta", _) => Kind::Text("/delta"),
        ("response.output_text.annotation.added", _) => Kind::Cite,
        ("response.output_text.done" | "response.content_part.done", _) => Kind::End(None),
        ("content_block_delta", "text_delta") => Kind::Text("/delta/text"),
        ("content_block_delta", "citations_delta") => Kind::Cite,
        ("content_block_stop", _) => Kind::End(None),
        ("content-delta", _) => Kind::Text("/delta/message/content/text"),
        ("citation-start" | "citation-end", _) => Kind::Cite,
        ("message-end", _) => Kind::End(None),
        ("step.delta", "text") => Kind::Text("/delta/text"),
        ("step.delta", "text_annotation_delta") => Kind::Cite,
        ("step.stop", _) => Kind::End(None),
        _ => {
            if let Some(d) = v.get("contentBlockDelta") {
                if d["delta"]["text"].is_string() {
                    return Kind::Text("/contentBlockDelta/delta/text");
                }
                if d["delta"].get("citation").is_some() {
                    return Kind::Cite;
                }
            }
            if let Some(s) = v.get("contentBlockStop") {
                return Kind::End(s["contentBlockIndex"].as_u64());
            }
            if let Some(c) = v["choices"].get(0) {
                if c["finish_reason"].is_string() {
                    return Kind::End(None);
                }
                let annotated = c["delta"].get("annotations").is_some_and(|a| !a.is_null());
                if annotated {
                    return Kind::Cite;
                }
                if c["delta"]["content"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty())
                {
                    return Kind::Text("/choices/0/delta/content");
                }
            }
            Kind::Other
        }
    }
}

fn block_of(v: &Value) -> Option<u64> {
    v["contentBlockDelta"]["contentBlockIndex"].as_u64()
}

/// The recording's payloads.
fn payloads(data: &[u8]) -> Vec<Value> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// Whether the recording has provider citations.
fn has_citations(lines: &[Value]) -> bool {
    lines.iter().any(|v| kind(v) == Kind::Cite)
}

/// Moves the citation event at each index `i` later by `delays[k]` payloads (the k-th
/// citation), never past the end of its part, and keeping the citations' order (url-only
/// citations have no other order; crossing ones are the generated cases' job).
fn move_citations(lines: &[Value], delays: &[usize]) -> Vec<Value> {
    let mut keyed: Vec<((usize, usize), Value)> = Vec::with_capacity(lines.len());
    let mut k = 0;
    let mut last = 0;
    for (i, v) in lines.iter().enumerate() {
        if kind(v) != Kind::Cite {
            keyed.push(((i, 0), v.clone()));
            continue;
        }
        let delay = delays.get(k).copied().unwrap_or(0);
        k += 1;
        let block = block_of(v);
        // The last index it may follow: the payload before its part's end.
        let end = lines[i + 1..]
            .iter()
            .position(|w| match kind(w) {
                Kind::End(b) => block.is_none() || b.is_none() || b == block,
                _ => false,
            })
            .map_or(lines.len() - 1, |p| i + p);
        let at = (i + delay).min(end).max(i).max(last);
        last = at;
        keyed.push(((at, 1 + k), v.clone()));
    }
    keyed.sort_by_key(|(key, _)| *key);
    keyed.into_iter().map(|(_, v)| v).collect()
}

/// Re-cuts every text delta at the character counts of `sizes` (taken in turn, cycling).
fn recut(lines: &[Value], sizes: &[usize]) -> Vec<Value> {
    let mut out = Vec::with_capacity(lines.len() * 2);
    let mut turn = 0;
    for v in lines {
        let Kind::Text(ptr) = kind(v) else {
            out.push(v.clone());
            continue;
        };
        let text = v.pointer(ptr).and_then(Value::as_str).unwrap().to_owned();
        let chars: Vec<char> = text.chars().collect();
        let mut at = 0;
        while at < chars.len() {
            let n = sizes
                .get(turn % sizes.len().max(1))
                .copied()
                .unwrap_or(1)
                .max(1);
            turn += 1;
            let piece: String = chars[at..(at + n).min(chars.len())].iter().collect();
            at += n;
            let mut w = v.clone();
            *w.pointer_mut(ptr).unwrap() = Value::String(piece);
            out.push(w);
        }
    }
    out
}

/// The payloads as SSE bytes.
fn sse(lines: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in lines {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(v.to_string().as_bytes());
        out.extend_from_slice(b"\n\n");
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

/// The streamed text, the final text and the list (`number`, source id) of a run.
fn answer(events: &[Value]) -> (String, String, Vec<(u64, String)>) {
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done");
    let final_text = done["text"]
        .as_str()
        .map_or(streamed.clone(), str::to_owned);
    let list = done["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["number"].as_u64().unwrap(),
                s["source"]["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (streamed, final_text, list)
}

/// The numbers `[n]` of `text` in order of first appearance.
fn first_appearances(text: &str) -> Vec<u64> {
    let mut seen = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        rest = &rest[i + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && rest[digits.len()..].starts_with(']') {
            let n: u64 = digits.parse().unwrap();
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
    }
    seen
}

/// The output invariants of one run: the final text's numbers dense in first-appearance
/// order and exactly the listed ones; the streamed text's first appearances increasing.
fn check_output(name: &str, events: &[Value]) -> Result<(), TestCaseError> {
    let (streamed, final_text, list) = answer(events);
    let shown = first_appearances(&final_text);
    let dense: Vec<u64> = (1..=shown.len() as u64).collect();
    prop_assert_eq!(&shown, &dense, "{}: final text {}", name, final_text);
    let mut listed: Vec<u64> = list.iter().map(|(n, _)| *n).collect();
    listed.sort_unstable();
    prop_assert_eq!(&listed, &dense, "{}: every listed number shown", name);
    let streamed_shown = first_appearances(&streamed);
    prop_assert!(
        streamed_shown.windows(2).all(|w| w[0] < w[1]),
        "{}: streamed first appearances {:?}",
        name,
        streamed_shown
    );
    Ok(())
}

/// Where two runs' events first differ, briefly.
fn difference(a: &[Value], b: &[Value]) -> String {
    let i = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let brief = |v: Option<&Value>| {
        v.map_or("(none)".to_owned(), |v| {
            let s = v.to_string();
            s.chars().take(400).collect()
        })
    };
    format!(
        "{} and {} events, first difference at {i}:\n  {}\n  {}",
        a.len(),
        b.len(),
        brief(a.get(i)),
        brief(b.get(i))
    )
}

/// The recordings with provider citations, as payloads.
fn cited() -> Vec<(String, Vec<Value>)> {
    let all: Vec<(String, Vec<Value>)> = recordings()
        .into_iter()
        .map(|(name, data)| (name, payloads(&data)))
        .filter(|(_, lines)| has_citations(lines))
        .collect();
    assert!(all.len() >= 10, "recordings with citations: {}", all.len());
    all
}

#[test]
fn recordings_as_recorded_keep_the_output_invariants() {
    let settings = Settings::default();
    for (name, lines) in cited() {
        let events = run(&settings, &sse(&lines), &[]);
        check_output(&name, &events).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn deltas_of_one_character_give_the_recordings_events() {
    let settings = Settings::default();
    for (name, lines) in cited() {
        let whole = run(&settings, &sse(&lines), &[]);
        let fine = run(&settings, &sse(&recut(&lines, &[1])), &[]);
        assert!(whole == fine, "{name}: {}", difference(&whole, &fine));
        let stored = run_with_store_settings(&settings, &sse(&recut(&lines, &[1])), &[]);
        assert!(
            whole == stored,
            "{name}, numbers from a store: {}",
            difference(&whole, &stored)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Deltas re-cut anywhere, then the bytes cut anywhere: the recording's events.
    #[test]
    fn prop_recut_deltas_give_the_same_events(
        sizes in proptest::collection::vec(1usize..6, 1..16),
        cuts in proptest::collection::vec(any::<usize>(), 0..24),
    ) {
        let settings = Settings::default();
        for (name, lines) in cited() {
            let whole = run(&settings, &sse(&lines), &[]);
            let bytes = sse(&recut(&lines, &sizes));
            let cut = run(&settings, &bytes, &cuts);
            prop_assert!(whole == cut, "{}: {}", name, difference(&whole, &cut));
        }
    }

    /// Each citation event moved later within its part (and the deltas re-cut): the same
    /// final text and list, and the output invariants hold.
    #[test]
    fn prop_late_citations_give_the_same_final_answer(
        delays in proptest::collection::vec(0usize..80, 0..64),
        sizes in proptest::collection::vec(1usize..4, 1..8),
    ) {
        let settings = Settings::default();
        for (name, lines) in cited() {
            let (_, want_text, want_list) = answer(&run(&settings, &sse(&lines), &[]));
            let moved = recut(&move_citations(&lines, &delays), &sizes);
            let events = run(&settings, &sse(&moved), &[]);
            check_output(&name, &events)?;
            let (_, text, list) = answer(&events);
            prop_assert!(text == want_text, "{}: final text\n{}\nwant\n{}", name, text, want_text);
            prop_assert_eq!(&list, &want_list, "{}", name);
        }
    }
}

/// A piece of a generated answer: words, or a link to site `k` that is cited or not.
#[derive(Debug, Clone)]
enum Seg {
    Words(String),
    Link {
        site: usize,
        wrapped: bool,
        cited: bool,
    },
}

fn seg() -> impl Strategy<Value = Seg> {
    prop_oneof![
        3 => proptest::string::string_regex("[a-z .,é漢😀]{1,24}").unwrap().prop_map(Seg::Words),
        2 => (0usize..4, any::<bool>(), prop::bool::weighted(0.75))
            .prop_map(|(site, wrapped, cited)| Seg::Link { site, wrapped, cited }),
    ]
}

fn link_text(site: usize, wrapped: bool) -> String {
    let link = format!("[site{site}.org](https://site{site}.org/page?utm_source=openai)");
    if wrapped {
        format!("({link})")
    } else {
        link
    }
}

/// The answer's text, and for each cited link its character span and site.
fn layout(segs: &[Seg]) -> (String, Vec<(usize, usize, usize)>) {
    let mut text = String::new();
    let mut cited = Vec::new();
    for s in segs {
        match s {
            Seg::Words(w) => text.push_str(w),
            Seg::Link {
                site,
                wrapped,
                cited: c,
            } => {
                let start = text.chars().count();
                text.push_str(&link_text(*site, *wrapped));
                if *c {
                    cited.push((start, text.chars().count(), *site));
                }
            }
        }
    }
    (text, cited)
}

/// What the final text must be: every cited link replaced by its site's number (numbers by
/// first appearance; the same number twice at one place shown once), the others as written.
fn oracle(segs: &[Seg]) -> String {
    let mut order: Vec<usize> = Vec::new();
    let mut out = String::new();
    let mut last: Option<(usize, usize)> = None;
    for s in segs {
        match s {
            Seg::Words(w) => out.push_str(w),
            Seg::Link {
                site, cited: true, ..
            } if last == Some((*site, out.len())) => {}
            Seg::Link {
                site, cited: true, ..
            } => {
                if !order.contains(site) {
                    order.push(*site);
                }
                let n = order.iter().position(|x| x == site).unwrap() + 1;
                out.push_str(&format!("[{n}]"));
                last = Some((*site, out.len()));
            }
            Seg::Link { site, wrapped, .. } => out.push_str(&link_text(*site, *wrapped)),
        }
    }
    out
}

/// A Responses stream of `text` in deltas of `sizes` characters, each citation sent once the
/// text has passed its link's end by `lags[k]` characters (`None`: after the last delta).
fn lagged_stream(
    text: &str,
    cited: &[(usize, usize, usize)],
    sizes: &[usize],
    lags: &[Option<usize>],
) -> Vec<Value> {
    let annotation = |(s, e, site): (usize, usize, usize)| {
        serde_json::json!({"type": "response.output_text.annotation.added", "item_id": "m",
            "content_index": 0, "annotation": {"type": "url_citation", "start_index": s,
            "end_index": e, "url": format!("https://site{site}.org/page?utm_source=openai"),
            "title": format!("Site {site}")}})
    };
    let due: Vec<Option<usize>> = cited
        .iter()
        .enumerate()
        .map(|(k, c)| lags.get(k).copied().unwrap_or(Some(0)).map(|l| c.1 + l))
        .collect();
    let mut sent = vec![false; cited.len()];
    let mut lines = vec![serde_json::json!({"type": "response.created", "response": {}})];
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    let mut turn = 0;
    while at < chars.len() {
        let n = sizes[turn % sizes.len()].max(1);
        turn += 1;
        let piece: String = chars[at..(at + n).min(chars.len())].iter().collect();
        at = (at + n).min(chars.len());
        lines.push(
            serde_json::json!({"type": "response.output_text.delta", "item_id": "m",
            "content_index": 0, "delta": piece}),
        );
        for (k, d) in due.iter().enumerate() {
            if !sent[k] && d.is_some_and(|d| d <= at) && at < chars.len() {
                sent[k] = true;
                lines.push(annotation(cited[k]));
            }
        }
    }
    for (k, c) in cited.iter().enumerate() {
        if !sent[k] {
            lines.push(annotation(*c));
        }
    }
    lines.push(
        serde_json::json!({"type": "response.output_text.done", "item_id": "m",
        "content_index": 0}),
    );
    lines.push(serde_json::json!({"type": "response.completed", "response": {}}));
    lines
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// OpenAI-shaped (`([site](url))`) and Azure-shaped (`[Site](url)`, citations after the
    /// last delta) answers, deltas of any size, citations lagging by any amount and in any
    /// order: the final text is the oracle's; within the hold bound the streamed text is the
    /// final text; past it (a bound of 16 bytes) only the final text has the late numbers.
    #[test]
    fn prop_link_citations_at_any_lag_give_the_oracles_text(
        segs in proptest::collection::vec(seg(), 1..14),
        sizes in proptest::collection::vec(1usize..8, 1..6),
        lags in proptest::collection::vec(proptest::option::weighted(0.8, 0usize..120), 0..14),
        shuffle in any::<u64>(),
    ) {
        let (text, mut cited) = layout(&segs);
        // Citations in any order: a seeded rotation and reversal.
        if !cited.is_empty() && shuffle % 3 == 1 {
            let r = (shuffle as usize / 3) % cited.len();
            cited.rotate_left(r);
        } else if shuffle % 3 == 2 {
            cited.reverse();
        }
        let want = oracle(&segs);
        let bytes = sse(&lagged_stream(&text, &cited, &sizes, &lags));
        let events = run(&Settings::default(), &bytes, &[]);
        check_output("generated", &events)?;
        let (streamed, final_text, _) = answer(&events);
        prop_assert_eq!(&final_text, &want);
        prop_assert_eq!(&streamed, &want, "within the bound nothing is bound late");
        let stored = run_with_store_settings(&Settings::default(), &bytes, &[]);
        prop_assert!(stored == events, "{}", difference(&events, &stored));
        let tight = Settings::default().with_max_link_hold_bytes(16);
        let events = run(&tight, &bytes, &[]);
        let (_, final_text, _) = answer(&events);
        prop_assert_eq!(&final_text, &want);
        let stored = run_with_store_settings(&tight, &bytes, &[]);
        prop_assert!(stored == events, "numbers from a store: {}", difference(&events, &stored));
    }
}

/// The hold's edge: a link and the text after it held at exactly `max_link_hold_bytes` still
/// wait for the citation (the stream shows the number); one byte less and the link is shown
/// as written, the number bound late (the final text alone); `0` holds nothing. The final
/// text is the same every time.
#[test]
fn the_link_hold_ends_past_its_bound() {
    let link = link_text(0, true);
    let tail = " and more.";
    let text = format!("See {link}{tail}");
    let start = "See ".chars().count();
    let cited = [(start, start + link.chars().count(), 0)];
    // The whole text in one delta, then the citation: the held bytes are the link and the tail.
    let bytes = sse(&lagged_stream(
        &text,
        &cited,
        &[text.chars().count()],
        &[None],
    ));
    let held = link.len() + tail.len();
    let want = format!("See [1]{tail}");
    for (bound, in_stream) in [(held, true), (held - 1, false), (0, false)] {
        let settings = Settings::default().with_max_link_hold_bytes(bound);
        let (streamed, final_text, list) = answer(&run(&settings, &bytes, &[]));
        assert_eq!(final_text, want, "bound {bound}");
        assert_eq!(list.len(), 1, "bound {bound}");
        if in_stream {
            assert_eq!(streamed, want, "bound {bound}");
        } else {
            assert_eq!(streamed, text, "bound {bound}: the link shown as written");
        }
    }
}
