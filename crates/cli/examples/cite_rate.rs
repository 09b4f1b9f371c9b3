//! Measures how often the local model cites, and whether it answers right and cites the
//! passage that says so, per marker syntax, prompt form and grammar.
//!
//! For a fixed set of questions about the bundled books (Alice's Adventures in Wonderland and
//! Kusamakura), passages are retrieved with the book index, the model answers (temperature
//! 0, fixed seed) and the core `Rewriter` finds the citations of each answer. Each question
//! carries its expected answer (keywords) and the words of the book that hold it, so every
//! answer is scored three times: it cites (at least one resolved citation), it cites a
//! passage that holds the answer (the part of the passage shown to the model contains the
//! evidence), and it states the answer (holds one of the keywords). Prints the citing table
//! of issue 6 and then the three scores per marker and variant.
//!
//! ```text
//! cargo run -p citeflow-cli --features local-model --example cite_rate -- \
//!     --model target/models/SmolLM2-135M-Instruct.Q4_1.gguf [--books DIR] [--max-tokens 64]
//! ```
//!
//! `--grammar MODE` measures only the few-shot prompt with that grammar (e.g.
//! `cite_per_sentence`, or `none`); `--all-variants` adds the `well_formed` grammar to both prompts;
//! `--marker NAME` measures one marker (e.g. `rank`). `--template NAME` is the chat template
//! for a GGUF file without one (`gemma` for Gemma 3 270M); `--threads N`; retrieval: `-k N`,
//! `--max-chars N` (characters of each passage shown), `--reverse` (best passage last); `--label-before` puts each rank label back before its
//! source's text (`[n] Title: text`, the few-shot prompt before issue 21; the core's prompt
//! now writes `Title: text [n]`).

use std::path::PathBuf;
use std::time::Instant;

use citeflow_core::{
    citation_grammar, few_shot_messages, rewrite_str, zero_shot_messages, Event, GrammarMode,
    Numbering, PromptMarker, PromptMessage, Settings, Source, Sources,
};
use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::{fingerprint, BookPassage, Index};
use citeflow_llm::{ChatMessage, Generate, Job, LlamaModel, ModelSettings, Piece, Sampling};

#[path = "support/prompt_sources.rs"]
mod prompt_sources;

const BOOKS: [&str; 2] = ["alice.epub", "kusamakura-japanese-vertical-writing.epub"];

/// One question of the fixed set, with what a right answer says and where the book says it.
struct Question {
    book: &'static str,
    text: &'static str,
    /// The answer states it when it holds one of these (case-insensitive).
    expect: &'static [&'static str],
    /// A passage holds the answer when the part of it shown to the model holds one of these
    /// (case-insensitive, whitespace ignored).
    evidence: &'static [&'static str],
    /// Where the book says it, for the log.
    place: &'static str,
}

const ALICE: &str = "alice.epub";
const KUSAMAKURA: &str = "kusamakura-japanese-vertical-writing.epub";

