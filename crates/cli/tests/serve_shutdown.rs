//! `citeflow serve` stopped with SIGTERM while two streams run against a slow upstream: the
//! short one finishes within the grace period with its `done` event, the long one ends with a
//! `shutting_down` error event, the process exits 0 soon after the grace period and logs
//! "1 streams finished, 1 interrupted"; on restart the interrupted stream (SQLite, never
//! marked finished) resumes with its logged events. And `--shutdown-grace-ms` comes from a
//! flag, `CITEFLOW_SHUTDOWN_GRACE_MS` or the config file like every flag.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use citeflow_replay::{self as replay, Replay, Script};
use serde_json::{json, Value};

use crate::{start_serve, Server};

const GRACE_MS: u64 = 1500;

/// `citeflow serve` on SQLite `db`, logging at info into `log`; returns it and its address.
fn serve(upstream: &str, db: &Path, log: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_citeflow"))
        .args(["serve", "--upstream", upstream, "--listen", "127.0.0.1:0"])
        .arg("--store")
        .arg(format!("sqlite:{}", db.display()))
        .args(["--no-sample-books", "--index"])
        .arg(db.with_extension("index"))
        .env("CITEFLOW_SHUTDOWN_GRACE_MS", GRACE_MS.to_string())
        .env("CITEFLOW_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("spawn citeflow serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let base = line
        .trim()
        .strip_prefix("citeflow listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (child, base)
}

/// An SSE event: its id (if any) and data.
type Ev = (Option<u64>, String);

/// Reads an SSE body to its end in a task; `first` fires at its first event.
fn reader(
    mut resp: reqwest::Response,
    first: tokio::sync::oneshot::Sender<()>,
) -> tokio::task::JoinHandle<Vec<Ev>> {
    tokio::spawn(async move {
        let mut first = Some(first);
        let mut buf = String::new();
        let mut events = Vec::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let mut id = None;
                let mut data = Vec::new();
                for l in block.lines() {
                    if let Some(v) = l.strip_prefix("id:") {
                        id = v.trim().parse().ok();
                    } else if let Some(v) = l.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                    }
                }
                if !data.is_empty() {
                    events.push((id, data.join("\n")));
                    if let Some(f) = first.take() {
                        let _ = f.send(());
                    }
                }
            }
        }
        events
    })
}

fn error_code(data: &str) -> Option<String> {
    let v: Value = serde_json::from_str(data).ok()?;
    v.pointer("/error/code")?.as_str().map(str::to_owned)
}

fn has_done(events: &[Ev]) -> bool {
    events.iter().any(|(_, d)| {
        serde_json::from_str::<Value>(d).is_ok_and(|v| {
            v.pointer("/citeflow/events")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|e| e["type"] == "done"))
        })
    })
}

