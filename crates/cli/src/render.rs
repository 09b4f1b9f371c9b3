//! `citeflow render`: stdin in, rewritten answer out, flushed per chunk.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use citeflow_core::provider::{Dialect, Framing, ProviderStream};
use citeflow_core::{
    render_list, Event, IdShape, InvalidUtf8, ListFormat, Numbering, RankMode, Rewriter, Settings,
    SettingsPatch, Source, Sources, Style, Syntax, UnknownPolicy,
};
use clap::{Args, ValueEnum};

use crate::event_line::write_event_line;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum InputFormat {
    /// Raw bytes as they arrive: the answer text itself.
    Text,
    /// One JSON value per line: a string (one chunk of text) or a provider's payload.
    Jsonl,
    /// A Server-Sent Events stream of provider payloads (`data:` lines).
    #[value(alias = "openai-sse")]
    Sse,
}

impl InputFormat {
    fn framing(self) -> Framing {
        match self {
            InputFormat::Text => Framing::Text,
            InputFormat::Jsonl => Framing::Jsonl,
            InputFormat::Sse => Framing::Sse,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum OutputFormat {
    /// The rendered answer, then the source list.
    Text,
    /// One event per line with a `type` field.
    Jsonl,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Each answer starts at 1.
    Answer,
    /// Numbering continues in the session file (`--session-file`).
    Session,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum ListWhich {
    /// Only sources cited in this answer.
    Cited,
    /// Every numbered source of the session, then the sources shown but not cited.
    All,
}

/// Arguments of `citeflow render`.
#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    /// JSON array of source objects (each with at least `id`), in the order the model saw them.
    #[arg(long)]
    sources: Option<PathBuf>,
    /// How stdin is framed.
    #[arg(long, value_enum, default_value = "text")]
    input: InputFormat,
    /// The provider API of the payloads (jsonl, sse): auto (detected from the first payload),
    /// openai-chat, openai-responses, anthropic, bedrock, cohere, gemini, gemini-interactions.
    #[arg(long, default_value = "auto")]
    dialect: String,
    /// What is written to stdout.
    #[arg(long, value_enum, default_value = "text")]
    output: OutputFormat,
    /// Number style: brackets, markdown, fullwidth, html, footnote, remove (markers taken out,
    /// spaces repaired), as-written (markers kept as the model wrote them), template:TEXT with
    /// {number} {id} {url} {title}, or html_template:TEXT (fields HTML-escaped).
    #[arg(long, default_value = "brackets")]
    style: Style,
    /// Unknown ids: mark ([?]), drop, or keep verbatim.
    #[arg(long, default_value = "mark")]
    unknown: UnknownPolicy,
    /// Numbers in markers ([2], 【2】) are ranks into the sources' order: renumber or keep.
    #[arg(long, num_args = 0..=1, default_missing_value = "renumber")]
    rank: Option<RankMode>,
    /// Numbering scope.
    #[arg(long, value_enum, default_value = "answer")]
    scope: Scope,
    /// With --scope session: JSON file holding the session's numbering, read and updated.
    #[arg(long)]
    session_file: Option<PathBuf>,
    /// Marker syntaxes, comma-separated: double_bracket, cite_colon, cite_tag, single_bracket,
    /// bare_id, openai_cite, assistants_cite, footnote (default: all but bare_id and footnote).
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.trim().parse::<Syntax>())]
    syntax: Vec<Syntax>,
    /// Shape of ids in ambiguous markers.
    #[arg(long, default_value = "source_<digits>")]
    id_pattern: IdShape,
    /// Hold-back cap in bytes.
    #[arg(long, default_value_t = 64)]
    max_pending_bytes: usize,
    /// Most provider text held while a model-written link may still be cited (OpenAI, Azure,
    /// xAI): past it the link is printed as written and its citation bound in the final answer.
    #[arg(long, default_value_t = citeflow_core::DEFAULT_LINK_HOLD_BYTES)]
    max_link_hold_bytes: usize,
    /// Invalid UTF-8: replace or error.
    #[arg(long, default_value = "replace")]
    invalid_utf8: InvalidUtf8,
    /// Do not merge sources with the same url into one number.
    #[arg(long)]
    no_dedupe: bool,
    /// Anchor each citation: the sentence of its source that supports the sentence it ends,
    /// with a support score and verdict (jsonl: `anchor` events; text: the quote under each
    /// list line, weak and unsupported citations marked).
    #[arg(long)]
    anchors: bool,
    /// How much of a source's text anchoring indexes, in bytes (1024 to 67108864); a longer
    /// text is anchored over its first part.
    #[arg(long, default_value_t = citeflow_core::anchor::DEFAULT_MAX_SOURCE_BYTES)]
    max_anchor_source_bytes: usize,
    /// Which sources the final list shows.
    #[arg(long, value_enum, default_value = "cited")]
    list: ListWhich,
    /// Source list format (text output): text, markdown, footnotes, html, json.
    #[arg(long, default_value = "text")]
    list_format: ListFormat,
    /// Continue a stream saved with --snapshot-out (settings, sources and numbering come from
    /// the snapshot).
    #[arg(long)]
    snapshot_in: Option<PathBuf>,
    /// At the end of stdin, save the stream's state here instead of ending it, so another
    /// process can continue it with --snapshot-in.
    #[arg(long)]
    snapshot_out: Option<PathBuf>,
}

impl RenderArgs {
    /// The flags as a [`SettingsPatch`] (clap read the names with the core's `FromStr`).
    fn settings(&self) -> Result<Settings> {
        let mut patch = SettingsPatch::default();
        patch.style = Some(self.style.clone());
        patch.unknown = Some(self.unknown);
        patch.id_pattern = Some(self.id_pattern.clone());
        patch.max_pending_bytes = Some(self.max_pending_bytes);
        patch.max_link_hold_bytes = Some(self.max_link_hold_bytes);
        patch.dedupe = Some(!self.no_dedupe);
        patch.invalid_utf8 = Some(self.invalid_utf8);
        patch.rank = self.rank;
        patch.anchors = Some(self.anchors);
        patch.max_anchor_source_bytes = Some(self.max_anchor_source_bytes);
        if !self.syntax.is_empty() {
            patch.syntaxes = Some(self.syntax.clone());
        }
        Ok(patch.apply(Settings::default())?)
    }
}

fn read_sources(path: &PathBuf) -> Result<Vec<Source>> {
    let raw = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read sources file {}", path.display()))?;
    serde_json::from_str(&raw).with_context(|| {
        format!(
            "sources file {} is not a JSON array of source objects with an \"id\"",
            path.display()
        )
    })
}

/// The session file: the numbering and the sources of a session across runs.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct SessionFile {
    numbering: Vec<citeflow_core::NumberEntry>,
    /// Every earlier run's sources, in their rounds: an id of an earlier round still resolves,
    /// and a deduplicated number keeps its first record. Absent in files of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sources: Option<Sources>,
}

