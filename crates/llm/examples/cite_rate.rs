//! Measures how often the local model cites, per marker syntax, prompt form and grammar.
//!
//! For a fixed set of questions about the bundled books (Alice's Adventures in Wonderland and
//! Kusamakura), passages are retrieved with the book index, the model answers (temperature
//! 0, fixed seed) and the core `Rewriter` counts the citations of each answer. An answer
//! cites when it has at least one resolved citation. Prints a Markdown table.
//!
//! ```text
//! cargo run -p citeflow-llm --features local-model --example cite_rate -- \
//!     --model target/models/SmolLM2-135M-Instruct.Q4_1.gguf [--books DIR] [--max-tokens 64]
//! ```
//!
//! `--grammar MODE` measures only the few-shot prompt with that grammar (e.g.
//! `cite_per_sentence`); `--all-variants` adds the `well_formed` grammar to both prompts.

use std::path::PathBuf;
use std::time::Instant;

use citeflow_core::{
    citation_grammar, few_shot_messages, rewrite_str, zero_shot_messages, Event, GrammarMode,
    Numbering, PromptMarker, PromptMessage, Settings, Source, Sources,
};
use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::{fingerprint, BookPassage, Index};
use citeflow_llm::{ChatMessage, Generate, Job, LlamaModel, ModelSettings, Piece, Sampling};

const BOOKS: [&str; 2] = ["alice.epub", "kusamakura-japanese-vertical-writing.epub"];

/// (book file, question).
const QUESTIONS: [(&str, &str); 12] = [
    (
        "alice.epub",
        "What did the White Rabbit take out of its waistcoat-pocket?",
    ),
    ("alice.epub", "Who was having tea with the March Hare?"),
    (
        "kusamakura-japanese-vertical-writing.epub",
        "山路を登りながら、こう考えた。智に働けばどうなるか？",
    ),
    (
        "alice.epub",
        "What was left when the Cheshire Cat vanished?",
    ),
    ("alice.epub", "What was the Caterpillar smoking?"),
    (
        "kusamakura-japanese-vertical-writing.epub",
        "住みにくい世から逃れるには何が必要か？",
    ),
    (
        "alice.epub",
        "What was written on the little bottle that Alice found?",
    ),
    (
        "alice.epub",
        "What happened to Alice after she ate the cake?",
    ),
    ("alice.epub", "What game did the Queen play with flamingos?"),
    ("alice.epub", "Who stole the tarts?"),
    (
        "kusamakura-japanese-vertical-writing.epub",
        "What does the painter say about poetry and pictures?",
    ),
    (
        "kusamakura-japanese-vertical-writing.epub",
        "那美さんはどんな女か？",
    ),
];

const MARKERS: [(PromptMarker, &str); 5] = [
    (PromptMarker::DoubleBracket, "double_bracket `[[id]]`"),
    (PromptMarker::CiteColon, "cite_colon `<cite:id>`"),
    (PromptMarker::SingleBracket, "single_bracket `[id]`"),
    (PromptMarker::Rank, "rank `[n]`"),
    (PromptMarker::RankFullWidth, "rank_full_width `【n】`"),
];

struct Args {
    model: PathBuf,
    books: PathBuf,
    max_tokens: usize,
    k: usize,
    max_chars: usize,
    questions: usize,
    verbose: bool,
    /// Only the few-shot prompt with this grammar (`--grammar MODE`).
    grammar: Option<GrammarMode>,
}

fn args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut a = Args {
        model: root.join("target/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        books: std::env::var_os("CITEFLOW_SHARED_DIR")
            .map_or_else(|| root.join("../shared"), PathBuf::from)
            .join("fixtures/epub"),
        max_tokens: 64,
        k: 3,
        max_chars: 400,
        questions: QUESTIONS.len(),
        verbose: false,
        grammar: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => a.model = value().into(),
            "--books" => a.books = value().into(),
            "--max-tokens" => a.max_tokens = value().parse().expect("--max-tokens N"),
            "-k" => a.k = value().parse().expect("-k N"),
            "--max-chars" => a.max_chars = value().parse().expect("--max-chars N"),
            "--questions" => a.questions = value().parse().expect("--questions N"),
            "-v" | "--verbose" => a.verbose = true,
            "--grammar" => {
                a.grammar = Some(GrammarMode::from_name(&value()).expect("--grammar MODE"));
            }
            "--all-variants" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// Sources for a marker: the retrieved passages, with `source_n` ids for the single-bracket
/// form (whose scanner only takes ids shaped `source_<digits>`; book ids hold `#`).
fn sources_for(passages: &[Source], marker: PromptMarker) -> Sources {
    let list = passages
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            if marker == PromptMarker::SingleBracket {
                s.id = format!("source_{}", i + 1);
            }
            s
        })
        .collect();
    Sources::from_vec(list).expect("distinct ids")
}

async fn answer(
    model: &LlamaModel,
    messages: Vec<PromptMessage>,
    grammar: Option<String>,
    max_tokens: usize,
) -> (String, f64, f64) {
    let job = Job {
        messages: messages.into_iter().map(ChatMessage::from).collect(),
        sampling: Sampling {
            temperature: 0.0,
            seed: Some(7),
            max_tokens,
            ..Sampling::default()
        },
        grammar,
        received: Instant::now(),
    };
    let mut rx = model.start(job).expect("start");
    let mut text = String::new();
    while let Some(p) = rx.recv().await {
        match p {
            Piece::Text(t) => text.push_str(&t),
            Piece::Done { stats, .. } => return (text, stats.ttft_ms, stats.tokens_per_second()),
            Piece::Failed(e) => panic!("generation failed: {e}"),
            _ => {}
        }
    }
    panic!("the model stopped without finishing");
}

