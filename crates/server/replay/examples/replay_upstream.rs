//! A replaying OpenAI-style upstream for the Python test and the benchmark.
//!
//! `cargo run -p citeflow-replay --example replay_upstream -- DIR [PACE_MS]`
//! serves every recorded stream of DIR (named by file, e.g. `"model": "smollm2-17.sse"`) on a
//! free loopback port and prints `http://127.0.0.1:PORT/v1` on its first line. With
//! `CITEFLOW_REPLAY_STAMPS=1` every event carries its send time (for the benchmark). The agent
//! models (`agent-search`, …) answer too; `CITEFLOW_REPLAY_AGENT_PACE_MS` paces their streams.

use std::io::Write;

use citeflow_replay::{Replay, Script, Step};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "../shared/fixtures/streams".into());
    let pace_ms: u64 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let stamps = std::env::var_os("CITEFLOW_REPLAY_STAMPS").is_some();
    let replay = if stamps {
        Replay::new().with_stamps()
    } else {
        Replay::new()
    };
    let agent_pace: u64 = std::env::var("CITEFLOW_REPLAY_AGENT_PACE_MS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let replay = replay.with_agent_pace(agent_pace);
    replay.load_dir(std::path::Path::new(&dir), pace_ms)?;
    // A non-streaming answer for clients that do not stream.
    let answer = serde_json::json!({
        "id": "chatcmpl-replay", "object": "chat.completion", "created": 1_700_000_000,
        "model": "json-answer",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": "Paris is the capital [[source_7]], see also [[source_99]]."}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    });
    replay.insert(
        "json-answer",
        Script::new(vec![Step::Bytes(answer.to_string().into_bytes())]),
    );
    // A streamed chat answer for the examples of examples/ (sources source_3 and source_7).
    let demo = [
        "Paris is the capital of France [[sou",
        "rce_7]]. The Seine flows through it [[source_3]]",
        " and its museums draw millions [[source_7]].",
    ];
    replay.insert("chat-demo", Script::chat(&demo));
    // The same, 400 ms a chunk: for pages tested while the answer streams.
    replay.insert("chat-demo-slow", Script::chat(&demo).paced(400));
    let url = replay.spawn().await?;
    println!("{url}");
    std::io::stdout().flush()?;
    std::future::pending::<()>().await;
    Ok(())
}
