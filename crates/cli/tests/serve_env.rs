//! Every limit of `citeflow serve` can come from the environment (`CITEFLOW_<FLAG>`), a flag
//! wins over its variable, and `--help` names the variables.

use std::process::Command;

use serde_json::{json, Value};

use crate::start_serve;

async fn post(base: &str, body: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}/v1/sessions"))
        .json(&body)
        .send()
        .await
        .expect("send");
    (r.status().as_u16(), r.json().await.expect("json"))
}

#[test]
fn limits_come_from_the_environment_and_flags_win() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = |more: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_citeflow"));
        cmd.args([
            "serve",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--store", "memory", "--no-sample-books", "--index"])
        .arg(dir.path().join("index"))
        .args(more)
        .env("CITEFLOW_MAX_SOURCES", "1")
        .env("CITEFLOW_MAX_SOURCE_FIELD_BYTES", "10");
        start_serve(cmd, None)
    };
    let two = json!({"sources": [{"id": "a"}, {"id": "b"}]});
    let long_title = json!({"sources": [{"id": "a", "title": "eleven byte"}]});
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let from_env = serve(&[]);
        let (status, v) = post(&from_env.base, two.clone()).await;
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (400, Some("too_many_sources")),
            "{v}"
        );
        assert!(
            v["error"]["message"]
                .as_str()
                .expect("message")
                .contains("at most 1"),
            "{v}"
        );
        let (status, v) = post(&from_env.base, long_title.clone()).await;
        assert_eq!(
            (status, v["error"]["param"].as_str()),
            (400, Some("sources[0].title")),
            "{v}"
        );
        drop(from_env);

        let flags = serve(&["--max-sources", "2", "--max-source-field-bytes", "64"]);
        let (status, v) = post(&flags.base, two).await;
        assert_eq!(status, 201, "{v}");
        let (status, v) = post(&flags.base, long_title).await;
        assert_eq!(status, 201, "{v}");
    });
    let help = Command::new(env!("CARGO_BIN_EXE_citeflow"))
        .args(["serve", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8(help.stdout).expect("utf-8");
    for var in [
        "CITEFLOW_MAX_SOURCES",
        "CITEFLOW_MAX_UPSTREAM_BYTES",
        "CITEFLOW_INGEST_TIMEOUT_MS",
        "CITEFLOW_MAX_STREAMS_PER_KEY",
        "CITEFLOW_SESSION_TTL_MS",
    ] {
        assert!(
            help.contains(&format!("[env: {var}=]")),
            "{var} not in --help:\n{help}"
        );
    }
}
