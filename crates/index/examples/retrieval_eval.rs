//! Retrieval evaluation of the book index over the sample books.
//!
//! Cuts the fixture books with the default `ChunkSettings` (as `citeflow ingest` does),
//! indexes them in one in-memory [`Index`] (BM25), asks every question of
//! `crates/index/eval/questions.json` against the whole index and prints recall@1/3/5/10 and
//! MRR@10, overall and per language, the query latency (median, p95) and the index size.
//! With the `embed` feature and `--model FILE` (the multilingual-e5-small file fetched by
//! `citeflow_embed::fetch_model`, or `--fetch-model DIR` to fetch it there) it also embeds
//! every passage and question and prints the same table for dense (cosine) ranking and for
//! the hybrid (reciprocal rank fusion of BM25 and dense).
//!
//! ```text
//! cargo run -p citeflow-index --example retrieval_eval --release
//! cargo run -p citeflow-index --features embed --example retrieval_eval --release -- \
//!     --fetch-model target/models
//! ```
//!
//! `--books DIR` (default `../shared/fixtures/epub`, or `$CITEFLOW_SHARED_DIR/fixtures/epub`),
//! `--questions FILE`, `-v` (one line per question: rank of the first answering passage per
//! method), `--dump DIR` (write each book's passages as text, to write questions against).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::eval::{
    answering_ids, first_answer_rank, parse_questions, Question, Scores, RECALL_KS,
};
use citeflow_index::{fingerprint, BookPassage, Index};

/// The books of the corpus: the two the questions are about, and three more as distractors.
const BOOKS: [&str; 5] = [
    "alice.epub",
    "kusamakura-japanese-vertical-writing.epub",
    "childrens-literature.epub",
    "wasteland.epub",
    "regime-anticancer-arabic.epub",
];

/// How many hits each ranking returns (the deepest recall cut-off).
const DEPTH: usize = 10;

struct Args {
    books: PathBuf,
    questions: PathBuf,
    verbose: bool,
    dump: Option<PathBuf>,
    #[cfg(feature = "embed")]
    model: Option<PathBuf>,
    #[cfg(feature = "embed")]
    fetch_model: Option<PathBuf>,
}

fn args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut a = Args {
        books: std::env::var_os("CITEFLOW_SHARED_DIR")
            .map_or_else(|| root.join("../../../shared"), PathBuf::from)
            .join("fixtures/epub"),
        questions: root.join("eval/questions.json"),
        verbose: false,
        dump: None,
        #[cfg(feature = "embed")]
        model: None,
        #[cfg(feature = "embed")]
        fetch_model: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--books" => a.books = value().into(),
            "--questions" => a.questions = value().into(),
            "--dump" => a.dump = Some(value().into()),
            "-v" | "--verbose" => a.verbose = true,
            #[cfg(feature = "embed")]
            "--model" => a.model = Some(value().into()),
            #[cfg(feature = "embed")]
            "--fetch-model" => a.fetch_model = Some(value().into()),
            other => panic!("unknown argument {other:?}"),
        }
    }
    a
}

/// One ranking method's results: first-answer rank and latency per question.
struct Run {
    name: &'static str,
    ranks: Vec<Option<usize>>,
    latencies: Vec<Duration>,
    size_bytes: u64,
    size_note: String,
}

