//! The JSONL fast path (lines borrowed from the written bytes, text payloads given to the
//! rewriter once per write) gives what the queue of payloads gives, however the bytes are cut.

use serde_json::Value;

use super::frame::{FrameDecoder, Framing, Plain};
use super::ProviderStream;
use crate::{Event, NumberSource, Numbering, Settings, Source, Sources};

/// Payloads `(data, line)` and the error, the fast way: `write_jsonl_with` per piece.
fn borrowed(bytes: &[u8], cuts: &[usize], max: usize) -> (Vec<(String, u64)>, Option<String>) {
    let mut d = FrameDecoder::new(Framing::Jsonl, max);
    let mut got = Vec::new();
    let mut at = 0;
    for c in cuts.iter().copied().chain([bytes.len()]) {
        let r = d.write_jsonl_with(&bytes[at..c], |data, line, plain| {
            // A line said to be a plain string is one, without escapes.
            if plain == Plain::String {
                let text = serde_json::from_str::<&str>(data).expect("a JSON string");
                assert_eq!(&data[1..data.len() - 1], text, "{data:?}");
            }
            got.push((data.to_owned(), line));
            Ok(())
        });
        if let Err(e) = r {
            return (got, Some(e.to_string()));
        }
        at = c;
    }
    let r = d.end();
    got.extend(std::iter::from_fn(|| d.poll_payload()).map(|p| (p.data, p.line)));
    (got, r.err().map(|e| e.to_string()))
}

/// The same through `write` and the queue of owned payloads.
fn queued(bytes: &[u8], cuts: &[usize], max: usize) -> (Vec<(String, u64)>, Option<String>) {
    let mut d = FrameDecoder::new(Framing::Jsonl, max);
    let mut got = Vec::new();
    let mut at = 0;
    for c in cuts.iter().copied().chain([bytes.len()]) {
        let r = d.write(&bytes[at..c]);
        got.extend(std::iter::from_fn(|| d.poll_payload()).map(|p| (p.data, p.line)));
        if let Err(e) = r {
            return (got, Some(e.to_string()));
        }
        at = c;
    }
    let r = d.end();
    got.extend(std::iter::from_fn(|| d.poll_payload()).map(|p| (p.data, p.line)));
    (got, r.err().map(|e| e.to_string()))
}

/// Every cut into two and three pieces.
fn cuts(len: usize) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for a in 0..=len {
        for b in a..=len {
            all.push(vec![a, b]);
        }
    }
    all
}

#[test]
fn borrowed_lines_are_the_queued_payloads_cut_anywhere() {
    let streams: [&[u8]; 5] = [
        "\"a\"\n\n  \r\n{\"b\":\"é😀\"}\r\n\"x\"\n\"last\"".as_bytes(),
        b"\"a\"\n\"b\"\n\"\xff\"\n\"c\"\n",
        b"\"a\"\n\"0123456789\"\n\"c\"\n",
        b"\"a\"\n\"b\"\n\"0123456789",
        b"\n\n\"a very long line of text that spans words\"\n\"b\"\r\n",
    ];
    for bytes in streams {
        for cut in cuts(bytes.len()) {
            for max in [10, 1 << 20] {
                let got = borrowed(bytes, &cut, max);
                assert_eq!(
                    got,
                    queued(bytes, &cut, max),
                    "{bytes:?} cut at {cut:?} max {max}"
                );
            }
        }
    }
    // The error names the line, after the lines before it.
    let (lines, err) = borrowed(b"\"a\"\n\"b\"\n\"\xff\"\n\"c\"\n", &[], 1 << 20);
    assert_eq!(lines, [("\"a\"".to_owned(), 1), ("\"b\"".to_owned(), 2)]);
    assert_eq!(err.as_deref(), Some("line 3: not valid utf-8"));
}

/// A line's text when it is a JSON string without escapes (what a run appends).
fn plain_text(data: &str) -> Option<&str> {
    let body = data.strip_prefix('"')?.strip_suffix('"')?;
    (!body.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)).then_some(body)
}

/// Lines as `(text, line)`, plain string lines as their text marked with a `+` first and
/// adjacent ones merged (numbered by the last): what runs appended, and the other lines.
fn merged(lines: impl IntoIterator<Item = (String, u64)>) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for (data, line) in lines {
        match (plain_text(&data), out.last_mut()) {
            (Some(text), Some(last)) if last.0.starts_with('+') => {
                last.0.push_str(text);
                last.1 = line;
            }
            (Some(text), _) => out.push((format!("+{text}"), line)),
            (None, _) => out.push((data, line)),
        }
    }
    out
}

