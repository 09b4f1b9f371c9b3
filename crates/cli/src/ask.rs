//! `citeflow ask`: retrieve passages of a book, ask an OpenAI-compatible model, print the
//! streamed answer with stable numbers and the cited chapters and CFIs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use citeflow_core::provider::{Dialect, ProviderError, ProviderStream};
use citeflow_core::sse::SseDecoder;
use citeflow_core::{
    citation_grammar, few_shot_messages, render_list, zero_shot_messages, Event, ListFormat,
    Numbering, PromptMarker, Settings, Source, Sources, Style,
};
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
    /// Number style: brackets, markdown, fullwidth, html, footnote, or template:TEXT with {n}.
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
        .with_max_pending_bytes(256)?;
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
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the stream's events: text at once, the source list at the end.
fn drain(ps: &mut ProviderStream, list_format: ListFormat, out: &mut impl Write) -> Result<()> {
    while let Some(event) = ps.poll_event() {
        match event {
            Event::Text { text } => out.write_all(text.as_bytes())?,
            Event::Done { sources, .. } => {
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
) -> Result<()> {
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
            let value: Value = serde_json::from_str(&ev.data).with_context(|| {
                format!("upstream sse event ending at line {line}: data is not JSON")
            })?;
            match ps.write_payload(&value, line) {
                Ok(()) => {}
                Err(ProviderError::Upstream { message, .. }) => {
                    bail!("the upstream reported an error: {message}")
                }
                Err(e) => return Err(e).context("cannot read the upstream stream"),
            }
            drain(&mut ps, list_format, &mut out)?;
        }
        if chunk.is_none() || done {
            break;
        }
    }
    if !done {
        eprintln!("citeflow: warning: the upstream stream ended without data: [DONE]");
    }
    ps.end().context("cannot read the upstream stream")?;
    drain(&mut ps, list_format, &mut out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::completions_url;

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
