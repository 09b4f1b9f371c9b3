//! The local model and the citeflow proxy in front of it, both on free loopback ports: what
//! `citeflow serve` runs with no upstream, for the agent tests of scripts/test-llm.sh (the
//! official `openai` client, LangChain `create_agent`, the Chainlit example).
//!
//! ```text
//! cargo run --release -p citeflow-cli --features local-model --example agent_upstream -- \
//!     --model SmolLM2-135M-Instruct.Q4_1.gguf
//! ```
//!
//! Prints one line, `MODEL_BASE_URL PROXY_BASE_URL` (each ending in `/v1`), then serves until
//! its standard input closes. `CITEFLOW_AGENT_POLICY=off` turns the agent policy off.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use citeflow_llm::{AgentPolicy, LlamaModel, LocalServer, ModelSettings, ModelState};

#[tokio::main]
async fn main() {
    let mut model = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--model" => model = it.next().map(PathBuf::from),
            other => panic!("unknown argument {other}"),
        }
    }
    let model = model.expect("--model PATH.gguf");
    let policy = match std::env::var("CITEFLOW_AGENT_POLICY").as_deref() {
        Ok("off") => AgentPolicy::Off,
        _ => AgentPolicy::Search,
    };
    let llm = LlamaModel::load(&model, ModelSettings::default()).expect("load the model");
    let local =
        LocalServer::start_loopback(ModelState::new(Arc::new(llm), 512).with_agent_policy(policy))
            .await
            .expect("serve the model");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let proxy = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let settings = citeflow_server::ServerSettings::new(local.base_url());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        let _ = citeflow_server::launch(settings, listener, async move {
            let _ = stopped.await;
        })
        .await;
    });
    println!("{} {proxy}", local.base_url());
    std::io::stdout().flush().expect("stdout");
    tokio::task::spawn_blocking(|| {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            if line.is_err() {
                break;
            }
        }
    })
    .await
    .expect("stdin");
    let _ = stop.send(());
    let _ = served.await;
    local.shutdown().await;
}
