//! Chat Completions done right (issue 16 §3): citeflow's citations as standard
//! `delta.annotations` / `message.annotations` (`url_citation`, character offsets into the
//! rewritten content), the upstream's own annotations never passed on stale, and `n > 1`
//! with each choice through its own rewriter.

use citeflow_replay::{Script, Step};
use serde_json::{json, Value};

use crate::support::{read_sse, Harness};

fn sources() -> Value {
    json!([
        {"id": "source_3", "title": "Water", "url": "https://example.org/water"},
        {"id": "source_7", "title": "Paris", "url": "https://example.org/paris"},
        {"id": "source_9", "title": "No link"}
    ])
}

fn request(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "sources": sources(),
        "citeflow": {"inject_prompt": false},
        "messages": [{"role": "user", "content": "q"}]})
}

/// An SSE chunk of `choices`.
fn chunk(choices: Value) -> Step {
    let v = json!({"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1,
        "model": "m", "choices": choices});
    Step::Bytes(format!("data: {v}\n\n").into_bytes())
}

fn delta(index: u64, content: &str) -> Value {
    json!({"index": index, "delta": {"content": content}, "finish_reason": null})
}

fn finish(index: u64) -> Value {
    json!({"index": index, "delta": {}, "finish_reason": "stop"})
}

/// Characters `start..end` of `s`.
fn chars(s: &str, a: &Value) -> String {
    let start = a["start_index"].as_u64().expect("start") as usize;
    let end = a["end_index"].as_u64().expect("end") as usize;
    s.chars().skip(start).take(end - start).collect()
}

/// What each `url_citation` annotation slices of `text`, with its url.
fn sliced(text: &str, annotations: &[Value]) -> Vec<(String, String)> {
    annotations
        .iter()
        .map(|a| {
            let u = &a["url_citation"];
            (chars(text, u), u["url"].as_str().expect("url").to_owned())
        })
        .collect()
}

/// The first `done` event among the citeflow payloads.
fn done_of(citeflow: &[Value]) -> Value {
    citeflow
        .iter()
        .flat_map(|c| c["events"].as_array().into_iter().flatten())
        .find(|e| e["type"] == "done")
        .expect("done")
        .clone()
}

/// Per choice index: (text, annotations); and the citeflow payloads in order.
fn collect(events: &[crate::support::Received]) -> (Vec<(String, Vec<Value>)>, Vec<Value>) {
    let mut choices: Vec<(String, Vec<Value>)> = Vec::new();
    let mut citeflow = Vec::new();
    for e in events {
        let Ok(v) = serde_json::from_str::<Value>(&e.data) else {
            continue;
        };
        for c in v["choices"].as_array().into_iter().flatten() {
            let i = c["index"].as_u64().expect("index") as usize;
            if choices.len() <= i {
                choices.resize(i + 1, (String::new(), Vec::new()));
            }
            if let Some(t) = c["delta"]["content"].as_str() {
                choices[i].0.push_str(t);
            }
            for a in c["delta"]["annotations"].as_array().into_iter().flatten() {
                choices[i].1.push(a.clone());
            }
        }
        if let Some(cf) = v.get("citeflow") {
            citeflow.push(cf.clone());
        }
    }
    (choices, citeflow)
}

