//! The real model (SmolLM2 through llama.cpp) behind the citeflow proxy: ask, stream, drop,
//! resume, and check the citations. Needs `--features local-model` and the GGUF file at
//! `CITEFLOW_LLM_MODEL` (scripts/test-llm.sh fetches it).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use citeflow_core::{
    citation_grammar, few_shot_messages, rewrite_str, Event, Numbering, PromptMarker, Settings,
    Source, Sources, SMALL_MODEL_GRAMMAR, SMALL_MODEL_MARKER,
};
use citeflow_llm::{LlamaModel, LocalServer, ModelSettings, ModelState};
use serde_json::{json, Value};

use citeflow_replay::{payloads, read_sse, text_of, Received};

/// The marker measured best for the local model (see the README's measurement).
const MARKER: PromptMarker = SMALL_MODEL_MARKER;

fn model_path() -> PathBuf {
    let p = std::env::var_os("CITEFLOW_LLM_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    assert!(
        p.is_file(),
        "the model file {} is missing: run scripts/test-llm.sh or set CITEFLOW_LLM_MODEL",
        p.display()
    );
    p
}

fn model() -> Arc<LlamaModel> {
    static MODEL: OnceLock<Arc<LlamaModel>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            Arc::new(
                LlamaModel::load(&model_path(), ModelSettings::default().with_threads(2))
                    .expect("load model"),
            )
        })
        .clone()
}

fn alice_sources() -> Vec<Source> {
    let passage = |id: &str, chapter: &str, cfi: &str, text: &str| {
        Source::new(id)
            .with_title(format!("Alice's Adventures in Wonderland — {chapter}"))
            .with_text(text)
            .with_locator(citeflow_core::Locator {
                chapter_title: Some(chapter.to_owned()),
                cfi: Some(cfi.to_owned()),
                ..citeflow_core::Locator::default()
            })
    };
    vec![
        passage(
            "alice#p3",
            "Down the Rabbit-Hole",
            "epubcfi(/6/8!/4/2/6,/1:0,/1:320)",
            "Alice was beginning to get very tired of sitting by her sister on the bank. Suddenly a White Rabbit with pink eyes ran close by her, took a watch out of its waistcoat-pocket, and hurried on.",
        ),
        passage(
            "alice#p9",
            "Down the Rabbit-Hole",
            "epubcfi(/6/8!/4/2/16,/1:0,/1:240)",
            "Down, down, down. The rabbit-hole went straight on like a tunnel, and then dipped suddenly down, so that Alice found herself falling down a very deep well.",
        ),
        passage(
            "alice#p41",
            "A Mad Tea-Party",
            "epubcfi(/6/22!/4/2/4,/1:0,/1:200)",
            "There was a table set out under a tree in front of the house, and the March Hare and the Hatter were having tea at it.",
        ),
    ]
}

