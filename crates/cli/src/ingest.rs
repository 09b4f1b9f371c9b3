//! `citeflow ingest`: books to passages (JSON lines that read as sources) and a local index.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use citeflow_epub::ChunkSettings;
use citeflow_index::{book_key, fingerprint, BookPassage, Index};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use crate::epub_cmd::{read_book, OpenedBook};

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
}

/// How books are cut into passages.
#[derive(Debug, Clone, Args)]
pub(crate) struct ChunkArgs {
    /// Largest passage, in characters.
    #[arg(long, default_value_t = 800)]
    target_chars: usize,
    /// Characters of a passage's end that the next passage repeats.
    #[arg(long, default_value_t = 100)]
    overlap_chars: usize,
    /// Keep ruby readings (<rt>) in the passage text (CFIs count them either way).
    #[arg(long)]
    ruby: bool,
}

impl ChunkArgs {
    pub(crate) fn settings(&self) -> ChunkSettings {
        ChunkSettings::new()
            .with_target_chars(self.target_chars)
            .with_overlap_chars(self.overlap_chars)
            .with_ruby_text(self.ruby)
    }
}

/// A progress display on stderr, drawn only when stderr is a terminal.
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    pub(crate) fn new() -> Progress {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress { bar }
    }

    /// Shows which of several books is being read (`[2/7]`).
    pub(crate) fn book(&self, number: usize, of: usize) {
        if of > 1 {
            self.bar.set_prefix(format!("[{number}/{of}] "));
        }
    }

    /// A spinner with a message.
    pub(crate) fn phase(&self, message: String) {
        self.bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix}{msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        self.bar.set_length(0);
        self.bar.set_message(message);
    }

    /// A bar of `len` steps with a message.
    pub(crate) fn count(&self, len: u64, message: String) {
        self.bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix}{msg} [{bar:30}] {pos}/{len}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        self.bar.set_position(0);
        self.bar.set_length(len);
        self.bar.set_message(message);
    }

    pub(crate) fn inc(&self) {
        self.bar.inc(1);
    }

    /// Prints a line on stderr above the bar.
    pub(crate) fn println(&self, line: String) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Reads and opens a book, printing its warnings (one per broken file) above the progress bar.
pub(crate) fn open_book(path: &Path, progress: &Progress) -> Result<OpenedBook> {
    progress.phase(format!("reading {}", path.display()));
    let opened = read_book(path)?;
    for w in opened.book.warnings() {
        progress.println(format!("citeflow: warning: {}: {w}", path.display()));
    }
    Ok(opened)
}

/// A book's key in the index, its fingerprint, and whether the index already holds it with
/// that fingerprint (same file bytes, same chunk settings).
pub(crate) struct IndexState {
    pub(crate) key: String,
    pub(crate) fingerprint: String,
    pub(crate) is_current: bool,
}

pub(crate) fn index_state(
    index: &Index,
    opened: &OpenedBook,
    settings: &ChunkSettings,
) -> Result<IndexState> {
    let meta = opened.book.metadata();
    let key = book_key(
        meta.identifier.as_deref().unwrap_or(""),
        meta.title.as_deref().unwrap_or(""),
    );
    let fingerprint = fingerprint(&opened.bytes, settings);
    let is_current = index.fingerprint(&key)?.as_deref() == Some(fingerprint.as_str());
    Ok(IndexState {
        key,
        fingerprint,
        is_current,
    })
}

/// Makes sure `index` holds the book as cut by `settings` (re-using what is there when the
/// fingerprint matches). Returns its state before.
pub(crate) fn ensure_indexed(
    index: &mut Index,
    opened: &OpenedBook,
    settings: &ChunkSettings,
    progress: &Progress,
) -> Result<IndexState> {
    let state = index_state(index, opened, settings)?;
    if !state.is_current {
        progress.phase("cutting passages".to_owned());
        let passages = BookPassage::from_book(&opened.book, settings);
        progress.phase(format!("indexing {} passages", passages.len()));
        index.add_book(&passages, &state.fingerprint)?;
    }
    keep_file(index, &state, &opened.bytes)?;
    Ok(state)
}

/// Keeps the book's file with the index (so a server can open the book at a cited place),
/// unless an unchanged book already has its copy there.
fn keep_file(index: &Index, state: &IndexState, bytes: &[u8]) -> Result<()> {
    if !state.is_current || index.epub(&state.key)?.is_none() {
        index.keep_epub(&state.key, bytes)?;
    }
    Ok(())
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
                if crate::is_broken_pipe(&e) {
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

fn ingest_one(
    path: &Path,
    settings: &ChunkSettings,
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
    let passages = BookPassage::from_book(book, settings);
    stats.passages = Some(passages.len());
    if let Some(w) = writer {
        progress.count(passages.len() as u64, format!("writing {}", path.display()));
        for p in &passages {
            if format == PassageFormat::Json {
                w.write_all(if *written == 0 { b"\n" } else { b",\n" })?;
            }
            let mut json = serde_json::to_vec(p)?;
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
