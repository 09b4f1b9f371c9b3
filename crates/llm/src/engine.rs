//! [`LlamaModel`]: a GGUF model run by llama.cpp in-process on a worker thread of its own
//! (feature `local-model`).

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel as Model};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;

use crate::error::{GenerateError, ModelError};
use crate::generate::{FinishReason, Generate, Job, Piece};
use crate::stats::GenerationStats;
use crate::utf8::take_utf8;

/// How the model is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSettings {
    threads: usize,
    context_tokens: u32,
    batch_tokens: u32,
    fallback_template: Option<String>,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            threads: std::thread::available_parallelism().map_or(2, usize::from),
            context_tokens: 4096,
            batch_tokens: 512,
            fallback_template: None,
        }
    }
}

impl ModelSettings {
    /// CPU threads for llama.cpp.
    ///
    /// ### Default
    /// The machine's available parallelism.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Context size in tokens (prompt plus answer).
    ///
    /// ### Default
    /// 4096.
    pub fn with_context_tokens(mut self, tokens: u32) -> Self {
        self.context_tokens = tokens.max(64);
        self
    }

    /// Prompt tokens evaluated per batch.
    ///
    /// ### Default
    /// 512.
    pub fn with_batch_tokens(mut self, tokens: u32) -> Self {
        self.batch_tokens = tokens.max(8);
        self
    }

    /// The chat template used when the GGUF file has none: a llama.cpp template name such
    /// as `"gemma"` or `"chatml"`, or a Jinja template (a base model such as Gemma 3 270M
    /// ships without one).
    ///
    /// ### Default
    /// None: a file without a template fails to load.
    pub fn with_fallback_template(mut self, template: impl Into<String>) -> Self {
        self.fallback_template = Some(template.into());
        self
    }

    /// CPU threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Context size in tokens.
    pub fn context_tokens(&self) -> u32 {
        self.context_tokens
    }
}

struct Request {
    job: Job,
    tx: mpsc::Sender<Piece>,
}

/// A GGUF model loaded by llama.cpp. Jobs run one at a time, in arrival order, on a worker
/// thread that owns the model and its context; the model's own chat template builds the
/// prompt.
#[derive(Debug)]
pub struct LlamaModel {
    id: String,
    jobs: std_mpsc::Sender<Request>,
}

impl LlamaModel {
    /// Loads `path` and starts the worker thread. The model id is the file name without
    /// `.gguf`.
    ///
    /// # Errors
    /// [`ModelError`] when the file is missing, llama.cpp cannot load it, or it has no chat
    /// template.
    pub fn load(path: &Path, settings: ModelSettings) -> Result<Self, ModelError> {
        if !path.is_file() {
            return Err(ModelError::Missing {
                path: path.to_owned(),
            });
        }
        let id = path
            .file_stem()
            .map_or_else(|| "local".to_owned(), |s| s.to_string_lossy().into_owned());
        let (jobs, rx) = std_mpsc::channel::<Request>();
        let (loaded_tx, loaded_rx) = std_mpsc::sync_channel::<Result<(), ModelError>>(1);
        let path = path.to_owned();
        std::thread::Builder::new()
            .name("citeflow-llm".to_owned())
            .spawn(move || worker(&path, &settings, &rx, &loaded_tx))
            .map_err(|e| ModelError::Load {
                path: PathBuf::new(),
                reason: format!("cannot start the model thread: {e}"),
            })?;
        loaded_rx.recv().map_err(|_| ModelError::Load {
            path: PathBuf::new(),
            reason: "the model thread stopped while loading".to_owned(),
        })??;
        Ok(LlamaModel { id, jobs })
    }
}

impl Generate for LlamaModel {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn start(&self, job: Job) -> Result<mpsc::Receiver<Piece>, GenerateError> {
        let (tx, rx) = mpsc::channel(256);
        // A refusal (bad grammar, long prompt) comes as the first piece, once the worker
        // reaches the job: nothing here blocks the caller's async runtime.
        self.jobs
            .send(Request { job, tx })
            .map_err(|_| GenerateError::Model {
                reason: "the model thread has stopped".to_owned(),
            })?;
        Ok(rx)
    }
}

