//! Fetches the embedding model into a directory (default `target/models`) and prints its
//! path: `cargo run -p citeflow-embed --example fetch_model -- DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("target/models"), PathBuf::from);
    match citeflow_embed::fetch_model(&dir) {
        Ok(path) => {
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
