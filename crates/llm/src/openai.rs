//! The OpenAI chat-completions wire format: parsing a request into a [`Job`], shaping chunks
//! and whole answers.

use std::time::Instant;

use serde_json::{json, Value};

use crate::error::GenerateError;
use crate::generate::{ChatMessage, FinishReason, Job, Sampling};
use crate::policy::{plan, AgentPolicy, Said, Turn, POLICY_MAX_QUERY_CHARS};
use crate::stats::GenerationStats;
use crate::tools::{call_text, Tools};

/// A parsed `POST /v1/chat/completions` body.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The job for the model.
    pub job: Job,
    /// Whether to answer with SSE.
    pub stream: bool,
    /// Whether the answer may be tool calls (the request has `tools` and the turn allows a
    /// call): the model's text is then read as calls or prose.
    pub tool_calls: bool,
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

/// One request message as the policy sees it: tool calls written as the model writes them.
fn said(i: usize, m: &Value) -> Result<Said, GenerateError> {
    let role = m
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("messages[{i}].role must be a string")))?;
    let role = if role == "developer" { "system" } else { role };
    let mut text = content_text(m.get("content").unwrap_or(&Value::Null))?;
    if let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) {
        let calls = calls
            .as_array()
            .ok_or_else(|| invalid(format!("messages[{i}].tool_calls must be an array")))?;
        for (j, c) in calls.iter().enumerate() {
            let name = c.pointer("/function/name").and_then(Value::as_str);
            let args = c.pointer("/function/arguments").and_then(Value::as_str);
            let (Some(name), Some(args)) = (name, args) else {
                return Err(invalid(format!(
                    "messages[{i}].tool_calls[{j}] needs function.name and function.arguments (a string)"
                )));
            };
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&call_text(name, args.trim()));
        }
    }
    Ok(Said {
        role: role.to_owned(),
        text,
    })
}

/// A message for the chat template: a tool result becomes a user message inside
/// `<tool_response>`.
fn rendered(m: &Said) -> ChatMessage {
    if m.role == "tool" {
        ChatMessage::new(
            "user",
            format!("<tool_response>\n{}\n</tool_response>", m.text),
        )
    } else {
        ChatMessage::new(m.role.clone(), m.text.clone())
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
        Self::parse_with(body, default_max_tokens, AgentPolicy::default())
    }

    /// As [`ChatRequest::parse`], with `tools`, `tool_choice` and `parallel_tool_calls`
    /// shaped by `policy` ([`AgentPolicy`]). An assistant message's `tool_calls` and a
    /// `tool` message are shown to the model in the form it writes calls in (a tool result
    /// as a user message inside `<tool_response>`).
    ///
    /// # Errors
    /// [`GenerateError::Invalid`] naming the bad field; [`GenerateError::Schema`] naming a
    /// tool schema's unsupported keyword and its path.
    pub fn parse_with(
        body: &Value,
        default_max_tokens: usize,
        policy: AgentPolicy,
    ) -> Result<Self, GenerateError> {
        let Some(messages) = body.get("messages").and_then(Value::as_array) else {
            return Err(invalid("messages must be an array"));
        };
        if messages.is_empty() {
            return Err(invalid("messages must not be empty"));
        }
        let said = messages
            .iter()
            .enumerate()
            .map(|(i, m)| said(i, m))
            .collect::<Result<Vec<_>, GenerateError>>()?;
        let tools = Tools::parse(body)?;
        let request_grammar = match body.get("grammar") {
            None | Some(Value::Null) => None,
            Some(Value::String(g)) if g.trim().is_empty() => None,
            Some(Value::String(g)) => Some(g.clone()),
            Some(_) => return Err(invalid("grammar must be a GBNF string")),
        };
        let mut messages: Vec<ChatMessage> = said.iter().map(rendered).collect();
        let mut grammar = request_grammar.clone();
        let mut tool_calls = false;
        if let Some(tools) = &tools {
            match plan(tools, &said, policy) {
                Turn::Calls {
                    calls,
                    sequence,
                    answer,
                    capped,
                } => {
                    if request_grammar.is_some() {
                        return Err(invalid(
                            "grammar cannot be combined with tools unless tool_choice is none",
                        ));
                    }
                    let cap = capped.then_some(POLICY_MAX_QUERY_CHARS);
                    grammar = Some(tools.grammar(&calls, sequence, answer, cap));
                    tool_calls = true;
                    match messages.first_mut().filter(|m| m.role == "system") {
                        Some(m) => {
                            m.content.push_str("\n\n");
                            m.content.push_str(&tools.prompt());
                        }
                        None => messages.insert(0, ChatMessage::new("system", tools.prompt())),
                    }
                }
                Turn::Answer {
                    messages: asked,
                    grammar: cite,
                } => {
                    if let Some(asked) = asked {
                        messages = asked;
                    }
                    if cite.is_some() {
                        grammar = cite;
                    }
                }
            }
        }
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
            tool_calls,
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

    /// The id of this answer's tool call `index`.
    pub fn call_id(&self, index: usize) -> String {
        let base = self.id.strip_prefix("chatcmpl-").unwrap_or(&self.id);
        format!("call_{base}_{index}")
    }

    /// The chunk that opens tool call `index`: its id, type and name, empty arguments.
    pub fn call_start_chunk(&self, index: usize, name: &str) -> Value {
        let call = json!({"index": index, "id": self.call_id(index), "type": "function",
            "function": {"name": name, "arguments": ""}});
        self.chunk(json!([{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]))
    }

    /// A chunk with more of tool call `index`'s arguments.
    pub fn call_arguments_chunk(&self, index: usize, fragment: &str) -> Value {
        let call = json!({"index": index, "function": {"arguments": fragment}});
        self.chunk(json!([{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]))
    }

    /// A whole (non-streamed) answer that is tool calls: (name, arguments) each.
    pub fn completion_calls(
        &self,
        calls: &[(String, String)],
        finish: FinishReason,
        stats: &GenerationStats,
    ) -> Value {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": self.call_id(i), "type": "function",
                    "function": {"name": name, "arguments": args}})
            })
            .collect();
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": calls},
                "finish_reason": finish.as_str(),
            }],
            "usage": stats.usage_json(),
            "timings": stats.timings_json(),
        })
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