fn load_error(path: &Path, e: impl std::fmt::Display) -> ModelError {
    ModelError::Load {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}

fn worker(
    path: &Path,
    settings: &ModelSettings,
    jobs: &std_mpsc::Receiver<Request>,
    loaded: &std_mpsc::SyncSender<Result<(), ModelError>>,
) {
    let setup = || -> Result<(LlamaBackend, Model), ModelError> {
        let mut backend = LlamaBackend::init().map_err(|e| load_error(path, e))?;
        backend.void_logs();
        let model = Model::load_from_file(&backend, path, &LlamaModelParams::default())
            .map_err(|e| load_error(path, e))?;
        Ok((backend, model))
    };
    let (backend, model) = match setup() {
        Ok(x) => x,
        Err(e) => {
            let _ = loaded.send(Err(e));
            return;
        }
    };
    let fallback = settings
        .fallback_template
        .as_deref()
        .and_then(|t| LlamaChatTemplate::new(t).ok());
    let template = match (model.chat_template(None), fallback) {
        (Ok(t), _) | (Err(_), Some(t)) => t,
        (Err(e), None) => {
            let _ = loaded.send(Err(ModelError::Template {
                path: path.to_owned(),
                reason: e.to_string(),
            }));
            return;
        }
    };
    let threads = i32::try_from(settings.threads).unwrap_or(2);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(settings.context_tokens))
        .with_n_batch(settings.batch_tokens)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = match model.new_context(&backend, params) {
        Ok(c) => c,
        Err(e) => {
            let _ = loaded.send(Err(load_error(path, e)));
            return;
        }
    };
    let _ = loaded.send(Ok(()));
    let engine = Engine {
        model: &model,
        template,
        batch_tokens: settings.batch_tokens as usize,
    };
    while let Ok(req) = jobs.recv() {
        engine.run(&mut ctx, req);
    }
}

struct Engine<'m> {
    model: &'m Model,
    template: LlamaChatTemplate,
    batch_tokens: usize,
}

fn model_failure(e: impl std::fmt::Display) -> GenerateError {
    GenerateError::Model {
        reason: e.to_string(),
    }
}

