//! Records real streams of the local model into `tests/fixtures/streams/`: builds a few
//! requests (book passages retrieved with the index, k = 3, 400 characters each; few-shot and
//! zero-shot prompts, with and without a grammar), posts each to the model served on loopback
//! through its OpenAI-compatible interface, and writes the raw SSE bytes as received plus one
//! line of `manifest.jsonl` per file: what it exercises, the sources shown, the citeflow
//! settings (`citeflow.marker`; the rewriter's settings are `PromptMarker::settings` of it)
//! and the exact request body.
//!
//! ```text
//! cargo run -p citeflow-cli --features local-model --example record_streams -- \
//!     --model target/models/SmolLM2-135M-Instruct.Q4_1.gguf --out tests/fixtures/streams
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use citeflow_core::{
    citation_grammar, few_shot_messages, zero_shot_messages, GrammarMode, PromptMarker, Source,
    Sources,
};
use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::{fingerprint, BookPassage, Index};
use citeflow_llm::{sha256_file, LlamaModel, LocalServer, ModelSettings, ModelState};
use serde_json::{json, Value};

#[path = "support/prompt_sources.rs"]
mod prompt_sources;
use prompt_sources::sources_for;

struct Case {
    file: &'static str,
    book: &'static str,
    question: &'static str,
    marker: PromptMarker,
    few_shot: bool,
    grammar: Option<GrammarMode>,
    temperature: f64,
    exercises: &'static str,
}

/// Tokens per answer (as in the cite-rate measurement).
const MAX_TOKENS: usize = 96;

const ALICE: &str = "alice.epub";
const KUSAMAKURA: &str = "kusamakura-japanese-vertical-writing.epub";

