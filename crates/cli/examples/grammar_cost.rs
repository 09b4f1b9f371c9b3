//! What a tool-call grammar costs per generated token: the same request generated with the
//! grammar `tool_choice: "required"` makes (the schema compiler's, for a nested schema; ratio 1.41 measured 2026-12-06 on the 2-core machine under load, 3 rounds) and
//! without any grammar (`tool_choice: "none"`), alternating, in one process and one run.
//!
//! ```text
//! cargo run --release -p citeflow-cli --features local-model --example grammar_cost -- \
//!     --model SmolLM2-135M-Instruct.Q4_1.gguf [--rounds 5] [--threads 2]
//! ```
//!
//! Prints the median ms per generated token (after the first) of each, and their ratio.

use std::path::PathBuf;
use std::sync::Arc;

use citeflow_llm::{ChatRequest, Generate, LlamaModel, ModelSettings, Piece};
use serde_json::json;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let mut model = None;
    let mut rounds = 5usize;
    let mut threads = 2usize;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--model" => model = it.next().map(PathBuf::from),
            "--rounds" => rounds = it.next().and_then(|n| n.parse().ok()).expect("--rounds N"),
            "--threads" => threads = it.next().and_then(|n| n.parse().ok()).expect("--threads N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let model = model.expect("--model PATH.gguf");
    let llm = Arc::new(
        LlamaModel::load(&model, ModelSettings::default().with_threads(threads)).expect("load"),
    );
    let tool = json!({"type": "function", "function": {"name": "book_room", "description": "Book a room.",
        "parameters": {"type": "object", "properties": {
            "traveller": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer"}}, "required": ["name", "age"]},
            "nights": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3}},
            "required": ["traveller", "nights", "tags"]}}});
    let body = |choice: &str| {
        json!({"messages": [{"role": "user", "content": "Book three nights for Alice, who is seven, and tag it rabbit and tea."}],
            "tools": [tool], "tool_choice": choice, "max_tokens": 48, "temperature": 0})
    };
    let mut per_token = [Vec::new(), Vec::new()];
    let mut tokens = [0u64, 0u64];
    for round in 0..=rounds {
        for (k, choice) in ["none", "required"].into_iter().enumerate() {
            let req = ChatRequest::parse(&body(choice), 48).expect("request");
            assert_eq!(req.job.grammar.is_some(), k == 1);
            let mut rx = llm.start(req.job).expect("start");
            let mut text = String::new();
            while let Some(p) = rx.recv().await {
                match p {
                    Piece::Text(t) => text.push_str(&t),
                    // Round 0 warms up.
                    Piece::Done { stats, .. } if round > 0 && stats.completion_tokens > 1 => {
                        per_token[k]
                            .push(stats.generation_ms / (stats.completion_tokens - 1) as f64);
                        tokens[k] += stats.completion_tokens;
                    }
                    Piece::Failed(e) => panic!("{e}"),
                    _ => {}
                }
            }
            if round == 0 {
                eprintln!("{choice}: {text:?}");
            }
        }
    }
    let (plain, constrained) = (median(per_token[0].clone()), median(per_token[1].clone()));
    println!(
        "no grammar: {plain:.2} ms/token ({} tokens over {rounds} runs); tool-call grammar: {constrained:.2} ms/token ({} tokens); ratio {:.2}",
        tokens[0],
        tokens[1],
        constrained / plain
    );
}
