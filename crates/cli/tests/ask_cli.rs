//! `citeflow ask` against a real HTTP upstream on 127.0.0.1 that replays an SSE stream
//! citing the passages it was given.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::Duration;

use citeflow_epub::{Book, ChunkSettings, Limits};
use citeflow_index::BookPassage;
use regex::Regex;
use serde_json::Value;

use crate::books_support::{book_path, run, run_err, temp_dir};

/// One request as the upstream saw it.
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// Serves one `POST` on 127.0.0.1: reads the JSON body, answers 200 with the SSE chunks
/// `reply` makes from it (or with `status` and a JSON error when it is not 200).
fn upstream(
    status: u16,
    reply: impl FnOnce(&Value) -> Vec<String> + Send + 'static,
) -> (String, JoinHandle<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap();
        let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
        let (mut length, mut authorization) = (0usize, None);
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        let mut out = stream;
        if status != 200 {
            let msg = r#"{"error":{"message":"model overloaded"}}"#;
            write!(
                out,
                "HTTP/1.1 {status} Oops\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{msg}",
                msg.len()
            )
            .unwrap();
        } else {
            out.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            )
            .unwrap();
            for chunk in reply(&body) {
                let event =
                    serde_json::json!({"choices": [{"index": 0, "delta": {"content": chunk}}]});
                write!(out, "data: {event}\n\n").unwrap();
                out.flush().unwrap();
                std::thread::sleep(Duration::from_millis(2));
            }
            out.write_all(b"data: [DONE]\n\n").unwrap();
        }
        out.flush().unwrap();
        Seen {
            path,
            authorization,
            body,
        }
    });
    (base, handle)
}

/// Cuts `text` into pieces of `n` characters (so markers are split across chunks).
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

fn system_message(body: &Value) -> String {
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

/// The ids of the `[[id]]` markers in the sources block, in order, without repeats.
fn offered_ids(body: &Value) -> Vec<String> {
    let system = system_message(body);
    let block = system.split("Sources:\n").nth(1).unwrap();
    let re = Regex::new(r"(?m)^\[\[([^\]]+)\]\]").unwrap();
    re.captures_iter(block).map(|c| c[1].to_owned()).collect()
}

fn alice_passages() -> Vec<BookPassage> {
    let bytes = std::fs::read(book_path("alice.epub")).unwrap();
    let book = Book::open(&bytes, &Limits::default()).unwrap();
    BookPassage::from_book(&book, &ChunkSettings::default())
}

const QUESTION: &str = "Why did the White Rabbit take a watch out of its waistcoat-pocket?";

#[test]
fn ask_streams_a_cited_answer_with_chapters_and_cfis() {
    let (base, server) = upstream(200, |body| {
        let ids = offered_ids(body);
        assert!(ids.len() >= 2, "{ids:?}");
        let answer = format!(
            "The Rabbit was late [[{b}]]. Alice followed it [[{a}]], then fell [[{b}]].",
            a = ids[0],
            b = ids[1]
        );
        pieces(&answer, 5)
    });
    let dir = temp_dir();
    let index = dir.path().join("index");
    let alice = book_path("alice.epub");
    let o = run(&[
        "ask",
        "--book",
        alice.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
        "--upstream",
        &base,
        "--upstream-api-key",
        "sk-test",
        "--model",
        "tiny",
        "-k",
        "4",
        QUESTION,
    ]);
    let seen = server.join().unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(seen.body["model"], "tiny");
    assert_eq!(seen.body["stream"], true);
    assert_eq!(seen.body["messages"][1]["content"], QUESTION);
    let system = system_message(&seen.body);
    assert!(
        system.contains("Answer using only the sources below"),
        "{system}"
    );
    assert!(
        system.contains("waistcoat-pocket"),
        "retrieved the right passage: {system}"
    );
    let ids = offered_ids(&seen.body);
    assert_eq!(ids.len(), 4);
    assert!(
        stdout.starts_with("The Rabbit was late [1]. Alice followed it [2], then fell [1]."),
        "{stdout}"
    );
    // The source list: number, title, chapter title and CFI of each cited passage.
    let passages = alice_passages();
    let by_id = |id: &str| passages.iter().find(|p| p.id == id).unwrap();
    for (n, id) in [(1, &ids[1]), (2, &ids[0])] {
        let p = by_id(id);
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("[{n}] ")))
            .unwrap_or_else(|| panic!("no [{n}] in {stdout}"));
        let chapter = p.chapter_title.as_deref().unwrap();
        assert!(
            line.contains(&format!("(chapter: {chapter}, CFI: {})", p.cfi)),
            "{line}"
        );
        assert!(line.contains(&p.title), "{line}");
        assert!(system.contains(&format!("[[{id}]] (chapter: {chapter}, CFI: {})", p.cfi)));
    }
    assert!(!stdout.contains("[3]"));
    // The index was written and is re-used by the next question.
    assert!(index.is_dir());
    let (base, server) = upstream(200, |body| {
        let ids = offered_ids(body);
        vec![format!("Yes [[{}]].", ids[0])]
    });
    let again = run(&[
        "ask",
        "--book",
        alice.to_str().unwrap(),
        "--index",
        index.to_str().unwrap(),
        "--upstream",
        &base,
        "Who is the Queen of Hearts?",
    ]);
    server.join().unwrap();
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).starts_with("Yes [1]."));
}

