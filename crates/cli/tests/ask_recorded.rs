//! `citeflow ask` against the replaying upstream (`citeflow-replay`) serving recorded provider
//! streams: the upstream's own citations (Perplexity `citations`, `url_citation` annotations)
//! are numbered by the core's `ProviderStream` beside the book's passages.

use citeflow_core::provider::ProviderStream;
use citeflow_core::{render_list, Event, ListFormat, Numbering, PromptMarker, Settings, Sources};
use citeflow_replay::{Replay, Script};
use serde_json::{json, Value};

use crate::books_support::{book_path, run};
use crate::shared_dir;

const QUESTION: &str = "Why did the White Rabbit take a watch out of its waistcoat-pocket?";

/// Serves `script` as model `model` on a loopback port; returns the runtime (keep it alive)
/// and the base URL.
fn serve(model: &str, script: Script) -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let replay = Replay::new();
    replay.insert(model, script);
    let base = rt.block_on(replay.spawn()).expect("upstream");
    (rt, base)
}

/// `citeflow ask` about alice.epub with `model` at `base`; returns stdout.
fn ask(base: &str, model: &str) -> String {
    let alice = book_path("alice.epub");
    let o = run(&[
        "ask",
        "--book",
        alice.to_str().unwrap(),
        "--upstream",
        base,
        "--model",
        model,
        "-k",
        "3",
        QUESTION,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn recording(name: &str) -> String {
    std::fs::read_to_string(shared_dir().join("fixtures/streams").join(name)).unwrap()
}

#[test]
fn ask_numbers_the_citations_of_a_recorded_perplexity_stream() {
    let name = "perplexity-text.chunks.txt";
    let (_rt, base) = serve(name, Script::from_chunk_lines(&recording(name)));
    let stdout = ask(&base, name);
    // Perplexity's `[1][5]` are ranks into its `citations`: the 1st and the 5th url, numbered
    // 1 and 2 in order of appearance, listed with their urls.
    assert!(stdout.starts_with("**EcoVista Day**[1][2]"), "{stdout}");
    let (text, list) = stdout.split_once("\n\n[1] ").expect("a source list");
    assert!(!text.contains("[3]"), "{stdout}");
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].contains("modernchristmastrees"), "{list}");
    assert!(
        lines[1].starts_with("[2] ") && lines[1].contains("jjonesdesignco"),
        "{list}"
    );
}

/// The recorded Responses stream as the Chat Completions chunks of the same answer: each text
/// delta a `delta.content`, each `url_citation` a `delta.annotations` entry (the Chat shape,
/// `{"type": "url_citation", "url_citation": {…}}`, offsets in characters of the message).
fn as_chat_chunks(responses: &str) -> String {
    let chunk = |delta: Value| {
        json!({"id": "chatcmpl-recorded", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        .to_string()
    };
    let mut lines = vec![chunk(json!({"role": "assistant", "content": ""}))];
    for line in responses.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        match v["type"].as_str() {
            Some("response.output_text.delta") => {
                lines.push(chunk(json!({"content": v["delta"]})));
            }
            Some("response.output_text.annotation.added") => {
                let mut a = v["annotation"].clone();
                let kind = a["type"].clone();
                a.as_object_mut().unwrap().remove("type");
                lines.push(chunk(
                    json!({"annotations": [{"type": kind, "url_citation": a}]}),
                ));
            }
            _ => {}
        }
    }
    lines.join("\n")
}

/// What the core gives for the recorded Responses stream itself (the server's Responses
/// route reads it so): the text, then the list as `citeflow ask` prints it.
fn responses_answer(responses: &str) -> String {
    // `citeflow ask`'s settings with its default marker and style.
    let settings = PromptMarker::DoubleBracket
        .settings(Settings::default())
        .with_max_pending_bytes(256)
        .unwrap();
    let mut ps = ProviderStream::new(settings, Sources::new(), Numbering::new());
    ps.write(responses.as_bytes()).unwrap();
    ps.end().unwrap();
    let mut out = String::new();
    while let Some(e) = ps.poll_event() {
        match e {
            Event::Text { text } => out.push_str(&text),
            Event::Done { sources, text, .. } => {
                assert!(text.is_none(), "no citation bound late");
                out.push_str(&format!(
                    "\n\n{}",
                    render_list(&sources, ListFormat::Text, None)
                ));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn ask_numbers_url_citation_annotations_as_the_responses_route_does() {
    let name = "openai-web-search-tool.1.chunks.txt";
    let responses = recording(name);
    let chat = as_chat_chunks(&responses);
    assert_eq!(chat.matches("\"url_citation\":{").count(), 12);
    let (_rt, base) = serve(name, Script::from_chunk_lines(&chat));
    let stdout = ask(&base, name);
    let want = responses_answer(&responses);
    assert_eq!(stdout, want);
    // The annotated markdown links became numbers; the 7 cited urls are listed once each.
    let (text, list) = stdout.split_once("\n\n[1] ").expect("a source list");
    assert!(text.contains("[7]") && !text.contains("[8]"), "{text}");
    assert!(
        !text.contains("](https://"),
        "annotated links replaced: {text}"
    );
    assert_eq!(
        list.lines().filter(|l| l.contains("https://")).count(),
        7,
        "{list}"
    );
}
