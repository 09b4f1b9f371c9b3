//! The scripted agent models (`agent-search`, …, see [`crate::agent`]) on the OpenAI Responses
//! API (`POST /v1/responses`), as the OpenAI Agents SDK calls them.
//!
//! The request's `input` items are read as the chat model reads its messages (a `user`
//! message, a `function_call_output` as a tool message, the first `function` tool of `tools`),
//! so the same turns are played: two `function_call`s, then the answer citing the `[[id]]`
//! markers of the outputs. Streamed (`"stream": true`: `response.created`, the output item's
//! events, `response.output_text.delta` in pieces that cut every marker, `response.completed`)
//! or not (one `response` object).
//!
//! With a hosted web search tool in `tools` (`{"type": "web_search"}`, or
//! `web_search_preview`), the answer ends with [`WEB_SENTENCE`] carrying two `url_citation`
//! annotations over it (streamed as `response.output_text.annotation.added` after the text):
//! [`WEB_URLS`], the first the url of a page the `search` tool of the tests returns, the second
//! a page no tool returned.

use serde_json::{json, Value};

use crate::agent::{agent_reply, AgentReply, DELTA_CHARS};
use crate::{Script, Step};

/// The sentence the answer ends with when the request offers a hosted web search.
pub const WEB_SENTENCE: &str = "The Seine is 777 kilometres long.";

/// The urls the [`WEB_SENTENCE`] cites (`url_citation` annotations, in this order).
pub const WEB_URLS: [&str; 2] = [
    "https://example.org/seine",
    "https://en.wikipedia.org/wiki/Seine",
];

/// The Responses reply of the agent models to a `/v1/responses` request, or `None` when its
/// `model` is not one of [`crate::AGENT_MODELS`].
pub fn responses_agent_reply(req: &Value) -> Option<AgentReply> {
    let chat = chat_request(req);
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let AgentReply::Json(completion) = agent_reply(&chat)? else {
        return None;
    };
    let model = req.get("model").and_then(Value::as_str).unwrap_or_default();
    let message = &completion["choices"][0]["message"];
    let item = match message.pointer("/tool_calls/0") {
        Some(call) => json!({
            "type": "function_call", "id": format!("fc_{}", call["id"].as_str().unwrap_or("1")),
            "call_id": call["id"], "name": call["function"]["name"],
            "arguments": call["function"]["arguments"], "status": "completed"
        }),
        None => {
            let mut text = message["content"].as_str().unwrap_or_default().to_owned();
            let mut annotations = Vec::new();
            if offers_web_search(req) {
                text.push(' ');
                let start = text.chars().count();
                text.push_str(WEB_SENTENCE);
                let end = text.chars().count();
                annotations = WEB_URLS
                    .iter()
                    .map(|url| {
                        json!({"type": "url_citation", "url": url, "title": "Seine",
                        "start_index": start, "end_index": end})
                    })
                    .collect();
            }
            json!({
                "type": "message", "id": "msg_agent", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": annotations}]
            })
        }
    };
    Some(if stream {
        AgentReply::Stream(stream_script(model, &item))
    } else {
        AgentReply::Json(response(model, "completed", vec![item]))
    })
}

/// Whether `tools` holds a hosted web search tool.
fn offers_web_search(req: &Value) -> bool {
    req.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|ts| {
            ts.iter().any(|t| {
                t.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.starts_with("web_search"))
            })
        })
}