#[test]
fn ask_with_full_width_ranks_shows_chapter_and_cfi_in_the_context() {
    let (base, server) = upstream(200, |_| pieces("草枕の冒頭です【2】。続き【1】【2】。", 2));
    let book = book_path("kusamakura-japanese-vertical-writing.epub");
    let o = run(&[
        "ask",
        "--book",
        book.to_str().unwrap(),
        "--upstream",
        &base,
        "--marker",
        "rank_full_width",
        "--style",
        "fullwidth",
        "智に働けば角が立つ",
    ]);
    let seen = server.join().unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let system = system_message(&seen.body);
    let block = system.split("Sources:\n").nth(1).unwrap();
    let first = block.lines().next().unwrap();
    assert!(first.starts_with("【1】 (章:"), "{first}");
    assert!(first.contains(", CFI:epubcfi(/6/"), "{first}");
    let second = block.lines().nth(1).unwrap();
    assert!(
        stdout.starts_with("草枕の冒頭です【1】。続き【2】【1】。"),
        "{stdout}"
    );
    // Rank 2 was cited first, so it is number 1; the list shows its CFI.
    let cfi_of_rank2 = second
        .split("CFI:")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let line1 = stdout.lines().find(|l| l.starts_with("[1] ")).unwrap();
    assert!(
        line1.contains(&format!("CFI: {cfi_of_rank2})")),
        "{line1} vs {second}"
    );
    assert!(block.contains("智に働けば角が立つ"));
}

#[test]
#[cfg_attr(
    feature = "local-model",
    ignore = "this build runs the local model instead"
)]
fn ask_without_upstream_says_how_to_get_the_local_model() {
    let alice = book_path("alice.epub");
    let err = run_err(&["ask", "--book", alice.to_str().unwrap(), "Who is Alice?"]);
    assert!(err.contains("--upstream"), "{err}");
    assert!(err.contains("--features local-model"), "{err}");
}

#[test]
fn ask_reports_upstream_errors_and_unreachable_upstreams() {
    let (base, server) = upstream(503, |_| Vec::new());
    let alice = book_path("alice.epub");
    let err = run_err(&[
        "ask",
        "--book",
        alice.to_str().unwrap(),
        "--upstream",
        &base,
        QUESTION,
    ]);
    server.join().unwrap();
    assert!(
        err.contains("503") && err.contains("model overloaded"),
        "{err}"
    );
    // A port nobody listens on.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let err = run_err(&[
        "ask",
        "--book",
        alice.to_str().unwrap(),
        "--upstream",
        &url,
        QUESTION,
    ]);
    assert!(err.contains("cannot reach the upstream"), "{err}");
    // A bad book fails before any request.
    let err = run_err(&[
        "ask",
        "--book",
        "/nonexistent.epub",
        "--upstream",
        &url,
        QUESTION,
    ]);
    assert!(err.contains("cannot read"), "{err}");
}
