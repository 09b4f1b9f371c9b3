//! The `citeflow` command.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ask;
mod book;
mod broken_pipe;
mod cfi_cmd;
mod data_dir;
mod epub_cmd;
mod ingest;
mod local_model;
mod progress;
mod render;
mod serve;

use broken_pipe::is_broken_pipe;

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
    Serve(Box<serve::ServeArgs>),
    /// Cut EPUB books into passages (JSON lines that are also citeflow sources), optionally
    /// into a local full-text index.
    Ingest(ingest::IngestArgs),
    /// Answer a question from a book: retrieve passages, stream the model's answer with
    /// stable numbers, list the cited chapters and CFIs.
    Ask(ask::AskArgs),
    /// Inspect an EPUB: text nodes with their CFIs, chapters.
    Epub(epub_cmd::EpubArgs),
    /// Parse, compare and resolve EPUB CFIs.
    Cfi(cfi_cmd::CfiArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Render(args) => render::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Ingest(args) => ingest::run(args),
        Command::Ask(args) => ask::run(args),
        Command::Epub(args) => epub_cmd::run(args),
        Command::Cfi(args) => cfi_cmd::run(args),
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
