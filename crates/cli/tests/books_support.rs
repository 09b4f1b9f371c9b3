//! Helpers for the book command tests: fixture paths, running the binary with arguments.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::shared_dir;

/// The seven fixture books.
pub(crate) const BOOKS: [&str; 7] = [
    "alice.epub",
    "cfi-spec-example.epub",
    "childrens-literature.epub",
    "georgia-cfi.epub",
    "kusamakura-japanese-vertical-writing.epub",
    "regime-anticancer-arabic.epub",
    "wasteland.epub",
];

/// Path of a fixture book.
pub(crate) fn book_path(name: &str) -> PathBuf {
    shared_dir().join("fixtures/epub").join(name)
}

/// Runs `citeflow ARGS` with no stdin and no `CITEFLOW_UPSTREAM` from the environment.
pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_citeflow"))
        .args(args)
        .env_remove("CITEFLOW_UPSTREAM")
        .env_remove("CITEFLOW_UPSTREAM_API_KEY")
        .env_remove("CITEFLOW_MODEL")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("spawn citeflow")
}

/// Runs `citeflow ARGS`, asserts success, returns stdout.
pub(crate) fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "citeflow {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is utf-8")
}

/// Asserts a failure with a clean error message (no panic) and returns stderr.
pub(crate) fn run_err(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "citeflow {args:?} should fail");
    assert!(
        !stderr.contains("panicked"),
        "citeflow {args:?} panicked: {stderr}"
    );
    assert!(
        stderr.contains("citeflow: error: "),
        "citeflow {args:?}: {stderr}"
    );
    stderr
}

/// A fresh temporary directory.
pub(crate) fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Whitespace removed (passage text separates paragraphs that the document runs together).
pub(crate) fn no_ws(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}
