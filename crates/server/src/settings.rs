//! [`ServerSettings`] and [`Limits`].

use std::path::PathBuf;

use citeflow_core::{GrammarMode, PromptMarker};

/// Where the server keeps sessions, numbering and event logs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// In memory: lost at exit.
    Memory,
    /// An SQLite file (created if missing).
    Sqlite(PathBuf),
    /// Redis, shared by several servers: a `redis://`, `rediss://` or `redis+cluster://` URL
    /// (see `citeflow_store_redis::RedisSettings`).
    Redis(String),
}

impl StoreLocation {
    /// Parses `memory`, `sqlite:PATH` or a Redis URL (`redis://`, `rediss://`,
    /// `redis+cluster://`, `rediss+cluster://`).
    ///
    /// # Errors
    /// A message naming the value for anything else.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s == "memory" {
            return Ok(StoreLocation::Memory);
        }
        if [
            "redis://",
            "rediss://",
            "redis+cluster://",
            "rediss+cluster://",
        ]
        .iter()
        .any(|p| s.starts_with(p))
        {
            return Ok(StoreLocation::Redis(s.to_owned()));
        }
        match s.strip_prefix("sqlite:") {
            Some(p) if !p.is_empty() => Ok(StoreLocation::Sqlite(PathBuf::from(p))),
            _ => Err(format!(
                "store {s:?} is not supported (expected memory, sqlite:PATH or redis://HOST:PORT)"
            )),
        }
    }
}