struct Renderer<W: Write> {
    args_output: OutputFormat,
    list: ListWhich,
    list_format: ListFormat,
    stream: ProviderStream,
    /// Text output of a stream whose citations may be bound after their text: the body is
    /// printed at the end, as `done`'s final text.
    held: Option<String>,
    out: W,
}

impl<W: Write> Renderer<W> {
    fn write(&mut self, chunk: &[u8]) -> Result<()> {
        let r = self.stream.write(chunk);
        self.drain()?;
        if r.is_err() {
            self.release_held()?;
        }
        r.map_err(|e| anyhow::anyhow!("stdin {e}"))
    }

    /// What was rendered before an error is shown, never lost.
    fn release_held(&mut self) -> Result<()> {
        if let Some(h) = self.held.take() {
            self.out.write_all(h.as_bytes())?;
        }
        self.out.flush()?;
        Ok(())
    }

    fn drain(&mut self) -> Result<()> {
        while let Some(event) = self.stream.poll_event() {
            match self.args_output {
                OutputFormat::Jsonl => write_event_line(&mut self.out, &event)?,
                OutputFormat::Text => match &event {
                    Event::Text { text } => {
                        if self.held.is_none() && self.stream.may_bind_late() {
                            self.held = Some(String::new());
                        }
                        match &mut self.held {
                            Some(h) => h.push_str(text),
                            None => self.out.write_all(text.as_bytes())?,
                        }
                    }
                    Event::Done {
                        sources,
                        text,
                        uncited,
                        ..
                    } => {
                        match (self.held.take(), text) {
                            (Some(h), _) => {
                                self.out
                                    .write_all(text.as_deref().unwrap_or(&h).as_bytes())?;
                            }
                            // Citations came after their text was printed: the final answer
                            // follows, so that the printed answer and the list agree.
                            (None, Some(final_text)) => {
                                eprintln!(
                                    "citeflow: some provider citations arrived after their text \
                                     was printed; the final answer follows"
                                );
                                write!(self.out, "\n\n{final_text}")?;
                            }
                            (None, None) => {}
                        }
                        let Some(rw) = self.stream.rewriter() else {
                            continue;
                        };
                        let list = if self.list == ListWhich::All {
                            rw.listed_sources(true)
                        } else {
                            sources.clone()
                        };
                        if !list.is_empty() {
                            let rounds = rw.sources().rounds();
                            let grouped = rounds.iter().any(|r| r.query.is_some());
                            let text =
                                render_list(&list, self.list_format, grouped.then_some(rounds));
                            write!(self.out, "\n\n{text}")?;
                        } else {
                            writeln!(self.out)?;
                        }
                        if self.list == ListWhich::All && !uncited.is_empty() {
                            writeln!(self.out, "\nNot cited:")?;
                            for s in uncited {
                                let title = s.title.as_deref().unwrap_or(&s.id);
                                match s.url.as_deref().filter(|u| *u != title) {
                                    Some(u) => writeln!(self.out, "- {title} <{u}>")?,
                                    None => writeln!(self.out, "- {title}")?,
                                }
                            }
                        }
                    }
                    _ => {}
                },
            }
        }
        Ok(())
    }