fn main() {
    // OpenMP threads that spin while waiting cost much more than they save when other
    // processes use the cores: wait passively unless told otherwise.
    #[cfg(feature = "embed")]
    if std::env::var_os("OMP_WAIT_POLICY").is_none() {
        std::env::set_var("OMP_WAIT_POLICY", "passive");
    }
    let a = args();
    let questions = parse_questions(
        &std::fs::read_to_string(&a.questions)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", a.questions.display())),
    )
    .expect("questions file");

    let settings = ChunkSettings::default();
    let mut index = Index::in_memory().expect("in-memory index");
    let mut all: Vec<BookPassage> = Vec::new();
    let mut keys: BTreeMap<&str, String> = BTreeMap::new();
    let mut files: Vec<(Vec<BookPassage>, String)> = Vec::new();
    for name in BOOKS {
        let path = a.books.join(name);
        let bytes =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let book = Book::open(&bytes, &Limits::default()).expect("book opens");
        let passages = BookPassage::from_book(&book, &settings);
        let fp = fingerprint(&bytes, &settings);
        index.add_book(&passages, &fp).expect("indexed");
        keys.insert(name, passages[0].book_key.clone());
        if let Some(dir) = &a.dump {
            dump(dir, name, &passages);
        }
        all.extend(passages.iter().cloned());
        files.push((passages, fp));
    }
    println!(
        "corpus: {} books, {} passages, {} characters (ChunkSettings::default(): {} chars, {} overlap)",
        BOOKS.len(),
        all.len(),
        all.iter().map(|p| p.text.chars().count()).sum::<usize>(),
        settings.target_chars(),
        settings.overlap_chars()
    );

    // The passages that answer each question; a question none answers is a broken question.
    let answers: Vec<Vec<String>> = questions
        .iter()
        .map(|q| {
            let key = keys
                .get(q.book.as_str())
                .unwrap_or_else(|| panic!("{}: book {} is not in the corpus", q.id, q.book));
            let ids = answering_ids(&all, key, q);
            assert!(!ids.is_empty(), "{}: no passage holds its evidence", q.id);
            ids
        })
        .collect();
    println!(
        "questions: {} ({}), answering passages per question: mean {:.2}",
        questions.len(),
        count_by_lang(&questions),
        answers.iter().map(Vec::len).sum::<usize>() as f64 / questions.len() as f64
    );

    let mut runs = Vec::new();

    // BM25: the built-in index.
    let mut bm25_lists: Vec<Vec<String>> = Vec::new();
    let mut bm25 = Run {
        name: "bm25",
        ranks: Vec::new(),
        latencies: Vec::new(),
        size_bytes: dir_index_bytes(&files),
        size_note: "tantivy directory, without the kept .epub files".to_owned(),
    };
    for (q, ans) in questions.iter().zip(&answers) {
        let t = Instant::now();
        let hits = index.search(&q.text, DEPTH).expect("search");
        bm25.latencies.push(t.elapsed());
        let ids: Vec<String> = hits.into_iter().map(|h| h.passage.id).collect();
        bm25.ranks.push(first_answer_rank(&ids, ans));
        bm25_lists.push(ids);
    }
    runs.push(bm25);

    #[cfg(feature = "embed")]
    if let Some(model) = model_path(&a) {
        dense::runs(&model, &index, &all, &questions, &answers, &mut runs);
    }

    if a.verbose {
        print_per_question(&questions, &answers, &runs);
    }
    print_table(&questions, &runs);
}