/// The configurable limits. Each one, when exceeded, gives its own error code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest request body (`body_too_large`); at most [`Limits::body_budget_bytes`].
    ///
    /// ### Default
    /// 4 MiB.
    pub max_body_bytes: usize,
    /// The memory budget shared by every request body being read whole (JSON bodies, and
    /// the bodies forwarded to the upstream's other resources): a body draws from it as it
    /// arrives and gives its share back once parsed (or refused, or timed out, see
    /// [`Limits::body_read_timeout_ms`]). A body that finds it spent waits
    /// [`Limits::body_budget_wait_ms`], then is refused with 503 `overloaded` and
    /// `Retry-After`. A body larger than the budget is `body_too_large`. EPUB uploads are
    /// written to a file as they arrive and do not draw from it.
    ///
    /// ### Default
    /// 64 MiB.
    pub body_budget_bytes: usize,
    /// Longest a request body waits, in all, for its share of [`Limits::body_budget_bytes`];
    /// then 503 `overloaded`.
    ///
    /// ### Default
    /// 2 s.
    pub body_budget_wait_ms: u64,
    /// Most sources in one request or round (`too_many_sources`).
    ///
    /// ### Default
    /// 256.
    pub max_sources: usize,
    /// Largest `text` of one source (`source_too_large`).
    ///
    /// ### Default
    /// 64 KiB.
    pub max_source_text_bytes: usize,
    /// Largest id, title, url, key or locator field of one source, and the most bytes of its
    /// metadata keys and values together (`source_field_too_large`, `param: "sources[i].title"`).
    ///
    /// ### Default
    /// 4 KiB.
    pub max_source_field_bytes: usize,
    /// Longest a stream may run; then it ends with a `stream_too_long` error event.
    ///
    /// ### Default
    /// 10 minutes.
    pub max_stream_duration_ms: u64,
    /// Time-out to connect to the upstream (`upstream_unreachable`).
    ///
    /// ### Default
    /// 10 s.
    pub upstream_connect_timeout_ms: u64,
    /// Time-out for the upstream's response headers, or its whole answer when not streaming
    /// (`upstream_timeout`).
    ///
    /// ### Default
    /// 120 s.
    pub upstream_response_timeout_ms: u64,
    /// Longest silence between two upstream chunks (`upstream_timeout` error event).
    ///
    /// ### Default
    /// 60 s.
    pub upstream_idle_timeout_ms: u64,
    /// Longest a streamed response stays silent: past it a comment line (`:`) goes out, so
    /// that proxies and load balancers keep the connection open while the model thinks. At
    /// least 1 ms (a smaller value is taken as 1).
    ///
    /// ### Default
    /// 15 s.
    pub sse_keep_alive_ms: u64,
    /// Most bytes of one upstream answer's streamed body; past it the stream ends with an
    /// `upstream_too_large` error event (what was taken stays in the log).
    ///
    /// ### Default
    /// 64 MiB.
    pub max_upstream_bytes: u64,
    /// Longest line of an upstream's SSE body; past it the stream ends with an
    /// `upstream_malformed` error event naming the line.
    ///
    /// ### Default
    /// 1 MiB.
    pub max_upstream_line_bytes: usize,
    /// How long an unused session (and a finished stream) is kept.
    ///
    /// ### Default
    /// 7 days.
    pub session_idle_ttl_ms: u64,
    /// With the SQLite store: the most bytes its WAL (`FILE-wal`) may hold before the writer
    /// starts it over (under steady load it never empties by itself; see
    /// `citeflow_store_sqlite::SqliteOptions::wal_max_bytes`).
    ///
    /// ### Default
    /// 64 MiB.
    pub sqlite_wal_max_bytes: u64,
    /// Most passages `citeflow.top_k` may ask for from a book (`invalid_request`).
    ///
    /// ### Default
    /// 32.
    pub max_top_k: usize,
    /// Largest EPUB accepted by `POST /v1/books` (`body_too_large`); 0 refuses every upload.
    /// The EPUB reader's own limits (entries, uncompressed size, compression ratio) apply
    /// on top.
    ///
    /// ### Default
    /// 64 MiB.
    pub max_book_bytes: usize,
    /// Most characters of a chapter `GET /v1/books/{key}/read` returns; a longer chapter is
    /// cut to whole paragraphs around the cited place (`omitted` says how many).
    ///
    /// ### Default
    /// 200,000.
    pub max_reading_chars: usize,
    /// Longest the server may spend reading and cutting one uploaded EPUB, checked before
    /// each spine document; past it `POST /v1/books` is 413 `invalid_epub` with
    /// `param: "ingest_timeout_ms"`, and nothing is added. A job whose client leaves stops at
    /// the same checks.
    ///
    /// ### Default
    /// 60 s.
    pub ingest_timeout_ms: u64,
    /// Uploaded EPUBs read and cut at once (a bounded pool; further uploads wait).
    ///
    /// ### Default
    /// 2.
    pub max_concurrent_ingests: usize,
    /// Longest a client may take to send a request's headers (HTTP/1): then the connection
    /// is closed, so a slow client cannot hold a socket for ever.
    ///
    /// ### Default
    /// 10 s.
    pub header_read_timeout_ms: u64,
    /// Longest a client may take to send a request's body, from the end of its headers
    /// (`request_timeout`, 408).
    ///
    /// ### Default
    /// 60 s.
    pub body_read_timeout_ms: u64,
    /// Most connections served at once; further ones wait in the listen backlog until one
    /// closes. Each open SSE stream holds one.
    ///
    /// ### Default
    /// 1024.
    pub max_connections: usize,
    /// Most answers (streaming or not, on the chat, responses and messages routes) one API key
    /// may have running at once on this server; past it 429 `too_many_streams`, before the
    /// upstream is called. Without API keys every caller shares one count.
    ///
    /// ### Default
    /// 64.
    pub max_streams_per_key: usize,
    /// Most rounds of sources one session may hold (each round up to `max_sources`
    /// sources); past it 429 `too_many_rounds` and the session is unchanged.
    ///
    /// ### Default
    /// 1,000.
    pub max_rounds_per_session: usize,
    /// Most sessions one API key may have (counted in the store, so across servers; deleted
    /// and purged ones do not count); past it `POST /v1/sessions` is 429 `too_many_sessions`.
    /// Without API keys every caller shares one count.
    ///
    /// ### Default
    /// 10,000.
    pub max_sessions_per_key: usize,
    /// On SIGTERM or SIGINT ([`launch`](crate::launch)'s shutdown future): how long the
    /// streams being generated may take to finish; then the rest are interrupted (their
    /// clients get a `shutting_down` error event and can resume them with `Last-Event-ID`
    /// from a durable store once a server is back).
    ///
    /// ### Default
    /// 20 s.
    pub shutdown_grace_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 4 << 20,
            body_budget_bytes: 64 << 20,
            body_budget_wait_ms: 2_000,
            max_sources: 256,
            max_source_text_bytes: 64 << 10,
            max_source_field_bytes: 4 << 10,
            max_stream_duration_ms: 600_000,
            upstream_connect_timeout_ms: 10_000,
            upstream_response_timeout_ms: 120_000,
            upstream_idle_timeout_ms: 60_000,
            sse_keep_alive_ms: 15_000,
            max_upstream_bytes: 64 << 20,
            max_upstream_line_bytes: 1 << 20,
            session_idle_ttl_ms: 7 * 24 * 3600 * 1000,
            sqlite_wal_max_bytes: citeflow_store_sqlite::DEFAULT_WAL_MAX_BYTES,
            max_top_k: 32,
            max_book_bytes: 64 << 20,
            max_reading_chars: 200_000,
            ingest_timeout_ms: 60_000,
            max_concurrent_ingests: 2,
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 60_000,
            max_connections: 1024,
            max_streams_per_key: 64,
            max_rounds_per_session: 1_000,
            max_sessions_per_key: 10_000,
            shutdown_grace_ms: 20_000,
        }
    }
}

