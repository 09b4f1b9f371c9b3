//! Integration tests of the `citeflow` binary.

mod fixtures;
mod render_cli;
mod serve_books;
mod serve_crash;
mod serve_env;
mod serve_shutdown;

mod ask_cli;
mod ask_recorded;
mod books_support;
mod cfi_cli;
mod cfi_flavor_cli;
mod epub_cli;
mod ingest_cli;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The shared fixtures directory: `CITEFLOW_SHARED_DIR`, else `../shared` beside the checkout.
pub(crate) fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("CITEFLOW_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    assert!(
        dir.join("fixtures").is_dir(),
        "shared fixtures not found at {} (set CITEFLOW_SHARED_DIR)",
        dir.display()
    );
    dir
}

/// Runs `citeflow ARGS` with `stdin`.
pub(crate) fn citeflow(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_citeflow"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn citeflow");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// A file holding `contents`, named after `name`, deleted when the returned path is dropped.
pub(crate) fn temp_file(name: &str, contents: &str) -> tempfile::TempPath {
    let p = tempfile::Builder::new()
        .prefix("citeflow-cli-test-")
        .suffix(&format!("-{name}"))
        .tempfile()
        .expect("temp file")
        .into_temp_path();
    std::fs::write(&p, contents).expect("write temp file");
    p
}

/// A running `citeflow serve`, killed when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns `cmd` (a `citeflow serve` on port 0) and waits for the address it prints; stderr goes
/// to `stderr_file` (shown if the server does not start), else to the test's stderr.
pub(crate) fn start_serve(mut cmd: Command, stderr_file: Option<&Path>) -> Server {
    cmd.env("CITEFLOW_LOG", "warn").stdout(Stdio::piped());
    match stderr_file {
        Some(f) => cmd.stderr(std::fs::File::create(f).expect("stderr file")),
        None => cmd.stderr(Stdio::inherit()),
    };
    let mut child = cmd.spawn().expect("spawn citeflow serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let base = line
        .trim()
        .strip_prefix("citeflow listening on ")
        .unwrap_or_else(|| {
            let stderr = stderr_file
                .and_then(|f| std::fs::read_to_string(f).ok())
                .unwrap_or_default();
            panic!("unexpected first line {line:?}; stderr: {stderr}")
        })
        .to_owned();
    Server { child, base }
}
