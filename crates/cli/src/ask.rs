//! `citeflow ask`: retrieve passages of a book, ask an OpenAI-compatible model, print the
//! streamed answer with stable numbers and the cited chapters and CFIs; with `--anchors`, each
//! citation's quote (the sentence of its passage that supports it) under its list line, with
//! its range CFI in the book in the JSON list.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use citeflow_core::provider::{Dialect, ProviderError, ProviderStream};
use citeflow_core::sse::SseDecoder;
use citeflow_core::{
    citation_grammar, few_shot_messages, render_list, zero_shot_messages, Event, ListFormat,
    ListedSource, Numbering, PromptMarker, Settings, Source, Sources, Style,
};
use citeflow_epub::{Book, Cfi, ChunkSettings};
use citeflow_index::Index;
use clap::Args;
use serde_json::{json, Value};

use crate::book::{ensure_indexed, open_book, ChunkArgs};
use crate::progress::Progress;

/// Arguments of `citeflow ask`.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// The question.
    question: String,
    /// The .epub file to answer from.
    #[arg(long)]
    book: PathBuf,
    /// Keep the book's passages in this index directory and re-use them next time (default:
    /// an index in memory, built for this question).
    #[arg(long)]
    index: Option<PathBuf>,
    /// Base URL of the OpenAI-compatible upstream, e.g. http://127.0.0.1:8089/v1 (the answer
    /// is requested from {upstream}/chat/completions).
    #[arg(long, env = "CITEFLOW_UPSTREAM")]
    upstream: Option<String>,
    /// Bearer key sent to the upstream.
    #[arg(long, env = "CITEFLOW_UPSTREAM_API_KEY", hide_env_values = true)]
    upstream_api_key: Option<String>,
    /// Model name sent upstream; without --upstream, a path ending in .gguf is the local
    /// model to run.
    #[arg(long, env = "CITEFLOW_MODEL", default_value = "default")]
    model: String,
    /// Marker the model is asked to write: double_bracket, cite_colon, cite_tag,
    /// single_bracket, rank, rank_full_width (【n】, with 章/CFI notes in the context).
    /// Default: double_bracket with --upstream; rank for the local model, which is asked with
    /// worked examples and a grammar that ends every sentence with a marker.
    #[arg(long)]
    marker: Option<PromptMarker>,
    /// Number style: brackets, markdown, fullwidth, html, footnote, or template:TEXT with
    /// {number} {id} {url} {title}.
    #[arg(long, default_value = "brackets")]
    style: Style,
    /// How many passages to retrieve and send.
    #[arg(short = 'k', long = "top-k", default_value_t = 5)]
    k: usize,
    /// Characters of each passage given to the model.
    #[arg(long, default_value_t = 1200)]
    max_chars_per_source: usize,
    /// Source list format: text, markdown, footnotes, html, json.
    #[arg(long, default_value = "text")]
    list_format: ListFormat,
    /// Anchor each citation to the sentence of its passage that supports it: the list shows
    /// each quote with its verdict and score under the passage's line (with `--list-format
    /// json`, each quote's `cfi`: its range CFI in the book).
    #[arg(long)]
    anchors: bool,
    /// Upstream connect and response time-out in ms.
    #[arg(long, default_value_t = 120_000)]
    timeout_ms: u64,
    #[command(flatten)]
    chunking: ChunkArgs,
}

/// The chat-completions URL for an upstream base URL: `{upstream}/chat/completions`; a bare
/// host gets `/v1` first; a URL already ending in `/chat/completions` is used as it is.
fn completions_url(upstream: &str) -> String {
    let u = upstream.trim().trim_end_matches('/');
    if u.ends_with("/chat/completions") {
        return u.to_owned();
    }
    let path_start = u.find("://").map_or(0, |i| i + 3);
    if u[path_start..].contains('/') {
        format!("{u}/chat/completions")
    } else {
        format!("{u}/v1/chat/completions")
    }
}