    /// Ends the stream: the numbering and the sources to keep.
    fn end(&mut self) -> Result<(Numbering, Option<Sources>)> {
        let r = self.stream.end();
        self.drain()?;
        if r.is_err() {
            self.release_held()?;
        }
        r.map_err(|e| anyhow::anyhow!("stdin {e}"))?;
        Ok(self.stream.rewriter().map_or_else(
            || (Numbering::new(), None),
            |rw| (rw.numbering().clone(), Some(rw.sources().clone())),
        ))
    }
}

pub(crate) fn run(args: RenderArgs) -> Result<ExitCode> {
    let settings = args.settings()?;
    let given = match &args.sources {
        Some(p) => read_sources(p)?,
        None => Vec::new(),
    };
    if args.scope == Scope::Session && args.session_file.is_none() {
        bail!("--scope session needs --session-file PATH to keep the numbering between runs");
    }
    let (numbering, earlier) = match (&args.session_file, args.scope) {
        (Some(p), Scope::Session) if p.exists() => {
            let raw = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read session file {}", p.display()))?;
            let f: SessionFile = serde_json::from_str(&raw)
                .with_context(|| format!("session file {} is not valid", p.display()))?;
            (Numbering::from_entries(f.numbering)?, f.sources)
        }
        _ => (Numbering::new(), None),
    };
    // This run's sources are the session's next round.
    let sources = match earlier {
        Some(mut s) => {
            if !given.is_empty() {
                s.append_round(None, given)?;
            }
            s
        }
        None if given.is_empty() => Sources::new(),
        None => Sources::from_vec(given)?,
    };
    let stream = match &args.snapshot_in {
        Some(p) => {
            let raw = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read snapshot {}", p.display()))?;
            let snap: citeflow_core::Snapshot = serde_json::from_str(&raw)
                .with_context(|| format!("snapshot {} is not a citeflow snapshot", p.display()))?;
            ProviderStream::from_rewriter(Rewriter::from_snapshot(snap)?)
        }
        None => ProviderStream::new(settings, sources, numbering),
    };
    let mut stream = stream.with_framing(args.input.framing());
    if args.dialect != "auto" {
        let d: Dialect = args.dialect.parse().map_err(|_| {
            anyhow::anyhow!(
                "unknown --dialect {:?}: expected auto, openai-chat, openai-responses, anthropic, bedrock, cohere, gemini or gemini-interactions",
                args.dialect
            )
        })?;
        stream = stream.with_dialect(d);
    }
    let stdout = std::io::stdout();
    // Output is buffered and flushed whenever the input has nothing more ready: a queue of
    // chunks is written in a few writes, a chunk that arrives alone is shown at once.
    let mut r = Renderer {
        args_output: args.output,
        list: args.list,
        list_format: args.list_format,
        stream,
        held: None,
        out: std::io::BufWriter::with_capacity(64 * 1024, stdout.lock()),
    };
    if let Some(len) = stdin_file_len() {
        // Everything is ready at once: read in blocks on this thread; the output is flushed
        // when the buffer fills and at the end. The stream's buffers are sized for the file
        // at once rather than grown (at most `MAX_RESERVE_BYTES`: a hint, not a limit).
        r.stream.reserve_input_bytes(
            usize::try_from(len).map_or(MAX_RESERVE_BYTES, |l| l.min(MAX_RESERVE_BYTES)),
        );
        let mut input = std::io::stdin().lock();
        // Read into the vector's unused capacity: not zeroed first (for an empty input, 64
        // pages never touched). A block is what one `read` of the file gives (all of it but
        // at the end), as before.
        let mut buf: Vec<u8> = Vec::with_capacity(FILE_BLOCK_BYTES);
        loop {
            buf.clear();
            let block = u64::try_from(FILE_BLOCK_BYTES).expect("a block fits u64");
            let read = (&mut input).take(block).read_to_end(&mut buf);
            // What was read before an error is rendered before it, as before.
            if !buf.is_empty() {
                r.write(&buf)?;
            }
            match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(e).context("cannot read stdin"),
            }
        }
        return finish(r, &args);
    }
    let input = read_stdin();
    loop {
        let chunk = match input.try_recv() {
            Ok(chunk) => chunk,
            Err(std::sync::mpsc::TryRecvError::Empty) => {
                r.out.flush()?;
                match input.recv() {
                    Ok(chunk) => chunk,
                    Err(_) => break,
                }
            }
            Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
        };
        r.write(&chunk.context("cannot read stdin")?)?;
    }
    finish(r, &args)
}