fn count_by_lang(questions: &[Question]) -> String {
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for q in questions {
        *by.entry(q.lang.as_str()).or_default() += 1;
    }
    by.iter()
        .map(|(l, n)| format!("{l} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The size on disk of the same books in a directory index.
fn dir_index_bytes(files: &[(Vec<BookPassage>, String)]) -> u64 {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let mut index = Index::open_or_create(dir.path()).expect("dir index");
        for (passages, fp) in files {
            index.add_book(passages, fp).expect("indexed");
        }
    }
    dir_bytes(dir.path())
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let meta = e.metadata().expect("metadata");
        n += if meta.is_dir() {
            dir_bytes(&e.path())
        } else {
            meta.len()
        };
    }
    n
}

fn dump(dir: &Path, name: &str, passages: &[BookPassage]) {
    std::fs::create_dir_all(dir).expect("dump dir");
    let mut out = String::new();
    for p in passages {
        out.push_str(&format!(
            "=== {} | ch {} {:?}\n{}\n",
            p.id, p.chapter_index, p.chapter_title, p.text
        ));
    }
    std::fs::write(dir.join(format!("{name}.txt")), out).expect("dump written");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn print_per_question(questions: &[Question], answers: &[Vec<String>], runs: &[Run]) {
    println!();
    print!("{:<10} {:<4}", "question", "ans");
    for r in runs {
        print!(" {:>7}", r.name);
    }
    println!("  text");
    for (i, q) in questions.iter().enumerate() {
        print!("{:<10} {:<4}", q.id, answers[i].len());
        for r in runs {
            let s = r.ranks[i].map_or("-".to_owned(), |r| r.to_string());
            print!(" {s:>7}");
        }
        println!("  {}", q.text);
    }
}

fn print_table(questions: &[Question], runs: &[Run]) {
    let mut langs: Vec<&str> = questions.iter().map(|q| q.lang.as_str()).collect();
    langs.sort_unstable();
    langs.dedup();
    let mut groups: Vec<(String, Vec<usize>)> =
        vec![("all".to_owned(), (0..questions.len()).collect())];
    for l in langs {
        let idx = (0..questions.len())
            .filter(|&i| questions[i].lang == l)
            .collect();
        groups.push((l.to_owned(), idx));
    }
    println!();
    let ks: Vec<String> = RECALL_KS.iter().map(|k| format!("R@{k}")).collect();
    println!("| method | questions | {} | MRR@10 |", ks.join(" | "));
    println!("|---|---|{}---|", "---|".repeat(RECALL_KS.len()));
    for r in runs {
        for (name, idx) in &groups {
            let ranks: Vec<Option<usize>> = idx.iter().map(|&i| r.ranks[i]).collect();
            let s = Scores::of(&ranks);
            let rec: Vec<String> = s.recall.iter().map(|x| format!("{x:.3}")).collect();
            println!(
                "| {} | {} {} | {} | {:.3} |",
                r.name,
                name,
                s.questions,
                rec.join(" | "),
                s.mrr
            );
        }
    }
    println!();
    println!("| method | query latency median (ms) | p95 (ms) | index size |");
    println!("|---|---|---|---|");
    for r in runs {
        let mut l = r.latencies.clone();
        l.sort_unstable();
        println!(
            "| {} | {} | {} | {:.2} MB ({} bytes; {}) |",
            r.name,
            ms(percentile(&l, 0.5)),
            ms(percentile(&l, 0.95)),
            r.size_bytes as f64 / 1e6,
            r.size_bytes,
            r.size_note
        );
    }
}

#[cfg(feature = "embed")]
fn model_path(a: &Args) -> Option<PathBuf> {
    if let Some(m) = &a.model {
        return Some(m.clone());
    }
    let dir = a.fetch_model.as_ref()?;
    Some(citeflow_embed::fetch_model(dir).expect("model fetched"))
}

#[cfg(feature = "embed")]
mod dense {
    //! Dense (cosine) and hybrid (reciprocal rank fusion) rankings, through
    //! `citeflow_index::DenseIndex` and `Index::search_hybrid`.

    use std::path::Path;
    use std::time::Instant;

    use citeflow_embed::{Embedder, MODEL};
    use citeflow_index::eval::{first_answer_rank, Question};
    use citeflow_index::{BookPassage, DenseIndex, Index, FUSE_DEPTH, RRF_C};

    use super::{Run, DEPTH};

    pub(super) fn runs(
        model: &Path,
        index: &Index,
        all: &[BookPassage],
        questions: &[Question],
        answers: &[Vec<String>],
        runs: &mut Vec<Run>,
    ) {
        let t = Instant::now();
        let mut e = Embedder::open(model).expect("model opens");
        println!(
            "dense model: {} {} ({}, {} bytes, sha256 {}), {} dimensions, opened in {:.2} s",
            MODEL.package,
            MODEL.version,
            MODEL.member,
            MODEL.size_bytes,
            MODEL.sha256,
            e.dim(),
            t.elapsed().as_secs_f64()
        );
        let t = Instant::now();
        let mut dense_index = DenseIndex::new();
        let mut start = 0;
        while start < all.len() {
            let key = &all[start].book_key;
            let end = start
                + all[start..]
                    .iter()
                    .take_while(|p| &p.book_key == key)
                    .count();
            let tb = Instant::now();
            dense_index
                .add_book(&mut e, &all[start..end])
                .expect("passages embedded");
            eprintln!(
                "embedded {} ({} passages) in {:.1} s",
                key,
                end - start,
                tb.elapsed().as_secs_f64()
            );
            start = end;
        }
        println!(
            "embedded {} passages in {:.1} s ({:.1} ms a passage)",
            dense_index.len(),
            t.elapsed().as_secs_f64(),
            t.elapsed().as_secs_f64() * 1000.0 / dense_index.len() as f64
        );

        let mut dense = Run {
            name: "dense",
            ranks: Vec::new(),
            latencies: Vec::new(),
            size_bytes: dense_index.size_bytes() as u64,
            size_note: format!(
                "f32 vectors, {} x {}, in memory; plus the {:.1} MB model file",
                dense_index.len(),
                e.dim(),
                MODEL.size_bytes as f64 / 1e6
            ),
        };
        let mut hybrid = Run {
            name: "hybrid",
            ranks: Vec::new(),
            latencies: Vec::new(),
            size_bytes: runs[0].size_bytes + dense_index.size_bytes() as u64,
            size_note: format!("bm25 + dense; RRF c = {RRF_C} over the top {FUSE_DEPTH} of each"),
        };
        for (q, ans) in questions.iter().zip(answers) {
            let t = Instant::now();
            let hits = dense_index
                .search(&mut e, &q.text, DEPTH)
                .expect("dense search");
            dense.latencies.push(t.elapsed());
            let ids: Vec<String> = hits.into_iter().map(|h| h.passage.id).collect();
            dense.ranks.push(first_answer_rank(&ids, ans));

            let t = Instant::now();
            let hits = index
                .search_hybrid(&dense_index, &mut e, &q.text, DEPTH)
                .expect("hybrid search");
            hybrid.latencies.push(t.elapsed());
            let ids: Vec<String> = hits.into_iter().map(|h| h.passage.id).collect();
            hybrid.ranks.push(first_answer_rank(&ids, ans));
        }
        runs.push(dense);
        runs.push(hybrid);
    }
}
