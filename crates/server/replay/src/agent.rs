//! The scripted agent model: an OpenAI chat model that makes two search tool calls, then
//! answers citing the `[[id]]` markers it was shown in the tool results.
//!
//! Model `agent-search` (English) or `agent-search-ja` (Japanese), on `/v1/chat/completions`,
//! streamed (`"stream": true`) or not. It reads the request it receives:
//! - no message with role `tool` → one call to the first tool of `tools`, arguments
//!   `{"query": "Seine river Paris"}` (`セーヌ川 パリ`);
//! - one → a second call, `{"query": "Paris museums"}` (`パリ 美術館`);
//! - two or more, or a request without `tools` → the answer: for each tool message in order, the
//!   first two distinct `[[id]]` markers of its content are cited (a document in both rounds is
//!   cited again), streamed in small deltas that cut every marker, ending with `stop`.
//!
//! The variants `agent-search-turns` and `agent-search-turns-ja` act per user turn: they count
//! (and cite) only the tool messages after the last `user` message, and from the second user
//! message on they search `Eiffel Tower` then `Paris bridges` (`エッフェル塔`, `パリ 橋`), so
//! that a conversation's second answer brings new sources (for tests of numbering that
//! continues across turns).

use serde_json::{json, Value};

use crate::{Script, Step};

/// The model names this module answers.
pub const AGENT_MODELS: [&str; 4] = [
    "agent-search",
    "agent-search-ja",
    "agent-search-turns",
    "agent-search-turns-ja",
];

/// What the agent model sends back for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentReply {
    /// A non-streamed `chat.completion` body.
    Json(Value),
    /// A streamed answer (SSE chunks ending in `[DONE]`).
    Stream(Script),
}

/// Bytes per content delta of the streamed answer: shorter than any marker, so each is cut.
pub(crate) const DELTA_CHARS: usize = 7;

/// The agent model's reply to a request body, or `None` when `model` is not one of
/// [`AGENT_MODELS`].
pub fn agent_reply(req: &Value) -> Option<AgentReply> {
    let model = req.get("model").and_then(Value::as_str)?;
    if !AGENT_MODELS.contains(&model) {
        return None;
    }
    let ja = model.ends_with("-ja");
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let messages: &[Value] = req
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let turns = model.starts_with("agent-search-turns");
    let is_user = |m: &Value| m.get("role").and_then(Value::as_str) == Some("user");
    let user_turns = messages.iter().filter(|m| is_user(m)).count();
    let turn: &[Value] = if turns {
        let start = messages.iter().rposition(is_user).map_or(0, |i| i + 1);
        &messages[start..]
    } else {
        messages
    };
    let later = turns && user_turns >= 2;
    let tool_texts: Vec<String> = turn
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| content_text(m.get("content")))
        .collect();
    let tool_name = req
        .pointer("/tools/0/function/name")
        .and_then(Value::as_str);
    let queries = match (ja, later) {
        (false, false) => ["Seine river Paris", "Paris museums"],
        (true, false) => ["セーヌ川 パリ", "パリ 美術館"],
        (false, true) => ["Eiffel Tower", "Paris bridges"],
        (true, true) => ["エッフェル塔", "パリ 橋"],
    };
    let call = match (tool_name, tool_texts.len()) {
        (Some(name), 0) => Some((name, queries[0], 1)),
        (Some(name), 1) => Some((name, queries[1], 2)),
        _ => None,
    };
    Some(match call {
        Some((name, query, n)) => tool_call(name, query, n, stream),
        None => answer(&answer_text(&tool_texts, ja), stream),
    })
}

/// A message's `content` as text: a string, or the `text` of its content parts.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The ids of the `[[id]]` markers in `text`, in order (an id is non-empty, without
/// whitespace or brackets).
pub fn marker_ids(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("[[") {
        let after = &rest[start + 2..];
        match after.find("]]") {
            Some(end) => {
                let id = &after[..end];
                if !id.is_empty()
                    && !id
                        .chars()
                        .any(|c| c.is_whitespace() || c == '[' || c == ']')
                {
                    out.push(id.to_owned());
                    rest = &after[end + 2..];
                } else {
                    rest = &rest[start + 1..];
                }
            }
            None => break,
        }
    }
    out
}

