//! `citeflow render` on hand-written input.

use crate::{citeflow, temp_file};

const SOURCES: &str = r#"[
 {"id":"source_3","title":"France — Wikipedia","url":"https://en.wikipedia.org/wiki/France"},
 {"id":"source_7","title":"Paris — Wikipedia","url":"https://en.wikipedia.org/wiki/Paris"}
]"#;

#[test]
fn jsonl_chunks_render_with_source_list() {
    let src = temp_file("s1.json", SOURCES);
    let out = citeflow(
        &["render", "--sources", src.to_str().unwrap(), "--input", "jsonl"],
        b"\"Paris is the capital [[sou\"\n\"rce_7]] and large [[source_3]]. Again [[source_7]], bad [[source_99]].\"\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "Paris is the capital [1] and large [2]. Again [1], bad [?].\n\n\
         [1] Paris — Wikipedia <https://en.wikipedia.org/wiki/Paris>\n\
         [2] France — Wikipedia <https://en.wikipedia.org/wiki/France>\n"
    );
}

#[test]
fn jsonl_output_has_one_typed_event_per_line() {
    let src = temp_file("s2.json", SOURCES);
    let out = citeflow(
        &[
            "render",
            "--sources",
            src.to_str().unwrap(),
            "--output",
            "jsonl",
        ],
        "x [[source_3]] 【1】".as_bytes(),
    );
    assert!(out.status.success());
    let types: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(types, ["text", "source", "citation", "text", "done"]);
}

#[test]
fn malformed_jsonl_names_the_line_and_keeps_what_was_rendered() {
    let src = temp_file("s3.json", SOURCES);
    let out = citeflow(
        &[
            "render",
            "--sources",
            src.to_str().unwrap(),
            "--input",
            "jsonl",
        ],
        b"\"a [[source_7]] \"\n\n[1,2\n\"never\"\n",
    );
    assert!(!out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "a [1] ");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("stdin line 3: not valid JSON"), "{err}");
}

#[test]
fn unreadable_sources_file_is_a_clear_error() {
    let out = citeflow(&["render", "--sources", "/nonexistent/s.json"], b"x");
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("cannot read sources file /nonexistent/s.json"),
        "{err}"
    );
    let bad = temp_file("bad.json", "[{\"title\": 1}]");
    let out = citeflow(&["render", "--sources", bad.to_str().unwrap()], b"x");
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("is not a JSON array of source objects"));
}

#[test]
fn broken_sse_is_reported_with_its_line() {
    let out = citeflow(
        &["render", "--input", "openai-sse"],
        b"data: {\"choices\":[{\"delta\":{\"content\":\"ok \"}}]}\n\ndata: {nope\n\n",
    );
    assert!(!out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "ok ");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("line 3: data is not JSON"), "{err}");
}

#[test]
fn session_scope_continues_numbering_across_runs() {
    let src = temp_file("s4.json", SOURCES);
    let session =
        std::env::temp_dir().join(format!("citeflow-session-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&session);
    let args = [
        "render",
        "--sources",
        src.to_str().unwrap(),
        "--scope",
        "session",
        "--session-file",
        session.to_str().unwrap(),
    ];
    let first = citeflow(&args, b"a [[source_7]]");
    assert!(first.status.success());
    assert!(String::from_utf8(first.stdout)
        .unwrap()
        .starts_with("a [1]"));
    let second = citeflow(&args, b"b [[source_3]] [[source_7]]");
    assert!(String::from_utf8(second.stdout)
        .unwrap()
        .starts_with("b [2] [1]"));
    let _ = std::fs::remove_file(&session);
}

#[test]
fn styles_and_policies_are_flags() {
    let src = temp_file("s5.json", SOURCES);
    let out = citeflow(
        &[
            "render",
            "--sources",
            src.to_str().unwrap(),
            "--style",
            "fullwidth",
            "--unknown",
            "drop",
            "--list-format",
            "markdown",
        ],
        "漱石[[source_3]]。[[source_1]]".as_bytes(),
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "漱石【1】。\n\n1. [France — Wikipedia](https://en.wikipedia.org/wiki/France)\n"
    );
    let bad = citeflow(&["render", "--style", "nope"], b"");
    assert!(String::from_utf8(bad.stderr)
        .unwrap()
        .contains("unknown style \"nope\""));
}

#[test]
fn a_stream_saved_mid_marker_continues_in_another_process() {
    let src = temp_file("s6.json", SOURCES);
    let snap = std::env::temp_dir().join(format!("citeflow-snap-{}.json", std::process::id()));
    let first = citeflow(
        &[
            "render",
            "--sources",
            src.to_str().unwrap(),
            "--snapshot-out",
            snap.to_str().unwrap(),
        ],
        b"a [[source_7]] b [[sou",
    );
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(String::from_utf8(first.stdout).unwrap(), "a [1] b ");
    let second = citeflow(
        &["render", "--snapshot-in", snap.to_str().unwrap()],
        b"rce_3]] c [[source_7]]",
    );
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(
        String::from_utf8(second.stdout).unwrap(),
        "[2] c [1]\n\n[1] Paris — Wikipedia <https://en.wikipedia.org/wiki/Paris>\n[2] France — Wikipedia <https://en.wikipedia.org/wiki/France>\n"
    );
    let _ = std::fs::remove_file(&snap);
}

/// `citeflow render` with stdin read from the file at `path`.
fn render_from_file(args: &[&str], path: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_citeflow"))
        .args(args)
        .stdin(std::fs::File::open(path).unwrap())
        .output()
        .expect("spawn citeflow")
}

/// JSONL events with adjacent texts merged: how text is cut into events depends on how the
/// bytes arrive (pipe reads or file blocks), the events themselves do not.
fn merged_events(out: &[u8]) -> Vec<serde_json::Value> {
    let mut events: Vec<serde_json::Value> = Vec::new();
    for line in std::str::from_utf8(out).unwrap().lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        if let (Some("text"), Some(last)) = (e["type"].as_str(), events.last_mut()) {
            if last["type"] == "text" {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap(),
                    e["text"].as_str().unwrap()
                );
                last["text"] = joined.into();
                continue;
            }
        }
        events.push(e);
    }
    events
}