/// Everything the server needs. Build with [`ServerSettings::new`] and the `with_*` setters.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub(crate) upstream: String,
    pub(crate) upstream_api_key: Option<String>,
    pub(crate) api_keys: Vec<String>,
    pub(crate) store: StoreLocation,
    pub(crate) limits: Limits,
    pub(crate) index: Option<PathBuf>,
    pub(crate) prompt: PromptDefaults,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) allow_no_auth: bool,
    pub(crate) anthropic_upstream: Option<String>,
    pub(crate) forward_client_key: bool,
    pub(crate) readyz_upstream: bool,
}

/// What the server asks the model for when a request does not say (`citeflow.marker`,
/// `citeflow.grammar`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptDefaults {
    /// The marker each source is labelled with.
    pub marker: PromptMarker,
    /// A GBNF grammar sent upstream as `grammar` (llama.cpp's constrained decoding), or none.
    pub grammar: Option<GrammarMode>,
    /// Worked examples before the question (`few_shot_messages` of the core), for small models;
    /// otherwise one system message with the instruction and the sources.
    pub few_shot: bool,
    /// Characters of each source's text in the prompt when `citeflow.max_chars_per_source` is
    /// not given.
    pub max_chars_per_source: usize,
}

impl Default for PromptDefaults {
    /// `[[id]]` markers, no grammar, a system message, 2,000 characters of each source: what
    /// any OpenAI-compatible model copies well.
    fn default() -> Self {
        PromptDefaults {
            marker: PromptMarker::DoubleBracket,
            grammar: None,
            few_shot: false,
            max_chars_per_source: 2_000,
        }
    }
}

impl ServerSettings {
    /// Settings for this upstream base URL (e.g. `http://127.0.0.1:8089/v1`; the server posts to
    /// `{upstream}/chat/completions`).
    pub fn new(upstream: impl Into<String>) -> Self {
        ServerSettings {
            upstream: upstream.into().trim_end_matches('/').to_owned(),
            upstream_api_key: None,
            api_keys: Vec::new(),
            store: StoreLocation::Memory,
            limits: Limits::default(),
            index: None,
            prompt: PromptDefaults::default(),
            allowed_origins: Vec::new(),
            allow_no_auth: false,
            anthropic_upstream: None,
            forward_client_key: false,
            readyz_upstream: false,
        }
    }

