//! A replaying OpenAI-style upstream for the Python test and the benchmark.
//!
//! `cargo run -p citeflow-server --features _replay --example replay_upstream -- DIR [PACE_MS]`
//! serves every recorded stream of DIR (named by file, e.g. `"model": "smollm2-17.sse"`) on a
//! free loopback port and prints `http://127.0.0.1:PORT/v1` on its first line.

use std::io::Write;

use citeflow_server::replay::Replay;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "../shared/fixtures/streams".into());
    let pace_ms: u64 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let replay = Replay::new();
    replay.load_dir(std::path::Path::new(&dir), pace_ms)?;
    let url = replay.spawn().await?;
    println!("{url}");
    std::io::stdout().flush()?;
    std::future::pending::<()>().await;
    Ok(())
}
