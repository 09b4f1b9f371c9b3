//! The OpenAI-compatible HTTP layer over a scripted model.

use serde_json::{json, Value};

use crate::support::{payloads, read_sse, serve, text_of, Scripted};

#[tokio::test]
async fn streamed_answer_is_openai_sse_with_usage_and_timings() {
    let model = Scripted::new(vec!["Alice ", "fell [[", "b1]]."]);
    let server = serve(model.clone()).await;
    let resp = citeflow_replay::client()
        .post(format!("{}/chat/completions", server.base_url()))
        .json(
            &json!({"model": "x", "stream": true, "temperature": 0, "seed": 3,
            "messages": [{"role": "user", "content": "Who fell?"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = read_sse(resp, 100).await;
    assert_eq!(events.last().unwrap().data, "[DONE]");
    assert_eq!(text_of(&events), "Alice fell [[b1]].");
    let chunks = payloads(&events);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "scripted"));
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        last["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13})
    );
    assert_eq!(last["timings"]["ttft_ms"], 5.0);
    assert_eq!(last["timings"]["predicted_per_second"], 200.0);
    let job = &model.jobs.lock().unwrap()[0];
    assert_eq!(job.sampling.temperature, 0.0);
    assert_eq!(job.sampling.seed, Some(3));
    assert_eq!(job.sampling.max_tokens, 64);
}

#[tokio::test]
async fn whole_answer_is_a_chat_completion() {
    let server = serve(Scripted::new(vec!["a", "b", "c"])).await;
    let v: Value = citeflow_replay::client()
        .post(format!("{}/chat/completions", server.base_url()))
        .json(&json!({"messages": [{"role": "user", "content": "q"}], "max_tokens": 2}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], "ab");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["completion_tokens"], 2);
}

#[tokio::test]
async fn models_metrics_and_health() {
    let server = serve(Scripted::new(vec!["x"])).await;
    let c = citeflow_replay::client();
    let models: Value = c
        .get(format!("{}/models", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "scripted");
    c.post(format!("{}/chat/completions", server.base_url()))
        .json(&json!({"messages": [{"role": "user", "content": "q"}]}))
        .send()
        .await
        .unwrap();
    let metrics = c
        .get(format!("http://{}/metrics", server.addr()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("citeflow_llm_requests_total 1"),
        "{metrics}"
    );
    assert!(metrics.contains("citeflow_llm_time_to_first_token_seconds_count 1"));
    assert_eq!(server.metrics().requests(), 1);
    let health = c
        .get(format!("http://{}/healthz", server.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    server.shutdown().await;
}

#[tokio::test]
async fn bad_requests_get_the_error_envelope() {
    let server = serve(Scripted::new(vec!["x"])).await;
    let c = citeflow_replay::client();
    for (body, code, needle) in [
        ("{".to_owned(), "invalid_request", "not JSON"),
        (
            json!({"messages": "hi"}).to_string(),
            "invalid_request",
            "messages",
        ),
        (
            json!({"messages": [{"role": "user", "content": "q"}], "temperature": 3}).to_string(),
            "invalid_request",
            "temperature",
        ),
        (
            json!({"messages": [{"role": "user", "content": "q"}], "grammar": "bad"}).to_string(),
            "invalid_grammar",
            "grammar",
        ),
    ] {
        let resp = c
            .post(format!("{}/chat/completions", server.base_url()))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], code);
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{v}"
        );
    }
}