/// The answer: one sentence per tool message citing its first two distinct markers.
pub fn answer_text(tool_texts: &[String], ja: bool) -> String {
    let mut sentences = Vec::new();
    for (round, text) in tool_texts.iter().enumerate() {
        let mut ids: Vec<String> = Vec::new();
        for id in marker_ids(text) {
            if !ids.contains(&id) {
                ids.push(id);
            }
            if ids.len() == 2 {
                break;
            }
        }
        let cite = |i: usize| ids.get(i).map(|id| format!("[[{id}]]")).unwrap_or_default();
        let (a, b) = (cite(0), cite(1));
        if a.is_empty() {
            continue;
        }
        sentences.push(match (ja, round) {
            (false, 0) => format!(
                "The Seine flows through the heart of Paris {a}, and its banks are lined with landmarks {b}."
            ),
            (false, 1) => format!(
                "The city's museums hold vast collections {a}, and they draw visitors from everywhere {b}."
            ),
            (false, _) => format!("Further results agree {a} {b}."),
            (true, 0) => format!("セーヌ川はパリの中心を流れています{a}。岸辺には名所が並びます{b}。"),
            (true, 1) => format!("パリの美術館は膨大な収蔵品を持ちます{a}。世界中から人が訪れます{b}。"),
            (true, _) => format!("ほかの結果も同じです{a}{b}。"),
        });
    }
    if sentences.is_empty() {
        return if ja {
            "引用できる資料は見つかりませんでした。".to_owned()
        } else {
            "I found no sources to cite.".to_owned()
        };
    }
    sentences.join(if ja { "" } else { " " })
}

fn chunk(delta: Value, finish: Value) -> Step {
    let v = json!({
        "id": "chatcmpl-agent", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "agent-search", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    Step::Bytes(format!("data: {v}\n\n").into_bytes())
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-agent", "object": "chat.completion", "created": 1_700_000_000,
        "model": "agent-search",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
}

fn tool_call(name: &str, query: &str, n: usize, stream: bool) -> AgentReply {
    tool_call_named(name, query, &format!("call_agent_{n}"), stream)
}

/// A call to the tool `name` with `{"query": query}`, id `id`.
pub(crate) fn tool_call_named(name: &str, query: &str, id: &str, stream: bool) -> AgentReply {
    let args = json!({ "query": query }).to_string();
    if !stream {
        return AgentReply::Json(completion(
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": id, "type": "function", "function": {"name": name, "arguments": args}
            }]}),
            "tool_calls",
        ));
    }
    let mut steps = vec![chunk(
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}
        }]}),
        Value::Null,
    )];
    for piece in pieces(&args) {
        steps.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            Value::Null,
        ));
    }
    steps.push(chunk(json!({}), json!("tool_calls")));
    steps.push(Step::Bytes(b"data: [DONE]\n\n".to_vec()));
    AgentReply::Stream(Script::new(steps))
}

pub(crate) fn answer(text: &str, stream: bool) -> AgentReply {
    if !stream {
        return AgentReply::Json(completion(
            json!({"role": "assistant", "content": text}),
            "stop",
        ));
    }
    let mut steps = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(text) {
        steps.push(chunk(json!({ "content": piece }), Value::Null));
    }
    steps.push(chunk(json!({}), json!("stop")));
    steps.push(Step::Bytes(b"data: [DONE]\n\n".to_vec()));
    AgentReply::Stream(Script::new(steps))
}

