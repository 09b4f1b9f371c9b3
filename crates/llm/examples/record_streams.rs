//! Records real streams of the local model into `tests/fixtures/streams/`: builds a few
//! requests (book passages retrieved with the index, few-shot and zero-shot prompts, with and
//! without a grammar), posts each to the model served on loopback, and writes the raw SSE
//! bytes as received plus one manifest line (file, what it exercises, the request).
//!
//! ```text
//! cargo run -p citeflow-llm --features local-model --example record_streams -- \
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
use citeflow_llm::{LlamaModel, LocalServer, ModelSettings, ModelState};
use serde_json::{json, Value};

struct Case {
    file: &'static str,
    book: &'static str,
    question: &'static str,
    marker: PromptMarker,
    few_shot: bool,
    grammar: Option<GrammarMode>,
    exercises: &'static str,
}

const CASES: [Case; 5] = [
    Case {
        file: "smollm2-local-01.sse",
        book: "alice.epub",
        question: "What did the White Rabbit take out of its waistcoat-pocket?",
        marker: PromptMarker::Rank,
        few_shot: true,
        grammar: None,
        exercises: "few-shot prompt, rank markers `[n]` over book passages",
    },
    Case {
        file: "smollm2-local-02.sse",
        book: "alice.epub",
        question: "Who was having tea with the March Hare?",
        marker: PromptMarker::DoubleBracket,
        few_shot: true,
        grammar: Some(GrammarMode::WellFormed),
        exercises: "`[[book#pN]]` ids with `#`, GBNF grammar keeping markers well-formed",
    },
    Case {
        file: "smollm2-local-03.sse",
        book: "kusamakura-japanese-vertical-writing.epub",
        question: "山路を登りながら、こう考えた。智に働けばどうなるか？",
        marker: PromptMarker::RankFullWidth,
        few_shot: true,
        grammar: None,
        exercises:
            "Japanese passages, full-width `【n】`, multi-byte characters cut between tokens",
    },
    Case {
        file: "smollm2-local-04.sse",
        book: "alice.epub",
        question: "What was the Caterpillar smoking?",
        marker: PromptMarker::DoubleBracket,
        few_shot: false,
        grammar: None,
        exercises: "the proxy's zero-shot prompt (system instruction + sources with CFIs)",
    },
    Case {
        file: "smollm2-local-05.sse",
        book: "alice.epub",
        question: "What was written on the little bottle that Alice found?",
        marker: PromptMarker::Rank,
        few_shot: true,
        grammar: Some(GrammarMode::RequireCitation),
        exercises: "grammar that requires at least one citation before the end",
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
    let client = reqwest::Client::new();
    for c in CASES {
        let hits = index
            .search_book(&keys[c.book], c.question, 3)
            .expect("search");
        let list: Vec<Source> = hits.iter().map(|h| h.passage.to_source()).collect();
        let sources = Sources::from_vec(list.clone()).expect("sources");
        let messages = if c.few_shot {
            few_shot_messages(&sources, c.marker, c.question, 400)
        } else {
            zero_shot_messages(&sources, c.marker, c.question, 400)
        };
        let mut request = json!({
            "model": "SmolLM2-135M-Instruct.Q4_1", "stream": true,
            "temperature": 0, "seed": 7, "max_tokens": 64,
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
        let mut raw = Vec::new();
        while let Some(b) = resp.chunk().await.expect("body") {
            raw.extend_from_slice(&b);
        }
        std::fs::write(out.join(c.file), &raw).expect("write");
        let line = json!({
            "file": c.file, "exercises": c.exercises, "book": c.book,
            "marker": c.marker.name(),
            "prompt": if c.few_shot { "few_shot" } else { "zero_shot" },
            "grammar": c.grammar.map(GrammarMode::name),
            "sources": serde_json::to_value(&list).expect("json"),
            "request": request,
        });
        writeln!(manifest, "{line}").expect("manifest line");
        eprintln!("{}: {} bytes", c.file, raw.len());
    }
}
