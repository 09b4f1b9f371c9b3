//! Every limit of `citeflow serve` can come from the environment (`CITEFLOW_<FLAG>`), a flag
//! wins over its variable, and `--help` names the variables.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::start_serve;

/// `citeflow serve` on a free loopback port, its upstream unreachable (these tests never call
/// it), its book index in `index`; the caller adds the rest.
fn serve_cmd(index: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_citeflow"));
    cmd.args([
        "serve",
        "--upstream",
        "http://127.0.0.1:9/v1",
        "--listen",
        "127.0.0.1:0",
        "--index",
    ])
    .arg(index);
    cmd
}

async fn post(base: &str, body: Value) -> (u16, Value) {
    let r = citeflow_replay::client()
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
        let mut cmd = serve_cmd(&dir.path().join("index"));
        cmd.args(["--store", "memory", "--no-sample-books"])
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

fn print_config(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_citeflow"));
    cmd.arg("serve").args(args).arg("--print-config");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

#[test]
fn a_config_file_gives_what_flags_and_environment_do_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("citeflow.toml");
    std::fs::write(
        &file,
        "max-sources = 5\nmax-source-field-bytes = 100\nmax-connections = 7\n\
         api-key = [\"k1\", \"k2\"]\nallow-no-auth = true\n",
    )
    .expect("write");
    let f = file.to_str().expect("utf-8 path");
    // flag > environment > file > default, each line saying where its value came from.
    let (ok, out, err) = print_config(
        &["--config", f, "--max-sources", "9"],
        &[("CITEFLOW_MAX_SOURCE_FIELD_BYTES", "77")],
    );
    assert!(ok, "{err}");
    for line in [
        "max-sources = 9  # flag",
        "max-source-field-bytes = 77  # environment",
        "max-connections = 7  # file",
        "api-key = [\"***\", \"***\"]  # file",
        "allow-no-auth = true  # file",
        "max-body-bytes = 4194304  # default",
        "listen = \"127.0.0.1:8080\"  # default",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "no line {line:?} in:\n{out}"
        );
    }
    // What it prints is itself a config file that gives the same settings.
    let again = dir.path().join("again.toml");
    std::fs::write(&again, out.replace("\"***\"", "\"k\"")).expect("write");
    let (ok, out2, err) = print_config(&["--config", again.to_str().expect("path")], &[]);
    assert!(ok, "{err}");
    assert!(out2.contains("max-sources = 9  # file"), "{out2}");
    assert!(
        out2.contains("max-source-field-bytes = 77  # file"),
        "{out2}"
    );
    // A key that is not a flag, or a value of the wrong type, is an error naming it.
    std::fs::write(&file, "max-source = 5\n").expect("write");
    let (ok, _, err) = print_config(&["--config", f], &[]);
    assert!(!ok);
    assert!(err.contains("unknown key `max-source`"), "{err}");
    std::fs::write(&file, "allow-no-auth = \"yes\"\n").expect("write");
    let (ok, _, err) = print_config(&["--config", f], &[]);
    assert!(!ok);
    assert!(
        err.contains("`allow-no-auth` must be true or false, not string"),
        "{err}"
    );
    // The server runs with the file's limits.
    std::fs::write(
        &file,
        "max-sources = 1\nstore = \"memory\"\nno-sample-books = true\n",
    )
    .expect("write");
    let mut cmd = serve_cmd(&dir.path().join("index"));
    cmd.args(["--config", f]);
    let server = start_serve(cmd, None);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (status, v) = rt.block_on(post(
        &server.base,
        json!({"sources": [{"id": "a"}, {"id": "b"}]}),
    ));
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("too_many_sources")),
        "{v}"
    );
}

