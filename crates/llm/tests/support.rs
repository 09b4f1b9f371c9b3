//! A scripted [`Generate`] and SSE helpers.

use std::sync::{Arc, Mutex};

use citeflow_llm::{
    FinishReason, Generate, GenerateError, GenerationStats, Job, LocalServer, ModelState, Piece,
};
pub(crate) use citeflow_replay::{payloads, read_sse, text_of};
use tokio::sync::mpsc;

/// Answers every job with the same pieces; remembers the jobs.
pub(crate) struct Scripted {
    pub(crate) pieces: Vec<&'static str>,
    pub(crate) jobs: Mutex<Vec<Job>>,
}

impl Scripted {
    pub(crate) fn new(pieces: Vec<&'static str>) -> Arc<Self> {
        Arc::new(Scripted {
            pieces,
            jobs: Mutex::new(Vec::new()),
        })
    }
}

impl Generate for Scripted {
    fn model_id(&self) -> &str {
        "scripted"
    }

    fn start(&self, job: Job) -> Result<mpsc::Receiver<Piece>, GenerateError> {
        if job.grammar.as_deref() == Some("bad") {
            return Err(GenerateError::Grammar {
                reason: "bad".into(),
            });
        }
        let max = job.sampling.max_tokens;
        self.jobs.lock().unwrap().push(job);
        let (tx, rx) = mpsc::channel(4);
        let pieces: Vec<String> = self
            .pieces
            .iter()
            .take(max)
            .map(|s| s.to_string())
            .collect();
        let finish = if pieces.len() < self.pieces.len() {
            FinishReason::Length
        } else {
            FinishReason::Stop
        };
        tokio::spawn(async move {
            let n = pieces.len() as u64;
            for p in pieces {
                if tx.send(Piece::Text(p)).await.is_err() {
                    return;
                }
            }
            let stats = GenerationStats {
                prompt_tokens: 10,
                completion_tokens: n,
                ttft_ms: 5.0,
                prompt_ms: 4.0,
                generation_ms: 10.0,
            };
            let _ = tx.send(Piece::Done { finish, stats }).await;
        });
        Ok(rx)
    }
}

pub(crate) async fn serve(generator: Arc<dyn Generate>) -> LocalServer {
    LocalServer::start_loopback(ModelState::new(generator, 64))
        .await
        .expect("loopback")
}