/// A regular file on stdin is read on one thread in large blocks (issue 17): the output, the
/// error and the exit status are those of the same bytes through a pipe, for text and JSONL
/// input, text and JSONL output (events compared with adjacent texts merged), and malformed
/// input.
#[test]
fn a_file_on_stdin_renders_as_a_pipe() {
    let src = temp_file("s-file.json", SOURCES);
    let src = src.to_str().unwrap();
    let long: String = (0..3000)
        .map(|i| format!("\"word {i} [[source_{}]] \"\n", [3, 7, 99][i % 3]))
        .collect();
    let cases: [(&str, Vec<&str>, &str); 4] = [
        (
            "text",
            vec!["render", "--sources", src],
            "Paris [[source_7]] is in France [[source_3]], 漢字 [[sou",
        ),
        (
            "jsonl",
            vec![
                "render",
                "--sources",
                src,
                "--input",
                "jsonl",
                "--output",
                "jsonl",
            ],
            &long,
        ),
        (
            "jsonl-text",
            vec!["render", "--sources", src, "--input", "jsonl"],
            &long,
        ),
        (
            "malformed",
            vec!["render", "--sources", src, "--input", "jsonl"],
            "\"ok [[source_7]]\"\n{not json\n\"never\"\n",
        ),
    ];
    for (name, args, input) in cases {
        let path = temp_file(&format!("stdin-{name}.txt"), input);
        let piped = citeflow(&args, input.as_bytes());
        let filed = render_from_file(&args, &path);
        assert!(!piped.stdout.is_empty(), "{name}: no output");
        if args.contains(&"--output") {
            assert_eq!(
                merged_events(&filed.stdout),
                merged_events(&piped.stdout),
                "{name}"
            );
        } else {
            assert_eq!(
                String::from_utf8_lossy(&filed.stdout),
                String::from_utf8_lossy(&piped.stdout),
                "{name}"
            );
        }
        assert_eq!(
            String::from_utf8_lossy(&filed.stderr),
            String::from_utf8_lossy(&piped.stderr),
            "{name}"
        );
        assert_eq!(filed.status.code(), piped.status.code(), "{name}");
        if name == "jsonl-text" {
            let text = String::from_utf8(filed.stdout).unwrap();
            assert!(
                text.starts_with("word 0 [1] word 1 [2] word 2 [?] word 3 [1] "),
                "{}",
                &text[..80]
            );
        }
    }
}