/// As [`borrowed`], with plain string lines appended in runs (`write_jsonl_into`), merged.
fn appended(bytes: &[u8], cuts: &[usize], max: usize) -> (Vec<(String, u64)>, Option<String>) {
    let mut d = FrameDecoder::new(Framing::Jsonl, max);
    let mut got = Vec::new();
    let mut strings = String::new();
    let mut taken = 0;
    let mut at = 0;
    for c in cuts.iter().copied().chain([bytes.len()]) {
        let r = d.write_jsonl_into(&bytes[at..c], Some(&mut strings), |s, data, line, plain| {
            let s = s.expect("the strings given");
            match plain {
                Plain::Appended(n) => {
                    assert_eq!(s.len() - taken, n);
                    // Marked as a plain string line, so that `merged` joins it.
                    got.push((format!("\"{}\"", &s[taken..]), line));
                    taken = s.len();
                }
                _ => got.push((data.to_owned(), line)),
            }
            Ok(())
        });
        if let Err(e) = r {
            return (merged(got), Some(e.to_string()));
        }
        at = c;
    }
    let r = d.end();
    got.extend(std::iter::from_fn(|| d.poll_payload()).map(|p| (p.data, p.line)));
    (merged(got), r.err().map(|e| e.to_string()))
}

#[test]
fn strings_appended_in_runs_are_the_queued_payloads_cut_anywhere() {
    let streams: [&[u8]; 8] = [
        // A closing quote not followed by `\n`: not a plain string line, the run stops.
        b"\"a\"\n\"bcdefghijk\" \n\"c\"\n\"d\"x\n\"e\"\n",
        "\"a\"\n\n  \r\n{\"b\":\"é😀\"}\r\n\"x\"\n\"\"\n\"last\"".as_bytes(),
        // Wide characters at the edge of the 16 bytes a short text is copied as.
        "\"é\"\n\"0123456789abcdé\"\n\"😀\"\n\"0123456789abcdefé\"\n\"x\"\n".as_bytes(),
        b"\"a\"\n\"b\"\n\"\xff\"\n\"c\"\n",
        b"\"a\"\n\"b\"\n\"0123456789\"\n\"c\"\n\"d\"\n",
        b"\"a\"\n\"b\"\n\"0123456789",
        b"\"a\\n\"\n\"b\"\n\"c\"\r\n\"d\"\n[1]\n\"\"\n\"e\"\n",
        b"\n\n\"a very long line of text that spans words\"\n\"b\"\r\n",
    ];
    for bytes in streams {
        for cut in cuts(bytes.len()) {
            for max in [10, 1 << 20] {
                let (lines, err) = queued(bytes, &cut, max);
                assert_eq!(
                    appended(bytes, &cut, max),
                    (merged(lines), err),
                    "{bytes:?} cut at {cut:?} max {max}"
                );
            }
        }
    }
    // A run stops before a line too long: the lines before it are appended, then its error.
    let (lines, err) = appended(b"\"a\"\n\"b\"\n\"0123456789\"\n\"c\"\n", &[], 10);
    assert_eq!(lines, [("+ab".to_owned(), 2)]);
    assert_eq!(err.as_deref(), Some("line 3 is longer than 10 bytes"));
}

#[test]
fn long_runs_of_strings_are_appended_whole() {
    // Texts of 15 to 17 bytes (the edge of the 16-byte copy), wide characters, empty ones, in
    // a run longer than the 4 KiB gathered before an append.
    let texts = [
        "0123456789abcde",
        "0123456789abcdef",
        "0123456789abcdefg",
        "é",
        "😀😀😀😀",
        "",
    ];
    let bytes: Vec<u8> = (0..600)
        .flat_map(|i| format!("\"{}\"\n", texts[i % texts.len()]).into_bytes())
        .collect();
    let n = bytes.len();
    for cut in [vec![], vec![n / 3], vec![1, n - 2], vec![4097, 4098]] {
        for max in [10, 1 << 20] {
            let (lines, err) = queued(&bytes, &cut, max);
            let got = appended(&bytes, &cut, max);
            assert_eq!(got, (merged(lines), err), "cut at {cut:?} max {max}");
            if max == 1 << 20 {
                let all: String = (0..600).map(|i| texts[i % texts.len()]).collect();
                assert_eq!(got.0, [(format!("+{all}"), 600)]);
            }
        }
    }
}