#[test]
fn json_logs_and_error_bodies_carry_the_request_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("stderr.txt");
    let mut cmd = serve_cmd(&dir.path().join("index"));
    cmd.args([
        "--store",
        "memory",
        "--no-sample-books",
        "--log-format",
        "json",
    ]);
    let server = start_serve(cmd, Some(&log));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (given, made) = rt.block_on(async {
        let client = citeflow_replay::client();
        // The caller's id: in the error body and the response header.
        let r = client
            .get(format!("{}/v1/models", server.base))
            .header("x-request-id", "trace-42")
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 502);
        assert_eq!(r.headers()["x-request-id"], "trace-42");
        let body: Value = r.json().await.expect("json");
        let given = body["error"]["request_id"].as_str().expect("id").to_owned();
        // None given: one is made.
        let r = client
            .get(format!("{}/v1/models", server.base))
            .send()
            .await
            .expect("send");
        let body: Value = r.json().await.expect("json");
        (
            given,
            body["error"]["request_id"].as_str().expect("id").to_owned(),
        )
    });
    assert_eq!(given, "trace-42");
    assert!(made.starts_with("req_") && made.len() == 36, "{made}");
    drop(server);
    let stderr = std::fs::read_to_string(&log).expect("stderr");
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for id in [&given, &made] {
        let line = lines
            .iter()
            .find(|l| l["span"]["request_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no log line with request_id {id}:\n{stderr}"));
        assert_eq!(line["span"]["path"], "/v1/models", "{line}");
        assert!(
            line["level"].is_string() && line["timestamp"].is_string(),
            "{line}"
        );
    }
}

/// `--sqlite-wal-max-bytes` reaches the SQLite store: four clients create sessions of 8 KB of
/// sources for 1.5 s, which grows the WAL past the limit of 64 KiB given here; once the load
/// stops and the checkpoints have copied everything, one more session starts the WAL over,
/// and the file is cut back to the limit (with the default limit, 64 MiB, it keeps the size it
/// grew to). Every session created reads back.
#[test]
fn the_sqlite_wal_limit_reaches_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("s.db");
    let wal = dir.path().join("s.db-wal");
    let limit: u64 = 64 << 10;
    let mut cmd = serve_cmd(&dir.path().join("index"));
    cmd.args([
        "--no-sample-books",
        "--max-sessions-per-key",
        "1000000",
        "--sqlite-wal-max-bytes",
        &limit.to_string(),
        "--store",
    ])
    .arg(format!("sqlite:{}", db.display()));
    let server = start_serve(cmd, None);
    let text = "x".repeat(8000);
    let body = |c: usize| json!({"sources": [{"id": format!("c{c}"), "text": text}]});
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (ids, grown, size) = rt.block_on(async {
        let start = std::time::Instant::now();
        let clients = (0..4).map(|c| {
            let (base, body, wal) = (server.base.clone(), body(c), wal.clone());
            tokio::spawn(async move {
                let mut ids = Vec::new();
                // 1.5 s of writes, longer (up to 10 s) on a slow machine until the WAL has
                // grown past the limit.
                let wal_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
                while start.elapsed() < std::time::Duration::from_millis(1500)
                    || (wal_len() <= limit + (32 << 10)
                        && start.elapsed() < std::time::Duration::from_secs(10))
                {
                    let (status, v) = post(&base, body.clone()).await;
                    assert_eq!(status, 201, "{v}");
                    ids.push(v["id"].as_str().expect("id").to_owned());
                }
                ids
            })
        });
        let mut ids = Vec::new();
        let mut grown = 0;
        for c in clients {
            ids.extend(c.await.expect("client"));
            grown = grown.max(std::fs::metadata(&wal).expect("the WAL").len());
        }
        // Two checkpoint passes (every 250 ms) with nothing written: every frame copied; the
        // next write starts the WAL over and truncates it to the limit. On a loaded machine a
        // pass may come late: tried up to 8 times.
        let mut size = u64::MAX;
        for _ in 0..8 {
            tokio::time::sleep(std::time::Duration::from_millis(700)).await;
            let (status, v) = post(&server.base, body(9)).await;
            assert_eq!(status, 201, "{v}");
            ids.push(v["id"].as_str().expect("id").to_owned());
            size = std::fs::metadata(&wal).expect("the WAL").len();
            if size <= limit + (16 << 10) {
                break;
            }
        }
        (ids, grown, size)
    });
    assert!(
        grown > limit + (32 << 10) && size <= limit + (16 << 10),
        "WAL file of {grown} bytes under load, {size} after it ({} sessions)",
        ids.len()
    );
    rt.block_on(async {
        let client = citeflow_replay::client();
        for id in ids.iter().step_by(7) {
            let v: Value = client
                .get(format!("{}/v1/sessions/{id}", server.base))
                .send()
                .await
                .expect("get")
                .json()
                .await
                .expect("json");
            assert_eq!(v["rounds"][0]["sources"][0]["text"], text.as_str(), "{v}");
        }
    });
}
