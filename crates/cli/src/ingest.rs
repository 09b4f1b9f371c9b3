//! `citeflow ingest`: books to passages (JSON lines that read as sources) and a local index.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use citeflow_epub::{CfiFlavor, ChunkSettings};
use citeflow_index::{BookPassage, Index};
use clap::{Args, ValueEnum};

use crate::book::{index_state, keep_file, open_book, ChunkArgs};
use crate::broken_pipe::is_broken_pipe;
use crate::progress::Progress;

/// How passages are written.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum PassageFormat {
    /// One JSON object per line.
    Jsonl,
    /// One JSON array (usable as `citeflow render --sources`).
    Json,
}

/// Arguments of `citeflow ingest`.
#[derive(Debug, Args)]
pub(crate) struct IngestArgs {
    /// The .epub files.
    #[arg(required = true)]
    books: Vec<PathBuf>,
    /// Write the passages here ('-': stdout). Default: stdout, unless --index is given.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Passage output format. Each passage object is also a citeflow source (id, title, url,
    /// text, locator with chapter and CFI).
    #[arg(long, value_enum, default_value = "jsonl")]
    format: PassageFormat,
    /// Add the passages to the full-text index in this directory (created if missing; a book
    /// already there is replaced).
    #[arg(long)]
    index: Option<PathBuf>,
    #[command(flatten)]
    chunking: ChunkArgs,
    /// How the passages' CFIs are written: 'spec' (EPUB CFI 1.1) or 'epubjs' (as epub.js
    /// 0.3.93 writes them, for a reader built on epub.js; each passage then also carries
    /// cfi_flavor, cfi_spec and start_cfi_spec). The index always keeps spec CFIs.
    #[arg(long, default_value = "spec", value_name = "FLAVOR")]
    cfi_flavor: CfiFlavor,
}

/// A passage written with `--cfi-flavor` other than spec: the record (its CFIs in that
/// flavour) and the spec CFIs of the same places.
#[derive(serde::Serialize)]
struct FlavoredPassage<'a> {
    #[serde(flatten)]
    record: &'a BookPassage,
    cfi_flavor: &'static str,
    cfi_spec: String,
    start_cfi_spec: String,
}

enum Sink {
    None,
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File(std::io::BufWriter<std::fs::File>, PathBuf),
}

impl Sink {
    fn writer(&mut self) -> Option<&mut dyn Write> {
        match self {
            Sink::None => None,
            Sink::Stdout(w) => Some(w),
            Sink::File(w, _) => Some(w),
        }
    }
}