pub(crate) fn run(args: AskArgs) -> Result<ExitCode> {
    // No --upstream: the local model (a --model ending in .gguf picks the file).
    let upstream = args.upstream.clone().filter(|u| !u.trim().is_empty());
    if args.k == 0 {
        bail!("-k must be at least 1");
    }
    // The local model is asked as `citeflow serve` asks it: few-shot, with a grammar.
    let local_model = upstream.is_none();
    let local = crate::local_model::LOCAL_MODEL_PROMPT;
    let marker = match args.marker {
        Some(marker) => marker,
        None if local_model => local.marker,
        None => PromptMarker::DoubleBracket,
    };
    let settings = marker
        .settings(Settings::default())
        .with_style(args.style.clone())
        .with_max_pending_bytes(256)?
        .with_anchors(args.anchors);
    let list_format = args.list_format;

    let progress = Progress::new();
    let opened = open_book(&args.book, &progress)?;
    let mut index = match &args.index {
        Some(dir) => Index::open_or_create(dir)?,
        None => Index::in_memory()?,
    };
    let state = ensure_indexed(&mut index, &opened, &args.chunking.settings(), &progress)
        .with_context(|| format!("cannot index {}", args.book.display()))?;
    progress.finish();
    let hits = index.search_book(&state.key, &args.question, args.k)?;
    if hits.is_empty() {
        bail!(
            "no passage of {} matches the question; try other words",
            args.book.display()
        );
    }
    let sources: Vec<Source> = hits.iter().map(|h| h.passage.to_source()).collect();
    let chunk_settings = args.chunking.settings();
    let quotes = args
        .anchors
        .then(|| Quotes::new(&opened.book, &chunk_settings, &sources));
    let sources = Sources::from_vec(sources)?;
    let messages = if local_model && local.few_shot {
        few_shot_messages(&sources, marker, &args.question, args.max_chars_per_source)
    } else {
        zero_shot_messages(&sources, marker, &args.question, args.max_chars_per_source)
    };
    let mut body = json!({
        "model": args.model,
        "stream": true,
        "messages": messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect::<Vec<_>>(),
    });
    if let Some(mode) = local.grammar.filter(|_| local_model) {
        let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
        body["grammar"] = Value::String(citation_grammar(marker, &ids, mode));
    }
    // The upstream's chunks are read by the core's OpenAI Chat reader: the markers in the text,
    // `url_citation` annotations and Perplexity's `citations` / `search_results` are numbered
    // in one table.
    let stream =
        ProviderStream::new(settings, sources, Numbering::new()).with_dialect(Dialect::OpenaiChat);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let local = match &upstream {
        Some(_) => None,
        None => {
            let gguf = std::path::Path::new(&args.model);
            let gguf = gguf
                .extension()
                .is_some_and(|e| e == "gguf")
                .then(|| gguf.to_owned());
            Some(runtime.block_on(crate::local_model::start(gguf))?)
        }
    };
    let upstream = match &local {
        Some(l) => l.base_url().to_owned(),
        None => upstream.unwrap_or_default(),
    };
    let url = completions_url(&upstream);
    runtime.block_on(stream_answer(
        &url,
        args.upstream_api_key.as_deref(),
        Duration::from_millis(args.timeout_ms),
        &body,
        stream,
        list_format,
        quotes.as_ref(),
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The passages an answer may cite, to give each anchor's quote its range CFI in the book.
struct Quotes<'a> {
    book: &'a Book,
    settings: &'a ChunkSettings,
    /// Range CFI and text, by source id.
    passages: HashMap<String, (Cfi, String)>,
}

impl<'a> Quotes<'a> {
    fn new(book: &'a Book, settings: &'a ChunkSettings, sources: &[Source]) -> Self {
        let passages = sources
            .iter()
            .filter_map(|s| {
                let cfi = Cfi::parse(s.locator.as_ref()?.cfi.as_deref()?).ok()?;
                Some((s.id.clone(), (cfi, s.text.clone()?)))
            })
            .collect();
        Quotes {
            book,
            settings,
            passages,
        }
    }

    /// Sets `quote.cfi` of the listed sources' anchors: the range CFI of the quoted
    /// sentence (`Book::passage_range_cfi`).
    fn fill(&self, listed: &mut [ListedSource]) {
        for a in listed.iter_mut().flat_map(|l| l.anchors.iter_mut()) {
            let Some((cfi, text)) = self.passages.get(&a.source_id) else {
                continue;
            };
            let Some(quote) = a.quote.as_mut() else {
                continue;
            };
            if let Some(r) = quote.range {
                let chars = r.char_start as usize..r.char_end as usize;
                quote.cfi = self
                    .book
                    .passage_range_cfi(cfi, text, chars, self.settings)
                    .ok()
                    .map(|c| c.to_string());
            }
        }
    }
}

/// Prints the stream's events: text at once, the source list at the end.
fn drain(
    ps: &mut ProviderStream,
    list_format: ListFormat,
    quotes: Option<&Quotes<'_>>,
    out: &mut impl Write,
) -> Result<()> {
    while let Some(event) = ps.poll_event() {
        match event {
            Event::Text { text } => out.write_all(text.as_bytes())?,
            Event::Done { mut sources, .. } => {
                if let Some(q) = quotes {
                    q.fill(&mut sources);
                }
                if sources.is_empty() {
                    writeln!(out)?;
                } else {
                    write!(out, "\n\n{}", render_list(&sources, list_format, None))?;
                }
            }
            _ => {}
        }
    }
    out.flush()?;
    Ok(())
}

async fn stream_answer(
    url: &str,
    api_key: Option<&str>,
    timeout: Duration,
    body: &Value,
    mut ps: ProviderStream,
    list_format: ListFormat,
    quotes: Option<&Quotes<'_>>,
) -> Result<()> {
    citeflow_server::install_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(timeout)
        .build()
        .context("cannot build the HTTP client")?;
    let mut req = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .body(serde_json::to_vec(body)?);
    if let Some(k) = api_key.filter(|k| !k.is_empty()) {
        req = req.bearer_auth(k);
    }
    let mut resp = tokio::time::timeout(timeout, req.send())
        .await
        .with_context(|| format!("the upstream {url} did not answer within {timeout:?}"))?
        .with_context(|| format!("cannot reach the upstream {url}"))?;
    if !resp.status().is_success() {
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| text.chars().take(300).collect());
        bail!("the upstream {url} answered {status}: {message}");
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut sse = SseDecoder::default();
    let mut done = false;
    loop {
        let chunk = tokio::time::timeout(timeout, resp.chunk())
            .await
            .with_context(|| format!("the upstream stream went silent for {timeout:?}"))?
            .context("the upstream stream broke off")?;
        match &chunk {
            Some(bytes) => sse.write(bytes)?,
            None => sse.end()?,
        }
        while let Some((ev, line)) = sse.poll_event_at() {
            if ev.data.trim() == "[DONE]" {
                done = true;
                continue;
            }
            if ev.data.trim().is_empty() {
                continue;
            }
            // Read by the dialect from its text, without a JSON tree.
            match ps.write_payload_json(&ev.data, line) {
                Ok(()) => {}
                Err(ProviderError::Json { message, .. }) => {
                    bail!("upstream sse event ending at line {line}: data is not JSON: {message}")
                }
                Err(ProviderError::Upstream { message, .. }) => {
                    bail!("the upstream reported an error: {message}")
                }
                Err(e) => return Err(e).context("cannot read the upstream stream"),
            }
            drain(&mut ps, list_format, quotes, &mut out)?;
        }
        if chunk.is_none() || done {
            break;
        }
    }
    if !done {
        eprintln!("citeflow: warning: the upstream stream ended without data: [DONE]");
    }
    ps.end().context("cannot read the upstream stream")?;
    drain(&mut ps, list_format, quotes, &mut out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use citeflow_core::provider::{Dialect, ProviderStream};
    use citeflow_core::{ListFormat, Numbering, Settings, Sources};
    use citeflow_epub::{Book, Cfi, ChunkSettings, Limits};
    use citeflow_index::BookPassage;
    use serde_json::Value;

    use super::{completions_url, drain, Quotes};

    /// `citeflow ask --anchors`: the quote of a book passage's anchor carries the range CFI
    /// of the quoted sentence, which the book reads back as exactly that sentence.
    #[test]
    fn anchors_of_book_passages_get_the_cfi_of_their_quote() {
        let shared = std::env::var_os("CITEFLOW_SHARED_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared")
            });
        let path = shared.join("fixtures/epub/kusamakura-japanese-vertical-writing.epub");
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{} (set CITEFLOW_SHARED_DIR): {e}", path.display()));
        let book = Book::open(&bytes, &Limits::default()).expect("opens");
        let settings = ChunkSettings::default();
        let passage = BookPassage::from_book(&book, &settings)
            .into_iter()
            .find(|p| p.text.contains("智に働けば角が立つ。"))
            .expect("the opening passage");
        let sources = vec![passage.to_source()];
        let quotes = Quotes::new(&book, &settings, &sources);
        let mut ps = ProviderStream::new(
            Settings::default().with_anchors(true),
            Sources::from_vec(sources).expect("sources"),
            Numbering::new(),
        )
        .with_dialect(Dialect::OpenaiChat);
        let answer = format!("語り手は、智に働けば角が立つと考えた [[{}]]。", passage.id);
        ps.write_text(&answer).expect("write");
        ps.end().expect("end");
        let mut out = Vec::new();
        drain(&mut ps, ListFormat::Json, Some(&quotes), &mut out).expect("drain");
        let out = String::from_utf8(out).expect("utf-8");
        let (text, list) = out.split_once("\n\n").expect("a list after the answer");
        assert_eq!(text, "語り手は、智に働けば角が立つと考えた [1]。");
        let list: Value = serde_json::from_str(list).expect("a json list");
        let quote = &list[0]["anchors"][0]["quote"];
        let quoted = quote["text"].as_str().expect("quote");
        assert!(quoted.contains("智に働けば角が立つ。"), "{list}");
        let cfi = Cfi::parse(quote["cfi"].as_str().expect("cfi")).expect("parses");
        let marked = book.reading(&cfi, false).expect("reads").marked_text();
        assert_eq!(marked, quoted);
    }

    #[test]
    fn upstream_urls_get_the_chat_completions_path() {
        assert_eq!(
            completions_url("http://127.0.0.1:8089/v1"),
            "http://127.0.0.1:8089/v1/chat/completions"
        );
        assert_eq!(
            completions_url("http://127.0.0.1:8089/"),
            "http://127.0.0.1:8089/v1/chat/completions"
        );
        assert_eq!(
            completions_url("https://h/api/v1/chat/completions"),
            "https://h/api/v1/chat/completions"
        );
    }
}
