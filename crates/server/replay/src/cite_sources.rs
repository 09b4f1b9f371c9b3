//! The scripted RAG model: an OpenAI chat model that answers citing, by rank, the numbered
//! sources of its prompt (as LlamaIndex's `CitationQueryEngine` numbers them: `Source 1:`, …).
//!
//! Model `cite-sources` (English, cites `[n]`) or `cite-sources-ja` (Japanese, cites `【n】`),
//! on `/v1/chat/completions` (streamed or not) and `/v1/completions`. It reads every `Source N:`
//! label of the request's messages (or `prompt`) and cites each distinct `N` once, from the
//! highest to the lowest, one sentence each, so that the first number cited is not rank 1.

use serde_json::{json, Value};

use crate::agent::{answer, AgentReply};

/// The model names this module answers.
pub const CITE_SOURCES_MODELS: [&str; 2] = ["cite-sources", "cite-sources-ja"];

/// The distinct `N` of the `Source N:` labels of `text`, in order of first appearance.
pub fn source_labels(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("Source ") {
        let rest = &text[i + "Source ".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() || !rest[digits.len()..].starts_with(':') {
            continue;
        }
        if let Ok(n) = digits.parse::<u32>() {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// The answer citing `labels` from the highest to the lowest.
pub fn cite_sources_text(labels: &[u32], ja: bool) -> String {
    const EN: [&str; 4] = [
        "Paris sits on the Seine",
        "Its museums are famous",
        "The river divides the city",
        "It is worth a visit",
    ];
    const JA: [&str; 4] = [
        "パリはセーヌ川のほとりにあります",
        "美術館が有名です",
        "川が街を分けています",
        "訪れる価値があります",
    ];
    let mut sorted = labels.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let sentences: Vec<String> = sorted
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if ja {
                format!("{}【{n}】。", JA[i % JA.len()])
            } else {
                format!("{} [{n}].", EN[i % EN.len()])
            }
        })
        .collect();
    if sentences.is_empty() {
        return if ja {
            "資料がありません。".to_owned()
        } else {
            "There are no sources.".to_owned()
        };
    }
    sentences.join(if ja { "" } else { " " })
}

/// The reply to a request body, or `None` when `model` is not one of [`CITE_SOURCES_MODELS`].
pub fn cite_sources_reply(req: &Value) -> Option<AgentReply> {
    let model = req.get("model").and_then(Value::as_str)?;
    if !CITE_SOURCES_MODELS.contains(&model) {
        return None;
    }
    let mut prompt = String::new();
    if let Some(p) = req.get("prompt").and_then(Value::as_str) {
        prompt.push_str(p);
    }
    for m in req
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        match m.get("content") {
            Some(Value::String(s)) => prompt.push_str(s),
            Some(Value::Array(parts)) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        prompt.push_str(t);
                    }
                }
            }
            _ => {}
        }
        prompt.push('\n');
    }
    let text = cite_sources_text(&source_labels(&prompt), model.ends_with("-ja"));
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if req.get("prompt").is_some() && !stream {
        return Some(AgentReply::Json(json!({
            "id": "cmpl-cite", "object": "text_completion", "created": 1_700_000_000,
            "model": model, "choices": [{"index": 0, "text": text, "finish_reason": "stop"}]
        })));
    }
    Some(answer(&text, stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cite_sources_cites_each_label_once_from_the_highest() {
        let prompt = "Source 1:\nalpha\n\nSource 2:\nbeta\n\nSource 3:\ngamma\nSource 2: again";
        assert_eq!(source_labels(prompt), [1, 2, 3]);
        let req =
            json!({"model": "cite-sources", "messages": [{"role": "user", "content": prompt}]});
        let Some(AgentReply::Json(v)) = cite_sources_reply(&req) else {
            panic!("expected a JSON reply");
        };
        assert_eq!(
            v["choices"][0]["message"]["content"],
            "Paris sits on the Seine [3]. Its museums are famous [2]. The river divides the city [1]."
        );
        let ja = json!({"model": "cite-sources-ja", "stream": true, "messages": [{"role": "user", "content": prompt}]});
        let Some(AgentReply::Stream(s)) = cite_sources_reply(&ja) else {
            panic!("expected a stream");
        };
        assert_eq!(
            s.text(),
            "パリはセーヌ川のほとりにあります【3】。美術館が有名です【2】。川が街を分けています【1】。"
        );
        assert_eq!(cite_sources_reply(&json!({"model": "agent-search"})), None);
    }
}