struct Proxy {
    base: String,
    local: LocalServer,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Proxy {
    async fn start() -> Proxy {
        let local = LocalServer::start_loopback(ModelState::new(model(), 256))
            .await
            .expect("local model server");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let settings = citeflow_server::ServerSettings::new(local.base_url());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = citeflow_server::launch(settings, listener, async move {
                let _ = stopped.await;
            })
            .await;
        });
        Proxy {
            base,
            local,
            stop: Some(stop),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

fn request(question: &str, grammar: bool) -> Value {
    let sources = Sources::from_vec(alice_sources()).expect("sources");
    let messages: Vec<Value> = few_shot_messages(&sources, MARKER, question, 400)
        .into_iter()
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect();
    let mut body = json!({
        "model": "local", "stream": true, "temperature": 0, "seed": 7, "max_tokens": 48,
        "messages": messages,
        "sources": serde_json::to_value(alice_sources()).expect("sources json"),
        "citeflow": {"marker": MARKER.to_string(), "inject_prompt": false},
    });
    if grammar {
        let ids: Vec<&str> = ["alice#p3", "alice#p9", "alice#p41"].to_vec();
        body["grammar"] = Value::String(citation_grammar(MARKER, &ids, SMALL_MODEL_GRAMMAR));
    }
    body
}

fn citeflow_events(events: &[Received]) -> Vec<Value> {
    payloads(events)
        .iter()
        .filter_map(|v| v.pointer("/citeflow/events").cloned())
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .collect()
}

/// The numbers `[n]` in a rendered text, in order.
fn numbers_in(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        rest = &rest[i + 1..];
        if let Some(j) = rest.find(']') {
            if let Ok(n) = rest[..j].parse() {
                out.push(n);
            }
        }
    }
    out
}

/// The model's own text for the same request, straight from the local server.
async fn raw_answer(local: &LocalServer, body: &Value) -> String {
    let mut direct = body.clone();
    direct.as_object_mut().expect("object").remove("citeflow");
    direct.as_object_mut().expect("object").remove("sources");
    let resp = citeflow_replay::client()
        .post(format!("{}/chat/completions", local.base_url()))
        .json(&direct)
        .send()
        .await
        .expect("direct request");
    text_of(&read_sse(resp, usize::MAX).await)
}

async fn ask_drop_resume(grammar: bool) -> (String, String) {
    let proxy = Proxy::start().await;
    let body = request("What did the White Rabbit take out of its pocket?", grammar);
    let client = citeflow_replay::client();
    let resp = client
        .post(format!("{}/v1/chat/completions", proxy.base))
        .json(&body)
        .send()
        .await
        .expect("ask");
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["x-citeflow-stream-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    // Drop after a few events, then resume from the last id seen.
    let mut got = read_sse(resp, 4).await;
    assert_eq!(got.len(), 4, "the answer ended before the drop");
    while got.last().map(|e| e.data.as_str()) != Some("[DONE]") {
        let last = got
            .last()
            .and_then(|e| e.id)
            .expect("every event has an id");
        let resp = client
            .get(format!("{}/v1/streams/{id}", proxy.base))
            .header("Last-Event-ID", last.to_string())
            .send()
            .await
            .expect("resume");
        assert_eq!(resp.status(), 200);
        got.extend(read_sse(resp, 5).await);
    }
    // The resumed run equals a full replay of the stream.
    let replay = read_sse(
        client
            .get(format!("{}/v1/streams/{id}", proxy.base))
            .send()
            .await
            .expect("replay"),
        usize::MAX,
    )
    .await;
    let ids = |v: &[Received]| v.iter().map(|e| (e.id, e.data.clone())).collect::<Vec<_>>();
    assert_eq!(ids(&got), ids(&replay));
    let ids_seen: Vec<u64> = got.iter().filter_map(|e| e.id).collect();
    assert!(
        ids_seen.windows(2).all(|w| w[0] < w[1]),
        "ids increase: {ids_seen:?}"
    );

    let rendered = text_of(&got);
    let raw = raw_answer(&proxy.local, &body).await;
    // The proxy's text is the core's rewrite of what the model wrote.
    let sources = Sources::from_vec(alice_sources()).expect("sources");
    let core = rewrite_str(
        &raw,
        MARKER.settings(Settings::default()),
        sources,
        Numbering::new(),
    )
    .expect("rewrite");
    assert_eq!(rendered, core.text, "raw model text: {raw:?}");
    let written = core
        .events
        .iter()
        .filter(|e| matches!(e, Event::Citation { .. } | Event::Unresolved { .. }))
        .count();
    let events = citeflow_events(&got);
    let reported = events
        .iter()
        .filter(|e| e["type"] == "citation" || e["type"] == "unresolved")
        .count();
    assert_eq!(
        reported, written,
        "every marker resolved or reported: {raw:?}"
    );

    // Numbers: first appearance, stable, and the list matches the body.
    let body_numbers = numbers_in(&rendered);
    let mut first = Vec::new();
    for n in &body_numbers {
        if !first.contains(n) {
            first.push(*n);
        }
    }
    assert_eq!(
        first,
        (1..=first.len() as u32).collect::<Vec<_>>(),
        "{rendered:?}"
    );
    let cited: Vec<u32> = events
        .iter()
        .filter(|e| e["type"] == "citation")
        .map(|e| e["number"].as_u64().expect("number") as u32)
        .collect();
    assert_eq!(cited, body_numbers, "{rendered:?}");
    let done = events
        .iter()
        .find(|e| e["type"] == "done")
        .expect("a done event");
    let listed: BTreeSet<u32> = done["sources"]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| s["number"].as_u64().expect("number") as u32)
        .collect();
    assert_eq!(
        listed,
        body_numbers.iter().copied().collect::<BTreeSet<_>>()
    );
    assert_eq!(done["report"]["verified"], true, "{done}");
    for s in done["sources"].as_array().expect("list") {
        assert!(
            s["source"]["locator"]["cfi"]
                .as_str()
                .is_some_and(|c| c.starts_with("epubcfi(")),
            "{s}"
        );
    }
    // Usage and timings came through the proxy in the finishing chunk.
    let finish = payloads(&got)
        .into_iter()
        .find(|c| c.get("timings").is_some())
        .expect("a chunk with timings");
    assert!(
        finish["usage"]["completion_tokens"]
            .as_u64()
            .expect("tokens")
            > 0
    );
    assert!(finish["timings"]["ttft_ms"].as_f64().expect("ttft") > 0.0);
    (raw, rendered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_model_answer_through_the_proxy_survives_a_drop_and_cites() {
    let (raw, rendered) = ask_drop_resume(false).await;
    eprintln!("raw: {raw:?}\nrendered: {rendered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_model_with_a_grammar_cites_known_sources_only() {
    let (raw, rendered) = ask_drop_resume(true).await;
    eprintln!("raw: {raw:?}\nrendered: {rendered:?}");
    assert!(!rendered.contains("[?]"), "{rendered:?}");
    assert!(
        !numbers_in(&rendered).is_empty(),
        "the grammar requires a citation: {raw:?}"
    );
}