/// The Responses request as the chat request the agent model reads.
fn chat_request(req: &Value) -> Value {
    let mut messages = Vec::new();
    match req.get("input") {
        Some(Value::String(s)) => messages.push(json!({"role": "user", "content": s})),
        Some(Value::Array(items)) => {
            for item in items {
                let kind = item.get("type").and_then(Value::as_str);
                let role = item.get("role").and_then(Value::as_str);
                match (kind, role) {
                    (Some("function_call_output"), _) => messages.push(json!({
                        "role": "tool", "tool_call_id": item.get("call_id"),
                        "content": output_text(item.get("output"))
                    })),
                    (Some("function_call"), _) => messages.push(json!({
                        "role": "assistant", "content": null, "tool_calls": [{
                            "id": item.get("call_id"), "type": "function",
                            "function": {"name": item.get("name"), "arguments": item.get("arguments")}
                        }]
                    })),
                    (_, Some(role)) => {
                        messages.push(json!({"role": role, "content": item.get("content")}));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    let tools: Vec<Value> = req
        .get("tools")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
                .map(|t| json!({"type": "function", "function": {"name": t.get("name")}}))
                .collect()
        })
        .unwrap_or_default();
    let mut chat = json!({"model": req.get("model"), "messages": messages, "stream": false});
    if !tools.is_empty() {
        chat["tools"] = Value::Array(tools);
    }
    chat
}

/// A `function_call_output`'s `output`: a string, or the text of its content parts.
fn output_text(output: Option<&Value>) -> Value {
    match output {
        Some(Value::Array(parts)) => Value::String(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Some(v) => v.clone(),
        None => Value::String(String::new()),
    }
}

fn response(model: &str, status: &str, output: Vec<Value>) -> Value {
    json!({
        "id": "resp_agent", "object": "response", "created_at": 1_700_000_000, "status": status,
        "model": model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto",
        "tools": [], "error": null, "incomplete_details": null, "instructions": null,
        "metadata": {}, "temperature": 1.0, "top_p": 1.0,
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}
    })
}

fn stream_script(model: &str, item: &Value) -> Script {
    let mut seq = 0u64;
    let mut steps = Vec::new();
    let mut event = |kind: &str, mut body: Value| {
        body["type"] = json!(kind);
        body["sequence_number"] = json!(seq);
        seq += 1;
        steps.push(Step::Bytes(
            format!("event: {kind}\ndata: {body}\n\n").into_bytes(),
        ));
    };
    event(
        "response.created",
        json!({"response": response(model, "in_progress", vec![])}),
    );
    let id = item["id"].clone();
    if item["type"] == "function_call" {
        let mut open = item.clone();
        open["arguments"] = json!("");
        open["status"] = json!("in_progress");
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": open}),
        );
        let args = item["arguments"].as_str().unwrap_or_default();
        for piece in pieces(args) {
            event(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": 0, "delta": piece}),
            );
        }
        event(
            "response.function_call_arguments.done",
            json!({"item_id": id, "output_index": 0, "arguments": args}),
        );
    } else {
        let text = item["content"][0]["text"].as_str().unwrap_or_default();
        let mut open = item.clone();
        open["content"] = json!([]);
        open["status"] = json!("in_progress");
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": open}),
        );
        let empty = json!({"type": "output_text", "text": "", "annotations": []});
        event(
            "response.content_part.added",
            json!({"item_id": id, "output_index": 0, "content_index": 0, "part": empty}),
        );
        for piece in pieces(text) {
            event(
                "response.output_text.delta",
                json!({"item_id": id, "output_index": 0, "content_index": 0, "delta": piece, "logprobs": []}),
            );
        }
        let annotations = item["content"][0]["annotations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (i, a) in annotations.into_iter().enumerate() {
            event(
                "response.output_text.annotation.added",
                json!({"item_id": id, "output_index": 0, "content_index": 0,
                    "annotation_index": i, "annotation": a}),
            );
        }
        event(
            "response.output_text.done",
            json!({"item_id": id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}),
        );
        event(
            "response.content_part.done",
            json!({"item_id": id, "output_index": 0, "content_index": 0, "part": item["content"][0]}),
        );
    }
    event(
        "response.output_item.done",
        json!({"output_index": 0, "item": item}),
    );
    event(
        "response.completed",
        json!({"response": response(model, "completed", vec![item.clone()])}),
    );
    Script::new(steps)
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
    use crate::marker_ids;

    fn request(outputs: &[&str], stream: bool) -> Value {
        let mut input = vec![json!({"role": "user", "content": "Tell me about Paris"})];
        for (i, o) in outputs.iter().enumerate() {
            let id = format!("call_agent_{}", i + 1);
            input.push(json!({"type": "function_call", "call_id": id, "name": "search", "arguments": "{}"}));
            input.push(json!({"type": "function_call_output", "call_id": id, "output": o}));
        }
        json!({"model": "agent-search", "stream": stream, "input": input,
            "tools": [{"type": "function", "name": "search", "parameters": {}}]})
    }

    #[test]
    fn responses_agent_calls_the_tool_twice_then_cites_the_outputs_markers() {
        let Some(AgentReply::Json(first)) = responses_agent_reply(&request(&[], false)) else {
            panic!("expected JSON");
        };
        assert_eq!(first["output"][0]["type"], "function_call");
        assert_eq!(first["output"][0]["name"], "search");
        assert_eq!(
            first["output"][0]["arguments"],
            r#"{"query":"Seine river Paris"}"#
        );
        let Some(AgentReply::Json(done)) =
            responses_agent_reply(&request(&["[[a]] x [[b]]", "[[c]]"], false))
        else {
            panic!("expected JSON");
        };
        let text = done["output"][0]["content"][0]["text"].as_str().unwrap();
        assert_eq!(marker_ids(text), ["a", "b", "c"]);
        assert_eq!(responses_agent_reply(&json!({"model": "chat-demo"})), None);
    }

    #[test]
    fn responses_agent_streams_text_deltas_that_cut_every_marker() {
        let Some(AgentReply::Stream(script)) =
            responses_agent_reply(&request(&["[[doc_1]] [[doc_2]]", "[[doc_3]]"], true))
        else {
            panic!("expected a stream");
        };
        let body: String = script
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect();
        assert!(body.starts_with("event: response.created\n"), "{body}");
        assert!(body.contains("event: response.completed\n"), "{body}");
        assert!(!body.contains(r#""delta":"[[doc_1]]"#), "{body}");
        let deltas: String = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter(|v| v["type"] == "response.output_text.delta")
            .map(|v| v["delta"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(marker_ids(&deltas), ["doc_1", "doc_2", "doc_3"]);
        assert!(!body.contains("annotation.added"), "{body}");
    }

    #[test]
    fn responses_agent_with_web_search_ends_with_a_sentence_citing_two_urls() {
        let mut req = request(&["[[a]]", "[[b]]"], false);
        req["tools"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "web_search"}));
        let Some(AgentReply::Json(done)) = responses_agent_reply(&req) else {
            panic!("expected JSON");
        };
        let part = &done["output"][0]["content"][0];
        let text = part["text"].as_str().unwrap();
        assert!(text.ends_with(&format!(" {WEB_SENTENCE}")), "{text}");
        let a = &part["annotations"];
        assert_eq!(a[0]["url"], WEB_URLS[0]);
        assert_eq!(a[1]["url"], WEB_URLS[1]);
        let (start, end) = (
            a[0]["start_index"].as_u64().unwrap(),
            a[0]["end_index"].as_u64().unwrap(),
        );
        let cited: String = text
            .chars()
            .skip(start as usize)
            .take((end - start) as usize)
            .collect();
        assert_eq!(cited, WEB_SENTENCE);
        req["stream"] = json!(true);
        let Some(AgentReply::Stream(script)) = responses_agent_reply(&req) else {
            panic!("expected a stream");
        };
        let added = script
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Bytes(b) if b.starts_with(b"event: response.output_text.annotation.added")))
            .count();
        assert_eq!(added, 2);
    }
}
