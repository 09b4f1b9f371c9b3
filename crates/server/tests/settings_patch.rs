//! `citeflow.settings`: every rewriter setting by the core's names, on the chat route.

use citeflow_replay::Script;
use serde_json::{json, Value};

use crate::support::{read_sse, text_of, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn citeflow_settings_reach_the_rewriter_and_bad_ones_are_400() {
    let h = Harness::start().await;
    h.replay.insert(
        "two-syntaxes",
        Script::chat(&["A [[s1]] and ", "B <cite:s2>."]),
    );
    let sources =
        json!([{"id": "s1", "url": "https://e.org/1"}, {"id": "s2", "url": "https://e.org/2"}]);
    let ask = |settings: Value| {
        h.post("/v1/chat/completions").json(&json!({
            "model": "two-syntaxes", "stream": true, "sources": sources,
            "messages": [{"role": "user", "content": "q"}],
            "citeflow": {"marker": "cite_colon", "settings": settings}
        }))
    };
    // Only <cite:…> is a marker: [[s1]] stays as written.
    let r = ask(json!({"syntaxes": ["cite_colon"]}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(
        text_of(&read_sse(r, usize::MAX).await),
        "A [[s1]] and B [1]."
    );
    // Both syntaxes, numbers in full-width brackets.
    let r = ask(json!({"syntaxes": ["cite_colon", "double_bracket"], "style": "full_width"}))
        .send()
        .await
        .expect("send");
    assert_eq!(
        text_of(&read_sse(r, usize::MAX).await),
        "A 【1】 and B 【2】."
    );
    // A member that is no setting, or a name that is none of its setting's: invalid_setting,
    // naming `citeflow.settings` and the member (issue 37: the names are serde's).
    for (settings, says) in [
        (json!({"styel": "x"}), "unknown field `styel`"),
        (
            json!({"rank": "often"}),
            "rank: unknown rank mode \"often\", expected one of off, renumber, keep",
        ),
        (json!({"syntaxes": ["nope"]}), "nope"),
    ] {
        let r = ask(settings.clone()).send().await.expect("send");
        assert_eq!(r.status(), 400, "{settings}");
        let body: Value = r.json().await.expect("json");
        assert_eq!(
            body["error"]["code"], "invalid_setting",
            "{settings}: {body}"
        );
        assert_eq!(body["error"]["param"], "citeflow.settings", "{body}");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(message.contains(says), "{settings}: {body}");
    }
    for (settings, param, says) in [(
        json!({"number_source": "local"}),
        "citeflow.settings.number_source",
        "the server's",
    )] {
        let r = ask(settings.clone()).send().await.expect("send");
        assert_eq!(r.status(), 400, "{settings}");
        let body: Value = r.json().await.expect("json");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(message.contains(says), "{settings}: {body}");
        if !param.is_empty() {
            assert_eq!(body["error"]["param"], param, "{settings}: {body}");
        }
    }
}