const CASES: [Case; 8] = [
    Case {
        file: "smollm2-local-01.sse",
        book: ALICE,
        question: "What did the White Rabbit take out of its waistcoat-pocket?",
        marker: PromptMarker::Rank,
        few_shot: true,
        grammar: Some(GrammarMode::CitePerSentence),
        temperature: 0.0,
        exercises:
            "the local model's default: few-shot prompt, rank `[n]`, `cite_per_sentence` grammar",
    },
    Case {
        file: "smollm2-local-02.sse",
        book: KUSAMAKURA,
        question: "山路を登りながら、こう考えた。智に働けばどうなるか？",
        marker: PromptMarker::Rank,
        few_shot: true,
        grammar: Some(GrammarMode::CitePerSentence),
        temperature: 0.0,
        exercises: "the default on Japanese passages: multi-byte characters cut between tokens",
    },
    Case {
        file: "smollm2-local-03.sse",
        book: ALICE,
        question: "What was the Caterpillar smoking?",
        marker: PromptMarker::RankFullWidth,
        few_shot: true,
        grammar: Some(GrammarMode::CitePerSentence),
        temperature: 0.0,
        exercises:
            "full-width `【n】` with `cite_per_sentence`: a multi-byte marker cut between tokens",
    },
    Case {
        file: "smollm2-local-04.sse",
        book: ALICE,
        question: "Who was having tea with the March Hare?",
        marker: PromptMarker::DoubleBracket,
        few_shot: true,
        grammar: Some(GrammarMode::WellFormed),
        temperature: 0.0,
        exercises: "`[[book#pN]]` ids with `#`, `well_formed` grammar",
    },
    Case {
        file: "smollm2-local-05.sse",
        book: ALICE,
        question: "What was the Caterpillar smoking?",
        marker: PromptMarker::DoubleBracket,
        few_shot: false,
        grammar: None,
        temperature: 0.0,
        exercises:
            "the proxy's zero-shot prompt (system instruction, sources with CFIs), no grammar",
    },
    Case {
        file: "smollm2-local-06.sse",
        book: ALICE,
        question: "Who stole the tarts?",
        marker: PromptMarker::Rank,
        few_shot: true,
        grammar: Some(GrammarMode::CitePerSentence),
        temperature: 0.0,
        exercises: "the default on a question where the model stacks markers (a long run of ranks under the uncapped `marker+` of the time; at most three a sentence since)",
    },
    Case {
        file: "smollm2-local-07.sse",
        book: ALICE,
        question: "What was left when the Cheshire Cat vanished?",
        marker: PromptMarker::CiteColon,
        few_shot: true,
        grammar: Some(GrammarMode::CitePerSentence),
        temperature: 0.0,
        exercises: "`<cite:book#pN>` tags with `cite_per_sentence`: long ids, cut by `max_tokens`",
    },
    Case {
        file: "smollm2-local-08.sse",
        book: ALICE,
        question: "What game did the Queen play with flamingos?",
        marker: PromptMarker::Rank,
        few_shot: true,
        grammar: Some(GrammarMode::CitePerSentence),
        temperature: 0.7,
        exercises: "the default, sampled at the local server's default temperature 0.7 (seed 7)",
    },
];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut model = root.join("target/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let mut out = root.join("tests/fixtures/streams");
    let books = std::env::var_os("CITEFLOW_SHARED_DIR")
        .map_or_else(|| root.join("../shared"), PathBuf::from)
        .join("fixtures/epub");
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--model" => model = it.next().expect("--model PATH").into(),
            "--out" => out = it.next().expect("--out DIR").into(),
            other => panic!("unknown argument {other}"),
        }
    }
    let model_name = model
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("local")
        .to_owned();
    let model_sha256 = sha256_file(&model).expect("model sha256");
    let llm = LlamaModel::load(&model, ModelSettings::default()).expect("load model");
    let server = LocalServer::start_loopback(ModelState::new(Arc::new(llm), 512))
        .await
        .expect("serve");
    let settings = ChunkSettings::default();
    let mut index = Index::in_memory().expect("index");
    let mut keys = std::collections::HashMap::new();
    for b in ["alice.epub", "kusamakura-japanese-vertical-writing.epub"] {
        let bytes = std::fs::read(books.join(b)).expect("book");
        let book = Book::open(&bytes, &Limits::default()).expect("open");
        let passages = BookPassage::from_book(&book, &settings);
        keys.insert(b, passages[0].book_key.clone());
        index
            .add_book(&passages, &fingerprint(&bytes, &settings))
            .expect("index");
    }
    std::fs::create_dir_all(&out).expect("out dir");
    let mut manifest = std::fs::File::create(out.join("manifest.jsonl")).expect("manifest");
    let client = citeflow_replay::client();
    for c in CASES {
        let hits = index
            .search_book(&keys[c.book], c.question, 3)
            .expect("search");
        let passages: Vec<Source> = hits.iter().map(|h| h.passage.to_source()).collect();
        let list = sources_for(&passages, c.marker);
        let sources = Sources::from_vec(list.clone()).expect("sources");
        let messages = if c.few_shot {
            few_shot_messages(&sources, c.marker, c.question, 400)
        } else {
            zero_shot_messages(&sources, c.marker, c.question, 400)
        };
        let mut request = json!({
            "model": model_name, "stream": true,
            "temperature": c.temperature, "seed": 7, "max_tokens": MAX_TOKENS,
            "messages": messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        });
        if let Some(g) = c.grammar {
            let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
            request["grammar"] = Value::String(citation_grammar(c.marker, &ids, g));
        }
        let mut resp = client
            .post(format!("{}/chat/completions", server.base_url()))
            .json(&request)
            .send()
            .await
            .expect("post");
        assert!(resp.status().is_success(), "{}: {}", c.file, resp.status());
        let mut raw = Vec::new();
        while let Some(b) = resp.chunk().await.expect("body") {
            raw.extend_from_slice(&b);
        }
        std::fs::write(out.join(c.file), &raw).expect("write");
        let line = json!({
            "file": c.file, "exercises": c.exercises, "book": c.book, "question": c.question,
            "marker": c.marker.to_string(),
            "prompt": if c.few_shot { "few_shot" } else { "zero_shot" },
            "grammar": c.grammar.map(|g| g.to_string()),
            "model": {"file": model.file_name().and_then(|s| s.to_str()), "sha256": model_sha256},
            "sources": serde_json::to_value(&list).expect("json"),
            "citeflow": {"marker": c.marker.to_string()},
            "request": request,
        });
        writeln!(manifest, "{line}").expect("manifest line");
        eprintln!("{}: {} bytes", c.file, raw.len());
    }
}
