#!/usr/bin/env bash
# Runs every test of the project on a fresh Debian machine with Rust, Python 3.11 and Node 20.
# Installs what it needs (rustup components, Debian packages, pip and npm packages inside the
# project's own directories) and is safe to run twice. Each part's extra steps live in
# scripts/test-*.sh, which this script runs after the Rust workspace tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
# No incremental caches (2-3 GB of target/ on a clean run, of no use to a run from scratch);
# set CARGO_INCREMENTAL=1 to keep them.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd .. && pwd)/shared}"
[ -d "$CITEFLOW_SHARED_DIR/fixtures" ] || { echo "shared fixtures not found at $CITEFLOW_SHARED_DIR" >&2; exit 1; }

# shellcheck source=step.sh
source scripts/step.sh

step "toolchain"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true

# The later scripts' downloads (virtualenvs, npm's cache) begun now, while the Rust steps
# compile, and the builds of wasm-bindgen-cli and cargo-deny once they are done
# (scripts/prefetch.sh; it never fails the run). At nice 19: their downloads overlap the
# compiling, and their own CPU work takes only what the builds leave (at nice 0 they slowed the
# Rust steps of a fresh clone's run by 330 s).
# A script that needs one of them before it is done waits on its lock. The logs are printed at
# the end.
mkdir -p target
nice -n 19 bash scripts/prefetch.sh downloads >target/prefetch-downloads.log 2>&1 &
prefetch_pids=$!
trap 'kill $prefetch_pids 2>/dev/null || true' EXIT

step "rustfmt"
cargo fmt --all -- --check

step "clippy (-D warnings)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "no import circle between the modules of a crate (scripts/module-cycles.py)"
python3 scripts/module-cycles.py

step "docs (broken intra-doc links fail)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p citeflow-core -p citeflow-epub -p citeflow-store

step "the I/O-free crates build for wasm32-unknown-unknown"
cargo build --locked --target wasm32-unknown-unknown -p citeflow-core -p citeflow-epub -p citeflow-store

step "cargo test (workspace)"
cargo test --locked

nice -n 19 bash scripts/prefetch.sh tools >target/prefetch-tools.log 2>&1 &
prefetch_pids="$prefetch_pids $!"

# The scripts that need no wasm-bindgen-cli first (their browsers, servers and waits leave CPU
# idle for its build in the background), then those that do, then the ones that reuse their
# builds: test-install.sh and test-main.sh after test-llm.sh (the release build of `citeflow`),
# test-packages.sh after test-python.sh (the Python package's release build). Every
# scripts/test-*.sh runs once.
late=(test-agents-js test-ai-sdk test-llm test-install test-wasm test-web test-main test-packages)
parts=()
for part in scripts/test-*.sh; do
  name="$(basename "$part" .sh)"
  [[ " ${late[*]} " == *" $name "* ]] || parts+=("$part")
done
for name in "${late[@]}"; do
  [ -e "scripts/$name.sh" ] || { echo "scripts/$name.sh is listed in test.sh but missing" >&2; exit 1; }
  parts+=("scripts/$name.sh")
done
for part in "${parts[@]}"; do
  step "$part"
  bash "$part"
done

step_done
# shellcheck disable=SC2086
wait $prefetch_pids 2>/dev/null || true
echo "the early installs (scripts/prefetch.sh):"
sed 's/^/  /' target/prefetch-downloads.log target/prefetch-tools.log
echo "all tests passed"
du -sh target 2>/dev/null | sed 's/^/disk used by target\/: /' || true