#[derive(Default, Clone, Copy)]
struct Cell {
    answers: u32,
    citing: u32,
    unresolved: u32,
    /// The most citations in one answer (a run of stacked markers shows here).
    most: usize,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a = args();
    eprintln!("loading {}", a.model.display());
    let model = LlamaModel::load(&a.model, ModelSettings::default()).expect("load model");
    let settings = ChunkSettings::default();
    let mut index = Index::in_memory().expect("index");
    let mut keys = std::collections::HashMap::new();
    for b in BOOKS {
        let bytes = std::fs::read(a.books.join(b))
            .unwrap_or_else(|e| panic!("{}: {e}", a.books.join(b).display()));
        let book = Book::open(&bytes, &Limits::default()).expect("open book");
        let passages = BookPassage::from_book(&book, &settings);
        let key = passages
            .first()
            .map(|p| p.book_key.clone())
            .expect("passages");
        index
            .add_book(&passages, &fingerprint(&bytes, &settings))
            .expect("index book");
        keys.insert(b, key);
    }
    let all = std::env::args().any(|a| a == "--all-variants");
    let mut variants: Vec<(&str, bool, Option<GrammarMode>)> = vec![
        ("zero-shot (proxy prompt)", false, None),
        ("few-shot", true, None),
        ("few-shot", true, Some(GrammarMode::RequireCitation)),
        ("few-shot", true, Some(GrammarMode::CitePerSentence)),
    ];
    if let Some(g) = a.grammar {
        variants = vec![("few-shot", true, Some(g))];
    } else if all {
        variants.insert(
            1,
            (
                "zero-shot (proxy prompt)",
                false,
                Some(GrammarMode::WellFormed),
            ),
        );
        variants.insert(3, ("few-shot", true, Some(GrammarMode::WellFormed)));
    }
    let mut table = vec![vec![Cell::default(); variants.len()]; MARKERS.len()];
    let mut ttfts = Vec::new();
    let mut speeds = Vec::new();
    let started = Instant::now();
    for (book, question) in QUESTIONS.iter().take(a.questions) {
        let hits = index
            .search_book(&keys[book], question, a.k)
            .expect("search");
        let passages: Vec<Source> = hits.iter().map(|h| h.passage.to_source()).collect();
        if passages.is_empty() {
            eprintln!("no passage for {question:?}");
            continue;
        }
        for (mi, (marker, _)) in MARKERS.iter().enumerate() {
            let sources = sources_for(&passages, *marker);
            let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
            for (vi, (_, few, grammar)) in variants.iter().enumerate() {
                let messages = if *few {
                    few_shot_messages(&sources, *marker, question, a.max_chars)
                } else {
                    zero_shot_messages(&sources, *marker, question, a.max_chars)
                };
                let g = grammar.map(|m| citation_grammar(*marker, &ids, m));
                let (text, ttft, tps) = answer(&model, messages, g, a.max_tokens).await;
                ttfts.push(ttft);
                if tps > 0.0 {
                    speeds.push(tps);
                }
                let out = rewrite_str(
                    &text,
                    marker.settings(Settings::default()),
                    sources.clone(),
                    Numbering::new(),
                )
                .expect("rewrite");
                let citations = out
                    .events
                    .iter()
                    .filter(|e| matches!(e, Event::Citation { .. }))
                    .count();
                let unresolved = out
                    .events
                    .iter()
                    .filter(|e| matches!(e, Event::Unresolved { .. }))
                    .count();
                let c = &mut table[mi][vi];
                c.answers += 1;
                c.citing += u32::from(citations > 0);
                c.unresolved += u32::from(unresolved > 0);
                c.most = c.most.max(citations);
                if a.verbose {
                    eprintln!("[{:?} v{vi}] {question} -> {text:?} ({citations} cited, {unresolved} unresolved)", marker);
                }
            }
        }
        eprintln!("{question} done ({:.0} s)", started.elapsed().as_secs_f64());
    }
    let mut header = String::from("| marker |");
    let mut rule = String::from("|---|");
    for (name, _, g) in &variants {
        header.push_str(&format!(
            " {name}, {} |",
            g.map_or("no grammar", GrammarMode::name)
        ));
        rule.push_str("---|");
    }
    println!("{header}\n{rule}");
    for (mi, (_, name)) in MARKERS.iter().enumerate() {
        let mut row = format!("| {name} |");
        for c in &table[mi] {
            let pct = if c.answers == 0 {
                0.0
            } else {
                100.0 * f64::from(c.citing) / f64::from(c.answers)
            };
            row.push_str(&format!(
                " {pct:.0}% ({}/{}; {} with unresolved; most citations in one answer {}) |",
                c.citing, c.answers, c.unresolved, c.most
            ));
        }
        println!("{row}");
    }
    ttfts.sort_by(f64::total_cmp);
    speeds.sort_by(f64::total_cmp);
    let median = |v: &[f64]| if v.is_empty() { 0.0 } else { v[v.len() / 2] };
    println!(
        "\n{} answers in {:.0} s; time to first token median {:.0} ms (p90 {:.0} ms); generation median {:.0} tokens/s",
        ttfts.len(),
        started.elapsed().as_secs_f64(),
        median(&ttfts),
        ttfts.get(ttfts.len() * 9 / 10).copied().unwrap_or(0.0),
        median(&speeds)
    );
}