pub(crate) fn run(args: IngestArgs) -> Result<ExitCode> {
    let settings = args.chunking.settings();
    let mut sink = match (&args.out, &args.index) {
        (Some(p), _) if p.as_os_str() == "-" => {
            Sink::Stdout(std::io::BufWriter::new(std::io::stdout()))
        }
        (Some(p), _) => {
            let f = std::fs::File::create(p)
                .with_context(|| format!("cannot create {}", p.display()))?;
            Sink::File(std::io::BufWriter::new(f), p.clone())
        }
        (None, Some(_)) => Sink::None,
        (None, None) => Sink::Stdout(std::io::BufWriter::new(std::io::stdout())),
    };
    let mut index = match &args.index {
        Some(dir) => Some(Index::open_or_create(dir)?),
        None => None,
    };
    let progress = Progress::new();
    let mut written = 0usize;
    if args.format == PassageFormat::Json {
        if let Some(w) = sink.writer() {
            w.write_all(b"[")?;
        }
    }
    let mut failed = 0;
    for (i, path) in args.books.iter().enumerate() {
        progress.book(i + 1, args.books.len());
        let started = Instant::now();
        let result = ingest_one(
            path,
            &settings,
            args.cfi_flavor,
            &mut sink,
            args.format,
            &mut written,
            index.as_mut(),
            &progress,
        );
        match result {
            Ok(stats) => {
                let secs = started.elapsed().as_secs_f64();
                let mb = stats.xhtml_bytes as f64 / 1e6;
                let passages = match stats.passages {
                    Some(n) => format!("{n} passages"),
                    None => "passages".to_owned(),
                };
                let reused = if stats.reused {
                    "; the index already had this book"
                } else {
                    ""
                };
                progress.println(format!(
                    "citeflow: {}: {} chapters, {passages} from {mb:.2} MB of XHTML in {secs:.2} s{reused}",
                    path.display(),
                    stats.chapters,
                ));
            }
            Err(e) => {
                if is_broken_pipe(&e) {
                    return Err(e);
                }
                failed += 1;
                progress.println(format!("citeflow: error: {e:#}"));
            }
        }
    }
    progress.finish();
    if args.format == PassageFormat::Json {
        if let Some(w) = sink.writer() {
            w.write_all(if written == 0 { b"]\n" } else { b"\n]\n" })?;
        }
    }
    match &mut sink {
        Sink::None => {}
        Sink::Stdout(w) => w.flush()?,
        Sink::File(w, p) => w
            .flush()
            .with_context(|| format!("cannot write {}", p.display()))?,
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

struct Stats {
    chapters: usize,
    passages: Option<usize>,
    xhtml_bytes: usize,
    reused: bool,
}

#[expect(clippy::too_many_arguments, reason = "one call site, the run's state")]
fn ingest_one(
    path: &Path,
    settings: &ChunkSettings,
    flavor: CfiFlavor,
    sink: &mut Sink,
    format: PassageFormat,
    written: &mut usize,
    index: Option<&mut Index>,
    progress: &Progress,
) -> Result<Stats> {
    let opened = open_book(path, progress)?;
    let book = &opened.book;
    let state = match &index {
        Some(index) => Some(index_state(index, &opened, settings)?),
        None => None,
    };
    let reused = state.as_ref().is_some_and(|s| s.is_current);
    let mut stats = Stats {
        chapters: book.chapters().len(),
        passages: None,
        xhtml_bytes: book.content_bytes(),
        reused,
    };
    let writer = sink.writer();
    if writer.is_none() && reused {
        if let (Some(index), Some(state)) = (&index, &state) {
            keep_file(index, state, &opened.bytes)
                .with_context(|| format!("cannot keep a copy of {}", path.display()))?;
        }
        return Ok(stats);
    }
    progress.phase(format!("cutting {} into passages", path.display()));
    // With another flavour: the records to write (CFIs in that flavour, the spec's beside
    // them) and, for the index, the same passages with their spec CFIs.
    let (passages, flavored) = if flavor == CfiFlavor::Spec {
        (BookPassage::from_book(book, settings), Vec::new())
    } else {
        let cut = book.passages(&settings.clone().with_cfi_flavor(flavor));
        let mut spec = Vec::with_capacity(cut.len());
        let mut flavored = Vec::with_capacity(cut.len());
        for p in cut {
            let record = BookPassage::from_passage(&p);
            let mut s = p;
            s.cfi = s
                .cfi_spec
                .take()
                .context("a flavoured passage has its spec cfi")?;
            s.start_cfi = s
                .start_cfi_spec
                .take()
                .context("a flavoured passage has its spec start cfi")?;
            spec.push(BookPassage::from_passage(&s));
            flavored.push(record);
        }
        (spec, flavored)
    };
    stats.passages = Some(passages.len());
    if let Some(w) = writer {
        progress.count(passages.len() as u64, format!("writing {}", path.display()));
        for (i, p) in passages.iter().enumerate() {
            if format == PassageFormat::Json {
                w.write_all(if *written == 0 { b"\n" } else { b",\n" })?;
            }
            let mut json = match flavored.get(i) {
                None => serde_json::to_vec(p)?,
                Some(record) => serde_json::to_vec(&FlavoredPassage {
                    record,
                    cfi_flavor: flavor.name(),
                    cfi_spec: p.cfi.clone(),
                    start_cfi_spec: p.start_cfi.clone(),
                })?,
            };
            if format == PassageFormat::Jsonl {
                json.push(b'\n');
            }
            w.write_all(&json)?;
            *written += 1;
            progress.inc();
        }
    }
    if let (Some(index), Some(state)) = (index, state) {
        if !state.is_current {
            progress.phase(format!("indexing {} passages", passages.len()));
            index
                .add_book(&passages, &state.fingerprint)
                .with_context(|| format!("cannot index {}", path.display()))?;
        }
        keep_file(index, &state, &opened.bytes)
            .with_context(|| format!("cannot keep a copy of {}", path.display()))?;
    }
    Ok(stats)
}