/// The 12 questions measured since issue 6 (same order, same wording), then three added for
/// issue 21: two more in Japanese and one in Chinese about Kusamakura. There is no Chinese
/// sample book among the fixtures, so the Chinese question asks about the Japanese one.
const QUESTIONS: [Question; 15] = [
    Question {
        book: ALICE,
        text: "What did the White Rabbit take out of its waistcoat-pocket?",
        expect: &["watch"],
        evidence: &["took a watch out of its waistcoat-pocket"],
        place: "ch. 1, Down the Rabbit-Hole",
    },
    Question {
        book: ALICE,
        text: "Who was having tea with the March Hare?",
        expect: &["hatter"],
        evidence: &["the March Hare and the Hatter were having tea"],
        place: "ch. 7, A Mad Tea-Party",
    },
    Question {
        book: KUSAMAKURA,
        text: "山路を登りながら、こう考えた。智に働けばどうなるか？",
        expect: &["角が立つ", "角が立"],
        evidence: &["智に働けば角が立つ"],
        place: "一 (opening)",
    },
    Question {
        book: ALICE,
        text: "What was left when the Cheshire Cat vanished?",
        // This edition (abridged) has no lingering grin: "said the Cat, and vanished." The
        // question is kept for the citing counts; it has no answer to state.
        expect: &[],
        evidence: &["said the Cat, and vanished"],
        place: "ch. 6, Pig and Pepper (no grin is left in this edition)",
    },
    Question {
        book: ALICE,
        text: "What was the Caterpillar smoking?",
        expect: &["hookah"],
        evidence: &["smoking a long hookah"],
        place: "ch. 4, The Rabbit Sends in a Little Bill (end)",
    },
    Question {
        book: KUSAMAKURA,
        text: "住みにくい世から逃れるには何が必要か？",
        expect: &["詩", "画", "芸術"],
        evidence: &["詩が生れて、画が出来る", "写すのが詩である、画である"],
        place: "一 (opening)",
    },
    Question {
        book: ALICE,
        text: "What was written on the little bottle that Alice found?",
        expect: &["drink me"],
        evidence: &["DRINK ME"],
        place: "ch. 1, Down the Rabbit-Hole",
    },
    Question {
        book: ALICE,
        text: "What happened to Alice after she ate the cake?",
        expect: &["grew", "grow", "larger", "taller", "telescope", "nine feet"],
        evidence: &[
            "opening out like the largest telescope",
            "more than nine feet high",
        ],
        place: "ch. 2, The Pool of Tears (opening)",
    },
    Question {
        book: ALICE,
        text: "What game did the Queen play with flamingos?",
        expect: &["croquet"],
        evidence: &["croquet"],
        place: "ch. 8, The Queen's Croquet-Ground",
    },
    Question {
        book: ALICE,
        text: "Who stole the tarts?",
        expect: &["knave"],
        evidence: &["The Knave of Hearts, he stole those tarts"],
        place: "ch. 11, Who Stole the Tarts?",
    },
    Question {
        book: KUSAMAKURA,
        text: "What does the painter say about poetry and pictures?",
        expect: &[
            "hard to live",
            "difficult to live",
            "not easy to live",
            "住みにく",
            "悟",
        ],
        evidence: &["詩が生れて、画が出来る", "写すのが詩である、画である"],
        place: "一 (opening)",
    },
    Question {
        book: KUSAMAKURA,
        text: "那美さんはどんな女か？",
        expect: &["足が強い", "憐れ"],
        evidence: &[
            "御那美さんはなかなか足が強い",
            "憐れの念が少しもあらわれておらぬ",
        ],
        place: "九 (the priest), 十 (the painter)",
    },
    Question {
        book: KUSAMAKURA,
        text: "情に棹させばどうなるか？",
        expect: &["流される", "流され"],
        evidence: &["情に棹させば流される"],
        place: "一 (opening)",
    },
    Question {
        book: KUSAMAKURA,
        text: "雲雀は何で鳴くのか？",
        expect: &["魂"],
        evidence: &["魂全体が鳴く"],
        place: "一",
    },
    Question {
        book: KUSAMAKURA,
        text: "在《草枕》的开头，画家说“智に働けば”会怎样？",
        expect: &["角が立", "角"],
        evidence: &["智に働けば角が立つ"],
        place: "一 (opening)",
    },
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
    /// Only the few-shot prompt with this grammar (`--grammar MODE`, `--grammar none`).
    grammar: Option<Option<GrammarMode>>,
    /// Only this marker (`--marker NAME`).
    marker: Option<PromptMarker>,
    /// The chat template when the GGUF file has none (`--template gemma`).
    template: Option<String>,
    threads: Option<usize>,
    /// Show the retrieved passages best last (`--reverse`).
    reverse: bool,
    /// Move each source's rank label before its text (`--label-before`).
    label_before: bool,
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
        marker: None,
        template: None,
        threads: None,
        reverse: false,
        label_before: false,
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
                let v = value();
                a.grammar = Some(if v == "none" {
                    None
                } else {
                    Some(v.parse::<GrammarMode>().expect("--grammar MODE"))
                });
            }
            "--marker" => {
                a.marker = Some(value().parse::<PromptMarker>().expect("--marker NAME"));
            }
            "--template" => a.template = Some(value()),
            "--threads" => a.threads = Some(value().parse().expect("--threads N")),
            "--reverse" => a.reverse = true,
            "--label-before" => a.label_before = true,
            "--all-variants" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// Sources for a marker: the retrieved passages, with `source_n` ids for the single-bracket