/// `text` in pieces of [`DELTA_CHARS`] characters.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(DELTA_CHARS)
        .map(|c| c.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(model: &str, tool_contents: &[&str], stream: bool) -> Value {
        let mut messages = vec![json!({"role": "user", "content": "Tell me about Paris"})];
        for (i, c) in tool_contents.iter().enumerate() {
            messages.push(
                json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_agent_{}", i + 1), "type": "function",
                "function": {"name": "search_books", "arguments": "{}"}}]}),
            );
            messages.push(json!({"role": "tool", "tool_call_id": format!("call_agent_{}", i + 1), "content": c}));
        }
        json!({"model": model, "stream": stream, "messages": messages, "tools": [
            {"type": "function", "function": {"name": "search_books", "parameters": {}}},
            {"type": "function", "function": {"name": "search_web", "parameters": {}}}
        ]})
    }

    fn json_reply(req: &Value) -> Value {
        match agent_reply(req) {
            Some(AgentReply::Json(v)) => v,
            other => panic!("expected a JSON reply, got {other:?}"),
        }
    }

    #[test]
    fn agent_calls_the_first_tool_twice_then_cites_the_markers_it_was_shown() {
        let first = json_reply(&request("agent-search", &[], false));
        let call = &first["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "search_books");
        assert_eq!(call["arguments"], r#"{"query":"Seine river Paris"}"#);
        let second = json_reply(&request("agent-search", &["[[a]] x"], false));
        assert_eq!(
            second["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            r#"{"query":"Paris museums"}"#
        );
        let done = json_reply(&request(
            "agent-search",
            &["[[a]] one [[a]] again [[b]] [[c]]", "[[c]] [[d]]"],
            false,
        ));
        assert_eq!(done["choices"][0]["finish_reason"], "stop");
        let text = done["choices"][0]["message"]["content"].as_str().unwrap();
        assert_eq!(marker_ids(text), ["a", "b", "c", "d"]);
    }

    #[test]
    fn agent_streams_its_answer_with_every_marker_cut_between_deltas() {
        let req = request(
            "agent-search-ja",
            &["[[doc_1]] [[doc_2]]", "[[doc_2]] [[doc_3]]"],
            true,
        );
        let Some(AgentReply::Stream(script)) = agent_reply(&req) else {
            panic!("expected a stream");
        };
        let text = script.text();
        assert!(text.starts_with("セーヌ川"), "{text}");
        assert_eq!(marker_ids(&text), ["doc_1", "doc_2", "doc_2", "doc_3"]);
        let deltas = script.steps.len() - 3;
        assert!(deltas > 8, "{deltas} deltas");
        assert!(!pieces(&text).iter().any(|p| p.contains("[[doc_1]]")));
        // Streamed tool calls carry the tool name, then the arguments in pieces.
        let Some(AgentReply::Stream(call)) = agent_reply(&request("agent-search-ja", &[], true))
        else {
            panic!("expected a stream");
        };
        let body: String = call
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect();
        assert!(body.contains(r#""name":"search_books""#), "{body}");
        assert!(body.contains(r#""finish_reason":"tool_calls""#), "{body}");
    }

    #[test]
    fn agent_without_tools_answers_at_once_and_other_models_are_not_its() {
        let mut req = request("agent-search", &[], false);
        req.as_object_mut().unwrap().remove("tools");
        let v = json_reply(&req);
        assert_eq!(
            v["choices"][0]["message"]["content"],
            "I found no sources to cite."
        );
        assert_eq!(agent_reply(&json!({"model": "chat-demo"})), None);
    }

    #[test]
    fn agent_turns_variant_searches_anew_in_the_second_user_turn() {
        let mut req = request("agent-search-turns", &["[[a]] [[b]]", "[[c]]"], false);
        let done = json_reply(&req);
        let text = done["choices"][0]["message"]["content"].as_str().unwrap();
        assert_eq!(marker_ids(text), ["a", "b", "c"]);
        let messages = req["messages"].as_array_mut().unwrap();
        messages.push(json!({"role": "assistant", "content": text}));
        messages.push(json!({"role": "user", "content": "And more?"}));
        let next = json_reply(&req);
        assert_eq!(
            next["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            r#"{"query":"Eiffel Tower"}"#
        );
        // The plain model counts every tool message of the conversation: it answers at once.
        req["model"] = json!("agent-search");
        let plain = json_reply(&req);
        assert_eq!(plain["choices"][0]["finish_reason"], "stop");
    }
}