impl Engine<'_> {
    fn prompt(&self, job: &Job) -> Result<Vec<LlamaToken>, GenerateError> {
        let messages = job
            .messages
            .iter()
            .map(|m| LlamaChatMessage::new(m.role.clone(), m.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| GenerateError::Invalid {
                message: format!("a message holds a NUL byte: {e}"),
            })?;
        let text = self
            .model
            .apply_chat_template(&self.template, &messages, true)
            .map_err(model_failure)?;
        Ok(self.model.vocab().tokenize(text.as_bytes(), true, true))
    }

    fn sampler(&self, job: &Job) -> Result<LlamaSampler, GenerateError> {
        let s = &job.sampling;
        let mut chain = Vec::new();
        if let Some(g) = &job.grammar {
            chain.push(LlamaSampler::grammar(self.model, g, "root").map_err(|e| {
                GenerateError::Grammar {
                    reason: format!("{e:?}"),
                }
            })?);
        }
        if s.frequency_penalty != 0.0 || s.presence_penalty != 0.0 {
            chain.push(LlamaSampler::penalties(
                self.model.n_vocab(),
                64,
                1.0,
                s.frequency_penalty,
                s.presence_penalty,
            ));
        }
        if s.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::top_k(40));
            chain.push(LlamaSampler::top_p(s.top_p, 1));
            chain.push(LlamaSampler::temp(s.temperature));
            chain.push(LlamaSampler::dist(s.seed.unwrap_or_else(random_seed)));
        }
        Ok(LlamaSampler::chain_simple(chain))
    }

    fn run(&self, ctx: &mut LlamaContext<'_>, req: Request) {
        let Request { job, tx } = req;
        if tx.is_closed() {
            return;
        }
        let prepared = self.prompt(&job).and_then(|tokens| {
            let context_tokens = ctx.n_ctx() as usize;
            if tokens.is_empty() || tokens.len() + 1 >= context_tokens {
                return Err(GenerateError::ContextLength {
                    prompt_tokens: tokens.len(),
                    max_tokens: job.sampling.max_tokens,
                    context_tokens,
                });
            }
            Ok((tokens, self.sampler(&job)?))
        });
        let (tokens, mut sampler) = match prepared {
            Ok(x) => x,
            Err(e) => {
                let _ = tx.blocking_send(Piece::Failed(e));
                return;
            }
        };
        match self.generate(ctx, &job, &tokens, &mut sampler, &tx) {
            Ok(Some(done)) => {
                let _ = tx.blocking_send(done);
            }
            Ok(None) => {}
            Err(e) => {
                let _ = tx.blocking_send(Piece::Failed(e));
            }
        }
    }

    /// Runs one job; `None` when the receiver went away.
    fn generate(
        &self,
        ctx: &mut LlamaContext<'_>,
        job: &Job,
        tokens: &[LlamaToken],
        sampler: &mut LlamaSampler,
        tx: &mpsc::Sender<Piece>,
    ) -> Result<Option<Piece>, GenerateError> {
        ctx.clear_kv_cache();
        let prompt_started = Instant::now();
        let mut batch = LlamaBatch::new(self.batch_tokens.max(1), 1);
        let last = tokens.len() - 1;
        for (start, part) in tokens.chunks(self.batch_tokens).enumerate() {
            batch.clear();
            for (j, t) in part.iter().enumerate() {
                let pos = start * self.batch_tokens + j;
                batch
                    .add(*t, pos as i32, &[0], pos == last)
                    .map_err(model_failure)?;
            }
            ctx.decode(&mut batch).map_err(model_failure)?;
        }
        let prompt_ms = ms(prompt_started);
        let room = ctx.n_ctx() as usize - tokens.len();
        let max_tokens = job.sampling.max_tokens.min(room);
        let vocab = self.model.vocab();
        let mut pending: Vec<u8> = Vec::new();
        let mut pos = tokens.len();
        let mut generated = 0usize;
        let mut first_token: Option<Instant> = None;
        let mut ttft_ms = 0.0;
        let mut finish = FinishReason::Length;
        let mut piece = Vec::new();
        while generated < max_tokens {
            let token = sampler.sample(ctx, batch.n_tokens() - 1);
            if first_token.is_none() {
                first_token = Some(Instant::now());
                ttft_ms = ms(job.received);
            }
            if vocab.is_eog(token) {
                finish = FinishReason::Stop;
                break;
            }
            generated += 1;
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            pending.extend_from_slice(&piece);
            let text = take_utf8(&mut pending);
            if !text.is_empty() && tx.blocking_send(Piece::Text(text)).is_err() {
                return Ok(None);
            }
            if generated == max_tokens {
                break;
            }
            batch.clear();
            batch
                .add(token, pos as i32, &[0], true)
                .map_err(model_failure)?;
            pos += 1;
            ctx.decode(&mut batch).map_err(model_failure)?;
        }
        if !pending.is_empty() {
            let rest = String::from_utf8_lossy(&pending).into_owned();
            if tx.blocking_send(Piece::Text(rest)).is_err() {
                return Ok(None);
            }
        }
        let generation_ms = first_token.map_or(0.0, ms);
        Ok(Some(Piece::Done {
            finish,
            stats: GenerationStats {
                prompt_tokens: tokens.len() as u64,
                completion_tokens: generated as u64,
                ttft_ms,
                prompt_ms,
                generation_ms,
            },
        }))
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

fn random_seed() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    t.subsec_nanos() ^ (t.as_secs() as u32)
}