#[test]
fn sigterm_lets_a_short_stream_finish_and_interrupts_a_long_one() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let replay = Replay::new();
        // About 1 s in all; about 20 s.
        replay.insert(
            "short",
            Script::chat(&["One ", "two [[source_1]]", " three", "."]).paced(150),
        );
        let pieces: Vec<String> = (0..100).map(|i| format!("word{i} ")).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        replay.insert("long", Script::chat(&pieces).paced(200));
        let upstream = replay.spawn().await.expect("upstream");
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("citeflow.db");
        let log = dir.path().join("serve.log");
        let (mut child, base) = serve(&upstream, &db, &log);
        let http = citeflow_replay::client();
        let open = |model: &'static str| {
            let req = http
                .post(format!("{base}/v1/chat/completions"))
                .json(&json!({"model": model, "stream": true, "messages": [],
                    "sources": [{"id": "source_1", "title": "S"}]}));
            async move {
                let resp = req.send().await.expect("send");
                assert_eq!(resp.status(), 200);
                let id = resp.headers()["x-citeflow-stream-id"]
                    .to_str()
                    .expect("id")
                    .to_owned();
                let (tx, rx) = tokio::sync::oneshot::channel();
                let task = reader(resp, tx);
                rx.await.expect("a first event");
                (id, task)
            }
        };
        let (short_id, short) = open("short").await;
        let (long_id, long) = open("long").await;

        let signalled = Instant::now();
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let short = short.await.expect("short reader");
        let long = long.await.expect("long reader");

        // The short stream finished during the grace period: its done event, then [DONE].
        assert!(has_done(&short), "{short:?}");
        assert_eq!(short.last().map(|e| e.1.as_str()), Some("[DONE]"));
        assert!(
            short.iter().all(|e| error_code(&e.1).is_none()),
            "{short:?}"
        );
        // The long one was cut: its last event is shutting_down, with no id.
        let (last_id, last) = long.last().expect("an event").clone();
        assert_eq!(
            error_code(&last).as_deref(),
            Some("shutting_down"),
            "{last}"
        );
        assert_eq!(
            last_id, None,
            "the final event has no id: Last-Event-ID stays"
        );
        assert!(!has_done(&long));
        let cut_after = signalled.elapsed();
        assert!(
            cut_after >= Duration::from_millis(GRACE_MS - 100),
            "cut after {cut_after:?}, before the grace period"
        );

        // The process exits 0 within the grace period and a margin.
        let exit = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            assert!(
                signalled.elapsed() < Duration::from_millis(GRACE_MS + 3000),
                "still running {:?} after SIGTERM",
                signalled.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(exit.code(), Some(0), "{exit:?}");
        let text = std::fs::read_to_string(&log).expect("log");
        assert!(
            text.contains("shutdown: 1 streams finished, 1 interrupted"),
            "{text}"
        );

        // Restarted on the same file: the short stream is completed; the long one was left
        // running, so start-up marks it interrupted, and it replays what was logged.
        let (mut child, base) = serve(&upstream, &db, &dir.path().join("serve2.log"));
        let get = |id: &str, after: Option<u64>| {
            let mut req = http.get(format!("{base}/v1/streams/{id}"));
            if let Some(a) = after {
                req = req.header("Last-Event-ID", a.to_string());
            }
            req.send()
        };
        let r = get(&short_id, None).await.expect("send");
        assert_eq!(r.headers()["x-citeflow-stream-status"], "completed");
        let r = get(&long_id, None).await.expect("send");
        assert_eq!(r.headers()["x-citeflow-stream-status"], "interrupted");
        let replayed = replay::read_sse(r, usize::MAX).await;
        let seen: Vec<Ev> = long.iter().filter(|e| e.0.is_some()).cloned().collect();
        let again: Vec<Ev> = replayed.iter().map(|e| (e.id, e.data.clone())).collect();
        assert_eq!(
            again[..seen.len()],
            seen[..],
            "the events sent before the cut"
        );
        let last = &replayed.last().expect("event").data;
        assert_eq!(error_code(last).as_deref(), Some("stream_interrupted"));
        // Resuming after the last id the client saw gives the rest.
        let after = seen.last().and_then(|e| e.0).expect("an id");
        let rest =
            replay::read_sse(get(&long_id, Some(after)).await.expect("send"), usize::MAX).await;
        assert_eq!(rest.len(), replayed.len() - seen.len());
        let _ = child.kill();
        let _ = child.wait();
    });
}

fn print_config(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_citeflow"));
    cmd.arg("serve").args(args).arg("--print-config");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn the_grace_period_comes_from_flag_environment_or_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "shutdown-grace-ms = 777\n").expect("write");
    let f = file.to_str().expect("path");
    let line = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("shutdown-grace-ms"))
            .unwrap_or_else(|| panic!("no shutdown-grace-ms in\n{out}"))
            .to_owned()
    };
    assert_eq!(
        line(&print_config(&[], &[])),
        "shutdown-grace-ms = 20000  # default"
    );
    assert_eq!(
        line(&print_config(&["--config", f], &[])),
        "shutdown-grace-ms = 777  # file"
    );
    assert_eq!(
        line(&print_config(
            &["--config", f],
            &[("CITEFLOW_SHUTDOWN_GRACE_MS", "1234")]
        )),
        "shutdown-grace-ms = 1234  # environment"
    );
    assert_eq!(
        line(&print_config(
            &["--config", f, "--shutdown-grace-ms", "55"],
            &[("CITEFLOW_SHUTDOWN_GRACE_MS", "1234")]
        )),
        "shutdown-grace-ms = 55  # flag"
    );
    let help = Command::new(env!("CARGO_BIN_EXE_citeflow"))
        .args(["serve", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8(help.stdout).expect("utf-8");
    assert!(
        help.contains("[env: CITEFLOW_SHUTDOWN_GRACE_MS=]"),
        "{help}"
    );
    // A server with a grace period of 0 and no stream stops at once, exit status 0.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_citeflow"));
    cmd.args(["serve", "--upstream", "http://127.0.0.1:9/v1"])
        .args(["--listen", "127.0.0.1:0", "--store", "memory"])
        .args(["--no-sample-books", "--shutdown-grace-ms", "0", "--index"])
        .arg(dir.path().join("index"));
    let mut server: Server = start_serve(cmd, None);
    let started = Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = server.child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}