/// Every annotation is a `url_citation` whose offsets slice the `[n]` it stands for, with its
/// source's url and title.
fn check_annotations(text: &str, annotations: &[Value], expected: &[(&str, &str)]) {
    let got: Vec<(String, String)> = annotations
        .iter()
        .map(|a| {
            assert_eq!(a["type"], "url_citation", "{a}");
            let u = &a["url_citation"];
            (chars(text, u), u["url"].as_str().expect("url").to_owned())
        })
        .collect();
    let want: Vec<(String, String)> = expected
        .iter()
        .map(|(n, u)| ((*n).to_owned(), (*u).to_owned()))
        .collect();
    assert_eq!(got, want, "{text}");
    for a in annotations {
        let title = a["url_citation"]["title"].as_str().expect("title");
        assert!(["Water", "Paris"].contains(&title), "{a}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn citations_are_standard_annotations_whose_offsets_slice_the_number() {
    let h = Harness::start().await;
    // Markers split across chunks, a non-ASCII text before them (offsets count characters),
    // a source without url (no annotation).
    h.replay.insert(
        "annotated",
        Script::new(vec![
            chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": ""}}])),
            chunk(json!([delta(0, "Café de Paris [[sou")])),
            chunk(json!([delta(0, "rce_7]] and rain [[source_3]]")])),
            chunk(json!([delta(0, " 草枕 [[source_9]] again [[source_7]].")])),
            chunk(json!([finish(0)])),
            Step::Bytes(b"data: [DONE]\n\n".to_vec()),
        ]),
    );
    let resp = h
        .post("/v1/chat/completions")
        .json(&request("annotated", true))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events = read_sse(resp, usize::MAX).await;
    let (choices, citeflow) = collect(&events);
    assert_eq!(choices.len(), 1);
    let (text, annotations) = &choices[0];
    assert_eq!(text, "Café de Paris [1] and rain [2] 草枕 [3] again [1].");
    check_annotations(
        text,
        annotations,
        &[
            ("[1]", "https://example.org/paris"),
            ("[2]", "https://example.org/water"),
            ("[1]", "https://example.org/paris"),
        ],
    );
    // The citeflow events agree: four citations, the done event last before [DONE].
    let cites: Vec<&Value> = citeflow
        .iter()
        .flat_map(|c| c["events"].as_array().into_iter().flatten())
        .filter(|e| e["type"] == "citation")
        .collect();
    assert_eq!(cites.len(), 4);
    assert_eq!(events.last().expect("events").data, "[DONE]");
    let done: Value = serde_json::from_str(&events[events.len() - 2].data).expect("done");
    assert_eq!(done["citeflow"]["events"][0]["type"], "done");

    // Not streaming: the same text, the same annotations in message.annotations.
    let answer = json!({"id": "chatcmpl-y", "object": "chat.completion", "created": 1,
        "model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant",
            "content": "Café de Paris [[source_7]] and rain [[source_3]] 草枕 [[source_9]] again [[source_7]]."}}]});
    h.replay.insert(
        "annotated-json",
        Script::new(vec![Step::Bytes(answer.to_string().into_bytes())]),
    );
    let body: Value = h
        .post("/v1/chat/completions")
        .json(&request("annotated-json", false))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let msg = &body["choices"][0]["message"];
    assert_eq!(msg["content"].as_str(), Some(text.as_str()));
    let plain = msg["annotations"].as_array().expect("annotations");
    assert_eq!(plain, annotations);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_2_streams_each_choice_through_its_own_rewriter() {
    let h = Harness::start().await;
    // Two choices interleaved, markers of one split around chunks of the other; choice 1
    // cites source_3 first, so it is [1] there; choice 0 sends content after its
    // finish_reason (dropped) while choice 1 goes on.
    h.replay.insert(
        "two",
        Script::new(vec![
            chunk(json!([
                delta(0, "Paris [[sour"),
                delta(1, "Rain [[source_")
            ])),
            chunk(json!([delta(1, "3]] falls. Paris [[source_7]]")])),
            chunk(json!([delta(0, "ce_7]] is big.")])),
            chunk(json!([finish(0)])),
            chunk(json!([delta(0, " late [[source_3]]")])),
            chunk(json!([delta(1, " too.")])),
            chunk(json!([finish(1)])),
            Step::Bytes(b"data: [DONE]\n\n".to_vec()),
        ]),
    );
    let mut req = request("two", true);
    req["n"] = json!(2);
    let resp = h
        .post("/v1/chat/completions")
        .json(&req)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events = read_sse(resp, usize::MAX).await;
    assert!(
        !events.iter().any(|e| e.data.contains("\"error\"")),
        "{events:?}"
    );
    let (choices, citeflow) = collect(&events);
    assert_eq!(choices.len(), 2);
    assert_eq!(choices[0].0, "Paris [1] is big.");
    assert_eq!(choices[1].0, "Rain [1] falls. Paris [2] too.");
    check_annotations(
        &choices[0].0,
        &choices[0].1,
        &[("[1]", "https://example.org/paris")],
    );
    check_annotations(
        &choices[1].0,
        &choices[1].1,
        &[
            ("[1]", "https://example.org/water"),
            ("[2]", "https://example.org/paris"),
        ],
    );
    // One done event per choice, each listing its own numbers; choice 1's names it.
    let dones: Vec<(Option<u64>, Value)> = citeflow
        .iter()
        .flat_map(|c| {
            c["events"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["type"] == "done")
                .map(|e| (c["choice"].as_u64(), e.clone()))
        })
        .collect();
    assert_eq!(dones.len(), 2, "{citeflow:?}");
    let listed = |d: &Value| -> Vec<(u64, String)> {
        d["sources"]
            .as_array()
            .expect("sources")
            .iter()
            .map(|s| {
                (
                    s["number"].as_u64().expect("number"),
                    s["source"]["id"].as_str().expect("id").to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(dones[0].0, None);
    assert_eq!(listed(&dones[0].1), vec![(1, "source_7".to_owned())]);
    assert_eq!(dones[1].0, Some(1));
    assert_eq!(
        listed(&dones[1].1),
        vec![(1, "source_3".to_owned()), (2, "source_7".to_owned())]
    );
    assert_eq!(events.last().expect("events").data, "[DONE]");

    // Not streaming: each choice rewritten and annotated on its own.
    let answer = json!({"id": "chatcmpl-z", "object": "chat.completion", "created": 1,
        "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                "content": "Paris [[source_7]] is big."}},
            {"index": 1, "finish_reason": "stop", "message": {"role": "assistant",
                "content": "Rain [[source_3]] falls. Paris [[source_7]] too."}}]});
    h.replay.insert(
        "two-json",
        Script::new(vec![Step::Bytes(answer.to_string().into_bytes())]),
    );
    let mut req = request("two-json", false);
    req["n"] = json!(2);
    let body: Value = h
        .post("/v1/chat/completions")
        .json(&req)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    for (i, (text, annotations)) in choices.iter().enumerate() {
        let msg = &body["choices"][i]["message"];
        assert_eq!(msg["content"].as_str(), Some(text.as_str()), "{body}");
        assert_eq!(
            msg["annotations"].as_array().expect("annotations"),
            annotations
        );
    }
    let events = body["citeflow"]["events"].as_array().expect("events");
    let dones: Vec<Option<u64>> = events
        .iter()
        .filter(|e| e["type"] == "done")
        .map(|e| e["choice"].as_u64())
        .collect();
    assert_eq!(dones, vec![None, Some(1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_answers_in_the_ai_sdk_ui_message_stream_when_asked() {
    let h = Harness::start().await;
    h.replay.insert(
        "ui",
        Script::chat(&[
            "Paris [[sou",
            "rce_7]] has rain [[source_3]]",
            " and a river [[source_7]].",
        ]),
    );
    for accept in [false, true] {
        let mut req = request("ui", false);
        let mut post = h.post("/v1/chat/completions");
        if accept {
            post = post.header("accept", "text/event-stream, x-vercel-ai-ui-message-stream");
        } else {
            req["citeflow"]["protocol"] = json!("ai-sdk");
        }
        let resp = post.json(&req).send().await.expect("send");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["x-vercel-ai-ui-message-stream"], "v1");
        let events = read_sse(resp, usize::MAX).await;
        assert_eq!(events.last().expect("events").data, "[DONE]");
        let parts: Vec<Value> = events
            .iter()
            .filter_map(|e| serde_json::from_str(&e.data).ok())
            .collect();
        let kinds: Vec<&str> = parts
            .iter()
            .map(|p| p["type"].as_str().expect("type"))
            .collect();
        assert_eq!(&kinds[..2], ["start", "text-start"], "{kinds:?}");
        assert_eq!(
            &kinds[kinds.len() - 2..],
            ["text-end", "finish"],
            "{kinds:?}"
        );
        // Each number's source-url comes once, before the text that shows the number.
        let mut text = String::new();
        let mut sources = Vec::new();
        for p in &parts {
            match p["type"].as_str() {
                Some("source-url") => {
                    sources.push((
                        p["sourceId"].as_str().expect("id").to_owned(),
                        p["url"].as_str().expect("url").to_owned(),
                        p["title"].as_str().expect("title").to_owned(),
                    ));
                }
                Some("text-delta") => {
                    text.push_str(p["delta"].as_str().expect("delta"));
                    for n in 1..=2 {
                        if text.contains(&format!("[{n}]")) {
                            assert!(sources.len() >= n, "[{n}] before its source: {parts:?}");
                        }
                    }
                }
                _ => {}
            }
        }
        assert_eq!(text, "Paris [1] has rain [2] and a river [1].");
        assert_eq!(
            sources,
            vec![
                (
                    "1".to_owned(),
                    "https://example.org/paris".to_owned(),
                    "Paris".to_owned()
                ),
                (
                    "2".to_owned(),
                    "https://example.org/water".to_owned(),
                    "Water".to_owned()
                ),
            ]
        );
        let done = parts
            .iter()
            .filter(|p| p["type"] == "data-citeflow")
            .flat_map(|p| p["data"]["events"].as_array().expect("events").clone())
            .find(|e| e["type"] == "done")
            .expect("done as a data-citeflow part");
        assert_eq!(done["sources"].as_array().expect("sources").len(), 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_ui_message_stream_resumes_after_last_event_id() {
    let h = Harness::start().await;
    h.replay.insert(
        "ui-resume",
        Script::chat(&[
            "Paris [[source_7]]",
            " has rain [[source_3]]",
            " and a river [[source_7]].",
        ]),
    );
    let mut req = request("ui-resume", false);
    req["citeflow"]["protocol"] = json!("ai-sdk");
    let resp = h
        .post("/v1/chat/completions")
        .json(&req)
        .send()
        .await
        .expect("send");
    let id = resp.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let full = read_sse(resp, usize::MAX).await;
    let ids: Vec<u64> = full.iter().filter_map(|e| e.id).collect();
    assert!(ids.len() >= 4, "{full:?}");
    // After every id the client may have seen, the resumed parts are the rest of the run.
    for after in ids {
        let at = full.iter().position(|e| e.id == Some(after)).expect("seen");
        let rest = read_sse(
            h.get(&format!("/v1/streams/{id}"))
                .header("accept", "x-vercel-ai-ui-message-stream")
                .header("last-event-id", after.to_string())
                .send()
                .await
                .expect("resume"),
            usize::MAX,
        )
        .await;
        assert_eq!(rest, full[at + 1..].to_vec(), "after {after}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_annotations_are_numbered_and_mapped_into_the_rewritten_text() {
    let h = Harness::start().await;
    // A gateway's url_citation on "the Seine", in characters of its own content (which holds
    // a marker citeflow rewrites, and Japanese before it), sent after the text.
    let upstream = "草枕 Paris [[source_7]] is on the Seine. It rains.";
    let start = upstream[..upstream.find("the Seine").expect("span")]
        .chars()
        .count();
    let annotation = json!([{"type": "url_citation", "url_citation": {"start_index": start,
        "end_index": start + "the Seine".chars().count(), "url": "https://seine.example/",
        "title": "Seine"}}]);
    h.replay.insert(
        "gateway",
        Script::new(vec![
            chunk(json!([delta(
                0,
                "草枕 Paris [[source_7]] is on the Seine."
            )])),
            chunk(json!([{"index": 0, "delta": {"content": " It rains.",
                "annotations": annotation}, "finish_reason": null}])),
            chunk(json!([finish(0)])),
            Step::Bytes(b"data: [DONE]\n\n".to_vec()),
        ]),
    );
    let resp = h
        .post("/v1/chat/completions")
        .json(&request("gateway", true))
        .send()
        .await
        .expect("send");
    let events = read_sse(resp, usize::MAX).await;
    let (choices, citeflow) = collect(&events);
    let (text, annotations) = &choices[0];
    // Shown text never changes for a citation bound after its text: the number is placed in
    // done.text, and the annotation spans the cited text of the rewritten content.
    assert_eq!(text, "草枕 Paris [1] is on the Seine. It rains.");
    let spans = sliced(text, annotations);
    assert_eq!(
        spans,
        vec![
            ("[1]".to_owned(), "https://example.org/paris".to_owned()),
            ("the Seine".to_owned(), "https://seine.example/".to_owned()),
        ],
        "{annotations:?}"
    );
    assert_eq!(annotations[1]["url_citation"]["title"], "Seine");
    let done = done_of(&citeflow);
    let listed: Vec<(u64, String)> = done["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .map(|s| {
            (
                s["number"].as_u64().expect("n"),
                s["source"]["url"].as_str().expect("url").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        vec![
            (1, "https://example.org/paris".to_owned()),
            (2, "https://seine.example/".to_owned())
        ]
    );
    assert_eq!(
        done["text"].as_str(),
        Some("草枕 Paris [1] is on the Seine[2]. It rains."),
        "{done}"
    );

    // Not streaming: the same text, annotations and final text.
    let answer = json!({"id": "chatcmpl-g", "object": "chat.completion", "created": 1,
        "model": "m", "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": upstream, "annotations": annotation}}]});
    h.replay.insert(
        "gateway-json",
        Script::new(vec![Step::Bytes(answer.to_string().into_bytes())]),
    );
    let body: Value = h
        .post("/v1/chat/completions")
        .json(&request("gateway-json", false))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let msg = &body["choices"][0]["message"];
    assert_eq!(msg["content"].as_str(), Some(text.as_str()));
    assert_eq!(
        msg["annotations"].as_array().expect("annotations"),
        annotations
    );
    let plain_done = body["citeflow"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "done")
        .expect("done");
    assert_eq!(plain_done["text"], done["text"]);
    assert_eq!(plain_done["sources"], done["sources"]);
}

/// Issue 39 on the chat route (issue 37: the route reads upstream chunks through the core's
/// `ProviderStream`): a gateway's OpenAI-style link citations, `([site](url))` in the text
/// and a `url_citation` spanning each link, with the text re-cut to 1, 3 and 7 characters
/// and each annotation sent 0, 2 or 8 chunks after the one that ends its link, or after the
/// last text: every timing streams the same text, each link replaced by its number (held
/// until its annotation came), the annotations slice the numbers, and the done event lists
/// the two urls in that order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_39_chat_links_are_numbered_under_any_cutting_and_timing() {
    let h = Harness::start().await;
    let urls = [
        "https://paris.example/a?utm_source=openai",
        "https://rain.example/b?utm_source=openai",
    ];
    let link = |site: &str, url: &str| format!("([{site}]({url}))");
    let parts = [
        "Paris is big 草枕 ".to_owned(),
        link("paris.example", urls[0]),
        ". Rain falls ".to_owned(),
        link("rain.example", urls[1]),
        " often.".to_owned(),
    ];
    let upstream: String = parts.concat();
    // Each link's span, in characters of the upstream's content.
    let spans: Vec<(usize, usize)> = [1, 3]
        .iter()
        .map(|&i| {
            let start = parts[..i].concat().chars().count();
            (start, start + parts[i].chars().count())
        })
        .collect();
    let want = "Paris is big 草枕 [1]. Rain falls [2] often.";
    let letters: Vec<char> = upstream.chars().collect();
    for cut in [1, 3, 7] {
        for lag in [Some(0), Some(2), Some(8), None] {
            let pieces: Vec<String> = letters.chunks(cut).map(|c| c.iter().collect()).collect();
            // The chunk where each annotation goes: `lag` after the one ending its span.
            let mut due: Vec<Vec<Value>> = vec![Vec::new(); pieces.len() + 1];
            for (k, &(start, end)) in spans.iter().enumerate() {
                let ends_in = (end - 1) / cut;
                let at = lag.map_or(pieces.len(), |l| (ends_in + l).min(pieces.len()));
                due[at].push(json!({"type": "url_citation", "url_citation": {
                    "start_index": start, "end_index": end, "url": urls[k],
                    "title": format!("site {k}")}}));
            }
            let mut steps: Vec<Step> = Vec::new();
            for (i, p) in pieces.iter().enumerate() {
                let mut d = json!({"content": p});
                if !due[i].is_empty() {
                    d["annotations"] = json!(due[i]);
                }
                steps.push(chunk(
                    json!([{"index": 0, "delta": d, "finish_reason": null}]),
                ));
            }
            if !due[pieces.len()].is_empty() {
                let d = json!({"annotations": due[pieces.len()]});
                steps.push(chunk(
                    json!([{"index": 0, "delta": d, "finish_reason": null}]),
                ));
            }
            steps.push(chunk(json!([finish(0)])));
            steps.push(Step::Bytes(b"data: [DONE]\n\n".to_vec()));
            let model = format!("links-{cut}-{lag:?}");
            h.replay.insert(&model, Script::new(steps));
            let mut req = request(&model, true);
            req["sources"] = json!([]);
            let resp = h
                .post("/v1/chat/completions")
                .json(&req)
                .send()
                .await
                .expect("send");
            let events = read_sse(resp, usize::MAX).await;
            let (choices, citeflow) = collect(&events);
            let (text, annotations) = &choices[0];
            let case = format!("cut {cut}, lag {lag:?}");
            assert_eq!(text, want, "{case}");
            assert_eq!(
                sliced(text, annotations),
                vec![
                    ("[1]".to_owned(), urls[0].to_owned()),
                    ("[2]".to_owned(), urls[1].to_owned())
                ],
                "{case}"
            );
            let done = done_of(&citeflow);
            let listed: Vec<&str> = done["sources"]
                .as_array()
                .expect("sources")
                .iter()
                .map(|s| s["source"]["url"].as_str().expect("url"))
                .collect();
            assert_eq!(listed, urls, "{case}");
            if let Some(t) = done.get("text") {
                assert_eq!(t, want, "{case}");
            }
        }
    }
}