/// Bytes of stdin read at a time when it is a file. The rewriter ends a text event where a
/// write ends, so the block size shows in `--output jsonl` (not in the text): kept as it was.
const FILE_BLOCK_BYTES: usize = 256 * 1024;

/// Most input bytes the stream's buffers are sized for at once (see
/// [`ProviderStream::reserve_input_bytes`]); a longer file grows them as a pipe does.
const MAX_RESERVE_BYTES: usize = 64 << 20;

/// The length of stdin when it is a regular file (`< answer.jsonl`), whose bytes are all
/// ready at once; `None` for a pipe, a terminal or a socket.
fn stdin_file_len() -> Option<u64> {
    use std::os::fd::AsFd;
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata().ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
}

/// After the input: the snapshot or the end of the stream, the session file.
fn finish<W: Write>(mut r: Renderer<W>, args: &RenderArgs) -> Result<ExitCode> {
    if let Some(p) = &args.snapshot_out {
        let rw = match r.stream.rewriter() {
            Some(rw) => rw.clone(),
            None => bail!("--snapshot-out: nothing was read from stdin"),
        };
        let json = serde_json::to_string(&rw.snapshot())?;
        std::fs::write(p, json)
            .with_context(|| format!("cannot write snapshot {}", p.display()))?;
        r.out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let ended = r.end();
    r.out.flush()?;
    let (numbering, sources) = ended?;
    if let (Some(p), Scope::Session) = (&args.session_file, args.scope) {
        let f = SessionFile {
            numbering: numbering.entries().to_vec(),
            sources,
        };
        std::fs::write(p, serde_json::to_string_pretty(&f)?)
            .with_context(|| format!("cannot write session file {}", p.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Stdin read on its own thread, so that the renderer can tell whether more input is ready.
fn read_stdin() -> std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(64);
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        loop {
            let mut buf = vec![0u8; 64 * 1024];
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.send(Ok(buf)).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
        }
    });
    rx
}