    /// The marker and grammar used when a request names none (the embedded local model gets
    /// the ones its cite-rate measurement chose).
    ///
    /// ### Default
    /// [`PromptDefaults::default`].
    pub fn with_prompt_defaults(mut self, prompt: PromptDefaults) -> Self {
        self.prompt = prompt;
        self
    }

    /// The bearer key sent to the upstream.
    ///
    /// ### Default
    /// None.
    pub fn with_upstream_api_key(mut self, key: Option<String>) -> Self {
        self.upstream_api_key = key.filter(|k| !k.is_empty());
        self
    }

    /// The API keys clients must send as `Authorization: Bearer …`; each key owns its sessions
    /// and streams. Empty: no authentication, one shared owner.
    ///
    /// ### Default
    /// Empty.
    pub fn with_api_keys(mut self, keys: Vec<String>) -> Self {
        self.api_keys = keys.into_iter().filter(|k| !k.is_empty()).collect();
        self
    }

    /// Origins (`https://app.example`, scheme, host and port) whose pages may call the API
    /// from a browser, besides the server's own page (the origin of the `Host` the request
    /// was sent to, always allowed). A request with any other `Origin` is 403
    /// `forbidden_origin`.
    ///
    /// ### Default
    /// Empty: only the server's own page.
    pub fn with_allowed_origins(mut self, origins: Vec<String>) -> Self {
        self.allowed_origins = origins.into_iter().filter(|o| !o.is_empty()).collect();
        self
    }

    /// Whether [`launch`](crate::launch) may serve without API keys on an address other than
    /// loopback (see [`check_exposure`](crate::check_exposure)).
    ///
    /// ### Default
    /// `false`: without API keys, only a loopback listener is served.
    pub fn with_allow_no_auth(mut self, allow: bool) -> Self {
        self.allow_no_auth = allow;
        self
    }

    /// The Anthropic Messages API base URL (e.g. `https://api.anthropic.com/v1`): `POST
    /// /v1/messages` is forwarded to `{anthropic_upstream}/messages`.
    ///
    /// ### Default
    /// None: `POST /v1/messages` answers 400 `invalid_request` naming the flag.
    pub fn with_anthropic_upstream(mut self, url: Option<String>) -> Self {
        self.anthropic_upstream = url
            .filter(|u| !u.is_empty())
            .map(|u| u.trim_end_matches('/').to_owned());
        self
    }

    /// `GET /readyz` also asks the upstream (`GET {upstream}/models`, below 500 within 2 s).
    ///
    /// ### Default
    /// `false`: the store only.
    pub fn with_readyz_upstream(mut self, check: bool) -> Self {
        self.readyz_upstream = check;
        self
    }

    /// Sends the caller's own key to the upstream (`Authorization`, or `x-api-key` for
    /// Anthropic) instead of [`ServerSettings::with_upstream_api_key`]'s: for deployments
    /// where each user brings their key.
    ///
    /// ### Default
    /// `false`.
    pub fn with_forward_client_key(mut self, forward: bool) -> Self {
        self.forward_client_key = forward;
        self
    }

    /// Where data is kept.
    ///
    /// ### Default
    /// [`StoreLocation::Memory`] (the CLI defaults to an SQLite file).
    pub fn with_store(mut self, store: StoreLocation) -> Self {
        self.store = store;
        self
    }

    /// The directory of a book index (`citeflow-index`, as `citeflow ingest --index DIR`
    /// writes it; created if missing): `GET /v1/books` lists its books, `POST /v1/books` adds
    /// one, and `citeflow.book` in a chat request takes the answer's sources from a book.
    ///
    /// ### Default
    /// None: no books (`GET /v1/books` lists none).
    pub fn with_index(mut self, dir: impl Into<PathBuf>) -> Self {
        self.index = Some(dir.into());
        self
    }

    /// The limits.
    ///
    /// ### Default
    /// [`Limits::default`].
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The upstream base URL.
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The store location.
    pub fn store(&self) -> &StoreLocation {
        &self.store
    }

    /// The book index directory, if one is set.
    pub fn index(&self) -> Option<&std::path::Path> {
        self.index.as_deref()
    }
}
