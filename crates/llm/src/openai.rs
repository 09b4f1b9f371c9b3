//! The OpenAI chat-completions wire format: parsing a request into a [`Job`], shaping chunks
//! and whole answers.

use std::time::Instant;

use serde_json::{json, Value};

use crate::error::GenerateError;
use crate::generate::{ChatMessage, FinishReason, Job, Sampling};
use crate::stats::GenerationStats;

/// A parsed `POST /v1/chat/completions` body.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The job for the model.
    pub job: Job,
    /// Whether to answer with SSE.
    pub stream: bool,
}

fn invalid(message: impl Into<String>) -> GenerateError {
    GenerateError::Invalid {
        message: message.into(),
    }
}

fn content_text(v: &Value) -> Result<String, GenerateError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        // Content parts: keep the text parts.
        Value::Array(parts) => Ok(parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("")),
        _ => Err(invalid(
            "messages[].content must be a string or an array of parts",
        )),
    }
}

fn number(body: &Value, key: &str) -> Result<Option<f64>, GenerateError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| invalid(format!("{key} must be a number, not {v}"))),
    }
}

impl ChatRequest {
    /// Parses a request body. Honoured: `messages`, `stream`, `temperature`, `top_p`, `seed`,
    /// `max_tokens` (or `max_completion_tokens`), `frequency_penalty`, `presence_penalty`,
    /// and llama.cpp's `grammar` (GBNF). Other fields (`model`, `stream_options`, `user`, …)
    /// are accepted and ignored; usage is always reported.
    ///
    /// # Errors
    /// [`GenerateError::Invalid`] naming the bad field.
    pub fn parse(body: &Value, default_max_tokens: usize) -> Result<Self, GenerateError> {
        let Some(messages) = body.get("messages").and_then(Value::as_array) else {
            return Err(invalid("messages must be an array"));
        };
        if messages.is_empty() {
            return Err(invalid("messages must not be empty"));
        }
        let messages = messages
            .iter()
            .map(|m| {
                let role = m
                    .get("role")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("messages[].role must be a string"))?;
                let role = if role == "developer" { "system" } else { role };
                Ok(ChatMessage::new(
                    role,
                    content_text(m.get("content").unwrap_or(&Value::Null))?,
                ))
            })
            .collect::<Result<Vec<_>, GenerateError>>()?;
        let mut sampling = Sampling {
            max_tokens: default_max_tokens,
            ..Sampling::default()
        };
        if let Some(t) = number(body, "temperature")? {
            if !(0.0..=2.0).contains(&t) {
                return Err(invalid(format!("temperature {t} is not between 0 and 2")));
            }
            sampling.temperature = t as f32;
        }
        if let Some(p) = number(body, "top_p")? {
            if !(0.0..=1.0).contains(&p) || p == 0.0 {
                return Err(invalid(format!("top_p {p} is not in (0, 1]")));
            }
            sampling.top_p = p as f32;
        }
        if let Some(s) = number(body, "seed")? {
            sampling.seed = Some((s as i64 & 0xffff_ffff) as u32);
        }
        for key in ["max_completion_tokens", "max_tokens"] {
            if let Some(n) = number(body, key)? {
                if n < 1.0 || n.fract() != 0.0 {
                    return Err(invalid(format!("{key} {n} is not a positive integer")));
                }
                sampling.max_tokens = n as usize;
                break;
            }
        }
        if let Some(f) = number(body, "frequency_penalty")? {
            sampling.frequency_penalty = f as f32;
        }
        if let Some(f) = number(body, "presence_penalty")? {
            sampling.presence_penalty = f as f32;
        }
        let grammar = match body.get("grammar") {
            None | Some(Value::Null) => None,
            Some(Value::String(g)) if g.trim().is_empty() => None,
            Some(Value::String(g)) => Some(g.clone()),
            Some(_) => return Err(invalid("grammar must be a GBNF string")),
        };
        let stream = match body.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => return Err(invalid(format!("stream must be a boolean, not {v}"))),
        };
        Ok(ChatRequest {
            job: Job {
                messages,
                sampling,
                grammar,
                received: Instant::now(),
            },
            stream,
        })
    }
}

/// The fields every chunk of one answer shares.
#[derive(Debug, Clone)]
pub struct ChunkMeta {
    /// `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model id.
    pub model: String,
}

impl ChunkMeta {
    fn chunk(&self, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        })
    }

    /// The first chunk: the assistant role, no text.
    pub fn role_chunk(&self) -> Value {
        self.chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]))
    }

    /// A chunk of text.
    pub fn text_chunk(&self, text: &str) -> Value {
        self.chunk(json!([{"index": 0, "delta": {"content": text}, "finish_reason": null}]))
    }

    /// The last chunk: finish reason, `usage` and `timings`.
    pub fn finish_chunk(&self, finish: FinishReason, stats: &GenerationStats) -> Value {
        let mut c =
            self.chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish.as_str()}]));
        c["usage"] = stats.usage_json();
        c["timings"] = stats.timings_json();
        c
    }

    /// A whole (non-streamed) answer.
    pub fn completion(&self, text: &str, finish: FinishReason, stats: &GenerationStats) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish.as_str(),
            }],
            "usage": stats.usage_json(),
            "timings": stats.timings_json(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_fields_become_sampling() {
        let body = json!({
            "model": "x",
            "messages": [{"role": "developer", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "temperature": 0, "seed": 7, "max_tokens": 48, "stream": true, "grammar": "root ::= \"a\""
        });
        let r = ChatRequest::parse(&body, 512).unwrap();
        assert!(r.stream);
        assert_eq!(r.job.messages[0], ChatMessage::new("system", "s"));
        assert_eq!(r.job.messages[1], ChatMessage::new("user", "hi"));
        assert_eq!(r.job.sampling.temperature, 0.0);
        assert_eq!(r.job.sampling.seed, Some(7));
        assert_eq!(r.job.sampling.max_tokens, 48);
        assert_eq!(r.job.grammar.as_deref(), Some("root ::= \"a\""));
    }

    #[test]
    fn bad_fields_are_named() {
        for (body, needle) in [
            (json!({}), "messages"),
            (json!({"messages": []}), "empty"),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}),
                "temperature",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}),
                "max_tokens",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}),
                "stream",
            ),
        ] {
            let e = ChatRequest::parse(&body, 512).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
            assert_eq!(e.code(), "invalid_request");
        }
    }
}