/// Events (adjacent texts merged, as JSON) and the first error of a stream fed in pieces,
/// numbers answered at once when the rewriter asks for them (as a shared store would).
fn run(stream: &mut ProviderStream, bytes: &[u8], cuts: &[usize]) -> (Vec<Value>, Option<String>) {
    let mut events: Vec<Event> = Vec::new();
    let mut numbers: Vec<String> = Vec::new();
    let mut poll = |s: &mut ProviderStream, events: &mut Vec<Event>| {
        while let Some(e) = s.poll_event() {
            if let Event::NumberNeeded { key, .. } = &e {
                let n = match numbers.iter().position(|k| k == key) {
                    Some(i) => i + 1,
                    None => {
                        numbers.push(key.clone());
                        numbers.len()
                    }
                };
                // After an error the stream refuses numbers: the request stays in the events.
                if s.provide_number(key, u32::try_from(n).unwrap()).is_ok() {
                    continue;
                }
            }
            events.push(e);
        }
    };
    let mut at = 0;
    let mut err = None;
    for c in cuts.iter().copied().chain([bytes.len()]) {
        let r = stream.write(&bytes[at..c]);
        poll(stream, &mut events);
        if let Err(e) = r {
            err = Some(e.to_string());
            break;
        }
        at = c;
    }
    if err.is_none() {
        err = stream.end().err().map(|e| e.to_string());
        poll(stream, &mut events);
    }
    let mut out: Vec<Value> = Vec::new();
    for e in events {
        let v = serde_json::to_value(&e).unwrap();
        match out.last_mut() {
            Some(last) if last["type"] == "text" && v["type"] == "text" => {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap(),
                    v["text"].as_str().unwrap()
                );
                last["text"] = Value::String(joined);
            }
            _ => out.push(v),
        }
    }
    (out, err)
}

fn stream(framing: Framing, numbers: NumberSource) -> ProviderStream {
    let sources =
        Sources::from_vec(vec![Source::new("source_1"), Source::new("source_2")]).unwrap();
    let settings = Settings::default().with_number_source(numbers);
    ProviderStream::new(settings, sources, Numbering::new()).with_framing(framing)
}

#[test]
fn text_payloads_given_per_write_give_the_events_of_one_by_one() {
    // Markers cut across payloads, escapes, blank lines, a provider payload among the text
    // (its text after the text before it), and streams that fail part way (with numbers from
    // a store, what is shown before an error depends on when the caller answered, so those
    // run with local numbers only).
    let streams = [
        ("\"Paris \"\n\"[[sour\"\n\"ce_1]] is \\\"big\\\"\\n\"\n\n\"[\"\n\"[source_2]].\"\n\"é [[source_1]]\"", true),
        ("\"a [[source_2]]\"\n{\"choices\":[{\"delta\":{\"content\":\" b [[source_1]]\"}}]}\n\"c\"\n", true),
        // A link given as text before the payload that closes it: shown, so not replaced.
        (concat!(
            "\"see [[source_1]] [a](http://x\"\n",
            r#"{"choices":[{"delta":{"content":".org) b","annotations":[{"type":"url_citation","#,
            r#""url_citation":{"url":"http://x.org","title":"X","start_index":17,"end_index":35}}]}}]}"#,
            "\n\"c\"\n"
        ), true),
        ("\"a [[source_1]] \"\n\"b\"\nnot json\n\"c\"\n", false),
        ("\"a [[source_1]]\"\n\"unterminated\n\"c\"\n", false),
        ("\"a [[source_2]]\"\n{\"unknown\":1}\n\"c\"\n", false),
    ];
    for (text, store_too) in streams {
        let bytes = text.as_bytes();
        let numbering: &[NumberSource] = if store_too {
            &[NumberSource::Local, NumberSource::External]
        } else {
            &[NumberSource::Local]
        };
        for &numbers in numbering {
            // The reference: one write in auto framing, each payload queued and fed alone.
            let one_by_one = run(&mut stream(Framing::Auto, numbers), bytes, &[]);
            assert!(
                one_by_one.0.iter().any(|e| e["type"] == "citation"),
                "{text:?}"
            );
            assert_eq!(one_by_one.1.is_none(), store_too, "{text:?}");
            for cut in cuts(bytes.len()).into_iter().step_by(7) {
                let gathered = run(&mut stream(Framing::Jsonl, numbers), bytes, &cut);
                assert_eq!(gathered, one_by_one, "{text:?} cut at {cut:?}");
            }
        }
    }
}
