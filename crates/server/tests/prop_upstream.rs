//! Any upstream payload through the generation path (issue 15): payloads of every JSON shape,
//! garbage, errors, content after the finish, cut at any bytes. The server never panics and
//! every stream ends with `[DONE]` or an error event; no stream is left open.

use citeflow_replay::{Script, Step};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

use crate::support::{read_sse, Harness};

/// Text biased toward marker syntax and multi-byte characters.
fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("[[a]]".to_owned()),
            Just("[[".to_owned()),
            Just("]]".to_owned()),
            Just("[1]".to_owned()),
            Just("【2】".to_owned()),
            Just("<cite:b>".to_owned()),
            Just("草枕".to_owned()),
            "[a-z ]{0,6}",
        ],
        0..5,
    )
    .prop_map(|parts| parts.concat())
}

/// One `data:` payload.
fn payload() -> impl Strategy<Value = String> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    prop_oneof![
        6 => text().prop_map(move |t| chunk(json!({"content": t}), Value::Null)),
        1 => Just(chunk(json!({}), json!("stop"))),
        1 => Just("[DONE]".to_owned()),
        1 => prop_oneof![
            Just("42".to_owned()),
            Just("[]".to_owned()),
            Just("\"x\"".to_owned()),
            Just("null".to_owned()),
            Just("{}".to_owned()),
            Just(r#"{"choices": 7}"#.to_owned()),
            Just(r#"{"choices": [1]}"#.to_owned()),
            Just(r#"{"choices": [{"delta": "x"}]}"#.to_owned()),
            Just(r#"{"choices": [{"delta": {"content": 5}}]}"#.to_owned()),
            Just(r#"{"choices": [{"text": "plain"}]}"#.to_owned()),
            Just(r#"{"error": {"message": "overloaded"}}"#.to_owned()),
            Just("not json".to_owned()),
            Just(String::new()),
        ],
    ]
}

/// An SSE body of payloads (and comment lines), cut at the chosen byte positions.
fn upstream() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    (
        proptest::collection::vec(payload(), 0..8),
        any::<bool>(),
        proptest::collection::vec(any::<usize>(), 0..6),
    )
        .prop_map(|(payloads, comment, cuts)| {
            let mut body = String::new();
            for p in payloads {
                if comment {
                    body.push_str(": keep-alive\n");
                }
                body.push_str("data: ");
                body.push_str(&p);
                body.push_str("\n\n");
            }
            (body.into_bytes(), cuts)
        })
}

fn script(body: &[u8], cuts: &[usize]) -> Script {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| c % (body.len() + 1))
        .chain([0, body.len()])
        .collect();
    at.sort_unstable();
    at.dedup();
    Script::new(
        at.windows(2)
            .map(|w| Step::Bytes(body[w[0]..w[1]].to_vec()))
            .collect(),
    )
}

async fn case(h: &Harness, body: Vec<u8>, cuts: Vec<usize>) -> Result<(), TestCaseError> {
    h.replay.insert("p", script(&body, &cuts));
    let shown = String::from_utf8_lossy(&body).into_owned();
    let r = h
        .post("/v1/chat/completions")
        .json(&json!({"model": "p", "stream": true,
                      "sources": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
                      "messages": [{"role": "user", "content": "q"}]}))
        .send()
        .await
        .map_err(|e| TestCaseError::fail(format!("send: {e}")))?;
    prop_assert_eq!(r.status().as_u16(), 200, "{}", shown);
    let events = tokio::time::timeout(std::time::Duration::from_secs(10), read_sse(r, usize::MAX))
        .await
        .map_err(|_| TestCaseError::fail(format!("the stream did not end: {shown:?}")))?;
    let last = events.last().map(|e| e.data.clone()).unwrap_or_default();
    let is_error = serde_json::from_str::<Value>(&last).ok().and_then(|v| {
        v.pointer("/error/code")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    prop_assert!(
        last == "[DONE]" || is_error.is_some(),
        "the stream ended with {:?} for {:?} cut at {:?}",
        last,
        shown,
        cuts
    );
    prop_assert!(
        is_error.as_deref() != Some("internal_error"),
        "internal_error (a panic or a bug) for {:?}",
        shown
    );
    if last == "[DONE]" {
        // A completed answer carries its `done` event before [DONE].
        let done = events
            .iter()
            .rev()
            .nth(1)
            .map(|e| e.data.as_str())
            .unwrap_or("");
        prop_assert!(
            done.contains(r#""type":"done""#),
            "no done event: {:?}",
            events
        );
    }
    Ok(())
}

#[test]
fn prop_any_upstream_payload_ends_with_done_or_an_error() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let h = rt.block_on(Harness::start());
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(96);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&upstream(), |(body, cuts)| {
            rt.block_on(case(&h, body, cuts))
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Every generation ended: no stream is left open.
    let (open, metrics) = rt.block_on(crate::metrics::open_streams_settled(&h.state));
    assert_eq!(open, 0.0, "{metrics}");
}
