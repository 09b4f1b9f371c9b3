//! Tool calls over HTTP with a scripted model: what the grammar makes the model write is
//! answered as OpenAI `tool_calls`, streamed and whole; schemas the grammar cannot honour are
//! a 400 naming the keyword and its path.

use serde_json::{json, Value};

use crate::support::{payloads, read_sse, serve, Scripted};

fn search_tool() -> Value {
    json!({"type": "function", "function": {"name": "search_books", "description": "Search the books",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}})
}

/// The model's text for two calls, cut mid-name and mid-arguments.
const CALLS: &[&str] = &[
    "<tool_call>\n{\"name\": \"search_",
    "books\", \"arguments\": {\"query\": \"Rab",
    "bit }\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search_books\", \"arguments\": {\"query\": \"watch\"}}\n</tool_call>",
];

async fn post(base: &str, body: Value) -> reqwest::Response {
    citeflow_replay::client()
        .post(format!("{base}/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn streamed_calls_are_delta_tool_calls() {
    let model = Scripted::new(CALLS.to_vec());
    let server = serve(model.clone()).await;
    let resp = post(
        &server.base_url(),
        json!({"stream": true, "tools": [search_tool()], "tool_choice": "required",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What did the Rabbit take out?"}]}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let chunks = payloads(&read_sse(resp, 100).await);
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for c in &chunks {
        for tc in c["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let i = tc["index"].as_u64().unwrap() as usize;
            if let Some(id) = tc["id"].as_str() {
                assert_eq!(i, calls.len());
                assert_eq!(tc["type"], "function");
                calls.push((
                    id.to_owned(),
                    tc["function"]["name"].as_str().unwrap().to_owned(),
                    String::new(),
                ));
            }
            calls[i]
                .2
                .push_str(tc["function"]["arguments"].as_str().unwrap());
        }
        assert!(
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_none_or(str::is_empty),
            "{c}"
        );
    }
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].0, calls[1].0);
    assert_eq!(
        (calls[0].1.as_str(), calls[0].2.as_str()),
        ("search_books", "{\"query\": \"Rabbit }\"}")
    );
    assert_eq!(calls[1].2, "{\"query\": \"watch\"}");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    // The model was told about the tool in the system message and asked under a grammar of
    // calls only.
    let job = &model.jobs.lock().unwrap()[0];
    assert!(job.messages[0]
        .content
        .starts_with("Be brief.\n\nYou may call these tools:"));
    assert!(job.messages[0]
        .content
        .contains("\"name\":\"search_books\""));
    let g = job.grammar.as_deref().unwrap();
    assert!(g.starts_with("root ::= (call (("), "{g}");
}

#[tokio::test]
async fn whole_calls_are_message_tool_calls() {
    let server = serve(Scripted::new(CALLS.to_vec())).await;
    let resp = post(
        &server.base_url(),
        json!({"tools": [search_tool()], "tool_choice": {"type": "function", "function": {"name": "search_books"}},
            "messages": [{"role": "user", "content": "q"}]}),
    )
    .await;
    let v: Value = resp.json().await.unwrap();
    let m = &v["choices"][0]["message"];
    assert_eq!(m["content"], Value::Null);
    assert_eq!(
        m["tool_calls"][0]["function"],
        json!({"name": "search_books", "arguments": "{\"query\": \"Rabbit }\"}"})
    );
    assert_eq!(m["tool_calls"][0]["type"], "function");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn tool_choice_none_is_prose_and_history_is_shown() {
    let model = Scripted::new(vec!["The Rabbit ", "took a watch."]);
    let server = serve(model.clone()).await;
    let resp = post(
        &server.base_url(),
        json!({"tools": [search_tool()], "tool_choice": "none", "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "search_books", "arguments": "{\"query\": \"rabbit\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "The Rabbit took a watch out."}
        ]}),
    )
    .await;
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "The Rabbit took a watch."
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let job = &model.jobs.lock().unwrap()[0];
    assert_eq!(job.grammar, None);
    assert_eq!(job.messages[1].role, "assistant");
    assert_eq!(
        job.messages[1].content,
        "<tool_call>\n{\"name\": \"search_books\", \"arguments\": {\"query\": \"rabbit\"}}\n</tool_call>"
    );
    assert_eq!(job.messages[2].role, "user");
    assert_eq!(
        job.messages[2].content,
        "<tool_response>\nThe Rabbit took a watch out.\n</tool_response>"
    );
}

#[tokio::test]
async fn unsupported_schema_is_a_400_naming_keyword_and_path() {
    let server = serve(Scripted::new(vec!["x"])).await;
    let resp = post(
        &server.base_url(),
        json!({"tools": [search_tool(), {"type": "function", "function": {"name": "f", "parameters":
            {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}}}}],
            "messages": [{"role": "user", "content": "q"}]}),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unsupported_schema");
    assert_eq!(
        v["error"]["message"],
        "unsupported JSON schema feature format at tools[1].function.parameters.properties.when"
    );
}
