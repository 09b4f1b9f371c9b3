//! `citeflow serve --index DIR --book PATH.epub`: books are ingested before the server listens
//! (and skipped when the index holds them already), listed at `GET /v1/books`, and a chat with
//! `citeflow.book` answers from one, and `GET /v1/books/{key}/read` opens one at a passage.

use std::path::Path;
use std::process::Command;

use citeflow_replay::{Replay, Script};
use serde_json::{json, Value};

use crate::books_support::book_path;
use crate::{start_serve, Server};

/// Starts `citeflow serve` with these book arguments; stderr goes to `stderr_file`.
fn serve(upstream: &str, index: &Path, books: &[&str], stderr_file: &Path) -> Server {
    serve_with(upstream, index, books, &[], stderr_file)
}

/// [`serve`] with more arguments.
fn serve_with(
    upstream: &str,
    index: &Path,
    books: &[&str],
    more: &[&str],
    stderr_file: &Path,
) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_citeflow"));
    cmd.args(["serve", "--upstream", upstream, "--listen", "127.0.0.1:0"])
        .args(["--store", "memory", "--index"])
        .arg(index)
        .args(more);
    for b in books {
        cmd.arg("--book").arg(book_path(b));
    }
    start_serve(cmd, Some(stderr_file))
}

/// Sends a request and reads its JSON answer.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

#[test]
fn serve_ingests_books_at_start_once_and_answers_from_them() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let replay = Replay::new();
        replay.insert("m", Script::chat(&["ok"]));
        let upstream = replay.spawn().await.expect("upstream");
        let dir = tempfile::tempdir().expect("tempdir");
        let index = dir.path().join("index");
        let log = dir.path().join("stderr.txt");
        let http = citeflow_replay::client();
        let kusa = "kusamakura-japanese-vertical-writing.epub";

        let server = serve(&upstream, &index, &["alice.epub", kusa], &log);
        let stderr = std::fs::read_to_string(&log).expect("stderr");
        assert_eq!(stderr.matches(" indexed (").count(), 2, "{stderr}");
        assert!(stderr.contains("alice.epub: book alice-s-adve"), "{stderr}");
        let books = json_of(http.get(format!("{}/v1/books", server.base))).await;
        let books = books["data"].as_array().expect("data").clone();
        assert_eq!(books.len(), 2, "{books:?}");
        let kusa_key = books[1]["key"].as_str().expect("key").to_owned();
        assert!(books[1]["title"].as_str().expect("title").contains("草枕"));
        assert!(books[1]["chapters"].as_array().expect("chapters").len() > 3);
        drop(server);

        // Again on the same index: the books are there already, nothing is re-ingested.
        let server = serve(&upstream, &index, &[kusa], &log);
        let stderr = std::fs::read_to_string(&log).expect("stderr");
        assert!(stderr.contains("is in the index already"), "{stderr}");
        assert!(!stderr.contains(" indexed ("), "{stderr}");
        let r = http
            .post(format!("{}/v1/chat/completions", server.base))
            .json(&json!({"model": "m", "stream": true,
                          "messages": [{"role": "user", "content": "智に働けば角が立つ"}],
                          "citeflow": {"book": kusa_key, "top_k": 2}}))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        let _ = r.text().await.expect("body");
        let sent = replay.requests().pop().expect("request");
        let system = sent["messages"][0]["content"].as_str().expect("system");
        assert!(system.contains("智に働けば角が立つ"), "{system}");
        assert_eq!(
            system
                .lines()
                .filter(|l| l.starts_with(&format!("[[{kusa_key}#p")))
                .count(),
            2,
            "{system}"
        );
        assert!(system.contains("(chapter: "), "{system}");

        // The book's file is kept with the index: a passage opens in its chapter, marked.
        assert!(index
            .join("epub")
            .join(format!("{kusa_key}.epub"))
            .is_file());
        let found = json_of(
            http.post(format!("{}/v1/books/{kusa_key}/search", server.base))
                .json(&json!({"query": "智に働けば角が立つ", "top_k": 1})),
        )
        .await;
        let passage = &found["data"][0];
        let reading = json_of(
            http.get(
                reqwest::Url::parse_with_params(
                    &format!("{}/v1/books/{kusa_key}/read", server.base),
                    [("cfi", passage["locator"]["cfi"].as_str().expect("cfi"))],
                )
                .expect("url"),
            ),
        )
        .await;
        assert_eq!(reading["marked_text"], passage["text"], "{reading}");
        assert_eq!(
            reading["chapter_title"],
            passage["locator"]["chapter_title"]
        );
        drop(server);

        // A book that cannot be read stops the server before it listens.
        let bad = dir.path().join("bad.epub");
        std::fs::write(&bad, b"not a zip").expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_citeflow"))
            .args([
                "serve",
                "--upstream",
                &upstream,
                "--listen",
                "127.0.0.1:0",
                "--store",
                "memory",
                "--index",
            ])
            .arg(&index)
            .arg("--book")
            .arg(&bad)
            .output()
            .expect("run");
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bad.epub") && err.contains("zip"), "{err}");
        assert!(out.stdout.is_empty());
    });
}

/// Titles of the books `GET /v1/books` lists.
async fn titles(http: &reqwest::Client, server: &Server) -> Vec<String> {
    let books = json_of(http.get(format!("{}/v1/books", server.base))).await;
    books["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|b| b["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn an_empty_index_gets_the_sample_books_unless_told_not_to() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let replay = Replay::new();
        let upstream = replay.spawn().await.expect("upstream");
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("stderr.txt");
        let http = citeflow_replay::client();

        let index = dir.path().join("index");
        let server = serve(&upstream, &index, &[], &log);
        let stderr = std::fs::read_to_string(&log).expect("stderr");
        assert!(stderr.contains("adding the sample books"), "{stderr}");
        assert_eq!(stderr.matches(" indexed (").count(), 2, "{stderr}");
        let t = titles(&http, &server).await;
        assert_eq!(t.len(), 2, "{t:?}");
        assert!(t.iter().any(|t| t.contains("Alice")), "{t:?}");
        assert!(t.iter().any(|t| t.contains("草枕")), "{t:?}");
        drop(server);

        // The index now holds books: a restart adds nothing.
        let server = serve(&upstream, &index, &[], &log);
        let stderr = std::fs::read_to_string(&log).expect("stderr");
        assert!(!stderr.contains("sample books"), "{stderr}");
        assert!(!stderr.contains("kept its file"), "{stderr}");
        assert_eq!(titles(&http, &server).await.len(), 2);
        drop(server);

        // An index written before book files were kept: the sample books get theirs back.
        let kept = index.join("epub");
        assert_eq!(std::fs::read_dir(&kept).expect("epub dir").count(), 2);
        std::fs::remove_dir_all(&kept).expect("remove");
        let server = serve(&upstream, &index, &[], &log);
        let stderr = std::fs::read_to_string(&log).expect("stderr");
        assert_eq!(
            stderr.matches("kept its file with the index").count(),
            2,
            "{stderr}"
        );
        assert_eq!(std::fs::read_dir(&kept).expect("epub dir").count(), 2);
        drop(server);

        let bare = dir.path().join("bare");
        let server = serve_with(&upstream, &bare, &[], &["--no-sample-books"], &log);
        assert!(titles(&http, &server).await.is_empty());
    });
}