/// form.
fn sources_for(passages: &[Source], marker: PromptMarker) -> Sources {
    Sources::from_vec(prompt_sources::sources_for(passages, marker)).expect("distinct ids")
}

/// Lowercase, whitespace removed: how answers, passages and keywords are compared.
fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether the part of `source` the model was shown (its title, and its text cut to
/// `max_chars` characters as the prompt cuts it) holds one of the question's evidence
/// strings.
fn holds_answer(source: &Source, q: &Question, max_chars: usize) -> bool {
    let text = source.text.as_deref().unwrap_or_default();
    let title = squash(source.title.as_deref().unwrap_or_default());
    let shown: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(max_chars)
        .collect();
    let shown = title + &squash(&shown);
    q.evidence.iter().any(|e| shown.contains(&squash(e)))
}

/// Whether the answer states one of the expected keywords (`None`: the book has no answer).
fn states_answer(answer: &str, q: &Question) -> Option<bool> {
    if q.expect.is_empty() {
        return None;
    }
    let a = squash(answer);
    Some(q.expect.iter().any(|k| a.contains(&squash(k))))
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
    /// Answers that cite a passage holding the answer.
    cite_right: u32,
    /// Answers that state the expected answer, of those whose question has one.
    states: u32,
    answerable: u32,
    /// Answers that state it and cite a passage holding it.
    both: u32,
    /// Answers whose shown passages held the answer (retrieval, the same for every variant).
    retrieved: u32,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a = args();
    eprintln!("loading {}", a.model.display());
    let mut settings = ModelSettings::default();
    if let Some(t) = &a.template {
        settings = settings.with_fallback_template(t.clone());
    }
    if let Some(n) = a.threads {
        settings = settings.with_threads(n);
    }
    let model = LlamaModel::load(&a.model, settings).expect("load model");
    let chunking = ChunkSettings::default();
    let mut index = Index::in_memory().expect("index");
    let mut keys = std::collections::HashMap::new();
    for b in BOOKS {
        let bytes = std::fs::read(a.books.join(b))
            .unwrap_or_else(|e| panic!("{}: {e}", a.books.join(b).display()));
        let book = Book::open(&bytes, &Limits::default()).expect("open book");
        let passages = BookPassage::from_book(&book, &chunking);
        let key = passages
            .first()
            .map(|p| p.book_key.clone())
            .expect("passages");
        index
            .add_book(&passages, &fingerprint(&bytes, &chunking))
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
        variants = vec![("few-shot", true, g)];
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
    let markers: Vec<(PromptMarker, &str)> = MARKERS
        .iter()
        .copied()
        .filter(|(m, _)| a.marker.is_none_or(|only| only == *m))
        .collect();
    let mut table = vec![vec![Cell::default(); variants.len()]; markers.len()];
    let mut ttfts = Vec::new();
    let mut speeds = Vec::new();
    let started = Instant::now();
    for q in QUESTIONS.iter().take(a.questions) {
        let question = q.text;
        let hits = index
            .search_book(&keys[q.book], question, a.k)
            .expect("search");
        let mut passages: Vec<Source> = hits.iter().map(|h| h.passage.to_source()).collect();
        if a.reverse {
            passages.reverse();
        }
        if passages.is_empty() {
            eprintln!("no passage for {question:?}");
            continue;
        }
        let retrieved = passages.iter().any(|s| holds_answer(s, q, a.max_chars));
        if a.verbose {
            let shown: Vec<String> = passages
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    format!(
                        "[{}] {}{}",
                        i + 1,
                        s.title.as_deref().unwrap_or_default(),
                        if holds_answer(s, q, a.max_chars) {
                            " (holds the answer)"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            eprintln!(
                "Q {question} | expected {:?} ({}) | retrieved: {}",
                q.expect,
                q.place,
                shown.join("; ")
            );
        }
        for (mi, (marker, _)) in markers.iter().enumerate() {
            let sources = sources_for(&passages, *marker);
            let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
            for (vi, (_, few, grammar)) in variants.iter().enumerate() {
                let mut messages = if *few {
                    few_shot_messages(&sources, *marker, question, a.max_chars)
                } else {
                    zero_shot_messages(&sources, *marker, question, a.max_chars)
                };
                if a.label_before {
                    for m in messages.iter_mut().filter(|m| m.role != "assistant") {
                        m.content = labels_before(&m.content);
                    }
                }
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
                let cited: Vec<&str> = out
                    .events
                    .iter()
                    .filter_map(|e| match e {
                        Event::Citation { source_id, .. } => Some(source_id.as_str()),
                        _ => None,
                    })
                    .collect();
                let citations = cited.len();
                let unresolved = out
                    .events
                    .iter()
                    .filter(|e| matches!(e, Event::Unresolved { .. }))
                    .count();
                let cite_right = sources
                    .iter()
                    .any(|s| cited.contains(&s.id.as_str()) && holds_answer(s, q, a.max_chars));
                let states = states_answer(&text, q);
                let c = &mut table[mi][vi];
                c.answers += 1;
                c.citing += u32::from(citations > 0);
                c.unresolved += u32::from(unresolved > 0);
                c.most = c.most.max(citations);
                c.cite_right += u32::from(cite_right);
                c.retrieved += u32::from(retrieved);
                if let Some(st) = states {
                    c.answerable += 1;
                    c.states += u32::from(st);
                    c.both += u32::from(st && cite_right);
                }
                if a.verbose {
                    let ranks: Vec<String> = cited
                        .iter()
                        .filter_map(|id| sources.iter().position(|s| s.id == *id))
                        .map(|i| (i + 1).to_string())
                        .collect();
                    eprintln!(
                        "[{:?} v{vi}] {question} -> {text:?} ({citations} cited, {unresolved} unresolved; cites [{}]; right passage retrieved {}, cited {}; states answer {}; ttft {ttft:.0} ms, {tps:.1} tokens/s)",
                        marker,
                        ranks.join(","),
                        yes(retrieved),
                        yes(cite_right),
                        states.map_or("n/a", yes),
                    );
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
            g.map_or_else(|| "no grammar".to_owned(), |g| g.to_string())
        ));
        rule.push_str("---|");
    }
    println!("{header}\n{rule}");
    for (mi, (_, name)) in markers.iter().enumerate() {
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
    println!(
        "\n| marker | prompt, grammar | cites | cites a passage that holds the answer | states the answer | states it and cites such a passage | such a passage was shown |\n|---|---|---|---|---|---|---|"
    );
    for (mi, (_, name)) in markers.iter().enumerate() {
        for (vi, (vname, _, g)) in variants.iter().enumerate() {
            let c = &table[mi][vi];
            println!(
                "| {name} | {vname}, {} | {}/{} | {}/{} | {}/{} | {}/{} | {}/{} |",
                g.map_or_else(|| "no grammar".to_owned(), |g| g.to_string()),
                c.citing,
                c.answers,
                c.cite_right,
                c.answers,
                c.states,
                c.answerable,
                c.both,
                c.answerable,
                c.retrieved,
                c.answers
            );
        }
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

/// Moves a trailing rank label to the start of its source line: `Title: text [2]` becomes
/// `[2] Title: text`, and the system message says so: the few-shot prompt as it was before
/// issue 21 §4, kept to compare with.
fn labels_before(content: &str) -> String {
    content
        .lines()
        .map(|line| {
            let label = line
                .strip_suffix(']')
                .and_then(|r| r.rsplit_once(" ["))
                .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            match label {
                // A source line, not an answer (answers end with "[n].").
                Some((rest, n)) if rest.contains(": ") => format!("[{n}] {rest}"),
                _ => line.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace(
            "Each source ends with its label",
            "Each source starts with its label",
        )
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