/// The numbers `[n]` of `text` in order of first appearance.
fn first_appearances(text: &str) -> Vec<u64> {
    let mut seen = Vec::new();
    for (i, _) in text.match_indices('[') {
        let digits: String = text[i + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if !digits.is_empty() && text[i + 1 + digits.len()..].starts_with(']') {
            let n: u64 = digits.parse().unwrap();
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
    }
    seen
}

/// Issue 39: `--output text` prints the final answer, whose numbers are the printed list's,
/// for every recording with provider citations, also when they are bound late (Gemini,
/// Cohere; OpenAI links past a hold of 16 bytes).
#[test]
fn regression_39_text_output_numbers_match_the_printed_list() {
    let dir = crate::shared_dir().join("fixtures/streams");
    for (name, hold) in [
        ("openai-web-search-tool.1.chunks.txt", "4096"),
        ("openai-web-search-tool.1.chunks.txt", "16"),
        ("azure-web-search-preview-tool.1.chunks.txt", "16"),
        ("google-interactions-google-search.chunks.txt", "4096"),
        ("cohere-citations.chunks.txt", "4096"),
        ("anthropic-web-search-tool.1.chunks.txt", "4096"),
    ] {
        let args = ["render", "--input", "jsonl", "--max-link-hold-bytes", hold];
        let out = render_from_file(&args, &dir.join(name));
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        // The body, then the list (`[n] title <url>` lines, under round headers if any).
        let lines: Vec<&str> = stdout.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("[1] "))
            .expect("a list");
        let body = lines[..at].join("\n");
        let listed: Vec<u64> = lines[at..]
            .iter()
            .filter(|l| l.starts_with('['))
            .filter_map(|l| l[1..].split(']').next()?.parse().ok())
            .collect();
        let dense: Vec<u64> = (1..=listed.len() as u64).collect();
        assert_eq!(listed, dense, "{name}: the list");
        let shown = first_appearances(&body);
        assert_eq!(
            shown, dense,
            "{name} (hold {hold}): numbers in the printed answer"
        );
    }
}

/// Issue 39: a session file keeps the rounds' sources, not only the numbering: an id of the
/// first run resolves in the second, and a number keeps its first record.
#[test]
fn regression_39_session_file_keeps_the_sources_of_earlier_runs() {
    let first_sources = temp_file(
        "s39a.json",
        r#"[{"id":"doc_a","title":"Alpha (first run)","url":"https://a.example/x"},
            {"id":"doc_b","title":"Beta","url":"https://b.example/"}]"#,
    );
    // The second run's search found the same page again under another id and title.
    let second_sources = temp_file(
        "s39b.json",
        r#"[{"id":"doc_c","title":"Alpha (second run)","url":"https://a.example/x"},
            {"id":"doc_d","title":"Delta","url":"https://d.example/"}]"#,
    );
    let session = std::env::temp_dir().join(format!("citeflow-s39-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&session);
    let run = |src: &std::path::Path, text: &[u8]| {
        let out = citeflow(
            &[
                "render",
                "--id-pattern",
                "doc_<word>",
                "--sources",
                src.to_str().unwrap(),
                "--scope",
                "session",
                "--session-file",
                session.to_str().unwrap(),
            ],
            text,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run(&first_sources, b"Alpha [[doc_a]] and beta [[doc_b]].");
    assert!(first.starts_with("Alpha [1] and beta [2]."), "{first}");
    let second = run(
        &second_sources,
        b"Again alpha [[doc_c]], delta [[doc_d]], and beta from the first run [[doc_b]].",
    );
    assert!(
        second.starts_with("Again alpha [1], delta [3], and beta from the first run [2]."),
        "{second}"
    );
    assert!(
        second.contains("[1] Alpha (first run) <https://a.example/x>"),
        "{second}"
    );
    assert!(second.contains("[2] Beta <https://b.example/>"), "{second}");
    assert!(
        second.contains("[3] Delta <https://d.example/>"),
        "{second}"
    );
    let _ = std::fs::remove_file(&session);
}

/// Each subcommand's arguments are built only when it is used (start-up): its help still
/// begins with the subcommand's own line, lists its flags, and `citeflow --help` lists every
/// subcommand with that line.
#[test]
fn subcommand_help_is_whole_with_lazy_arguments() {
    let cases = [
        (
            "render",
            "Rewrite a streamed answer read from stdin",
            "--sources",
        ),
        (
            "serve",
            "Serve the OpenAI-compatible streaming proxy",
            "--upstream",
        ),
        ("ingest", "Cut EPUB books into passages", "--out"),
        ("ask", "Answer a question from a book", "--book <BOOK>"),
        (
            "epub",
            "Inspect an EPUB: text nodes with their CFIs",
            "chapters",
        ),
        ("cfi", "Parse, compare and resolve EPUB CFIs", "resolve"),
    ];
    let top = citeflow(&["--help"], b"");
    let top = String::from_utf8(top.stdout).unwrap();
    for (name, about, flag) in cases {
        assert!(
            top.lines()
                .any(|l| l.trim_start().starts_with(name) && l.contains(about)),
            "{name} not listed with {about:?}:\n{top}"
        );
        let out = citeflow(&[name, "--help"], b"");
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "{name} --help: {help}");
        assert!(help.starts_with(about), "{name} --help begins:\n{help}");
        assert!(help.contains(flag), "{name} --help lacks {flag}:\n{help}");
    }
}

/// `--style`'s help names every template field on one line (clap prints a literal `{n}` as a
/// line break, so the help names `{number}`), and `{number}` renders as `{n}` does.
#[test]
fn style_help_names_the_template_fields() {
    for name in ["render", "ask"] {
        let out = citeflow(&[name, "--help"], b"");
        let help = String::from_utf8(out.stdout).unwrap();
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("template:TEXT with {number} {id} {url} {title}"),
            "{name} --help:\n{help}"
        );
    }
    let src = temp_file("style-number.json", SOURCES);
    let src = src.to_str().unwrap();
    let input = b"Paris [[source_7]] and the Seine [[source_3]].";
    let by_n = citeflow(
        &["render", "--sources", src, "--style", "template:<{n}|{id}>"],
        input,
    );
    let by_number = citeflow(
        &[
            "render",
            "--sources",
            src,
            "--style",
            "template:<{number}|{id}>",
        ],
        input,
    );
    let text = String::from_utf8(by_number.stdout).unwrap();
    assert!(
        text.starts_with("Paris <1|source_7> and the Seine <2|source_3>."),
        "{text}"
    );
    assert_eq!(String::from_utf8(by_n.stdout).unwrap(), text);
}
