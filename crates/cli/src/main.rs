//! The `citeflow` command.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod ask;
mod book;
mod broken_pipe;
mod cfi_cmd;
mod data_dir;
mod epub_cmd;
mod event_line;
mod ingest;
mod lazy_args;
mod local_model;
mod progress;
mod render;
mod serve;
mod serve_config;

use anyhow::Context;
use broken_pipe::is_broken_pipe;
use lazy_args::Lazy;

/// mimalloc (v2): the proxy's hot path allocates and frees many small buffers on several
/// threads (tokio's workers, the SQLite writer). Against glibc's malloc, in the same runs of
/// `scripts/bench-server.sh 1000 20`: about 8% less CPU per chunk; memory per idle stream 60
/// KiB instead of 44 (`scripts/bench/idle_streams.py`, target 64; mimalloc v3 took 79).
/// Built with `no_thp`: mimalloc then does not ask for transparent huge pages, whose 2 MiB
/// pages were mostly empty here (idle stream 47.5 KiB instead of 61.7, resident at start 20 MB
/// instead of 37; CPU per chunk the same within the noise).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Stable, streamed citation numbers for LLM answers.
#[derive(Debug, Parser)]
#[command(name = "citeflow", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Rewrite a streamed answer read from stdin: markers with source ids become numbers.
    Render(render::RenderArgs),
    /// Serve the OpenAI-compatible streaming proxy with sessions, resume and a SQLite store.
    Serve(Lazy<Box<serve::ServeArgs>>),
    /// Cut EPUB books into passages (JSON lines that are also citeflow sources), optionally
    /// into a local full-text index.
    Ingest(Lazy<ingest::IngestArgs>),
    /// Answer a question from a book: retrieve passages, stream the model's answer with
    /// stable numbers, list the cited chapters and CFIs.
    Ask(Lazy<ask::AskArgs>),
    /// Inspect an EPUB: text nodes with their CFIs, chapters.
    Epub(Lazy<epub_cmd::EpubArgs>),
    /// Parse, compare and resolve EPUB CFIs.
    Cfi(Lazy<cfi_cmd::CfiArgs>),
}

/// Parses the command line; for `serve --config FILE`, again with the file's values for the
/// flags the command line and environment left unset. `Ok(None)`: `--print-config` printed.
fn parse(argv: Vec<OsString>) -> anyhow::Result<Option<Cli>> {
    if argv.get(1).is_none_or(|a| a != "serve") {
        // Only `serve` reads a file of flags: every other command line is parsed once, without
        // a copy of the command tree, building only its own subcommand's arguments (start-up,
        // `docs/benchmarks.md`).
        return Ok(Some(Cli::parse_from(argv)));
    }
    let mut cmd = Cli::command();
    // The arguments of every subcommand, for `serve_cmd`'s below (other subcommands' are
    // built only when parsed into: `Lazy`).
    cmd.build();
    let matches = cmd.clone().get_matches_from(&argv);
    let Some(("serve", serve)) = matches.subcommand() else {
        return Ok(Some(Cli::from_arg_matches(&matches)?));
    };
    let serve_cmd = cmd
        .find_subcommand("serve")
        .context("the serve subcommand")?;
    let (matches, from_file) = match serve.get_one::<PathBuf>("config") {
        Some(file) => {
            let extra = serve_config::file_args(file, serve_cmd, serve)?;
            let keys = serve_config::keys_of(&extra);
            let all: Vec<OsString> = argv.into_iter().chain(extra).collect();
            (cmd.clone().get_matches_from(all), keys)
        }
        None => (matches, Vec::new()),
    };
    if let Some(("serve", serve)) = matches.subcommand() {
        if serve.get_flag("print_config") {
            print!("{}", serve_config::print(serve_cmd, serve, &from_file));
            return Ok(None);
        }
    }
    Ok(Some(Cli::from_arg_matches(&matches)?))
}

fn main() -> ExitCode {
    let cli = match parse(std::env::args_os().collect()) {
        Ok(Some(cli)) => cli,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("citeflow: error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Render(args) => render::run(args),
        Command::Serve(args) => serve::run(*args.0),
        Command::Ingest(args) => ingest::run(args.0),
        Command::Ask(args) => ask::run(args.0),
        Command::Epub(args) => epub_cmd::run(args.0),
        Command::Cfi(args) => cfi_cmd::run(args.0),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("citeflow: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
